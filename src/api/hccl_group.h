// HcclGroupStart / HcclGroupEnd: the ops a thread calls inside a group are kept here and queued
// together when the outermost group ends. The sends and receives of one communicator and stream
// become one batch, so two ranks that each send first and receive second do not wait on each
// other forever.
#pragma once

#include <atomic>
#include <memory>

#include "comm/communicator.h"
#include "hccl/hccl_types.h"
#include "runtime/stream.h"

namespace vigil::api {

namespace detail {
// Groups open on any thread of the process: every op asks InGroup, and while no thread has a
// group open the answer costs one load.
extern std::atomic<int> g_groups_open;
bool InGroupSlow();
}  // namespace detail

// Whether this thread is between HcclGroupStart and its HcclGroupEnd.
inline bool InGroup() {
  return detail::g_groups_open.load(std::memory_order_relaxed) != 0 && detail::InGroupSlow();
}
// Keeps a checked op for the group's end (instead of queuing it now).
void DeferOp(std::shared_ptr<comm::Communicator> comm, comm::OpDesc&& op, rt::Stream* stream,
             HcclComm handle);

}  // namespace vigil::api
