/* Vigil: HCCL's communicator calls (hccl/hccl_comm.h): creating, querying, configuring,
 * suspending and destroying communicators, groups of ops, and the memory a communicator may use.
 * The ops themselves are in hccl/hccl.h, which includes this file.
 *
 * Every call returns HCCL_SUCCESS or an HcclResult with one ERROR line in the log naming what
 * was wrong. A call Vigil cannot honour on a CPU returns HCCL_E_NOT_SUPPORT and logs why. */
#ifndef VIGIL_HCCL_COMM_H_
#define VIGIL_HCCL_COMM_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "acl/acl.h"
#include "hccl/hccl_types.h"

/* HCCL's header declares most of these calls weak. Here they are ordinary declarations unless a
 * program defines HCOMM_WEAK_SYMBOL (e.g. to __attribute__((weak))) itself: a weak reference lets
 * a linker running with --as-needed drop libhccl.so, and the call then jumps to address 0. */
#ifndef HCOMM_WEAK_SYMBOL
#define HCOMM_WEAK_SYMBOL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Creating communicators ---- */

/* Writes the root info every rank passes to HcclCommInitRootInfo; the calling process hosts the
 * rendezvous until every rank has joined. */
extern HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo) HCOMM_WEAK_SYMBOL;
extern HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo,
                                       uint32_t rank, HcclComm* comm) HCOMM_WEAK_SYMBOL;
extern HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo* rootInfo,
                                             uint32_t rank, const HcclCommConfig* config,
                                             HcclComm* comm) HCOMM_WEAK_SYMBOL;
/* From a rank table file (JSON, version 1.0 or 2.0); `rank` is this process's rank_id. */
extern HcclResult HcclCommInitClusterInfo(const char* clusterInfo, uint32_t rank,
                                          HcclComm* comm) HCOMM_WEAK_SYMBOL;
extern HcclResult HcclCommInitClusterInfoConfig(const char* clusterInfo, uint32_t rank,
                                                HcclCommConfig* config,
                                                HcclComm* comm) HCOMM_WEAK_SYMBOL;
/* One communicator per device of `devices`, all in this process (comms[i] is rank i). */
extern HcclResult HcclCommInitAll(uint32_t ndev, int32_t* devices,
                                  HcclComm* comms) HCOMM_WEAK_SYMBOL;
/* A communicator over `rankNum` ranks of *comm: rankIds[] are their ranks in *comm (sub-rank i is
 * rankIds[i]) and subCommRankId is the caller's sub-rank. Every listed rank calls it with the same
 * rankIds and subCommId; the parent must be idle meanwhile (the ranks agree over its links). */
extern HcclResult HcclCreateSubCommConfig(HcclComm* comm, uint32_t rankNum, uint32_t* rankIds,
                                          uint64_t subCommId, uint32_t subCommRankId,
                                          HcclCommConfig* config,
                                          HcclComm* subComm) HCOMM_WEAK_SYMBOL;

/* ---- Process-wide settings and capabilities ---- */

extern HcclResult HcclSetConfig(HcclConfig config, HcclConfigValue configValue) HCOMM_WEAK_SYMBOL;
extern HcclResult HcclGetConfig(HcclConfig config, HcclConfigValue* configValue) HCOMM_WEAK_SYMBOL;
/* Every HcclCommConfigCapability value below the returned number is supported. */
extern uint32_t HcclGetCommConfigCapability(void) HCOMM_WEAK_SYMBOL;

/* Fills `config` with the version header and "not set" values (the environment applies). */
static inline void HcclCommConfigInit(HcclCommConfig* config) {
  typedef struct {
    size_t size;
    uint32_t magicWord;
    uint32_t version;
    uint64_t reserved;
  } HcclConfigHeader;
  HcclConfigHeader* header;
  if (config == 0) return;
  header = (HcclConfigHeader*)config;
  header->size = sizeof(HcclCommConfig);
  header->magicWord = HCCL_COMM_CONFIG_MAGIC_WORD;
  header->version = HCCL_COMM_CONFIG_VERSION;
  header->reserved = 0;
  config->hcclBufferSize = HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET;
  config->hcclDeterministic = HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET;
  config->hcclCommName[0] = '\0';
  config->hcclUdi[0] = '\0';
  config->hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE;
  config->hcclRdmaTrafficClass = HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET;
  config->hcclRdmaServiceLevel = HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET;
  config->hcclWorldRankID = 0;
  config->hcclJobID = 0;
  config->aclGraphZeroCopyEnable = 0;
  config->hcclExecTimeOut = HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET;
  config->hcclAlgo[0] = '\0';
  config->hcclRetryEnable[0] = '\0';
  config->hcclRetryParams[0] = '\0';
  config->hcclBufferName[0] = '\0';
  config->hcclQos = HCCL_COMM_QOS_CONFIG_NOT_SET;
  config->hcclSymWinMaxMemSizePerRank = HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE;
  config->hcclChannelSqDepth = HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET;
}

/* What HcclConfigGetInfo reports. */
typedef enum {
  HCCL_OP_EXPANSION_MODE_INVALID = -1,
  HCCL_OP_EXPANSION_MODE_AI_CPU = 0,
  HCCL_OP_EXPANSION_MODE_AIV = 1,
  HCCL_OP_EXPANSION_MODE_HOST = 2,
  HCCL_OP_EXPANSION_MODE_HOST_TS = 3,
  HCCL_OP_EXPANSION_MODE_CCU_MS = 4,
  HCCL_OP_EXPANSION_MODE_CCU_SCHED = 5,
  HCCL_OP_EXPANSION_AIV_ONLY = 6
} HcclOpExpansionMode;

typedef enum {
  HCCL_CONFIG_TYPE_INVALID = -1,
  HCCL_CONFIG_TYPE_OP_EXPANSION_MODE = 0, /* info: HcclConfigTypeOpExpansionMode */
  HCCL_CONFIG_TYPE_HCCL_ALGO = 1          /* info: char[infoLen], the algorithm setting */
} HcclConfigType;

typedef HcclOpExpansionMode HcclConfigTypeOpExpansionMode;

/* Writes the communicator's setting `cfgType` into info (infoLen bytes). */
extern HcclResult HcclConfigGetInfo(HcclComm comm, HcclConfigType cfgType, uint32_t infoLen,
                                    void* info);

/* ---- Queries ---- */

/* commName: at least COMM_NAME_MAX_LENGTH bytes; the hcclCommName of the config, else the
 * identifier. */
extern HcclResult HcclGetCommName(HcclComm comm, char* commName) HCOMM_WEAK_SYMBOL;
/* The live communicator of this process whose HcclGetCommName is commName. */
extern HcclResult HcclCommGetHandleWithName(const char* commName, HcclComm* comm);
extern HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize) HCOMM_WEAK_SYMBOL;
extern HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank) HCOMM_WEAK_SYMBOL;
/* The first error of an op of the communicator (HCCL_E_REMOTE after a link error). */
extern HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult* asyncError) HCOMM_WEAK_SYMBOL;
extern const char* HcclGetErrorString(HcclResult code) HCOMM_WEAK_SYMBOL;

/* ---- Barrier and destroy ---- */

extern HcclResult HcclBarrier(HcclComm comm, aclrtStream stream) HCOMM_WEAK_SYMBOL;
/* Callbacks registered for DESTROY_PRE / DESTROY_POST run around it. */
extern HcclResult HcclCommDestroy(HcclComm comm) HCOMM_WEAK_SYMBOL;

/* ---- Suspend and resume ---- */

/* New ops on a suspended communicator return HCCL_E_SUSPENDING and are not queued; ops queued
 * before go on to their end. */
extern HcclResult HcclCommSuspend(HcclComm comm) HCOMM_WEAK_SYMBOL;
/* Callbacks registered for RESUME_PRE / RESUME_POST run around it. */
extern HcclResult HcclCommResume(HcclComm comm) HCOMM_WEAK_SYMBOL;
/* commId: the communicator's name (HcclGetCommName). */
extern HcclResult HcclCommGetStatus(const char* commId, HcclCommStatus* status);

typedef HcclResult (*HcclCommStateCallback)(HcclComm comm, HcclCommStatePhase state, void* args);
/* One callback per regName for the whole process (a second registration replaces the first),
 * called for every communicator at the phases of HcclCommStatePhase. */
extern HcclResult HcclCommRegCommStateCallback(const char* regName, HcclCommStateCallback cb,
                                               void* args);

/* ---- Memory the communicator may use ---- */

/* Declares an address range reserved with aclrtReserveMemAddress (alignment and flags: 0). Ranges
 * of one communicator must not overlap. */
extern HcclResult HcclCommSetMemoryRange(HcclComm comm, void* baseVirPtr, size_t size,
                                         size_t alignment, uint64_t flags) HCOMM_WEAK_SYMBOL;
/* baseVirPtr: as given to HcclCommSetMemoryRange; no piece of it may still be activated. */
extern HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void* baseVirPtr) HCOMM_WEAK_SYMBOL;
/* Declares [virPtr, virPtr + size), inside a set range and mapped to `handle`, usable by ops
 * (offset and flags: 0). Activated pieces must not overlap. */
extern HcclResult HcclCommActivateCommMemory(HcclComm comm, void* virPtr, size_t size,
                                             size_t offset, aclrtDrvMemHandle handle,
                                             uint64_t flags) HCOMM_WEAK_SYMBOL;
extern HcclResult HcclCommDeactivateCommMemory(HcclComm comm, void* virPtr) HCOMM_WEAK_SYMBOL;

/* ---- Symmetric memory windows (see also hccl/hccl_sym_win.h) ---- */

/* Registers this rank's window of `size` bytes at `addr` (flag: 1; at most
 * hcclSymWinMaxMemSizePerRank GB of the config). Every rank registers its windows in the same
 * order, as HCCL's collective call requires: the k-th window of each rank is one symmetric window. */
extern HcclResult HcclCommSymWinRegister(HcclComm comm, void* addr, uint64_t size,
                                         HcclCommSymWindow* winHandle, uint32_t flag);
extern HcclResult HcclCommSymWinDeregister(HcclCommSymWindow winHandle);
/* The window of comm holding [ptr, ptr + size), and ptr's offset in it. */
extern HcclResult HcclCommSymWinGet(HcclComm comm, void* ptr, size_t size,
                                    HcclCommSymWindow* winHandle, size_t* offset);

/* ---- NICs ---- */

/* Moves ranks[i] to its backup NIC (useBackup[i]) or back to its main one. */
extern HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t* ranks, bool* useBackup,
                                           uint32_t nRanks) HCOMM_WEAK_SYMBOL;

/* ---- Groups ---- */

/* Ops called by this thread between HcclGroupStart and HcclGroupEnd are queued together at
 * HcclGroupEnd: sends and receives of one communicator and stream become one batch, so ranks
 * that both send first do not deadlock. Groups nest; the outermost End queues. */
extern HcclResult HcclGroupStart(void);
extern HcclResult HcclGroupEnd(void);
/* Whether this thread is inside a group. */
extern HcclResult HcclGroupStatusGet(bool* isGroupEnabled);

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_HCCL_COMM_H_ */
