#include "algorithm/alg_context.h"

#include <cstring>

#include "algorithm/reduce_kernel.h"
#include "common/dtype.h"
#include "common/tls.h"
#include "log/plog.h"

namespace vigil::alg::detail {

// Inline (every op's Ctx borrows): a member function of a shared library is called through the
// PLT, never inlined, unless it is.
inline Ctx::Storage& Ctx::Spare() {
  thread_local Storage spare;
  return TlsOnce(spare);
}

inline Ctx::Storage* Ctx::Borrow(Storage* own) {
  Storage& spare = Spare();
  if (spare.lent) return own;
  spare.lent = true;
  return &spare;
}

Ctx::Ctx(Group& g, Scratch scratch, AlgResult* result, HcclDataType type, HcclReduceOp op)
    : g_(g),
      scratch_(scratch),
      result_(result),
      type_(type),
      op_(op),
      esize_(DataTypeSize(type)),
      storage_(Borrow(&own_)),
      xfers_(storage_->xfers),
      hdr_sent_(storage_->hdr_sent),
      hdr_recv_(storage_->hdr_recv),
      theirs_(storage_->theirs) {
  if (result_ == nullptr) result_ = &dummy_.emplace();
  // As *result_ = AlgResult(), without building and moving a temporary with two strings.
  result_->code = HCCL_SUCCESS;
  result_->progress.code = HCCL_SUCCESS;
  result_->progress.link = nullptr;
  result_->progress.timed_out = false;
  result_->progress.reason.clear();
  const rt::CopyFault& copy = result_->copy;
  if (copy.faulted || copy.on_dst || copy.check.state != rt::AddrState::kHost ||
      copy.check.device != -1 || copy.check.alloc_base != 0 || copy.check.alloc_size != 0 ||
      !copy.check.purpose.empty()) {
    result_->copy = rt::CopyFault{};
  }
  result_->copy_bytes = 0;
  result_->copy_src = nullptr;
  result_->copy_dst = nullptr;
}

Ctx::~Ctx() {
  xfers_.clear();
  hdr_sent_.clear();  // AttachHeader sizes them on an op's first Flush (beyond 64 members)
  hdr_recv_.clear();
  // theirs_ keeps its size: it is only ever received into (resizing it zeroed it every op).
  if (storage_ != &own_) storage_->lent = false;
}

HcclResult Ctx::Begin(bool reduces) {
  if (g_.size == 0 || g_.rank >= g_.size || g_.links.size() < g_.size) {
    return Fail(HCCL_E_PARA, "bad group");
  }
  if (!IsSupportedDataType(type_) || esize_ == 0) return Fail(HCCL_E_NOT_SUPPORT, "data type");
  if (reduces && !IsSupportedReduceOp(op_)) return Fail(HCCL_E_NOT_SUPPORT, "reduce op");
  xfers_.reserve(2 * g_.size);
  if (scratch_.base != nullptr && scratch_.bytes != 0 && g_.ranges_checked_at == 0) {
    // A CCL buffer freed before the op ran (comm destroyed before sync) fails here, before the
    // transport writes into it.
    const rt::AddrState state = rt::DeviceMemory::Instance().State(scratch_.base, scratch_.bytes);
    if (rt::IsFault(state)) {
      rt::AddrCheck check = rt::DeviceMemory::Instance().Check(scratch_.base, scratch_.bytes);
      check.state = state;
      result_->copy.faulted = true;
      result_->copy.on_dst = true;
      result_->copy.check = check;
      result_->copy_dst = scratch_.base;
      result_->copy_bytes = scratch_.bytes;
      result_->code = HCCL_E_RUNTIME;
      return HCCL_E_RUNTIME;
    }
  }
  return HCCL_SUCCESS;
}

uint64_t Ctx::PieceElems(uint32_t slots) const {
  if (slots == 0) slots = 1;
  size_t per = scratch_.base ? scratch_.bytes / slots : 0;
  per = std::min(per, kMaxPieceBytes);
  if (per >= 64) per &= ~static_cast<size_t>(63);  // keep every slot 64-byte aligned
  const uint64_t elems = per / esize_;
  slot_bytes_ = elems * esize_;
  return elems;
}

bool Ctx::AllLinksShm() const {
  for (uint32_t j = 0; j < g_.size; ++j) {
    if (j == g_.rank) continue;
    const transport::Link* link = j < g_.links.size() ? g_.links[j] : nullptr;
    if (link == nullptr || link->type() != transport::LinkType::kShm) return false;
  }
  return true;
}

bool Ctx::AllLinksLend(size_t bytes) const {
  for (uint32_t j = 0; j < g_.size; ++j) {
    if (j == g_.rank) continue;
    const transport::Link* link = j < g_.links.size() ? g_.links[j] : nullptr;
    if (link == nullptr || !link->lends(bytes)) return false;
  }
  return true;
}

HcclResult Ctx::Flush() {
  if (bad_peer_ != UINT32_MAX) {
    xfers_.clear();
    late_copy_.bytes = 0;
    result_->progress.code = HCCL_E_INTERNAL;
    result_->progress.reason = "no link to member " + std::to_string(bad_peer_);
    return Fail(HCCL_E_INTERNAL, "missing link");
  }
  if (g_.header != nullptr) AttachHeader();
  HcclResult rc = HCCL_SUCCESS;
  if (!xfers_.empty()) {
    transport::WaitPolicy wait = g_.wait;
    if (late_copy_.bytes != 0) wait.idle = &late_copy_;
    rc = transport::Progress(xfers_, wait, &result_->progress);
    if (g_.tasks != nullptr) RecordTasks(rc);
    xfers_.clear();
    if (rc != HCCL_SUCCESS) {
      if (result_->progress.code == HCCL_SUCCESS) result_->progress.code = rc;
      result_->code = rc;
    }
  }
  if (late_copy_.bytes != 0) {
    // What the waits left of it; a fault in it is the op's failure (AlgResult::copy) unless a
    // transfer failed first.
    while (rc == HCCL_SUCCESS && late_copy_.Step()) {
    }
    if (rc == HCCL_SUCCESS) rc = late_copy_.rc;
    late_copy_.bytes = 0;
  }
  return rc;
}

void Ctx::CopyDuringFlush(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  late_copy_.ctx = this;
  late_copy_.dst = static_cast<char*>(dst);
  late_copy_.src = static_cast<const char*>(src);
  late_copy_.bytes = bytes;
  late_copy_.done = 0;
  late_copy_.rc = HCCL_SUCCESS;
}


void Ctx::RecordTasks(HcclResult rc) {
  bool blamed = false;
  for (const transport::Xfer& x : xfers_) {
    TaskRecord t;
    t.id = static_cast<uint32_t>(g_.tasks->total + 1);
    t.remote = x.link != nullptr ? x.link->remote().rank : 0;
    t.send = x.send;
    t.header_only = x.bytes == 0;
    if (x.link != nullptr) t.link = x.link->type();
    t.head = x.head_bytes;
    t.bytes = x.head_bytes + x.bytes;
    t.done = rc == HCCL_SUCCESS ? t.bytes : x.done;
    if (t.done >= t.bytes) {
      t.state = TaskState::kDone;
    } else if (!blamed && x.link == result_->progress.link) {
      // The transfer Progress named (the one it waited on, or whose link broke).
      t.state = TaskState::kFailed;
      blamed = true;
    } else {
      t.state = TaskState::kPending;
    }
    g_.tasks->Add(t);
  }
}

void Ctx::AttachHeader() {
  OpHeader& h = *g_.header;
  const uint32_t p = g_.size;
  if (!hdr_started_) {
    hdr_started_ = true;
    if (p > 64) {
      hdr_sent_.assign(p, 0);
      hdr_recv_.assign(p, 0);
    }
    const size_t need = static_cast<size_t>(p) * h.bytes;
    if (theirs_.size() < need) theirs_.resize(need);
  }
  const bool first = !h.exchanged;
  h.exchanged = true;
  auto neighbour = [&](uint32_t peer) -> int {
    for (uint32_t k = 0; k < h.npeers; ++k) {
      if (h.peer(k) == peer) return static_cast<int>(k);
    }
    return -1;
  };
  const size_t algorithm_xfers = xfers_.size();
  for (size_t i = 0; i < algorithm_xfers; ++i) {
    transport::Xfer& x = xfers_[i];
    const uint32_t peer = x.hook_arg;  // the member index (Send/Recv)
    if (x.send) {
      const size_t eager = x.link->eager_bytes();
      if (eager < x.bytes) {
        const int k = neighbour(peer);
        x.gate = k >= 0 ? h.arrived_flag(k) : &h.passed;
        x.eager = eager;
      }
      if (!MarkHeader(true, peer)) continue;
      x.head = const_cast<void*>(h.mine_for(peer));
      x.head_bytes = h.bytes;
    } else {
      if (!MarkHeader(false, peer)) continue;
      x.head = theirs_.data() + static_cast<size_t>(peer) * h.bytes;
      x.head_bytes = h.bytes;
      x.hook = &h.hook;
    }
  }
  if (!first) return;
  // Neighbours exchange headers in the first Flush whether or not the algorithm uses the link.
  // Sends go first (SendsFirst): a rank that rejects a peer's header here has sent its own by
  // then, so the peer names the mismatch too instead of only seeing this rank close its links.
  for (uint32_t k = 0; k < h.npeers; ++k) {
    const uint32_t peer = h.peer(k);
    transport::Link* link = LinkTo(peer);
    if (link == nullptr) return;  // Flush reports the missing link
    if (MarkHeader(true, peer)) {
      xfers_.push_back({link, true, nullptr, 0, const_cast<void*>(h.mine_for(peer)), h.bytes});
    }
    if (MarkHeader(false, peer)) {
      xfers_.push_back({link, false, nullptr, 0,
                        theirs_.data() + static_cast<size_t>(peer) * h.bytes, h.bytes, &h.hook,
                        peer});
    }
  }
  SendsFirst();
}

void Ctx::SendsFirst() {
  const size_t n = xfers_.size();
  size_t w = 0;
  while (w < n && xfers_[w].send) ++w;  // sends already in front stay
  size_t i = w;
  while (i < n && !xfers_[i].send) ++i;
  if (i == n) return;  // no send behind a receive: nothing moves
  // A stable partition: each transfer is copied at most twice (rotating each send forward
  // moved every receive ahead of it once per send).
  std::vector<transport::Xfer>& recvs = storage_->recvs;
  recvs.assign(xfers_.begin() + w, xfers_.begin() + i);
  for (; i < n; ++i) {
    if (xfers_[i].send) {
      xfers_[w++] = xfers_[i];
    } else {
      recvs.push_back(xfers_[i]);
    }
  }
  std::copy(recvs.begin(), recvs.end(), xfers_.begin() + w);
}

template <typename Work>
HcclResult Ctx::Guarded(void* dst, size_t dst_bytes, const void* src, size_t src_bytes,
                        Work&& work) {
  rt::CopyFault fault;
  const aclError rc = rt::DeviceMemory::Instance().GuardedSince(
      g_.ranges_checked_at, dst, dst_bytes, src, src_bytes, &fault, std::forward<Work>(work));
  if (rc == ACL_SUCCESS) return HCCL_SUCCESS;
  result_->copy = fault;
  result_->copy_src = src;
  result_->copy_dst = dst;
  result_->copy_bytes = dst_bytes;
  result_->code = HCCL_E_RUNTIME;
  return HCCL_E_RUNTIME;
}

HcclResult Ctx::Copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return HCCL_SUCCESS;
  return Guarded(dst, bytes, src, bytes, [=] { std::memmove(dst, src, bytes); });
}

bool Ctx::LateCopy::Step() {
  // A piece copies in tens of microseconds: a TCP link drains only a small part of its socket
  // buffer meanwhile.
  constexpr size_t kPiece = 256u << 10;
  if (rc != HCCL_SUCCESS || done >= bytes) return false;
  const size_t n = std::min(kPiece, bytes - done);
  char* d = dst + done;
  const char* from = src + done;
  rc = ctx->Guarded(d, n, from, n, [=] { std::memmove(d, from, n); });
  done += n;
  return rc == HCCL_SUCCESS && done < bytes;
}

HcclResult Ctx::ReduceInto(void* dst, const void* src, uint64_t count) {
  if (count == 0) return HCCL_SUCCESS;
  const size_t bytes = count * esize_;
  const HcclDataType type = type_;
  const HcclReduceOp op = op_;
  return Guarded(dst, bytes, src, bytes, [=] { alg::ReduceInto(dst, src, count, type, op); });
}

HcclResult Ctx::Reduce2(void* dst, const void* a, const void* b, uint64_t count) {
  if (count == 0) return HCCL_SUCCESS;
  if (a == dst) return ReduceInto(dst, b, count);
  const size_t bytes = count * esize_;
  // Guarded checks one source; the other (user input) is checked on its own first.
  HcclResult hr = CheckUser(a, bytes, false);
  if (hr != HCCL_SUCCESS) return hr;
  const HcclDataType type = type_;
  const HcclReduceOp op = op_;
  return Guarded(dst, bytes, b, bytes, [=] { alg::Reduce2(dst, a, b, count, type, op); });
}

HcclResult Ctx::ReduceSlots(void* dst, const void* own, uint32_t nslots, uint64_t count) {
  if (count == 0 || nslots == 0) return HCCL_SUCCESS;
  if (nslots == 1) return Reduce2(dst, own, Slot(0), count);
  const size_t bytes = count * esize_;
  HcclResult hr = CheckUser(own, bytes, false);
  if (hr != HCCL_SUCCESS) return hr;
  std::vector<const void*> srcs(nslots + 1);
  srcs[0] = own;
  for (uint32_t k = 0; k < nslots; ++k) srcs[k + 1] = Slot(k);
  // The slots are one range of scratch.
  const size_t span = (nslots - 1) * slot_bytes_ + bytes;
  const HcclDataType type = type_;
  const HcclReduceOp op = op_;
  return Guarded(dst, bytes, Slot(0), span,
                 [&] { alg::ReduceN(dst, srcs.data(), srcs.size(), count, type, op); });
}

HcclResult Ctx::CheckUserSlow(const void* p, size_t bytes, bool is_dst) {
  const rt::AddrState state = rt::DeviceMemory::Instance().State(p, bytes);
  if (!rt::IsFault(state)) return HCCL_SUCCESS;
  rt::AddrCheck check = rt::DeviceMemory::Instance().Check(p, bytes);
  check.state = state;
  result_->copy.faulted = true;
  result_->copy.on_dst = is_dst;
  result_->copy.check = check;
  (is_dst ? result_->copy_dst : result_->copy_src) = p;
  result_->copy_bytes = bytes;
  result_->code = HCCL_E_RUNTIME;
  return HCCL_E_RUNTIME;
}

HcclResult Ctx::Fail(HcclResult code, const char* reason) {
  result_->code = code;
  HCCL_ERROR("[Algorithm] collective rejected: {}", reason);
  return code;
}

}  // namespace vigil::alg::detail

namespace vigil::alg {

const char* TaskTypeName(const TaskRecord& task) {
  if (!task.send) return "Notify Wait";
  return task.header_only ? "Notify Record" : "Memcpy";
}

const char* TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kDone:
      return "done";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kPending:
      return "pending";
  }
  return "unknown";
}

}  // namespace vigil::alg
