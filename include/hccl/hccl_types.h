/* Vigil: HCCL's public types (hccl/hccl_types.h). Names, values and struct layouts are those of
 * HCCL's current header (HcclCommConfig version 11); HCCL programs compile against it unchanged.
 *
 * Unlike HCCL's header, this one also compiles as C: the constants are `const` objects in C++
 * (typed as HCCL types them) and macros in C. */
#ifndef VIGIL_HCCL_TYPES_H_
#define VIGIL_HCCL_TYPES_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HCCL_SUCCESS = 0,
  HCCL_E_PARA = 1,
  HCCL_E_PTR = 2,
  HCCL_E_MEMORY = 3,
  HCCL_E_INTERNAL = 4,
  HCCL_E_NOT_SUPPORT = 5,
  HCCL_E_NOT_FOUND = 6,
  HCCL_E_UNAVAIL = 7,
  HCCL_E_SYSCALL = 8,
  HCCL_E_TIMEOUT = 9,
  HCCL_E_OPEN_FILE_FAILURE = 10,
  HCCL_E_TCP_CONNECT = 11,
  HCCL_E_ROCE_CONNECT = 12,
  HCCL_E_TCP_TRANSFER = 13,
  HCCL_E_ROCE_TRANSFER = 14,
  HCCL_E_RUNTIME = 15,
  HCCL_E_DRV = 16,
  HCCL_E_PROFILING = 17,
  HCCL_E_CCE = 18,
  HCCL_E_NETWORK = 19,
  HCCL_E_AGAIN = 20,
  HCCL_E_REMOTE = 21,      /* an error CQE: a link failed */
  HCCL_E_SUSPENDING = 22,  /* the communicator is suspended (HcclCommSuspend) */
  HCCL_E_OPRETRY_FAIL = 23,
  HCCL_E_OOM = 24,
  HCCL_E_IN_STATUS = 1041, /* the error is told in a status argument */
  HCCL_E_RESERVED
} HcclResult;

typedef void* HcclComm;
typedef void* HcclConn;
/* A registered symmetric memory window (HcclCommSymWinRegister). */
typedef void* HcclCommSymWindow;

typedef enum {
  HCCL_REDUCE_SUM = 0,
  HCCL_REDUCE_PROD = 1,
  HCCL_REDUCE_MAX = 2,
  HCCL_REDUCE_MIN = 3,
  HCCL_REDUCE_RESERVED = 255
} HcclReduceOp;

typedef enum {
  HCCL_DATA_TYPE_INT8 = 0,
  HCCL_DATA_TYPE_INT16 = 1,
  HCCL_DATA_TYPE_INT32 = 2,
  HCCL_DATA_TYPE_FP16 = 3,
  HCCL_DATA_TYPE_FP32 = 4,
  HCCL_DATA_TYPE_INT64 = 5,
  HCCL_DATA_TYPE_UINT64 = 6,
  HCCL_DATA_TYPE_UINT8 = 7,
  HCCL_DATA_TYPE_UINT16 = 8,
  HCCL_DATA_TYPE_UINT32 = 9,
  HCCL_DATA_TYPE_FP64 = 10,
  HCCL_DATA_TYPE_BFP16 = 11,
  HCCL_DATA_TYPE_INT128 = 12,
  HCCL_DATA_TYPE_HIF8 = 14,
  HCCL_DATA_TYPE_FP8E4M3 = 15,
  HCCL_DATA_TYPE_FP8E5M2 = 16,
  HCCL_DATA_TYPE_FP8E8M0 = 17,
  HCCL_DATA_TYPE_RESERVED = 255
} HcclDataType;

/* Process-wide settings of HcclSetConfig / HcclGetConfig. */
typedef enum {
  HCCL_DETERMINISTIC = 0, /* 0 off, 1 deterministic, 2 strict (reduction order kept) */
  HCCL_CONFIG_RESERVED
} HcclConfig;

union HcclConfigValue {
  int32_t value;
};
typedef union HcclConfigValue HcclConfigValue;

#ifdef __cplusplus
const uint32_t HCCL_ROOT_INFO_BYTES = 4108;
const uint32_t COMM_NAME_MAX_LENGTH = 128;
const uint32_t BUFFER_NAME_MAX_LENGTH = 128;
const uint32_t UDI_MAX_LENGTH = 128;
const uint32_t HCCL_COMM_ALGO_MAX_LENGTH = 1600;
const uint32_t HCCL_COMM_RETRY_ENABLE_MAX_LENGTH = 50;
const uint32_t HCCL_COMM_RETRY_PARAMS_MAX_LENGTH = 128;
const uint32_t HCCL_COMM_CONFIG_INFO_BYTES = 24;
const uint32_t HCCL_COMM_CONFIG_MAGIC_WORD = 0xf0f0f0f0;
const uint32_t HCCL_COMM_CONFIG_VERSION = 11;
const uint32_t HCCL_COMM_DEFAULT_BUFFSIZE = 200; /* MB */
const uint32_t HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_DEFAULT_DETERMINISTIC = 0;
const uint32_t HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_DEFAULT_OP_EXPANSION_MODE = 0;
const uint32_t HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET = 0xffffffff;
const int32_t HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET = -1; /* all bits set, as HCCL's 0xffffffff */
const uint32_t HCCL_COMM_QOS_CONFIG_NOT_SET = 0xffffffff;
const uint32_t HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET = 0xffffffff;
const uint64_t HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE = 16ULL; /* GB of address space per rank */
#else
#define HCCL_ROOT_INFO_BYTES 4108u
#define COMM_NAME_MAX_LENGTH 128u
#define BUFFER_NAME_MAX_LENGTH 128u
#define UDI_MAX_LENGTH 128u
#define HCCL_COMM_ALGO_MAX_LENGTH 1600u
#define HCCL_COMM_RETRY_ENABLE_MAX_LENGTH 50u
#define HCCL_COMM_RETRY_PARAMS_MAX_LENGTH 128u
#define HCCL_COMM_CONFIG_INFO_BYTES 24u
#define HCCL_COMM_CONFIG_MAGIC_WORD 0xf0f0f0f0u
#define HCCL_COMM_CONFIG_VERSION 11u
#define HCCL_COMM_DEFAULT_BUFFSIZE 200u
#define HCCL_COMM_BUFFSIZE_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_DEFAULT_DETERMINISTIC 0u
#define HCCL_COMM_DETERMINISTIC_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_DEFAULT_OP_EXPANSION_MODE 0u
#define HCCL_COMM_TRAFFIC_CLASS_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_SERVICE_LEVEL_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_EXECTIMEOUT_CONFIG_NOT_SET ((int32_t)-1)
#define HCCL_COMM_QOS_CONFIG_NOT_SET 0xffffffffu
#define HCCL_COMM_SQ_DEPTH_CONFIG_NOT_SET 0xffffffffu
#define HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE 16ull
#endif

/* Opaque to the user: host ip, port, identifier and a checksum, filled by HcclGetRootInfo. */
typedef struct HcclRootInfoDef {
  char internal[HCCL_ROOT_INFO_BYTES];
} HcclRootInfo;

/* Per-communicator configuration, filled by HcclCommConfigInit first. It starts with a 24-byte
 * header {size_t size; uint32_t magic; uint32_t version; uint64_t reserved}: a library reads only
 * the fields that the version introduced and the size holds, so a program built against an older
 * header keeps working. Fields left "not set" take the environment's value. The version each
 * field came with is noted. */
typedef struct HcclCommConfigDef {
  char reserved[HCCL_COMM_CONFIG_INFO_BYTES];
  uint32_t hcclBufferSize;    /* 1: MB, overrides HCCL_BUFFSIZE */
  uint32_t hcclDeterministic; /* 1: 0 off, 1 on, 2 strict */
  char hcclCommName[COMM_NAME_MAX_LENGTH]; /* 2: the communicator's name */
  char hcclUdi[UDI_MAX_LENGTH];            /* 3: user-defined information, logged */
  uint32_t hcclOpExpansionMode;            /* 4: 0 default, 1 host, 2 AI CPU, 3 AIV */
  uint32_t hcclRdmaTrafficClass;           /* 5 */
  uint32_t hcclRdmaServiceLevel;           /* 5 */
  uint32_t hcclWorldRankID;                /* 6 */
  uint64_t hcclJobID;                      /* 6 */
  uint8_t aclGraphZeroCopyEnable;          /* 7: 0 or 1 */
  int32_t hcclExecTimeOut;                 /* 8: seconds, overrides HCCL_EXEC_TIMEOUT */
  char hcclAlgo[HCCL_COMM_ALGO_MAX_LENGTH];                  /* 8: as HCCL_ALGO */
  char hcclRetryEnable[HCCL_COMM_RETRY_ENABLE_MAX_LENGTH];   /* 8: as HCCL_OP_RETRY_ENABLE */
  char hcclRetryParams[HCCL_COMM_RETRY_PARAMS_MAX_LENGTH];   /* 8: as HCCL_OP_RETRY_PARAMS */
  char hcclBufferName[BUFFER_NAME_MAX_LENGTH];               /* 9 */
  uint32_t hcclQos;                                          /* 10 */
  uint64_t hcclSymWinMaxMemSizePerRank;                      /* 10: GB */
  uint32_t hcclChannelSqDepth;                               /* 11 */
} HcclCommConfig;

/* What HcclGetCommConfigCapability reports: every value below the number it returns is a
 * supported config item. */
typedef enum {
  HCCL_COMM_CONFIG_BUFFER_SIZE = 0,
  HCCL_COMM_CONFIG_DETERMINISTIC = 1,
  HCCL_COMM_CONFIG_COMM_NAME = 2,
  HCCL_COMM_CONFIG_OP_EXPANSION_MODE = 3,
  HCCL_COMM_CONFIG_SUPPORT_INIT_BY_ENV = 4,
  HCCL_COMM_CONFIG_WORLD_RANKID = 5,
  HCCL_COMM_CONFIG_JOBID = 6,
  HCCL_COMM_CONFIG_ACLGRAPH_ZEROCOPY_ENABLE = 7,
  HCCL_COMM_CONFIG_EXEC_TIMEOUT = 8,
  HCCL_COMM_CONFIG_ALGO = 9,
  HCCL_COMM_CONFIG_RETRY = 10,
  HCCL_COMM_CONFIG_BUFFER_NAME = 11,
  HCCL_COMM_CONFIG_RESERVED
} HcclCommConfigCapability;

typedef enum { HCCL_SEND = 0, HCCL_RECV = 1, HCCL_SEND_RECV_RESERVED } HcclSendRecvType;

typedef struct HcclSendRecvItemDef {
  HcclSendRecvType sendRecvType;
  void* buf;
  uint64_t count;
  HcclDataType dataType;
  uint32_t remoteRank;
} HcclSendRecvItem;

typedef enum {
  HCCL_CMD_INVALID = 0,
  HCCL_CMD_BROADCAST = 1,
  HCCL_CMD_ALLREDUCE = 2,
  HCCL_CMD_REDUCE = 3,
  HCCL_CMD_SEND = 4,
  HCCL_CMD_RECEIVE = 5,
  HCCL_CMD_ALLGATHER = 6,
  HCCL_CMD_REDUCE_SCATTER = 7,
  HCCL_CMD_ALLTOALLV = 8,
  HCCL_CMD_ALLTOALLVC = 9,
  HCCL_CMD_ALLTOALL = 10,
  HCCL_CMD_GATHER = 11,
  HCCL_CMD_SCATTER = 12,
  HCCL_CMD_BATCH_SEND_RECV = 13,
  HCCL_CMD_BATCH_PUT = 14,
  HCCL_CMD_BATCH_GET = 15,
  HCCL_CMD_ALLGATHER_V = 16,
  HCCL_CMD_REDUCE_SCATTER_V = 17,
  HCCL_CMD_BATCH_WRITE = 18,
  HCCL_CMD_HALF_ALLTOALLV = 20,
  HCCL_CMD_ALL = 21,
  HCCL_CMD_FINALIZE = 100,
  HCCL_CMD_INTER_GROUP_SYNC = 101,
  HCCL_CMD_INIT = 102,
  HCCL_CMD_BARRIER = 103,
  HCCL_CMD_MAX
} HcclCMDType;

/* HcclCommGetStatus. */
typedef enum {
  HCCL_COMM_STATUS_READY = 0,
  HCCL_COMM_STATUS_SUSPENDING = 1,
  HCCL_COMM_STATUS_INVALID = 254,
  HCCL_COMM_STATUS_RESERVED = 255
} HcclCommStatus;

/* When a callback of HcclCommRegCommStateCallback is called. */
typedef enum {
  HCCL_COMM_STATE_PHASE_INVALID = -1,
  HCCL_COMM_STATE_PHASE_DESTROY_PRE = 0,  /* HcclCommDestroy, before the communicator goes */
  HCCL_COMM_STATE_PHASE_DESTROY_POST = 1, /* HcclCommDestroy, after */
  HCCL_COMM_STATE_PHASE_RESUME_PRE = 2,   /* HcclCommResume, before the communicator resumes */
  HCCL_COMM_STATE_PHASE_RESUME_POST = 3   /* HcclCommResume, after */
} HcclCommStatePhase;

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_HCCL_TYPES_H_ */
