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

uint32_t HcclCmdType(OpType type) {
  switch (type) {
    case OpType::kBroadcast:
      return 1;
    case OpType::kAllReduce:
      return 2;
    case OpType::kReduce:
      return 3;
    case OpType::kSend:
      return 4;
    case OpType::kRecv:
      return 5;
    case OpType::kAllGather:
      return 6;
    case OpType::kReduceScatter:
      return 7;
    case OpType::kAlltoAllV:
      return 8;
    case OpType::kAlltoAllVC:
      return 9;
    case OpType::kAlltoAll:
      return 10;
    case OpType::kScatter:
      return 12;
    case OpType::kBatchSendRecv:
      return 13;
    case OpType::kAllGatherV:
      return 16;
    case OpType::kReduceScatterV:
      return 17;
    case OpType::kBarrier:
      return 0;
  }
  return 0;
}

}  // namespace vigil::comm
