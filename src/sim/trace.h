// A Chrome-trace / Perfetto JSON of one simulated call (chrome://tracing, ui.perfetto.dev): one
// track per rank (its steps: primitive, peers, bytes) and one per resource that carried data
// (its transfers: from, to, bytes), times in microseconds from the call's start.
#pragma once

#include <string>

#include "common/status.h"
#include "sim/engine.h"
#include "sim/program.h"
#include "topology/fabric_model.h"

namespace trnccl::sim {

Status writeChromeTrace(const Recorder& recorder, const Fabric& fabric, const std::string& title,
                        const std::string& path);

}  // namespace trnccl::sim
