// The Entry- lines HCCL writes to the run log: communicator init and destroy always, and one
// per op when HCCL_ENTRY_LOG_ENABLE=1. `grep -r "Entry-" run/plog/` is how users (and
// `vigil diagnose`) find every rank of a communicator and each rank's op sequence.
#pragma once

#include <cstdint>
#include <string>

#include "comm/op.h"

namespace vigil::dfx {

// "Entry-HcclCommInitRootInfoInner:ranks[4], rank[2], rootinfo: host ip[127.10.0.1] port[60000]
//  nicDeploy[1] identifier[...], deviceLogicId[2]"
void LogCommInitEntry(uint32_t nranks, uint32_t rank, const std::string& host_ip, uint16_t port,
                      const std::string& identifier, int32_t device);
void LogCommDestroyEntry(const void* handle, const std::string& identifier, uint32_t rank);
// "Entry-HcclAllReduce: tag[..], sendBuf[..], recvBuf[..], count[..], dataType[..], op[..],
//  localRank[..], streamId[..],comm[..], deviceLogicId[..]" (only when entry logging is on).
void LogOpEntry(const comm::OpRecord& op);

}  // namespace vigil::dfx
