// Collective and point-to-point calls of hccl/hccl.h: argument checks, then the op is handed to
// the communicator, which queues it on the stream. Every bad argument returns its HCCL code with
// exactly one ERROR line naming it; nothing is queued then.
#include <limits>
#include <numeric>

#include "api/hccl_api_util.h"
#include "api/hccl_capture.h"
#include "api/hccl_group.h"
#include "common/dtype.h"
#include "log/plog.h"

using vigil::api::ArgError;
using vigil::comm::OpDesc;
using vigil::comm::OpType;

namespace {

// Largest byte count one op may name: keeps every size computation inside uint64_t.
constexpr uint64_t kMaxBytes = 1ull << 48;

struct Checked {
  std::shared_ptr<vigil::comm::Communicator> comm;
  vigil::rt::Stream* stream = nullptr;
};

class OpChecker {
 public:
  explicit OpChecker(const char* api) : api_(api) {}

  // Inline in every API function, its error lines out of line (Fail): every op runs it.
  [[gnu::always_inline]] HcclResult Common(HcclComm comm, aclrtStream stream, Checked* out) {
    if (HcclResult rc = vigil::api::EnsureProcessReady(api_); rc != HCCL_SUCCESS) return rc;
    out->comm = vigil::api::LookupComm(comm);
    if (!out->comm) [[unlikely]] return Fail(HCCL_E_PARA, "comm is null, destroyed or unknown");
    if (out->comm->suspended()) [[unlikely]] {
      return Fail(HCCL_E_SUSPENDING, "communicator is suspended (HcclCommSuspend): call "
                                     "HcclCommResume before queuing ops");
    }
    if (stream == nullptr) [[unlikely]] return Fail(HCCL_E_PARA, "stream is nullptr");
    out->stream = vigil::rt::StreamFromHandle(stream);
    if (out->stream == nullptr) [[unlikely]] {
      return Fail(HCCL_E_PARA, "stream is unknown or destroyed");
    }
    return HCCL_SUCCESS;
  }

  HcclResult Type(HcclDataType type, const char* name = "dataType") {
    if (!vigil::IsSupportedDataType(type)) {
      return ArgError(api_, HCCL_E_PARA,
                      fmt::format("{}[{}] is not supported", name, static_cast<int>(type)));
    }
    return HCCL_SUCCESS;
  }

  HcclResult Reduce(HcclReduceOp op, HcclDataType type) {
    if (!vigil::IsSupportedReduceOp(op)) {
      return ArgError(api_, HCCL_E_PARA, fmt::format("op[{}] is not supported", static_cast<int>(op)));
    }
    (void)type;
    return HCCL_SUCCESS;
  }

  HcclResult Ptr(const void* p, const char* name, bool needed) {
    if (needed && p == nullptr) {
      return ArgError(api_, HCCL_E_PTR, fmt::format("ptr [{}] is nullptr", name));
    }
    return HCCL_SUCCESS;
  }

  // count * elem_size * multiplier must stay within kMaxBytes.
  HcclResult Count(uint64_t count, HcclDataType type, uint32_t multiplier, const char* name) {
    const uint64_t sz = vigil::DataTypeSize(type);
    if (sz == 0) return HCCL_SUCCESS;
    // count > kMaxBytes / sz / multiplier, without the two divisions (sz * multiplier < 2^36).
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, sz * std::max<uint32_t>(multiplier, 1), &bytes) ||
        bytes > kMaxBytes) {
      return ArgError(api_, HCCL_E_PARA,
                      fmt::format("{}[{}] is too large: {} x {} bytes x {} overflows the {}-byte "
                                  "limit",
                                  name, count, count, sz, multiplier, kMaxBytes));
    }
    return HCCL_SUCCESS;
  }

  HcclResult Root(uint32_t root, uint32_t nranks, const char* name = "root") {
    if (root >= nranks) {
      return ArgError(api_, HCCL_E_PARA,
                      fmt::format("{}[{}] is invalid: expected < rankSize[{}]", name, root, nranks));
    }
    return HCCL_SUCCESS;
  }

  // Hands the op and c's reference to the communicator over (the op's task keeps it).
  HcclResult Enqueue(Checked& c, OpDesc&& op, HcclComm handle) {
    if (vigil::api::InGroup()) [[unlikely]] {  // queued (or captured) at HcclGroupEnd
      vigil::api::DeferOp(std::move(c.comm), std::move(op), c.stream, handle);
      return HCCL_SUCCESS;
    }
    if (c.stream->Recording()) [[unlikely]] {  // graph capture: recorded for replays
      return vigil::api::CaptureOp(std::move(c.comm), std::move(op), c.stream, handle);
    }
    HcclResult rc =
        vigil::comm::Communicator::Enqueue(std::move(c.comm), std::move(op), c.stream, handle,
                                           /*may_inline=*/true);
    if (rc != HCCL_SUCCESS) [[unlikely]] return Fail(rc, "communicator was destroyed");
    return HCCL_SUCCESS;
  }

  // ArgError out of the hot paths.
  [[gnu::noinline, gnu::cold]] HcclResult Fail(HcclResult code, const char* what) {
    return ArgError(api_, code, what);
  }

  const char* api() const { return api_; }

 private:
  const char* api_;
};

#define VIGIL_CHECK(expr)                        \
  do {                                           \
    HcclResult vigil_rc_ = (expr);               \
    if (vigil_rc_ != HCCL_SUCCESS) return vigil_rc_; \
  } while (0)

// Reads a per-rank uint64 array and checks the total stays in range.
HcclResult ReadCounts(OpChecker& ck, const void* arr, uint32_t n, const char* name,
                      HcclDataType type, std::vector<uint64_t>* out) {
  VIGIL_CHECK(ck.Ptr(arr, name, true));
  const auto* p = static_cast<const uint64_t*>(arr);
  out->assign(p, p + n);
  for (uint32_t i = 0; i < n; ++i) {
    VIGIL_CHECK(ck.Count((*out)[i], type, n, name));
  }
  return HCCL_SUCCESS;
}

std::vector<uint64_t> PrefixDispls(const std::vector<uint64_t>& counts) {
  std::vector<uint64_t> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

// The six collectives with one buffer pair and one count differ only in which checks apply:
// one table row each, one check sequence (so every API reports the same way, in the same order).
enum class Need { kAlways, kAtRoot, kNever };

struct SimpleOp {
  const char* api;
  OpType type;
  const char* count_name;
  bool reduce;          // takes a reduce op
  bool rooted;          // takes a root rank
  bool count_per_rank;  // the other buffer holds count x rankSize elements
  const char* send_name;
  Need send_need;
  const char* recv_name;  // nullptr: one buffer (in place by definition)
  Need recv_need;
};

// Inline into each API function, so that the checks its spec leaves out fold away.
[[gnu::always_inline]] inline HcclResult RunSimpleOp(const SimpleOp& spec, void* send, void* recv,
                                                     uint64_t count, HcclDataType type,
                                                     HcclReduceOp op, uint32_t root,
                                                     HcclComm comm, aclrtStream stream) {
  OpChecker ck(spec.api);
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Type(type));
  if (spec.reduce) VIGIL_CHECK(ck.Reduce(op, type));
  if (spec.rooted) VIGIL_CHECK(ck.Root(root, c.comm->size()));
  VIGIL_CHECK(ck.Count(count, type, spec.count_per_rank ? c.comm->size() : 1, spec.count_name));
  if (count == 0) return HCCL_SUCCESS;
  const bool at_root = c.comm->rank() == root;
  auto needed = [&](Need n) { return n == Need::kAlways || (n == Need::kAtRoot && at_root); };
  VIGIL_CHECK(ck.Ptr(send, spec.send_name, needed(spec.send_need)));
  if (spec.recv_name != nullptr) VIGIL_CHECK(ck.Ptr(recv, spec.recv_name, needed(spec.recv_need)));
  OpDesc d;
  d.type = spec.type;
  d.send = send;
  d.recv = recv;
  d.count = count;
  d.dtype = type;
  if (spec.reduce) d.reduce = op;
  if (spec.rooted) d.root = root;
  return ck.Enqueue(c, std::move(d), comm);
}

// AllGatherV and ReduceScatterV mirror each other: the per-rank counts describe the receive side
// of the one and the send side of the other; this rank's own count must match its entry.
struct VOp {
  const char* api;
  OpType type;
  bool reduce;            // ReduceScatterV: the counts are the send side's
  const char* count_name;   // this rank's count
  const char* counts_name;  // the per-rank counts
  const char* displs_name;
};

HcclResult RunVOp(const VOp& spec, void* send, void* recv, uint64_t count, const void* counts,
                  const void* displs, HcclDataType type, HcclReduceOp op, HcclComm comm,
                  aclrtStream stream) {
  OpChecker ck(spec.api);
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Type(type));
  if (spec.reduce) VIGIL_CHECK(ck.Reduce(op, type));
  const uint32_t n = c.comm->size();
  OpDesc d;
  vigil::comm::OpLists& lists = d.mutable_lists();
  std::vector<uint64_t>& v_counts = spec.reduce ? lists.send_counts : lists.recv_counts;
  std::vector<uint64_t>& v_displs = spec.reduce ? lists.send_displs : lists.recv_displs;
  VIGIL_CHECK(ReadCounts(ck, counts, n, spec.counts_name, type, &v_counts));
  VIGIL_CHECK(ReadCounts(ck, displs, n, spec.displs_name, type, &v_displs));
  VIGIL_CHECK(ck.Count(count, type, 1, spec.count_name));
  const uint32_t me = c.comm->rank();
  if (v_counts[me] != count) {
    return ArgError(ck.api(), HCCL_E_PARA,
                    fmt::format("{}[{}] differs from {}[{}]={}", spec.count_name, count,
                                spec.counts_name, me, v_counts[me]));
  }
  const uint64_t total = std::accumulate(v_counts.begin(), v_counts.end(), uint64_t{0});
  VIGIL_CHECK(ck.Ptr(send, "sendBuf", spec.reduce ? total > 0 : count > 0));
  VIGIL_CHECK(ck.Ptr(recv, "recvBuf", spec.reduce ? count > 0 : total > 0));
  d.type = spec.type;
  d.send = send;
  d.recv = recv;
  d.count = count;
  d.dtype = type;
  if (spec.reduce) d.reduce = op;
  return ck.Enqueue(c, std::move(d), comm);
}

// HcclAlltoAllV and HcclAlltoAllVC once d holds their count lists: the buffers checked against
// the totals (a rank that sends or receives nothing may pass null), then the op queued.
HcclResult EnqueueAlltoAllV(OpChecker& ck, Checked& c, OpDesc&& d, OpType type,
                            const void* sendBuf, HcclDataType sendType, const void* recvBuf,
                            HcclDataType recvType, HcclComm comm) {
  const vigil::comm::OpLists& lists = d.lists();
  const uint64_t sent =
      std::accumulate(lists.send_counts.begin(), lists.send_counts.end(), uint64_t{0});
  const uint64_t recvd =
      std::accumulate(lists.recv_counts.begin(), lists.recv_counts.end(), uint64_t{0});
  VIGIL_CHECK(ck.Ptr(sendBuf, "sendBuf", sent > 0));
  VIGIL_CHECK(ck.Ptr(recvBuf, "recvBuf", recvd > 0));
  d.type = type;
  d.send = sendBuf;
  d.recv = const_cast<void*>(recvBuf);
  d.count = sent;
  d.dtype = sendType;
  d.recv_dtype = recvType;
  return ck.Enqueue(c, std::move(d), comm);
}

}  // namespace

extern "C" {

HcclResult HcclAllReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType,
                         HcclReduceOp op, HcclComm comm, aclrtStream stream) {
  static constexpr SimpleOp kSpec{"HcclAllReduce", OpType::kAllReduce, "count", true, false, false,
                                  "sendBuf", Need::kAlways, "recvBuf", Need::kAlways};
  return RunSimpleOp(kSpec, sendBuf, recvBuf, count, dataType, op, 0, comm, stream);
}

HcclResult HcclBroadcast(void* buf, uint64_t count, HcclDataType dataType, uint32_t root,
                         HcclComm comm, aclrtStream stream) {
  static constexpr SimpleOp kSpec{"HcclBroadcast", OpType::kBroadcast, "count", false, true, false,
                                  "buf", Need::kAlways, nullptr, Need::kNever};
  return RunSimpleOp(kSpec, buf, buf, count, dataType, HCCL_REDUCE_SUM, root, comm, stream);
}

HcclResult HcclAllGather(void* sendBuf, void* recvBuf, uint64_t sendCount, HcclDataType dataType,
                         HcclComm comm, aclrtStream stream) {
  static constexpr SimpleOp kSpec{"HcclAllGather", OpType::kAllGather, "sendCount", false, false,
                                  true, "sendBuf", Need::kAlways, "recvBuf", Need::kAlways};
  return RunSimpleOp(kSpec, sendBuf, recvBuf, sendCount, dataType, HCCL_REDUCE_SUM, 0, comm,
                     stream);
}

HcclResult HcclReduceScatter(void* sendBuf, void* recvBuf, uint64_t recvCount,
                             HcclDataType dataType, HcclReduceOp op, HcclComm comm,
                             aclrtStream stream) {
  static constexpr SimpleOp kSpec{"HcclReduceScatter", OpType::kReduceScatter, "recvCount", true,
                                  false, true, "sendBuf", Need::kAlways, "recvBuf", Need::kAlways};
  return RunSimpleOp(kSpec, sendBuf, recvBuf, recvCount, dataType, op, 0, comm, stream);
}

HcclResult HcclReduce(void* sendBuf, void* recvBuf, uint64_t count, HcclDataType dataType,
                      HcclReduceOp op, uint32_t root, HcclComm comm, aclrtStream stream) {
  static constexpr SimpleOp kSpec{"HcclReduce", OpType::kReduce, "count", true, true, false,
                                  "sendBuf", Need::kAlways, "recvBuf", Need::kAtRoot};
  return RunSimpleOp(kSpec, sendBuf, recvBuf, count, dataType, op, root, comm, stream);
}

HcclResult HcclScatter(void* sendBuf, void* recvBuf, uint64_t recvCount, HcclDataType dataType,
                       uint32_t root, HcclComm comm, aclrtStream stream) {
  static constexpr SimpleOp kSpec{"HcclScatter", OpType::kScatter, "recvCount", false, true, true,
                                  "sendBuf", Need::kAtRoot, "recvBuf", Need::kAlways};
  return RunSimpleOp(kSpec, sendBuf, recvBuf, recvCount, dataType, HCCL_REDUCE_SUM, root, comm,
                     stream);
}

HcclResult HcclAllGatherV(void* sendBuf, uint64_t sendCount, void* recvBuf,
                          const void* recvCounts, const void* recvDispls, HcclDataType dataType,
                          HcclComm comm, aclrtStream stream) {
  static constexpr VOp kSpec{"HcclAllGatherV", OpType::kAllGatherV, false, "sendCount",
                             "recvCounts", "recvDispls"};
  return RunVOp(kSpec, sendBuf, recvBuf, sendCount, recvCounts, recvDispls, dataType,
                HCCL_REDUCE_SUM, comm, stream);
}

HcclResult HcclReduceScatterV(void* sendBuf, const void* sendCounts, const void* sendDispls,
                              void* recvBuf, uint64_t recvCount, HcclDataType dataType,
                              HcclReduceOp op, HcclComm comm, aclrtStream stream) {
  static constexpr VOp kSpec{"HcclReduceScatterV", OpType::kReduceScatterV, true, "recvCount",
                             "sendCounts", "sendDispls"};
  return RunVOp(kSpec, sendBuf, recvBuf, recvCount, sendCounts, sendDispls, dataType, op, comm,
                stream);
}

HcclResult HcclAlltoAll(const void* sendBuf, uint64_t sendCount, HcclDataType sendType,
                        const void* recvBuf, uint64_t recvCount, HcclDataType recvType,
                        HcclComm comm, aclrtStream stream) {
  OpChecker ck("HcclAlltoAll");
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Type(sendType, "sendType"));
  VIGIL_CHECK(ck.Type(recvType, "recvType"));
  const uint32_t n = c.comm->size();
  VIGIL_CHECK(ck.Count(sendCount, sendType, n, "sendCount"));
  VIGIL_CHECK(ck.Count(recvCount, recvType, n, "recvCount"));
  if (sendCount * vigil::DataTypeSize(sendType) != recvCount * vigil::DataTypeSize(recvType)) {
    return ArgError(ck.api(), HCCL_E_PARA,
                    fmt::format("sendCount[{}] x sendType size differs from recvCount[{}] x "
                                "recvType size",
                                sendCount, recvCount));
  }
  if (sendCount == 0) return HCCL_SUCCESS;
  VIGIL_CHECK(ck.Ptr(sendBuf, "sendBuf", true));
  VIGIL_CHECK(ck.Ptr(recvBuf, "recvBuf", true));
  OpDesc d;
  d.type = OpType::kAlltoAll;
  d.send = sendBuf;
  d.recv = const_cast<void*>(recvBuf);
  d.count = sendCount;
  d.dtype = sendType;
  d.recv_dtype = recvType;
  // Equal blocks: no per-rank lists (four vectors an op); the generic path makes them when it
  // runs the op, the direct slots of 2 ranks need none.
  return ck.Enqueue(c, std::move(d), comm);
}

HcclResult HcclAlltoAllV(const void* sendBuf, const void* sendCounts, const void* sdispls,
                         HcclDataType sendType, const void* recvBuf, const void* recvCounts,
                         const void* rdispls, HcclDataType recvType, HcclComm comm,
                         aclrtStream stream) {
  OpChecker ck("HcclAlltoAllV");
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Type(sendType, "sendType"));
  VIGIL_CHECK(ck.Type(recvType, "recvType"));
  const uint32_t n = c.comm->size();
  OpDesc d;
  vigil::comm::OpLists& lists = d.mutable_lists();
  VIGIL_CHECK(ReadCounts(ck, sendCounts, n, "sendCounts", sendType, &lists.send_counts));
  VIGIL_CHECK(ReadCounts(ck, sdispls, n, "sdispls", sendType, &lists.send_displs));
  VIGIL_CHECK(ReadCounts(ck, recvCounts, n, "recvCounts", recvType, &lists.recv_counts));
  VIGIL_CHECK(ReadCounts(ck, rdispls, n, "rdispls", recvType, &lists.recv_displs));
  return EnqueueAlltoAllV(ck, c, std::move(d), OpType::kAlltoAllV, sendBuf, sendType, recvBuf,
                          recvType, comm);
}

HcclResult HcclAlltoAllVC(const void* sendBuf, const void* sendCountMatrix, HcclDataType sendType,
                          const void* recvBuf, HcclDataType recvType, HcclComm comm,
                          aclrtStream stream) {
  OpChecker ck("HcclAlltoAllVC");
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Type(sendType, "sendType"));
  VIGIL_CHECK(ck.Type(recvType, "recvType"));
  const uint32_t n = c.comm->size();
  const uint32_t me = c.comm->rank();
  std::vector<uint64_t> matrix;
  VIGIL_CHECK(ReadCounts(ck, sendCountMatrix, n * n, "sendCountMatrix", sendType, &matrix));
  OpDesc d;
  vigil::comm::OpLists& lists = d.mutable_lists();
  // Row i: what rank i sends to each rank j (in sendType elements).
  for (uint32_t j = 0; j < n; ++j) lists.send_counts.push_back(matrix[me * n + j]);
  const size_t ssz = vigil::DataTypeSize(sendType), rsz = vigil::DataTypeSize(recvType);
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t bytes = matrix[i * n + me] * ssz;
    if (bytes % rsz != 0) {
      return ArgError(ck.api(), HCCL_E_PARA,
                      fmt::format("sendCountMatrix[{}][{}] bytes are not a whole number of "
                                  "recvType elements",
                                  i, me));
    }
    lists.recv_counts.push_back(bytes / rsz);
  }
  lists.send_displs = PrefixDispls(lists.send_counts);
  lists.recv_displs = PrefixDispls(lists.recv_counts);
  lists.count_matrix = std::move(matrix);
  return EnqueueAlltoAllV(ck, c, std::move(d), OpType::kAlltoAllVC, sendBuf, sendType, recvBuf,
                          recvType, comm);
}

HcclResult HcclBarrier(HcclComm comm, aclrtStream stream) {
  OpChecker ck("HcclBarrier");
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  OpDesc d;
  d.type = OpType::kBarrier;
  return ck.Enqueue(c, std::move(d), comm);
}

static HcclResult PointToPoint(const char* api, bool send, void* buf, uint64_t count,
                               HcclDataType dataType, uint32_t peer, HcclComm comm,
                               aclrtStream stream) {
  OpChecker ck(api);
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Type(dataType));
  VIGIL_CHECK(ck.Root(peer, c.comm->size(), send ? "destRank" : "srcRank"));
  if (peer == c.comm->rank()) {
    return ArgError(api, HCCL_E_PARA,
                    fmt::format("{}[{}] is this rank itself", send ? "destRank" : "srcRank", peer));
  }
  VIGIL_CHECK(ck.Count(count, dataType, 1, "count"));
  if (count == 0) return HCCL_SUCCESS;
  VIGIL_CHECK(ck.Ptr(buf, send ? "sendBuf" : "recvBuf", true));
  OpDesc d;
  d.type = send ? OpType::kSend : OpType::kRecv;
  d.send = send ? buf : nullptr;
  d.recv = send ? nullptr : buf;
  d.count = count;
  d.dtype = dataType;
  d.root = peer;
  d.items.push_back({send, buf, count, dataType, peer});
  return ck.Enqueue(c, std::move(d), comm);
}

HcclResult HcclSend(void* sendBuf, uint64_t count, HcclDataType dataType, uint32_t destRank,
                    HcclComm comm, aclrtStream stream) {
  return PointToPoint("HcclSend", true, sendBuf, count, dataType, destRank, comm, stream);
}

HcclResult HcclRecv(void* recvBuf, uint64_t count, HcclDataType dataType, uint32_t srcRank,
                    HcclComm comm, aclrtStream stream) {
  return PointToPoint("HcclRecv", false, recvBuf, count, dataType, srcRank, comm, stream);
}

HcclResult HcclBatchSendRecv(HcclSendRecvItem* sendRecvInfo, uint32_t itemNum, HcclComm comm,
                             aclrtStream stream) {
  OpChecker ck("HcclBatchSendRecv");
  Checked c;
  VIGIL_CHECK(ck.Common(comm, stream, &c));
  VIGIL_CHECK(ck.Ptr(sendRecvInfo, "sendRecvInfo", itemNum > 0));
  OpDesc d;
  d.type = OpType::kBatchSendRecv;
  for (uint32_t i = 0; i < itemNum; ++i) {
    const HcclSendRecvItem& it = sendRecvInfo[i];
    const std::string where = fmt::format("sendRecvInfo[{}]", i);
    if (it.sendRecvType != HCCL_SEND && it.sendRecvType != HCCL_RECV) {
      return ArgError(ck.api(), HCCL_E_PARA,
                      fmt::format("{}.sendRecvType[{}] is invalid", where,
                                  static_cast<int>(it.sendRecvType)));
    }
    VIGIL_CHECK(ck.Type(it.dataType, "dataType"));
    VIGIL_CHECK(ck.Root(it.remoteRank, c.comm->size(), "remoteRank"));
    VIGIL_CHECK(ck.Count(it.count, it.dataType, 1, "count"));
    VIGIL_CHECK(ck.Ptr(it.buf, "buf", it.count > 0));
    if (it.count == 0) continue;
    d.items.push_back({it.sendRecvType == HCCL_SEND, it.buf, it.count, it.dataType, it.remoteRank});
    d.count += it.count;
  }
  // Items to this rank itself are a local copy, as in HCCL: its k-th send to itself goes to its
  // k-th receive from itself, which must be as long and of the same type.
  std::vector<const vigil::alg::P2pItem*> self_sends, self_recvs;
  for (const auto& item : d.items) {
    if (item.peer == c.comm->rank()) (item.send ? self_sends : self_recvs).push_back(&item);
  }
  if (self_sends.size() != self_recvs.size()) {
    return ArgError(ck.api(), HCCL_E_PARA,
                    fmt::format("{} send(s) and {} receive(s) address this rank itself: each "
                                "send to itself needs a receive from itself",
                                self_sends.size(), self_recvs.size()));
  }
  for (size_t k = 0; k < self_sends.size(); ++k) {
    const auto& s = *self_sends[k];
    const auto& r = *self_recvs[k];
    if (s.count != r.count || s.type != r.type) {
      return ArgError(
          ck.api(), HCCL_E_PARA,
          fmt::format("send {} to this rank itself (count[{}], dataType[{}]) differs "
                      "from its receive {} (count[{}], dataType[{}])",
                      k, s.count, static_cast<int>(s.type), k, r.count, static_cast<int>(r.type)));
    }
  }
  if (d.items.empty()) return HCCL_SUCCESS;
  d.dtype = d.items.front().type;
  return ck.Enqueue(c, std::move(d), comm);
}

}  // extern "C"
