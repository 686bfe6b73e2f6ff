/* Vigil: HCCL's public C API (hccl/hccl.h). Like the real header it brings in the acl runtime
 * declarations, so a program that includes only this file can call aclrt* functions.
 *
 * Every collective is asynchronous on `stream`: it returns once enqueued, and its result is
 * known at aclrtSynchronizeStream (and through HcclGetCommAsyncError). */
#ifndef VIGIL_HCCL_H_
#define VIGIL_HCCL_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"
#include "hccl/hccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef HCCL_API
#define HCCL_API __attribute__((visibility("default")))
#endif

/* Fills `config` with "not set" values (env variables apply) and the version header. */
static inline void HcclCommConfigInit(HcclCommConfig* config) {
  typedef struct {
    size_t size;
    uint32_t magicWord;
    uint32_t version;
    uint64_t reserved;
  } HcclConfigInfo;
  HcclConfigInfo* info = (HcclConfigInfo*)config;
  info->size = sizeof(HcclCommConfig);
  info->magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
  info->version = HCCL_COMM_CONFIG_VERSION;
  info->reserved = 0;
  config->hcclBufferSize = HCCL_COMM_DEFAULT_BUFFSIZE;
  config->hcclDeterministic = HCCL_COMM_DEFAULT_DETERMINISTIC;
  config->hcclCommName[0] = '\0';
  config->hcclUdi[0] = '\0';
  config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
  config->hcclRdmaTrafficClass = HCCL_COMM_CONFIG_NOT_SET;
  config->hcclRdmaServiceLevel = HCCL_COMM_CONFIG_NOT_SET;
  config->hcclWorldRankID = 0;
  config->hcclJobID = 0;
  config->hcclExecTimeOut = HCCL_COMM_CONFIG_NOT_SET;
}

/* Communicators */
HCCL_API HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo);
HCCL_API HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo,
                                         uint32_t rank, HcclComm* comm);
HCCL_API HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo* rootInfo,
                                               uint32_t rank, const HcclCommConfig* config,
                                               HcclComm* comm);
HCCL_API HcclResult HcclCommInitClusterInfo(const char* clusterInfo, uint32_t rank,
                                            HcclComm* comm);
HCCL_API HcclResult HcclCommInitClusterInfoConfig(const char* clusterInfo, uint32_t rank,
                                                  HcclCommConfig* config, HcclComm* comm);
HCCL_API HcclResult HcclCommInitAll(uint32_t ndev, int32_t* devices, HcclComm* comms);
HCCL_API HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize);
HCCL_API HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank);
HCCL_API HcclResult HcclGetCommName(HcclComm comm, char* commName);
HCCL_API HcclResult HcclCommDestroy(HcclComm comm);
HCCL_API HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult* asyncError);
HCCL_API const char* HcclGetErrorString(HcclResult code);

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
HCCL_API HcclResult HcclBarrier(HcclComm comm, aclrtStream stream);

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
