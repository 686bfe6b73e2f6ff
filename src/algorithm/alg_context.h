// What every algorithm file shares: one op's context (group, scratch, dtype, result) with the
// three things an algorithm does — post transfers and run them (Send/Recv/Flush), copy
// (CheckedCopy) and reduce (Guarded) — each filling AlgResult on failure.
//
// Protocol rule: both ends of a link compute the same piece sizes from (count, nranks,
// scratch.bytes), so the byte streams line up without headers. Ranks of one comm therefore need
// the same scratch size (the CCL buffer size), as HCCL requires.
//
// Data that needs no reduction is received straight into the user's buffer: its whole range was
// checked against the device-memory map when the op began (CheckUser), so a freed or too small
// user buffer fails there with AlgResult::copy filled, before any byte moves.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "algorithm/collective.h"

namespace vigil::alg::detail {

// Largest piece moved per Flush when staging through scratch: keeps a received piece in cache
// for its reduction and lets the sender fill the link while the receiver reduces.
constexpr size_t kMaxPieceBytes = 1u << 20;

// Whether [a, a+an) and [b, b+bn) do not overlap.
inline bool RangesApart(const void* a, size_t an, const void* b, size_t bn) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x + an <= y || y + bn <= x;
}

// The bytes a V-form buffer of p blocks spans from its start (counts and displs in elements).
inline uint64_t ByteExtent(const uint64_t* counts, const uint64_t* displs, uint32_t p, size_t es) {
  uint64_t end = 0;
  for (uint32_t i = 0; i < p; ++i) {
    if (counts[i] > 0) end = std::max<uint64_t>(end, (displs[i] + counts[i]) * es);
  }
  return end;
}

// count elements split into n blocks; the first count % n blocks get one extra element.
struct Blocks {
  uint64_t base;
  uint64_t rem;
  Blocks(uint64_t count, uint32_t n) : base(count / n), rem(count % n) {}
  uint64_t Off(uint64_t i) const { return i * base + std::min<uint64_t>(i, rem); }
  uint64_t Len(uint64_t i) const { return base + (i < rem ? 1 : 0); }
};

// min(max(len - off, 0), piece): the part of a block covered by the piece starting at off.
inline uint64_t Clip(uint64_t len, uint64_t off, uint64_t piece) {
  return len > off ? std::min<uint64_t>(len - off, piece) : 0;
}

class Ctx {
 public:
  Ctx(Group& g, Scratch scratch, AlgResult* result, HcclDataType type,
      HcclReduceOp op = HCCL_REDUCE_SUM);
  ~Ctx();
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;

  // Validates the group, dtype, op (when `reduces`) and that scratch is not freed device memory.
  HcclResult Begin(bool reduces);

  uint32_t rank() const { return g_.rank; }
  uint32_t size() const { return g_.size; }
  size_t esize() const { return esize_; }
  HcclDataType type() const { return type_; }

  // Scratch split into `slots` equal, 64-byte aligned slots: elements per slot (0 if too small).
  uint64_t PieceElems(uint32_t slots) const;
  char* Slot(uint32_t i) const { return static_cast<char*>(scratch_.base) + i * slot_bytes_; }

  // Posts a transfer for the next Flush (zero bytes: nothing). At most one send and one recv
  // per peer between Flushes, so no link carries two streams at once. Inline, as LinkTo: an
  // algorithm posts a few per peer and op.
  void Send(uint32_t peer, const void* buf, size_t bytes) {
    if (bytes == 0) return;
    transport::Xfer& x = xfers_.emplace_back();
    x.link = LinkTo(peer);
    x.send = true;
    x.buf = const_cast<void*>(buf);
    x.bytes = bytes;
    x.hook_arg = peer;
    x.lend = lend_;
  }
  void Recv(uint32_t peer, void* buf, size_t bytes) {
    if (bytes == 0) return;
    transport::Xfer& x = xfers_.emplace_back();
    x.link = LinkTo(peer);
    x.buf = buf;
    x.bytes = bytes;
    x.hook_arg = peer;
  }
  // From now on sends may be lent (transport::Xfer::lend: the peer reads them in place, one
  // copy instead of two on shm). Only for algorithms whose every Flush pairs each send with
  // the peer's receive in its same Flush, since a lent send completes only as it is read.
  void LendSends() { lend_ = true; }
  // Whether every link of the group lends messages of `bytes` (link capabilities may differ
  // between ranks: only for choices that keep each link's byte stream the same either way).
  bool AllLinksLend(size_t bytes) const;
  // Whether every link of the group is shared memory (both ends of a link agree on its type, so
  // every rank of a group on one host decides alike).
  bool AllLinksShm() const;
  // Runs the posted transfers to completion (transport::Progress with the group's WaitPolicy).
  HcclResult Flush();

  // Checked memcpy; no-op for dst == src or bytes == 0.
  HcclResult Copy(void* dst, const void* src, size_t bytes);
  // The same copy, made during the next Flush while its transfers wait on their links (piece
  // by piece, the links first), and finished by that Flush: over links that are not memory
  // (TCP), a local block no longer holds the wire idle for as long as it takes to copy. dst
  // and src must not be a buffer of the Flush's transfers. One per Flush.
  void CopyDuringFlush(void* dst, const void* src, size_t bytes);
  // dst (op)= src and dst = a (op) b under the device-memory guard. `a` is usually user memory
  // checked at op start, `b` the scratch slot just received.
  HcclResult ReduceInto(void* dst, const void* src, uint64_t count);
  HcclResult Reduce2(void* dst, const void* a, const void* b, uint64_t count);
  // dst = own (op) Slot(0) (op) ... (op) Slot(nslots-1), count elements each, in that order
  // (bitwise what Reduce2 then ReduceInto per slot give) but in one pass over dst.
  HcclResult ReduceSlots(void* dst, const void* own, uint32_t nslots, uint64_t count);
  // Fails (HCCL_E_RUNTIME, AlgResult::copy) when [p, p+bytes) is freed or overruns its allocation.
  // Nothing to do when the layer above checked the op's ranges (Group::ranges_checked_at).
  HcclResult CheckUser(const void* p, size_t bytes, bool is_dst) {
    if (bytes == 0 || p == nullptr || g_.ranges_checked_at != 0) return HCCL_SUCCESS;
    return CheckUserSlow(p, bytes, is_dst);
  }

  HcclResult Fail(HcclResult code, const char* reason);
  AlgResult* result() { return result_; }

 private:
  transport::Link* LinkTo(uint32_t peer) {
    transport::Link* link = peer < g_.links.size() ? g_.links[peer] : nullptr;
    if (link == nullptr && bad_peer_ == UINT32_MAX) bad_peer_ = peer;
    return link;
  }
  // Puts the group's op header on the transfers of this Flush that need it (see OpHeader).
  void AttachHeader();
  // Appends this Flush's transfers to the group's task log (HCCL_DIAGNOSE_ENABLE=1).
  void RecordTasks(HcclResult rc);
  // Moves this Flush's sends ahead of its receives (Progress offers them in order).
  void SendsFirst();
  HcclResult CheckUserSlow(const void* p, size_t bytes, bool is_dst);
  // Runs `work`, which writes dst_bytes at dst and reads src_bytes at src, guarded against device
  // memory freed under it; a fault is the op's failed copy (AlgResult::copy) and HCCL_E_RUNTIME.
  template <typename Work>
  HcclResult Guarded(void* dst, size_t dst_bytes, const void* src, size_t src_bytes, Work&& work);
  // Whether this op's header still has to go to (send) or come from `peer`; marks it done.
  bool MarkHeader(bool send, uint32_t peer) {
    if (g_.size <= 64) {
      uint64_t& bits = send ? hdr_sent_bits_ : hdr_recv_bits_;
      const uint64_t bit = uint64_t{1} << peer;
      if ((bits & bit) != 0) return false;
      bits |= bit;
      return true;
    }
    std::vector<uint8_t>& marks = send ? hdr_sent_ : hdr_recv_;
    if (marks[peer] != 0) return false;
    marks[peer] = 1;
    return true;
  }

  // The op's bookkeeping vectors. The thread's spare set (Spare) is lent to its outermost Ctx,
  // with the capacity of earlier ops: an op allocates nothing for them. A Ctx nested in another
  // on the thread uses its own (own_).
  struct Storage {
    std::vector<transport::Xfer> xfers;
    std::vector<transport::Xfer> recvs;  // SendsFirst's
    std::vector<uint8_t> hdr_sent, hdr_recv;
    std::vector<char> theirs;
    bool lent = false;
  };
  static Storage& Spare();
  static Storage* Borrow(Storage* own);

  Group& g_;
  Scratch scratch_;
  AlgResult* result_;
  std::optional<AlgResult> dummy_;  // the result when the caller passes none
  HcclDataType type_;
  HcclReduceOp op_;
  size_t esize_;
  mutable size_t slot_bytes_ = 0;
  uint32_t bad_peer_ = UINT32_MAX;  // a Send/Recv named a peer without a link
  bool lend_ = false;
  Storage own_;
  Storage* storage_;  // the thread's spare set, or own_
  std::vector<transport::Xfer>& xfers_;
  // CopyDuringFlush's copy (bytes 0: none), a transport::IdleWork for Progress.
  struct LateCopy : transport::IdleWork {
    Ctx* ctx = nullptr;
    char* dst = nullptr;
    const char* src = nullptr;
    size_t bytes = 0;
    size_t done = 0;
    HcclResult rc = HCCL_SUCCESS;
    bool Step() override;
  };
  LateCopy late_copy_;
  // Op header state per member: sent to / received from it yet (bits up to 64 members, else
  // the vectors), and where theirs lands.
  bool hdr_started_ = false;
  uint64_t hdr_sent_bits_ = 0, hdr_recv_bits_ = 0;
  std::vector<uint8_t>& hdr_sent_;
  std::vector<uint8_t>& hdr_recv_;
  std::vector<char>& theirs_;
};

// The algorithm bodies (one file each). Arguments are already validated by collective.cc.
HcclResult RingAllReduce(Ctx& c, const char* send, char* recv, uint64_t count);
HcclResult MeshAllReduce(Ctx& c, const char* send, char* recv, uint64_t count);
HcclResult HdAllReduce(Ctx& c, const char* send, char* recv, uint64_t count);
HcclResult StarAllReduce(Ctx& c, const char* send, char* recv, uint64_t count);

// Ring over variable blocks: block j is counts[j] elements at displs[j]. Serves ReduceScatter,
// ReduceScatterV, AllGather and AllGatherV.
HcclResult RingReduceScatterV(Ctx& c, const char* send, const uint64_t* counts,
                              const uint64_t* displs, char* recv);
HcclResult MeshReduceScatter(Ctx& c, const char* send, char* recv, uint64_t recv_count);
HcclResult RingAllGatherV(Ctx& c, const char* send, char* recv, const uint64_t* counts,
                          const uint64_t* displs);
HcclResult MeshAllGather(Ctx& c, const char* send, char* recv, uint64_t send_count);
HcclResult HdAllGather(Ctx& c, const char* send, char* recv, uint64_t send_count);

HcclResult TreeBroadcast(Ctx& c, char* buf, uint64_t count, uint32_t root);
HcclResult ChainBroadcast(Ctx& c, char* buf, uint64_t count, uint32_t root);
HcclResult StarBroadcast(Ctx& c, char* buf, uint64_t count, uint32_t root);
HcclResult TreeReduce(Ctx& c, const char* send, char* recv, uint64_t count, uint32_t root);
HcclResult ChainReduce(Ctx& c, const char* send, char* recv, uint64_t count, uint32_t root);

HcclResult StarScatter(Ctx& c, const char* send, char* recv, uint64_t recv_count, uint32_t root);
HcclResult PairwiseAlltoAllV(Ctx& c, const char* send, const uint64_t* send_counts,
                             const uint64_t* send_displs, size_t send_es, char* recv,
                             const uint64_t* recv_counts, const uint64_t* recv_displs,
                             size_t recv_es);
HcclResult DisseminationBarrier(Ctx& c);
HcclResult BatchSendRecv(Ctx& c, const std::vector<P2pItem>& items);

// Largest piece of the full-mesh reduce-scatter when every link is shared memory.
constexpr size_t kShmMeshPieceBytes = 256u << 10;

// Up to this size the full-mesh AllReduce is one round (every rank reduces every vector).
constexpr size_t kOneShotBytes = 512;
// The most ranks the automatic choice gives the full-mesh algorithms (one link per pair).
constexpr uint32_t kMeshMaxRanks = 8;

// Sizes at which the tree forms of Broadcast/Reduce give way to pipelined chains.
constexpr size_t kTreeMaxBytes = 64u << 10;
// Broadcast chain piece (pure forwarding, no scratch needed).
constexpr size_t kChainPieceBytes = 256u << 10;

}  // namespace vigil::alg::detail
