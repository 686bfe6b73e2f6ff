#include "comm/consistency.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/dtype.h"

namespace vigil::comm {

namespace {

constexpr uint32_t kMagic = 0x31504656;     // "VFP1"
constexpr uint32_t kP2pMagic = 0x31505056;  // "VPP1"

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

uint32_t Fnv32(uint32_t h, uint64_t x) {
  for (int i = 0; i < 8; ++i) {
    h ^= (x >> (8 * i)) & 0xff;
    h *= 16777619u;
  }
  return h;
}

// HCCL's "op" field: the reduce op's number, 255 for ops without one.
uint32_t HcclReduceField(uint32_t type, uint32_t reduce) {
  if (type > static_cast<uint32_t>(OpType::kBarrier)) return 255;
  return OpHasReduce(static_cast<OpType>(type)) ? reduce : 255;
}

uint32_t HcclCmdField(uint32_t type) {
  if (type > static_cast<uint32_t>(OpType::kBarrier)) return 0;
  return HcclCmdType(static_cast<OpType>(type));
}

// One direction of a p2p header: "Send count[256] dataType[float32] to rank[1]".
std::string DescribeP2pSide(const P2pFingerprint& fp, bool send, uint32_t other) {
  const std::string type = TypeName(fp.type);
  const uint32_t n = send ? fp.nsend : fp.nrecv;
  const char* verb = send ? "send" : "recv";
  const std::string where = fmt::format("{} rank[{}]", send ? "to" : "from", other);
  const uint64_t count = send ? fp.send_count : fp.recv_count;
  const std::string dtype = DtypeName(send ? fp.send_dtype : fp.recv_dtype);
  std::string s;
  if (n == 0) {
    s = fmt::format("{} with no {} {}", type, verb, where);
  } else if (n == 1) {
    const bool batch = fp.type == static_cast<uint32_t>(OpType::kBatchSendRecv);
    s = fmt::format("{}{} count[{}] dataType[{}] {}", type, batch ? std::string(" ") + verb : "",
                    count, dtype, where);
  } else {
    s = fmt::format("{} {} {}s {} (first count[{}] dataType[{}])", type, n, verb, where, count,
                    dtype);
  }
  return s + fmt::format(" index[{}]", fp.index);
}

// Whatever a peer sent where this rank's header was due, described for the ERROR line.
std::string DescribeHead(const OpFingerprint& head, uint32_t this_rank) {
  if (head.magic == kP2pMagic) {
    P2pFingerprint p;
    std::memcpy(static_cast<void*>(&p), &head, sizeof(p));
    return DescribeP2pSide(p, p.nsend > 0 || p.nrecv == 0, this_rank);
  }
  if (head.magic != kMagic) return "sent no op fingerprint";
  return DescribeFingerprint(head);
}

// The fields HCCL's consistency checker compares (tag, cmdType, op, count, dataType) that
// differ between two collective headers, in its order.
std::vector<Mismatch> HcclFields(const OpFingerprint& a, const OpFingerprint& b) {
  std::vector<Mismatch> out;
  if (b.magic != kMagic && b.magic != kP2pMagic) return out;
  if (a.type != b.type) {
    out.push_back({"tag", TypeName(a.type), TypeName(b.type)});
    out.push_back(
        {"cmdType", std::to_string(HcclCmdField(a.type)), std::to_string(HcclCmdField(b.type))});
  }
  if (a.magic != b.magic) return out;  // the rest of a p2p header means other things
  const uint32_t ra = HcclReduceField(a.type, a.reduce), rb = HcclReduceField(b.type, b.reduce);
  if (ra != rb) out.push_back({"op", std::to_string(ra), std::to_string(rb)});
  if (a.count != b.count) {
    out.push_back({"count", std::to_string(a.count), std::to_string(b.count)});
  }
  if (a.dtype != b.dtype) {
    out.push_back({"dataType", std::to_string(a.dtype), std::to_string(b.dtype)});
  }
  return out;
}

// A collective's mismatch with neighbour `peer`, into *r.
void SetCollectiveMismatch(const OpFingerprint& mine, const OpFingerprint& theirs, uint32_t peer,
                           Mismatch m, ConsistencyResult* r) {
  r->code = HCCL_E_PARA;
  r->mismatch = true;
  r->remote_rank = peer;
  r->remote = theirs;
  r->what = std::move(m);
  r->local_desc = DescribeFingerprint(mine);
  r->remote_desc = DescribeHead(theirs, mine.rank);
  r->hccl = HcclFields(mine, theirs);
}

}  // namespace

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
    case OpType::kAllGatherV: fp.vhash = HashCounts(op.lists().recv_counts); break;
    case OpType::kReduceScatterV: fp.vhash = HashCounts(op.lists().send_counts); break;
    case OpType::kAlltoAllVC:  // the full matrix
      fp.vhash = HashCounts(op.lists().count_matrix);
      break;
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

namespace {

// CompareFingerprints' verdict without building a Mismatch: every op compares two headers,
// and the strings are needed only when they differ.
bool SameOp(const OpFingerprint& a, const OpFingerprint& b) {
  if (b.magic != kMagic || a.type != b.type || a.count != b.count || a.dtype != b.dtype) {
    return false;
  }
  const OpType t = static_cast<OpType>(a.type);
  if ((t == OpType::kAlltoAll || t == OpType::kAlltoAllV || t == OpType::kAlltoAllVC) &&
      a.recv_dtype != b.recv_dtype) {
    return false;
  }
  return a.reduce == b.reduce && a.root == b.root && a.vhash == b.vhash && a.coll_seq == b.coll_seq;
}

}  // namespace

bool CompareFingerprints(const OpFingerprint& a, const OpFingerprint& b, Mismatch* out) {
  auto differ = [&](const char* name, std::string l, std::string r) {
    out->parameter = name;
    out->local = std::move(l);
    out->remote = std::move(r);
    return false;
  };
  if (b.magic == kP2pMagic) return differ("opType", TypeName(a.type), TypeName(b.type));
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

FingerprintHeader::FingerprintHeader(const OpFingerprint& mine, uint32_t rank, uint32_t size,
                                     bool report) {
  Reset(mine, rank, size, report);
}

void FingerprintHeader::Reset(const OpFingerprint& mine, uint32_t rank, uint32_t size,
                              bool report, const uint32_t* members) {
  const uint32_t prev = size > 1 ? (rank + size - 1) % size : 0;
  Reset(mine, rank, size, prev, size > 1 ? (rank + 1) % size : 0, report, members);
}

void FingerprintHeader::Reset(const OpFingerprint& mine, uint32_t rank, uint32_t size,
                              uint32_t prev, uint32_t next, bool report,
                              const uint32_t* members) {
  mine_ = mine;
  report_ = report;
  got_[0] = got_[1] = false;
  if (result_.mismatch) result_ = ConsistencyResult{};  // only a mismatch writes it
  // The neighbours depend on these alone: the next op of a communicator keeps them.
  if (header_.npeers > 0 && rank == rank_ && size == size_ && members == members_ &&
      prev == peer_rank_[0] && next == peer_rank_[1]) {
    header_.StartOver();
    return;
  }
  rank_ = rank;
  size_ = size;
  members_ = members;
  peer_rank_[0] = peer_rank_[1] = 0;
  header_ = alg::OpHeader{};
  if (size <= 1) return;
  peer_rank_[0] = prev;
  peer_rank_[1] = next;
  for (int k = 0; k < 2; ++k) {
    peer_global_[k] = members != nullptr ? members[peer_rank_[k]] : peer_rank_[k];
  }
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
  const uint32_t n = self->header_.npeers;
  int k = -1;
  for (uint32_t i = 0; i < n; ++i) {
    if (self->peer_rank_[i] == peer) k = static_cast<int>(i);
  }
  // A neighbour's header is kept (a report names it later), another member's only compared.
  OpFingerprint other;
  OpFingerprint& theirs = k >= 0 ? self->theirs_[k] : other;
  std::memcpy(&theirs, head, sizeof(theirs));
  const bool same = SameOp(self->mine_, theirs);
  // The check is off: no report, but another op's data is never taken either.
  if (!same && !self->report_) return HeadVerdict::kHold;
  // Another member's data of a different op is never taken; its own neighbours report it and
  // close their links, and this rank follows them.
  if (k < 0) return same ? HeadVerdict::kAccept : HeadVerdict::kHold;
  self->got_[k] = true;
  if (same) self->header_.arrived[k] = true;
  // Report only once both neighbours' have arrived, prev first, as the separate exchange
  // does: the report names the same neighbour whichever arrives first.
  for (uint32_t i = 0; i < n; ++i) {
    if (!self->got_[i]) return same ? HeadVerdict::kAccept : HeadVerdict::kHold;
  }
  for (uint32_t i = 0; i < n; ++i) {
    // Each neighbour sends one header per op, so arrived[i] (set above only for a same op)
    // already answers SameOp for the neighbours whose header came earlier: one comparison per
    // header instead of two.
    if (i == static_cast<uint32_t>(k) ? same : self->header_.arrived[i]) continue;
    Mismatch m;
    CompareFingerprints(self->mine_, self->theirs_[i], &m);
    SetCollectiveMismatch(self->mine_, self->theirs_[i], self->peer_global_[i], std::move(m),
                          &self->result_);
    return HeadVerdict::kFail;
  }
  self->header_.passed = true;
  return HeadVerdict::kAccept;
}

void FingerprintHeader::SettleAfterFailure() {
  if (!report_ || result_.mismatch) return;
  for (uint32_t i = 0; i < header_.npeers; ++i) {
    Mismatch m;
    if (!got_[i] || CompareFingerprints(mine_, theirs_[i], &m)) continue;
    SetCollectiveMismatch(mine_, theirs_[i], peer_global_[i], std::move(m), &result_);
    return;
  }
}

HcclResult ExchangeFingerprints(const OpFingerprint& mine, const std::vector<uint32_t>& peers,
                                const std::vector<transport::Link*>& links,
                                const transport::WaitPolicy& wait, ConsistencyResult* result) {
  *result = ConsistencyResult{};
  if (peers.empty()) return HCCL_SUCCESS;
  constexpr size_t kMax = 2;  // prev and next
  const size_t n = std::min(peers.size(), kMax);
  OpFingerprint out = mine;
  OpFingerprint theirs[kMax]{};
  std::vector<transport::Xfer> xfers;
  xfers.reserve(2 * kMax);
  for (size_t k = 0; k < n; ++k) xfers.push_back({links[peers[k]], true, &out, sizeof(out)});
  for (size_t k = 0; k < n; ++k) {
    xfers.push_back({links[peers[k]], false, &theirs[k], sizeof(theirs[k])});
  }
  HcclResult rc = transport::Progress(xfers, wait, &result->progress);
  if (rc != HCCL_SUCCESS) {
    result->code = rc;
    return rc;
  }
  for (size_t k = 0; k < n; ++k) {
    Mismatch m;
    if (CompareFingerprints(mine, theirs[k], &m)) continue;
    SetCollectiveMismatch(mine, theirs[k], peers[k], std::move(m), result);
    return result->code;
  }
  return HCCL_SUCCESS;
}

bool CompareP2p(const P2pFingerprint& mine, const P2pFingerprint& theirs, Mismatch* out,
                std::string* local_desc, std::string* remote_desc, std::vector<Mismatch>* hccl) {
  const uint32_t peer = mine.peer;
  auto differ = [&](const char* name, std::string l, std::string r, bool send_dir) {
    out->parameter = name;
    out->local = std::move(l);
    out->remote = std::move(r);
    // The direction that disagrees: this rank's send against the peer's recv, or the reverse.
    *local_desc = DescribeP2pSide(mine, send_dir, peer);
    *remote_desc = DescribeP2pSide(theirs, !send_dir, mine.rank);
    return false;
  };
  if (theirs.magic != kP2pMagic) {
    OpFingerprint head;
    std::memcpy(static_cast<void*>(&head), &theirs, sizeof(head));
    if (theirs.magic == kMagic) {
      out->parameter = "opType";
      out->local = TypeName(mine.type);
      out->remote = TypeName(theirs.type);
    } else {
      out->parameter = "HCCL_DFS_CONFIG";
      out->local = "inconsistent_check:on";
      out->remote = "no op fingerprint received (inconsistent_check:off?)";
    }
    *local_desc = DescribeP2pSide(mine, mine.nsend > 0 || mine.nrecv == 0, peer);
    *remote_desc = DescribeHead(head, mine.rank);
    return false;
  }
  // Each direction: what one side sends against what the other receives.
  struct Dir {
    bool send;  // this rank's sends (against the peer's recvs), else its recvs
    uint32_t n_l, n_r, d_l, d_r, h_l, h_r;
    uint64_t c_l, c_r;
  };
  const Dir dirs[2] = {
      {true, mine.nsend, theirs.nrecv, mine.send_dtype, theirs.recv_dtype, mine.send_hash,
       theirs.recv_hash, mine.send_count, theirs.recv_count},
      {false, mine.nrecv, theirs.nsend, mine.recv_dtype, theirs.send_dtype, mine.recv_hash,
       theirs.send_hash, mine.recv_count, theirs.send_count},
  };
  for (const Dir& d : dirs) {
    const char* lverb = d.send ? "send" : "recv";
    const char* rverb = d.send ? "recv" : "send";
    if (d.n_l != d.n_r) {
      return differ("items", fmt::format("{} {}", d.n_l, lverb), fmt::format("{} {}", d.n_r, rverb),
                    d.send);
    }
    if (d.n_l == 0) continue;
    if (d.c_l != d.c_r) {
      if (hccl) hccl->push_back({"count", std::to_string(d.c_l), std::to_string(d.c_r)});
      return differ("count", std::to_string(d.c_l), std::to_string(d.c_r), d.send);
    }
    if (d.d_l != d.d_r) {
      if (hccl) hccl->push_back({"dataType", std::to_string(d.d_l), std::to_string(d.d_r)});
      return differ("dataType", DtypeName(d.d_l), DtypeName(d.d_r), d.send);
    }
    if (d.h_l != d.h_r) {
      return differ("counts", fmt::format("hash {:08x}", d.h_l), fmt::format("hash {:08x}", d.h_r),
                    d.send);
    }
  }
  return true;
}

P2pHeader::P2pHeader(const OpDesc& op, uint64_t index, uint32_t rank, uint32_t size, bool report) {
  Reset(op, index, rank, size, report);
}

void P2pHeader::Reset(const OpDesc& op, uint64_t index, uint32_t rank, uint32_t size, bool report) {
  report_ = report;
  if (mine_.size() != size) {
    mine_.assign(size, P2pFingerprint{});
  } else {
    for (uint32_t peer : peers_) mine_[peer] = P2pFingerprint{};  // only the last op's are set
  }
  peers_.clear();
  header_ = alg::OpHeader{};
  // Only a mismatch writes it (a held one leaves it cleared).
  if (result_.mismatch || !result_.hccl.empty()) result_ = ConsistencyResult{};
  for (const alg::P2pItem& it : op.items) {
    if (it.peer >= size || it.peer == rank) continue;
    P2pFingerprint& fp = mine_[it.peer];
    if (fp.magic == 0) {
      fp.magic = kP2pMagic;
      fp.rank = rank;
      fp.index = index;
      fp.type = static_cast<uint32_t>(op.type);
      fp.peer = it.peer;
      fp.send_hash = fp.recv_hash = 2166136261u;
      peers_.push_back(it.peer);
    }
    uint16_t& n = it.send ? fp.nsend : fp.nrecv;
    uint32_t& h = it.send ? fp.send_hash : fp.recv_hash;
    if (n == 0) {
      (it.send ? fp.send_count : fp.recv_count) = it.count;
      (it.send ? fp.send_dtype : fp.recv_dtype) = static_cast<uint32_t>(it.type);
    }
    if (n < UINT16_MAX) ++n;
    h = Fnv32(Fnv32(h, it.count), static_cast<uint64_t>(it.type));
  }
  if (peers_.empty()) return;
  if (arrived_size_ < peers_.size()) {
    arrived_size_ = peers_.size();
    arrived_.reset(new bool[arrived_size_]);
  }
  std::fill_n(arrived_.get(), peers_.size(), false);
  header_.mine = mine_.data();
  header_.mine_stride = sizeof(P2pFingerprint);
  header_.bytes = sizeof(P2pFingerprint);
  header_.npeers = static_cast<uint32_t>(peers_.size());
  header_.peer_list = peers_.data();
  header_.arrived_list = arrived_.get();
  header_.hook.on_head = &P2pHeader::OnHead;
  header_.hook.ctx = this;
}

transport::HeadVerdict P2pHeader::OnHead(void* ctx, uint32_t peer, const void* head) {
  using transport::HeadVerdict;
  auto* self = static_cast<P2pHeader*>(ctx);
  if (peer >= self->mine_.size() || self->mine_[peer].magic == 0) return HeadVerdict::kHold;
  P2pFingerprint theirs;
  std::memcpy(&theirs, head, sizeof(theirs));
  const P2pFingerprint& mine = self->mine_[peer];
  ConsistencyResult& r = self->result_;
  Mismatch m;
  if (CompareP2p(mine, theirs, &m, &r.local_desc, &r.remote_desc, &r.hccl)) {
    for (uint32_t k = 0; k < self->header_.npeers; ++k) {
      if (self->peers_[k] == peer) self->arrived_[k] = true;
    }
    return HeadVerdict::kAccept;
  }
  if (!self->report_) {  // the check is off: hold, as a notify wait would, and report nothing
    r = ConsistencyResult{};
    return HeadVerdict::kHold;
  }
  r.code = HCCL_E_PARA;
  r.mismatch = true;
  r.remote_rank = peer;
  std::memcpy(&r.remote, head, sizeof(r.remote));
  if (m.parameter == "opType") {
    OpFingerprint as_coll;  // HcclFields compares only the op type of a p2p header
    std::memcpy(static_cast<void*>(&as_coll), &mine, sizeof(as_coll));
    r.hccl = HcclFields(as_coll, r.remote);
  }
  r.what = std::move(m);
  return HeadVerdict::kFail;
}

}  // namespace vigil::comm
