// Fuzz target: the topology YAML loader (TRNCCL_TOPOLOGY may name any file; cf. NVIDIA/nccl#1585,
// an overflow in NCCL's XML topology reader). Errors are fine; crashes and hangs are not.
#include <cstdint>
#include <string>

#include "topology/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto topo = trnccl::topology::parseTopology(text, "<fuzz>");
  if (topo) (void)trnccl::topology::dumpYaml(*topo);
  return 0;
}
