#include "dfx/entry_log.h"

#include "common/dtype.h"
#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::dfx {

void LogCommInitEntry(uint32_t nranks, uint32_t rank, const std::string& host_ip, uint16_t port,
                      const std::string& identifier, int32_t device) {
  HCCL_RUN_INFO(
      "Entry-HcclCommInitRootInfoInner:ranks[{}], rank[{}], rootinfo: host ip[{}] port[{}] "
      "nicDeploy[1] identifier[{}], deviceLogicId[{}]",
      nranks, rank, host_ip, port, identifier, device);
}

void LogCommDestroyEntry(const void* handle, const std::string& identifier, uint32_t rank) {
  HCCL_RUN_INFO("Entry-HcclCommDestroy: comm[{}], group[{}], rank[{}]", fmt::ptr(handle),
                identifier, rank);
}

void LogOpEntry(const comm::OpRecord& op) {
  if (!Env().entry_log) return;
  std::string extra;
  if (comm::OpHasReduce(op.type)) extra += fmt::format(", op[{}]", ReduceOpName(op.reduce));
  if (comm::OpHasRoot(op.type)) extra += fmt::format(", root[{}]", op.root);
  HCCL_RUN_INFO(
      "Entry-Hccl{}: tag[{}], sendBuf[{}], recvBuf[{}], count[{}], dataType[{}]{}, localRank[{}], "
      "streamId[{}],comm[{}], deviceLogicId[{}]",
      comm::OpTypeName(op.type), op.tag(), fmt::ptr(op.src), fmt::ptr(op.dst), op.count,
      DataTypeName(op.dtype), extra, op.rank, op.stream_id, fmt::ptr(op.comm_handle), op.device);
}

}  // namespace vigil::dfx
