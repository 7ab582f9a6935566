#include "comm/config.h"

#include "common/env.h"

namespace trnccl::comm {

Config resolveConfig(int blocking, int timeoutMs, const char* topology, const char* transports,
                     int deterministic) {
  Config c;
  if (int64_t t = env::getInt("TRNCCL_TIMEOUT_MS", 0); t > 0) {
    c.initTimeout = c.opTimeout = std::chrono::milliseconds(t);
  }
  if (timeoutMs > 0) c.initTimeout = c.opTimeout = std::chrono::milliseconds(timeoutMs);
  c.topology = env::getString("TRNCCL_TOPOLOGY", c.topology);
  if (topology != nullptr && *topology != '\0') c.topology = topology;
  c.transports = env::getString("TRNCCL_TRANSPORT", c.transports);
  if (transports != nullptr && *transports != '\0') c.transports = transports;
  c.blocking = blocking != 0;
  c.deterministic = env::getInt("TRNCCL_DETERMINISTIC", 0) != 0;
  if (deterministic >= 0) c.deterministic = deterministic != 0;
  c.tuning = plan::Overrides::fromEnvironment();
  c.check = env::getInt("TRNCCL_CHECK", 0) != 0;
  return c;
}

}  // namespace trnccl::comm
