// Forcing the tuner on communicators made earlier. A communicator reads TRNCCL_ALGO and
// TRNCCL_NCHANNELS once, at init (src/plan/overrides.h), so a test that changes the algorithm
// between calls of the same communicators (Ranks::get shares them across cases) sets it on
// each of them here; the destructor restores what they read at init.
#pragma once

#include <string>
#include <vector>

#include "api/handle.h"
#include "comm/communicator.h"

namespace trnccl::testing {

class ScopedTuning {
 public:
  // `ranks`: anything with size() and comm(r) (Ranks, a suite's own communicator set).
  template <typename RankSet>
  explicit ScopedTuning(const RankSet& ranks) {
    for (int r = 0; r < ranks.size(); ++r) {
      comms_.push_back(ranks.comm(r)->impl.get());
      saved_.push_back(comms_.back()->config().tuning);
    }
  }
  template <typename RankSet>
  ScopedTuning(const RankSet& ranks, const std::string& algo, int channels = 0)
      : ScopedTuning(ranks) {
    set(algo, channels);
  }
  ~ScopedTuning() {
    for (size_t i = 0; i < comms_.size(); ++i) comms_[i]->setTuning(saved_[i]);
  }
  ScopedTuning(const ScopedTuning&) = delete;
  ScopedTuning& operator=(const ScopedTuning&) = delete;

  // "" / 0: the tuner's own choice.
  void set(const std::string& algo, int channels = 0) {
    for (comm::Communicator* c : comms_) c->setTuning(plan::Overrides{algo, channels});
  }

 private:
  std::vector<comm::Communicator*> comms_;
  std::vector<plan::Overrides> saved_;
};

}  // namespace trnccl::testing
