#include "comm/op.h"

namespace vigil::comm {

std::string_view OpTypeName(OpType type) {
  switch (type) {
    case OpType::kAllReduce: return "AllReduce";
    case OpType::kBroadcast: return "Broadcast";
    case OpType::kAllGather: return "AllGather";
    case OpType::kAllGatherV: return "AllGatherV";
    case OpType::kReduceScatter: return "ReduceScatter";
    case OpType::kReduceScatterV: return "ReduceScatterV";
    case OpType::kReduce: return "Reduce";
    case OpType::kScatter: return "Scatter";
    case OpType::kAlltoAll: return "AlltoAll";
    case OpType::kAlltoAllV: return "AlltoAllV";
    case OpType::kAlltoAllVC: return "AlltoAllVC";
    case OpType::kSend: return "Send";
    case OpType::kRecv: return "Recv";
    case OpType::kBatchSendRecv: return "BatchSendRecv";
    case OpType::kBarrier: return "Barrier";
  }
  return "Unknown";
}

bool OpHasReduce(OpType type) {
  return type == OpType::kAllReduce || type == OpType::kReduceScatter ||
         type == OpType::kReduceScatterV || type == OpType::kReduce;
}

bool OpHasRoot(OpType type) {
  return type == OpType::kBroadcast || type == OpType::kReduce || type == OpType::kScatter;
}

}  // namespace vigil::comm
