#include "comm/consistency.h"

#include <fmt/format.h>

#include <cstring>

#include "common/dtype.h"

namespace vigil::comm {

namespace {

constexpr uint32_t kMagic = 0x31504656;  // "VFP1"

uint64_t HashCounts(const std::vector<uint64_t>& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  for (uint64_t x : v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (x >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

// Ops whose count argument must be equal on every rank (V ops carry per-rank counts instead).
bool CountMustMatch(OpType t) {
  switch (t) {
    case OpType::kAllGatherV:
    case OpType::kReduceScatterV:
    case OpType::kAlltoAllV:
    case OpType::kAlltoAllVC:
    case OpType::kBarrier:
      return false;
    default:
      return true;
  }
}

std::string TypeName(uint32_t type) {
  if (type > static_cast<uint32_t>(OpType::kBarrier)) return fmt::format("unknown({})", type);
  return std::string(OpTypeName(static_cast<OpType>(type)));
}

std::string DtypeName(uint32_t d) { return std::string(DataTypeName(static_cast<HcclDataType>(d))); }

}  // namespace

bool IsCheckedOp(OpType type) {
  return type != OpType::kSend && type != OpType::kRecv && type != OpType::kBatchSendRecv;
}

OpFingerprint MakeFingerprint(const OpDesc& op, uint64_t index, uint64_t coll_seq, uint32_t rank) {
  OpFingerprint fp;
  fp.magic = kMagic;
  fp.rank = rank;
  fp.index = index;
  fp.coll_seq = coll_seq;
  fp.type = static_cast<uint32_t>(op.type);
  fp.dtype = op.type == OpType::kBarrier ? 0 : static_cast<uint32_t>(op.dtype);
  fp.recv_dtype = static_cast<uint32_t>(op.recv_dtype);
  fp.reduce = OpHasReduce(op.type) ? static_cast<uint32_t>(op.reduce) : 0;
  fp.root = OpHasRoot(op.type) ? op.root : 0;
  fp.count = CountMustMatch(op.type) ? op.count : 0;
  switch (op.type) {
    case OpType::kAllGatherV: fp.vhash = HashCounts(op.recv_counts); break;
    case OpType::kReduceScatterV: fp.vhash = HashCounts(op.send_counts); break;
    case OpType::kAlltoAllVC: fp.vhash = HashCounts(op.count_matrix); break;  // the full matrix
    default: break;
  }
  return fp;
}

std::string DescribeFingerprint(const OpFingerprint& fp) {
  const OpType t = static_cast<OpType>(fp.type);
  std::string s = TypeName(fp.type);
  if (t != OpType::kBarrier) {
    if (CountMustMatch(t)) s += fmt::format(" count[{}]", fp.count);
    s += fmt::format(" dataType[{}]", DtypeName(fp.dtype));
  }
  if (t == OpType::kAlltoAll || t == OpType::kAlltoAllV || t == OpType::kAlltoAllVC) {
    s += fmt::format(" recvType[{}]", DtypeName(fp.recv_dtype));
  }
  if (fp.type <= static_cast<uint32_t>(OpType::kBarrier) && OpHasReduce(t)) {
    s += fmt::format(" reduceType[{}]", ReduceOpName(static_cast<HcclReduceOp>(fp.reduce)));
  }
  if (fp.type <= static_cast<uint32_t>(OpType::kBarrier) && OpHasRoot(t)) {
    s += fmt::format(" root[{}]", fp.root);
  }
  if (fp.vhash != 0) s += fmt::format(" countsHash[{:016x}]", fp.vhash);
  s += fmt::format(" index[{}] collective[{}]", fp.index, fp.coll_seq);
  return s;
}

bool CompareFingerprints(const OpFingerprint& a, const OpFingerprint& b, Mismatch* out) {
  auto differ = [&](const char* name, std::string l, std::string r) {
    out->parameter = name;
    out->local = std::move(l);
    out->remote = std::move(r);
    return false;
  };
  if (b.magic != kMagic) {
    return differ("HCCL_DFS_CONFIG", "inconsistent_check:on",
                  "no op fingerprint received (inconsistent_check:off?)");
  }
  if (a.type != b.type) return differ("opType", TypeName(a.type), TypeName(b.type));
  const OpType t = static_cast<OpType>(a.type);
  if (a.count != b.count) {
    return differ("count", std::to_string(a.count), std::to_string(b.count));
  }
  if (a.dtype != b.dtype) return differ("dataType", DtypeName(a.dtype), DtypeName(b.dtype));
  if ((t == OpType::kAlltoAll || t == OpType::kAlltoAllV || t == OpType::kAlltoAllVC) &&
      a.recv_dtype != b.recv_dtype) {
    return differ("recvType", DtypeName(a.recv_dtype), DtypeName(b.recv_dtype));
  }
  if (a.reduce != b.reduce) {
    return differ("reduceType", std::string(ReduceOpName(static_cast<HcclReduceOp>(a.reduce))),
                  std::string(ReduceOpName(static_cast<HcclReduceOp>(b.reduce))));
  }
  if (a.root != b.root) return differ("root", std::to_string(a.root), std::to_string(b.root));
  if (a.vhash != b.vhash) {
    return differ("counts", fmt::format("hash {:016x}", a.vhash),
                  fmt::format("hash {:016x}", b.vhash));
  }
  // Same op, but one rank has run more collectives on this communicator: it skipped or added one.
  if (a.coll_seq != b.coll_seq) {
    return differ("collective sequence", std::to_string(a.coll_seq), std::to_string(b.coll_seq));
  }
  return true;
}

FingerprintHeader::FingerprintHeader(const OpFingerprint& mine, uint32_t rank, uint32_t size)
    : mine_(mine) {
  if (size <= 1) return;
  peer_rank_[0] = (rank + size - 1) % size;
  peer_rank_[1] = (rank + 1) % size;
  header_.mine = &mine_;
  header_.bytes = sizeof(OpFingerprint);
  header_.npeers = peer_rank_[0] == peer_rank_[1] ? 1 : 2;
  for (uint32_t k = 0; k < header_.npeers; ++k) header_.peers[k] = peer_rank_[k];
  header_.hook.on_head = &FingerprintHeader::OnHead;
  header_.hook.ctx = this;
}

transport::HeadVerdict FingerprintHeader::OnHead(void* ctx, uint32_t peer, const void* head) {
  using transport::HeadVerdict;
  auto* self = static_cast<FingerprintHeader*>(ctx);
  OpFingerprint theirs;
  std::memcpy(&theirs, head, sizeof(theirs));
  Mismatch m;
  const bool same = CompareFingerprints(self->mine_, theirs, &m);
  const uint32_t n = self->header_.npeers;
  int k = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (self->peer_rank_[i] == peer) k = static_cast<int>(i);
  }
  // Another member's data of a different op is never taken; its own neighbours report it and
  // close their links, and this rank follows them.
  if (k < 0) return same ? HeadVerdict::kAccept : HeadVerdict::kHold;
  self->theirs_[k] = theirs;
  self->got_[k] = true;
  if (same) self->header_.arrived[k] = true;
  // Report only once both neighbours' have arrived, prev first, as the separate exchange
  // does: the report names the same neighbour whichever arrives first.
  for (uint32_t i = 0; i < n; ++i) {
    if (!self->got_[i]) return same ? HeadVerdict::kAccept : HeadVerdict::kHold;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (CompareFingerprints(self->mine_, self->theirs_[i], &m)) continue;
    ConsistencyResult& r = self->result_;
    r.code = HCCL_E_PARA;
    r.mismatch = true;
    r.remote_rank = self->peer_rank_[i];
    r.remote = self->theirs_[i];
    r.what = std::move(m);
    return HeadVerdict::kFail;
  }
  self->header_.passed = true;
  return HeadVerdict::kAccept;
}

HcclResult ExchangeFingerprints(const OpFingerprint& mine, uint32_t rank, uint32_t size,
                                const std::vector<transport::Link*>& links,
                                const transport::WaitPolicy& wait, ConsistencyResult* result) {
  *result = ConsistencyResult{};
  if (size <= 1) return HCCL_SUCCESS;
  const uint32_t prev = (rank + size - 1) % size;
  const uint32_t next = (rank + 1) % size;
  OpFingerprint from_prev{}, from_next{};
  OpFingerprint out = mine;
  std::vector<transport::Xfer> xfers;
  xfers.reserve(4);
  xfers.push_back({links[next], true, &out, sizeof(out)});
  xfers.push_back({links[prev], false, &from_prev, sizeof(from_prev)});
  if (next != prev) {
    xfers.push_back({links[prev], true, &out, sizeof(out)});
    xfers.push_back({links[next], false, &from_next, sizeof(from_next)});
  }
  HcclResult rc = transport::Progress(xfers, wait, &result->progress);
  if (rc != HCCL_SUCCESS) {
    result->code = rc;
    return rc;
  }
  auto check = [&](const OpFingerprint& theirs, uint32_t peer) {
    Mismatch m;
    if (CompareFingerprints(mine, theirs, &m)) return true;
    result->code = HCCL_E_PARA;
    result->mismatch = true;
    result->remote_rank = peer;
    result->remote = theirs;
    result->what = std::move(m);
    return false;
  };
  if (!check(from_prev, prev)) return result->code;
  if (next != prev && !check(from_next, next)) return result->code;
  return HCCL_SUCCESS;
}

}  // namespace vigil::comm
