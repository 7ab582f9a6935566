// Issues the trnccl calls of `body` as one group (trncclGroupStart/End), so that sends and
// receives to several peers cannot deadlock on their order. Every check that could throw must
// come before: a failing trnccl call inside makes trncclGroupEnd issue nothing, but a throw of
// ours halfway would issue the calls made so far.
#pragma once

#include "errors.h"
#include "trnccl/trnccl.h"

namespace torch_trnccl {

template <typename Body>
void inGroup(trncclComm_t comm, Body body) {
  check(trncclGroupStart(), comm, "trncclGroupStart");
  try {
    body();
  } catch (...) {
    trncclGroupEnd();
    throw;
  }
  check(trncclGroupEnd(), comm, "trncclGroupEnd");
}

}  // namespace torch_trnccl
