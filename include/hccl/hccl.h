/* Vigil: HCCL's public C API (hccl/hccl.h): the ops. Like HCCL's header it brings in the
 * communicator calls (hccl/hccl_comm.h) and the acl runtime declarations, so a program that
 * includes only this file can call every Hccl* and aclrt* function.
 *
 * Every collective is asynchronous on `stream`: it returns once enqueued, and its result is
 * known at aclrtSynchronizeStream (and through HcclGetCommAsyncError). */
#ifndef VIGIL_HCCL_H_
#define VIGIL_HCCL_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "hccl/hccl_comm.h"
#include "hccl/hccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef HCCL_API
#define HCCL_API __attribute__((visibility("default")))
#endif

/* Collectives */
HCCL_API HcclResult HcclAllReduce(void* sendBuf, void* recvBuf, uint64_t count,
                                  HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                                  aclrtStream stream);
HCCL_API HcclResult HcclBroadcast(void* buf, uint64_t count, HcclDataType dataType,
                                  uint32_t root, HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount,
                                      HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                                      aclrtStream stream);
HCCL_API HcclResult HcclReduceScatterV(void* sendBuf, const void* sendCounts,
                                       const void* sendDispls, void* recvBuf,
                                       uint64_t recvCount, HcclDataType dataType,
                                       HcclReduceOp op, HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclScatter(void* sendBuf, void* recvBuf, uint64_t recvCount,
                                HcclDataType dataType, uint32_t root, HcclComm comm,
                                aclrtStream stream);
HCCL_API HcclResult HcclAllGather(void* sendBuf, void* recvBuf, uint64_t sendCount,
                                  HcclDataType dataType, HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclAllGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf,
                                   const void* recvCounts, const void* recvDispls,
                                   HcclDataType dataType, HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclReduce(void* sendBuf, void* recvBuf, uint64_t count,
                               HcclDataType dataType, HcclReduceOp op, uint32_t root,
                               HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType,
                                 const void* recvBuf, uint64_t recvCount, HcclDataType recvType,
                                 HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclAlltoAllV(const void* sendBuf, const void* sendCounts,
                                  const void* sdispls, HcclDataType sendType,
                                  const void* recvBuf, const void* recvCounts,
                                  const void* rdispls, HcclDataType recvType, HcclComm comm,
                                  aclrtStream stream);
HCCL_API HcclResult HcclAlltoAllVC(const void* sendBuf, const void* sendCountMatrix,
                                   HcclDataType sendType, const void* recvBuf,
                                   HcclDataType recvType, HcclComm comm, aclrtStream stream);

/* Point to point */
HCCL_API HcclResult HcclSend(void* sendBuf, uint64_t count, HcclDataType dataType,
                             uint32_t destRank, HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclRecv(void* recvBuf, uint64_t count, HcclDataType dataType,
                             uint32_t srcRank, HcclComm comm, aclrtStream stream);
HCCL_API HcclResult HcclBatchSendRecv(HcclSendRecvItem* sendRecvInfo, uint32_t itemNum,
                                      HcclComm comm, aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_HCCL_H_ */
