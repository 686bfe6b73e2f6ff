// The early op-consistency check (faults F5/F6): before a collective combines data, every rank
// sends a 64-byte fingerprint of the op {type, count, dtype, reduce op, root, V-count hash,
// collective sequence, index} to its ring neighbours (prev and next) over the op's own links and
// receives theirs. Ranks that called different ops (or counts, dtypes, roots ...) at the same
// point find out at once, instead of after HCCL_EXEC_TIMEOUT.
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
// Every collective sends exactly one frame each way on each neighbour link, so the links' byte
// streams stay aligned only if the check is on (or off) on every rank alike
// (HCCL_DFS_CONFIG=inconsistent_check:off); a rank that receives data where a fingerprint
// belongs reports that setting as the inconsistent parameter.
// Point-to-point ops (Send/Recv/BatchSendRecv) are not checked (HCCL does not check
// BatchSendRecv either): their links are the named peers, not a ring.
#pragma once

#include <cstdint>
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

// Whether an op takes part in the check (collectives: yes; Send/Recv/BatchSendRecv: no).
bool IsCheckedOp(OpType type);
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
  uint32_t remote_rank = 0;  // the neighbour that differs
  OpFingerprint remote;      // its fingerprint
  Mismatch what;
};

// Exchanges `mine` with the ring neighbours over links[prev] and links[next] (links indexed by
// rank, nullptr for self) and compares. Waits as `wait` says (the op's HCCL_EXEC_TIMEOUT).
HcclResult ExchangeFingerprints(const OpFingerprint& mine, uint32_t rank, uint32_t size,
                                const std::vector<transport::Link*>& links,
                                const transport::WaitPolicy& wait, ConsistencyResult* result);

// The exchange folded into the op's algorithm: set group.header = header() before running it.
// Afterwards `result()` holds a mismatch if one was found (the algorithm then failed with
// HCCL_E_PARA); `exchanged()` false means the algorithm moved nothing and the exchange is
// still due (ExchangeFingerprints).
class FingerprintHeader {
 public:
  FingerprintHeader(const OpFingerprint& mine, uint32_t rank, uint32_t size);
  FingerprintHeader(const FingerprintHeader&) = delete;
  FingerprintHeader& operator=(const FingerprintHeader&) = delete;

  alg::OpHeader* header() { return header_.npeers > 0 ? &header_ : nullptr; }
  bool exchanged() const { return header_.npeers == 0 || header_.exchanged; }
  const ConsistencyResult& result() const { return result_; }
  const OpFingerprint& mine() const { return mine_; }

 private:
  static transport::HeadVerdict OnHead(void* ctx, uint32_t peer, const void* head);

  OpFingerprint mine_;
  OpFingerprint theirs_[2]{};  // [0] from prev, [1] from next
  uint32_t peer_rank_[2] = {0, 0};
  bool got_[2] = {false, false};
  alg::OpHeader header_;
  ConsistencyResult result_;
};

}  // namespace vigil::comm
