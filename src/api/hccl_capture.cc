// Replayable HCCL ops in a captured model (hccl_capture.h).
#include "api/hccl_capture.h"

#include <fmt/format.h>

#include <utility>

#include "api/hccl_api_util.h"
#include "common/dtype.h"
#include "runtime/stream_capture.h"

namespace vigil::api {
namespace {

// OpDesc is move-only (its per-rank lists live behind a unique_ptr): every replay takes a copy.
comm::OpDesc CopyOp(const comm::OpDesc& from) {
  comm::OpDesc to;
  to.type = from.type;
  to.send = from.send;
  to.recv = from.recv;
  to.count = from.count;
  to.dtype = from.dtype;
  to.recv_dtype = from.recv_dtype;
  to.reduce = from.reduce;
  to.root = from.root;
  to.items = from.items;
  const comm::OpLists& lists = from.lists();
  if (!lists.send_counts.empty() || !lists.recv_counts.empty() || !lists.count_matrix.empty()) {
    to.mutable_lists() = lists;
  }
  return to;
}

}  // namespace

HcclResult CaptureOp(std::shared_ptr<comm::Communicator> comm, comm::OpDesc&& op,
                     rt::Stream* stream, HcclComm handle) {
  auto recorded = std::make_shared<const comm::OpDesc>(std::move(op));
  rt::CapturedTask task;
  task.type = rt::TaskType::kHccl;
  task.what = fmt::format("{} count={} dataType={} comm={} rank={}",
                          comm::OpTypeName(recorded->type), recorded->count,
                          static_cast<int>(recorded->dtype), comm->identifier(), comm->rank());
  // The model does not keep the communicator alive: HcclCommDestroy frees its links and buffer
  // as usual, and a replay after it is refused up front (before anything is queued).
  std::weak_ptr<comm::Communicator> weak = comm;
  task.stale = [weak, handle, name = comm->identifier()]() -> std::string {
    std::shared_ptr<comm::Communicator> alive = weak.lock();
    if (!alive || LookupComm(handle) != alive) {
      return fmt::format("communicator {} was destroyed (HcclCommDestroy)", name);
    }
    return {};
  };
  task.replay = [weak, recorded, handle](rt::Stream& target) -> aclError {
    std::shared_ptr<comm::Communicator> ref = weak.lock();
    if (!ref) return ACL_ERROR_RT_MODEL_EXECUTE;
    const HcclResult rc = comm::Communicator::Enqueue(std::move(ref), CopyOp(*recorded), &target,
                                                      handle);
    return rc == HCCL_SUCCESS ? ACL_SUCCESS : ACL_ERROR_RT_MODEL_EXECUTE;
  };
  if (stream->Capture(task)) return HCCL_SUCCESS;
  // The capture ended meanwhile (another thread): the op runs now, as without a capture.
  return comm::Communicator::Enqueue(std::move(comm), CopyOp(*recorded), stream, handle);
}

}  // namespace vigil::api
