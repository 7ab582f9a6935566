#include "common/thread.h"

#include "common/backoff.h"
#include "common/log.h"

namespace trnccl {

void readProcessSettings() {
  (void)log::enabled(log::Level::kWarn, 0);
  (void)WaitPolicy::process();
}

}  // namespace trnccl
