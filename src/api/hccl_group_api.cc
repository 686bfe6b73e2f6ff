// HcclGroupStart, HcclGroupEnd, HcclGroupStatusGet (hccl/hccl_comm.h).
#include <vector>

#include "api/hccl_api_util.h"
#include "api/hccl_capture.h"
#include "api/hccl_group.h"
#include "log/plog.h"

using vigil::comm::OpDesc;
using vigil::comm::OpType;

namespace vigil::api {

namespace {

struct DeferredOp {
  std::shared_ptr<comm::Communicator> comm;
  OpDesc op;
  rt::Stream* stream;
  HcclComm handle;
};

struct GroupState {
  int depth = 0;
  std::vector<DeferredOp> ops;
};

GroupState& State() {
  thread_local GroupState state;
  return state;
}

bool IsP2p(OpType type) {
  return type == OpType::kSend || type == OpType::kRecv || type == OpType::kBatchSendRecv;
}

// The group's ops in call order, except that every send and receive of one (communicator,
// stream) joins the first of them as one BatchSendRecv.
std::vector<DeferredOp> Fuse(std::vector<DeferredOp>&& ops) {
  std::vector<DeferredOp> fused;
  for (DeferredOp& d : ops) {
    if (IsP2p(d.op.type)) {
      DeferredOp* batch = nullptr;
      for (DeferredOp& f : fused) {
        if (IsP2p(f.op.type) && f.comm == d.comm && f.stream == d.stream) batch = &f;
      }
      if (batch != nullptr) {
        OpDesc& b = batch->op;
        b.type = OpType::kBatchSendRecv;
        b.send = nullptr;
        b.recv = nullptr;
        b.root = 0;
        for (const auto& item : d.op.items) {
          b.items.push_back(item);
          b.count += item.count;
        }
        continue;
      }
    }
    fused.push_back(std::move(d));
  }
  return fused;
}

}  // namespace

namespace detail {
std::atomic<int> g_groups_open{0};
bool InGroupSlow() { return State().depth > 0; }
}  // namespace detail

void DeferOp(std::shared_ptr<comm::Communicator> comm, OpDesc&& op, rt::Stream* stream,
             HcclComm handle) {
  State().ops.push_back(DeferredOp{std::move(comm), std::move(op), stream, handle});
}

}  // namespace vigil::api

extern "C" {

HcclResult HcclGroupStart(void) {
  if (HcclResult rc = vigil::api::EnsureProcessReady("HcclGroupStart"); rc != HCCL_SUCCESS) {
    return rc;
  }
  if (vigil::api::State().depth++ == 0) vigil::api::detail::g_groups_open.fetch_add(1);
  return HCCL_SUCCESS;
}

HcclResult HcclGroupEnd(void) {
  vigil::api::GroupState& state = vigil::api::State();
  if (state.depth == 0) {
    return vigil::api::ArgError("HcclGroupEnd", HCCL_E_PARA,
                                "no group is open on this thread: call HcclGroupStart first");
  }
  if (--state.depth > 0) return HCCL_SUCCESS;
  vigil::api::detail::g_groups_open.fetch_sub(1);
  std::vector<vigil::api::DeferredOp> ops = vigil::api::Fuse(std::move(state.ops));
  state.ops.clear();
  HcclResult first_error = HCCL_SUCCESS;
  for (vigil::api::DeferredOp& d : ops) {
    // A stream that is capturing records the op for replays, as an op called outside a group.
    const HcclResult rc =
        d.stream->Recording()
            ? vigil::api::CaptureOp(std::move(d.comm), std::move(d.op), d.stream, d.handle)
            : vigil::comm::Communicator::Enqueue(std::move(d.comm), std::move(d.op), d.stream,
                                                 d.handle);
    if (rc != HCCL_SUCCESS && first_error == HCCL_SUCCESS) {
      first_error = vigil::api::ArgError("HcclGroupEnd", rc,
                                         "an op of the group could not be queued: its "
                                         "communicator was destroyed inside the group");
    }
  }
  return first_error;
}

HcclResult HcclGroupStatusGet(bool* isGroupEnabled) {
  if (isGroupEnabled == nullptr) {
    return vigil::api::ArgError("HcclGroupStatusGet", HCCL_E_PTR, "ptr [isGroupEnabled] is nullptr");
  }
  *isGroupEnabled = vigil::api::InGroup();
  return HCCL_SUCCESS;
}

}  // extern "C"
