// What one collective call asks for, as the communicator executes it and DFX records it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithm/collective.h"
#include "common/time_util.h"
#include "hccl/hccl_types.h"

namespace vigil::comm {

enum class OpType {
  kAllReduce,
  kBroadcast,
  kAllGather,
  kAllGatherV,
  kReduceScatter,
  kReduceScatterV,
  kReduce,
  kScatter,
  kAlltoAll,
  kAlltoAllV,
  kAlltoAllVC,
  kSend,
  kRecv,
  kBatchSendRecv,
  kBarrier,
};

// "AllReduce", "AllGather", ... as HCCL names ops in tags (AllReduce_<identifier>).
std::string_view OpTypeName(OpType type);
// HCCL's HcclCMDType number of the op (BroadCast 1, AllReduce 2, Reduce 3, Send 4, Receive 5,
// AllGather 6, ReduceScatter 7, AlltoAllV 8, AlltoAllVC 9, AlltoAll 10, Scatter 12,
// BatchSendRecv 13, AllGatherV 16, ReduceScatterV 17), as its "CMD information cmdType" line
// prints it; 0 (HCCL_CMD_INVALID) for Barrier, which HCCL has no command of its own for.
uint32_t HcclCmdType(OpType type);
// Inline: every op's fingerprint asks (comm/consistency.h).
inline bool OpHasReduce(OpType type) {
  return type == OpType::kAllReduce || type == OpType::kReduceScatter ||
         type == OpType::kReduceScatterV || type == OpType::kReduce;
}
inline bool OpHasRoot(OpType type) {
  return type == OpType::kBroadcast || type == OpType::kReduce || type == OpType::kScatter;
}

// The per-rank counts of the V ops and AlltoAll(V/VC) (elements, one per rank).
struct OpLists {
  std::vector<uint64_t> send_counts, send_displs, recv_counts, recv_displs;
  std::vector<uint64_t> count_matrix;  // AlltoAllVC: the whole nranks x nranks matrix
};

struct OpDesc {
  OpType type = OpType::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  uint64_t count = 0;  // the API's count argument (sendCount/recvCount as the op defines it)
  HcclDataType dtype = HCCL_DATA_TYPE_FP32;
  HcclDataType recv_dtype = HCCL_DATA_TYPE_FP32;  // AlltoAll(V/VC)
  HcclReduceOp reduce = HCCL_REDUCE_SUM;
  uint32_t root = 0;  // root, or peer rank for Send/Recv
  std::vector<alg::P2pItem> items;  // Send, Recv, BatchSendRecv

  // The per-rank counts (empty when the op has none).
  const OpLists& lists() const { return lists_ ? *lists_ : kNoLists; }
  OpLists& mutable_lists() {
    if (!lists_) lists_ = std::make_unique<OpLists>();
    return *lists_;
  }

 private:
  static inline const OpLists kNoLists{};
  // Made only by the ops that have per-rank counts: the common collectives' op moves into its
  // stream task as a few words (five more vectors in place cost ~100 instructions per op to
  // build, move and free).
  std::unique_ptr<OpLists> lists_;
};

inline constexpr size_t kOpTypeCount = static_cast<size_t>(OpType::kBarrier) + 1;
// Op observers (comm/op_observer.h) a process may register.
inline constexpr size_t kMaxOpObservers = 8;

// What every op of one communicator shares, made once when the communicator is created and
// never changed after: an op's record points here instead of copying its strings (four heap
// allocations per op). Records hold it by shared_ptr, so it outlives a destroyed communicator
// as long as DFX keeps one of its ops (task exceptions, flight recorder, async error).
struct CommInfo {
  std::string identifier;  // communicator identifier (group)
  std::string user_name;   // hcclCommName / user define information
  uint32_t rank = 0;
  uint32_t nranks = 0;
  int32_t device = 0;
  std::array<std::string, kOpTypeCount> tags;  // "AllReduce_<identifier>", by OpType
  // AlgType strings ("fullmesh-null-null": level0-level1-level2) an op may name, indexed as
  // OpRecord::alg_type_index says: the flat algorithms, then every hierarchical plan.
  std::vector<std::string> alg_types;
  // One slot per registered observer, for its own per-communicator state (found in O(1) per
  // op instead of a map lookup by identifier). Slot i belongs to observer i alone, which reads
  // and writes it only under its own lock; comm never looks inside.
  mutable std::array<std::shared_ptr<void>, kMaxOpObservers> observer_state;
};

// Everything DFX needs to name an op later: entry log, task exception, flight recorder.
// Copying one allocates nothing (the strings live in CommInfo).
struct OpRecord {
  std::shared_ptr<const CommInfo> comm;  // set for every record a communicator made
  OpType type = OpType::kAllReduce;
  uint32_t alg_type_index = 0;  // into comm->alg_types
  uint64_t index = 0;      // op sequence number in the communicator, from 1
  uint64_t count = 0;
  HcclDataType dtype = HCCL_DATA_TYPE_FP32;
  HcclReduceOp reduce = HCCL_REDUCE_SUM;
  uint32_t root = 0;
  const void* src = nullptr;
  const void* dst = nullptr;
  uint32_t stream_id = 0;
  uint32_t task_id = 0;
  int32_t device = 0;
  uint32_t rank = 0;
  uint32_t nranks = 0;
  const void* comm_handle = nullptr;
  WallClock::time_point enqueue_time;

  const std::string& tag() const { return comm->tags[static_cast<size_t>(type)]; }
  const std::string& identifier() const { return comm->identifier; }
  const std::string& user_name() const { return comm->user_name; }
  const std::string& alg_type() const { return comm->alg_types[alg_type_index]; }
};

// How an op failed, for the task-exception report.
struct OpFailure {
  enum class Kind {
    kTimeout,
    kLink,
    kAbort,
    kCopyFault,
    kParam,
    kResource,
    kOther
  } kind = Kind::kOther;
  HcclResult code = HCCL_E_INTERNAL;
  int64_t remote_rank = -1;  // the peer the op was waiting on or talking to, -1 unknown
  std::string reason;
  // kCopyFault: the SDMA-like copy that hit unmapped/freed memory.
  const void* copy_src = nullptr;
  const void* copy_dst = nullptr;
  size_t copy_bytes = 0;
  std::string link_type;       // "SHM", "TCP", or "" for a local copy
  std::string faulting_buffer; // "CCL buffer", "user output buffer", ...
  // Both ends, for link errors (EI0013) and the report.
  std::string local_ip;
  int32_t local_device = -1;
  std::string remote_ip;
  int32_t remote_device = -1;
};

// One step of an op retry (comm/op_retry.h), for the flight recorder and logs.
struct RetryEvent {
  enum class Kind { kBegin, kRecovered, kFailed } kind = Kind::kBegin;
  uint32_t attempt = 0;   // kBegin: the attempt that failed; else attempts made in all
  uint32_t max_cnt = 0;   // HCCL_OP_RETRY_PARAMS MaxCnt
  uint32_t epoch = 0;     // the links' epoch after it
  uint32_t end_a = 0;     // the broken link's ends
  uint32_t end_b = 0;
  uint32_t origin = 0;    // the rank that started the retry
  WallClock::time_point time;
  uint64_t lost_us = 0;   // kRecovered / kFailed: from the first failure to the end
  std::string reason;
};

}  // namespace vigil::comm
