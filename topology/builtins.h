// The built-in topology descriptions: every topology/descriptions/*.yaml, compiled into the
// library by the build (cmake/EmbedTopologies.cmake writes the definition), so that an installed
// trnccl finds trn1.32xlarge and the others without any file of its source tree. Users add
// their own through TRNCCL_TOPOLOGY_PATH or a path (topology/loader.h).
#pragma once

#include <span>
#include <string_view>

namespace trnccl::topology {

struct BuiltinDescription {
  std::string_view name;  // file name without .yaml, e.g. "trn1.32xlarge"
  std::string_view yaml;  // the file's text
};

// Sorted by name.
std::span<const BuiltinDescription> builtinDescriptions();

}  // namespace trnccl::topology
