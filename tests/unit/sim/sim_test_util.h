// Small fabrics whose simulated times can be worked out by hand, and a simulator over them.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "plan/topology_view.h"
#include "schedule/schedule.h"
#include "sim/simulate.h"
#include "topology/topology.h"

namespace trnccl::sim::testing {

// Round numbers: 1 GB/s = 1000 bytes per µs.
inline topology::Topology baseTopology(const std::string& name, int chips, int cores) {
  topology::Topology t;
  t.name = name;
  t.chipsPerInstance = chips;
  t.device = {"NeuronCore-test", cores, 16, 3};  // HBM 3 GB/s: one rank reduces 1000 B/µs
  t.device.messageUs = 0;  // messages cost only their bytes, unless a test says otherwise
  return t;
}

// Two chips of one core joined by a link of 1 GB/s and 2 µs each way.
inline topology::Topology twoChipsOneLink() {
  topology::Topology t = baseTopology("two-chips", 2, 1);
  topology::Chip chip;
  chip.extraLinks = {{1, {topology::LinkClass::kPcie, 1, 2}}};
  t.chips = {chip};
  return t;
}

// Four chips of one core on a switch: ports of 1 GB/s, 1 µs through the switch; HBM 2 GB/s
// (a copy of 1000 bytes takes 1 µs).
inline topology::Topology fourChipsOnASwitch() {
  topology::Topology t = baseTopology("four-on-a-switch", 4, 1);
  t.device.hbmBandwidthGbps = 2;
  t.fabric.kind = topology::FabricKind::kSwitch;
  t.fabric.link = {topology::LinkClass::kNeuronLink, 1, 1};
  return t;
}

// Instances of one chip and one core, joined by EFA: 10 GB/s per instance over one NIC, 15 µs.
inline topology::Topology oneChipInstancesOverEfa() {
  topology::Topology t = baseTopology("efa-instances", 1, 1);
  t.network = topology::Network{{topology::LinkClass::kEfa, 10, 15}, 1, {}};
  return t;
}

// Byte-typed schedules: count = bytes.
inline schedule::Schedule bytesSchedule(int nranks,
                                        std::initializer_list<std::vector<schedule::Step>> groups) {
  schedule::Schedule s;
  s.type = device::DataType::kUint8;
  s.nranks = nranks;
  for (const auto& g : groups) s.addGroup(g);
  return s;
}

inline schedule::Step sendTo(int peer, size_t bytes, bool sync = false) {
  return schedule::Step{
      .prim = schedule::Primitive::kSend, .sendPeer = peer, .count = bytes, .syncSend = sync};
}

inline schedule::Step recvFrom(int peer, size_t bytes) {
  return schedule::Step{.prim = schedule::Primitive::kRecv, .recvPeer = peer, .count = bytes};
}

inline Simulator simulatorFor(topology::Topology t, int nranks, EngineOptions options = {}) {
  Status s = topology::finalizeTopology(t);
  EXPECT_TRUE(s) << s.message();
  auto view = plan::viewTopology(t, nranks);
  EXPECT_TRUE(view) << view.status().message();
  auto sim = Simulator::create(*view, options);
  EXPECT_TRUE(sim) << sim.status().message();
  return std::move(*sim);
}

}  // namespace trnccl::sim::testing
