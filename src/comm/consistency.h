// The early op-consistency check (faults F5/F6): before a collective combines data, every rank
// sends a 64-byte fingerprint of the op {type, count, dtype, reduce op, root, V-count hash,
// collective sequence, index} to its ring neighbours (prev and next) over the op's own links and
// receives theirs. (Over hosts of consecutive ranks the ring is the hosts' snake, which a
// hierarchical op's own levels trace: comm/check_ring.h.) Ranks that called different ops (or
// counts, dtypes, roots ...) at the same point find out at once, instead of after
// HCCL_EXEC_TIMEOUT.
//
// The fingerprints travel as a header of the algorithm's own transfers (FingerprintHeader,
// alg::OpHeader), so the check adds no round of its own: each op's byte stream on a link starts
// with the sender's fingerprint, on the neighbour links always (in the algorithm's first
// Progress call, alone if the algorithm does not use the link then) and on other links when the
// op moves data there. A received fingerprint is judged before any data behind it is taken: a
// neighbour's mismatch is reported (once both neighbours' have arrived, prev first) and stops
// the op before anything is combined; another member's data of a different op is never taken
// (its own neighbours report it and close their links). An algorithm that moves nothing
// (count 0) leaves the exchange to ExchangeFingerprints afterwards.
//
// Every collective sends exactly one frame each way on each neighbour link, whatever
// HCCL_DFS_CONFIG says: the headers are what keeps one op from taking another op's bytes off
// the shared links. inconsistent_check:off only turns the early report off (report = false):
// a header that disagrees is then held (its data never taken) and the op waits until
// HCCL_EXEC_TIMEOUT and fails with EI0002 on every rank it involves, as HCCL's notify waits do;
// without the headers the ranks whose byte counts happened to line up would complete with
// another op's data (an AllReduce taking an AllGather's input) and report success.
//
// Point-to-point ops (Send/Recv/BatchSendRecv) carry a P2pFingerprint instead, on the links to
// the peers they name (P2pHeader): each side tells the other, in both directions and in the
// op's first Progress call, what it sends to and receives from it (items, count, dtype), so a
// Send whose (count, dtype) differs from the peer's Recv fails on both ranks at once as a
// parameter error naming both sides, before any byte of the data is taken (never a timeout,
// never a partial copy). As HCCL requires, a p2p call's items with one peer must be matched by
// one p2p call on that peer (a Send by a Recv or by one BatchSendRecv item); one item per peer
// and direction is HCCL's rule, more are compared by their count and a hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithm/collective.h"
#include "comm/op.h"
#include "transport/link.h"

namespace vigil::comm {

struct OpFingerprint {
  uint32_t magic = 0;
  uint32_t rank = 0;
  uint64_t index = 0;     // the op's index in the communicator (informational)
  uint64_t coll_seq = 0;  // collectives this rank has run on the communicator, from 1
  uint32_t type = 0;      // OpType
  uint32_t dtype = 0;
  uint32_t recv_dtype = 0;
  uint32_t reduce = 0;
  uint32_t root = 0;
  uint32_t reserved = 0;
  uint64_t count = 0;
  uint64_t vhash = 0;  // hash of the per-rank counts every rank must agree on (V ops)
};
static_assert(sizeof(OpFingerprint) == 64, "the fingerprint is one 64-byte frame on the wire");

// What one rank moves with one peer in a point-to-point op, sent to that peer. `type` sits where
// OpFingerprint's does, so a collective's check names a p2p op on the other end and vice versa.
struct P2pFingerprint {
  uint32_t magic = 0;
  uint32_t rank = 0;       // the sender
  uint64_t index = 0;      // the op's index in the communicator (informational)
  uint32_t send_hash = 0;  // FNV-1a over every (count, dtype) item, per direction
  uint32_t recv_hash = 0;
  uint32_t type = 0;        // OpType: Send, Recv or BatchSendRecv
  uint32_t send_dtype = 0;  // the first item's, per direction
  uint32_t recv_dtype = 0;
  uint16_t nsend = 0;  // items this rank sends to the peer
  uint16_t nrecv = 0;  // items this rank receives from the peer
  uint32_t peer = 0;   // the rank the header is for
  uint32_t reserved = 0;
  uint64_t send_count = 0;  // the first item's, per direction
  uint64_t recv_count = 0;
};
static_assert(sizeof(P2pFingerprint) == sizeof(OpFingerprint), "one header size on the wire");
static_assert(offsetof(P2pFingerprint, type) == offsetof(OpFingerprint, type),
              "the op type at one offset in both headers");

// Whether an op takes part in the collective check (collectives: yes; p2p: no, see IsP2pOp).
inline bool IsP2pOp(OpType type) {
  return type == OpType::kSend || type == OpType::kRecv || type == OpType::kBatchSendRecv;
}
inline bool IsCheckedOp(OpType type) {
  return !IsP2pOp(type);
}
OpFingerprint MakeFingerprint(const OpDesc& op, uint64_t index, uint64_t coll_seq, uint32_t rank);
// "AllReduce count[256] dataType[float32] reduceType[sum] index[21] collective[21]".
std::string DescribeFingerprint(const OpFingerprint& fp);

// The first parameter that differs, in EI0005's terms (para_name, local value, remote value).
struct Mismatch {
  std::string parameter;  // "opType", "count", "dataType", "reduceType", "root", ...
  std::string local;
  std::string remote;
};
// False (and *out filled) when the remote fingerprint does not match the local one.
bool CompareFingerprints(const OpFingerprint& local, const OpFingerprint& remote, Mismatch* out);

struct ConsistencyResult {
  HcclResult code = HCCL_SUCCESS;  // HCCL_E_PARA on a mismatch, else the Progress code
  transport::ProgressError progress;  // a transfer that failed or timed out
  bool mismatch = false;
  uint32_t remote_rank = 0;  // the neighbour (or p2p peer) that differs
  OpFingerprint remote;      // its fingerprint (collectives)
  Mismatch what;
  // Both sides as the ERROR line names them: "AllReduce count[256] dataType[float32] ...",
  // "Send count[256] dataType[float32] to rank[1] index[2]".
  std::string local_desc, remote_desc;
  // The same disagreement in HCCL's terms (RenderCmdCheckFail), every field that differs in
  // HCCL's order; a "tag" entry holds op names (the caller appends "_<identifier>").
  std::vector<Mismatch> hccl;
};

// Exchanges `mine` with `peers` (the ring neighbours, prev first: at most two) over their links
// (links indexed by rank) and compares. Waits as `wait` says (the op's HCCL_EXEC_TIMEOUT).
HcclResult ExchangeFingerprints(const OpFingerprint& mine, const std::vector<uint32_t>& peers,
                                const std::vector<transport::Link*>& links,
                                const transport::WaitPolicy& wait, ConsistencyResult* result);

// The exchange folded into the op's algorithm: set group.header = header() before running it.
// Afterwards `result()` holds a mismatch if one was found (the algorithm then failed with
// HCCL_E_PARA); `exchanged()` false means the algorithm moved nothing and the exchange is
// still due (ExchangeFingerprints).
class FingerprintHeader {
 public:
  // report = false (inconsistent_check:off): a mismatch holds the transfer instead of failing.
  FingerprintHeader(const OpFingerprint& mine, uint32_t rank, uint32_t size, bool report = true);
  FingerprintHeader() = default;
  // Starts over for the next op, as if constructed anew (one object serves every op of a
  // communicator: building and destroying the result's strings cost ~150 instructions an op).
  // `rank`/`size`: in the group the algorithm runs on; `members` (size entries, kept by the
  // caller) maps its members to the communicator's ranks, which a report names (nullptr: the
  // same).
  void Reset(const OpFingerprint& mine, uint32_t rank, uint32_t size, bool report = true,
             const uint32_t* members = nullptr);
  // The same with the neighbours named (members of the group) instead of rank -+ 1: a
  // communicator over several hosts checks along another ring (comm/check_ring.h).
  void Reset(const OpFingerprint& mine, uint32_t rank, uint32_t size, uint32_t prev,
             uint32_t next, bool report, const uint32_t* members = nullptr);
  FingerprintHeader(const FingerprintHeader&) = delete;
  FingerprintHeader& operator=(const FingerprintHeader&) = delete;

  alg::OpHeader* header() { return header_.npeers > 0 ? &header_ : nullptr; }
  bool exchanged() const { return header_.npeers == 0 || header_.exchanged; }
  const ConsistencyResult& result() const { return result_; }
  const OpFingerprint& mine() const { return mine_; }
  // The op failed before both neighbours' headers were in (a neighbour that rejected ours
  // closed its links): a mismatching header already here is still the cause; name it.
  void SettleAfterFailure();

 private:
  static transport::HeadVerdict OnHead(void* ctx, uint32_t peer, const void* head);

  OpFingerprint mine_;
  OpFingerprint theirs_[2]{};  // [0] from prev, [1] from next
  uint32_t peer_rank_[2] = {0, 0};    // members of the group
  uint32_t peer_global_[2] = {0, 0};  // the communicator's ranks of the same
  uint32_t rank_ = 0, size_ = 0;      // what peer_rank_ and header_'s peers were made for
  const uint32_t* members_ = nullptr;
  bool got_[2] = {false, false};
  alg::OpHeader header_;
  ConsistencyResult result_;
  bool report_ = true;
};

// The check folded into a point-to-point op: set group.header = header() before running it
// (nullptr: no remote peer, nothing to check). Afterwards `result()` holds a mismatch if one was
// found (the op then failed with HCCL_E_PARA).
class P2pHeader {
 public:
  P2pHeader(const OpDesc& op, uint64_t index, uint32_t rank, uint32_t size, bool report = true);
  P2pHeader() = default;
  // Starts over for the next op, as if constructed anew: one object serves every p2p op of a
  // communicator, and its vectors keep their capacity (an op allocates nothing).
  void Reset(const OpDesc& op, uint64_t index, uint32_t rank, uint32_t size, bool report = true);
  P2pHeader(const P2pHeader&) = delete;
  P2pHeader& operator=(const P2pHeader&) = delete;

  alg::OpHeader* header() { return header_.npeers > 0 ? &header_ : nullptr; }
  const ConsistencyResult& result() const { return result_; }

 private:
  static transport::HeadVerdict OnHead(void* ctx, uint32_t peer, const void* head);

  std::vector<P2pFingerprint> mine_;  // indexed by member; only the peers' are filled
  std::vector<uint32_t> peers_;
  std::unique_ptr<bool[]> arrived_;  // arrived_size_ flags, the first peers_.size() in use
  size_t arrived_size_ = 0;
  alg::OpHeader header_;
  ConsistencyResult result_;
  bool report_ = true;
};

// Compares what this rank moves with a peer (mine, the header it sent that peer) with the
// peer's header. False (and *out, *local_desc, *remote_desc filled) on a disagreement; a count
// or dtype disagreement also goes to *hccl in HCCL's terms (may be nullptr).
bool CompareP2p(const P2pFingerprint& mine, const P2pFingerprint& theirs, Mismatch* out,
                std::string* local_desc, std::string* remote_desc,
                std::vector<Mismatch>* hccl = nullptr);

}  // namespace vigil::comm
