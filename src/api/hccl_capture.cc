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
  // The model keeps the communicator; a replay after HcclCommDestroy is refused up front.
  task.stale = [comm, handle]() -> std::string {
    if (LookupComm(handle) != comm) {
      return fmt::format("communicator {} was destroyed (HcclCommDestroy)", comm->identifier());
    }
    return {};
  };
  task.replay = [comm, recorded, handle](rt::Stream& target) -> aclError {
    std::shared_ptr<comm::Communicator> ref = comm;
    const HcclResult rc = comm::Communicator::Enqueue(std::move(ref), CopyOp(*recorded), &target,
                                                      handle);
    return rc == HCCL_SUCCESS ? ACL_SUCCESS : ACL_ERROR_RT_MODEL_EXECUTE;
  };
  if (stream->Capture(task)) return HCCL_SUCCESS;
  // The capture ended meanwhile (another thread): the op runs now, as without a capture.
  return comm::Communicator::Enqueue(std::move(comm), CopyOp(*recorded), stream, handle);
}

}  // namespace vigil::api
