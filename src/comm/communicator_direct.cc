// The direct exchange: a small collective of a 2-rank communicator whose link is shared memory
// (AllReduce, Broadcast, AllGather, ReduceScatter, Reduce, AlltoAll) goes through the link's direct slots
// (transport::Link::DirectPost) instead of the generic path (op header frame, algorithm,
// progress engine, byte rings). Each rank writes its part of the op and a check word into its
// slot under the op's collective sequence number, waits for the peer's slot to show the same
// number, and makes its output from the two. One cache line each way for an 8-byte op; nothing
// is staged, no thread is woken unless the peer sleeps.
//
// A rank's part: AllReduce and AllGather its input, ReduceScatter and AlltoAll the block of its
// input the peer keeps, Reduce its input (the root: nothing), Broadcast the root's buffer (the
// other: nothing). Both ranks post and wait for each op, the ones that send nothing too: the peer's post
// says it has read this rank's previous part, which lets this rank write that slot again.
//
// Which ops go direct is decided alike on both ranks: it depends on the op (type, byte count of
// a rank's part) and on the link's limit, which both ends agreed on when they made it (the
// smaller of their offers; an end with op retry or task-level tracking offers 0, as the exchange
// has neither).
//
// Inline. An op that goes direct on an idle stream (nothing queued or running, no op of the
// communicator in flight, its buffers live: those checked last with the memory map unchanged, or
// looked up anew) runs on the caller's thread, inside its API call: records, post, wait,
// combine, records. The caller never waits long for a peer: after kInlineBudget without the
// peer's part the op is left half done (posted) and the rest of it, the wait and the combine,
// is queued on the stream as its next task (ResumeDirect), where a later enqueue (bounded, see
// RunQueuedOp), the caller's Synchronize or the stream's worker runs it. A program that queues
// ops on two communicators in another order than its peers thus cannot deadlock, and a rank
// that posted never holds its peer up: the peer finds the part there whenever it comes,
// whatever this rank's caller does next.
//
// Diagnosis is that of the generic path: the same records (flight recorder, entry log,
// heartbeat op tracking through the observers), the op's fingerprint (its check word, and the
// fingerprint itself in the slot for the report when the words differ: EI0005 naming both
// sides), HCCL_EXEC_TIMEOUT, the heartbeat's abort, a dead or closed peer link (the link's
// monitor breaks it and rings this rank's doorbell), a timed-out rank taking its part back so a
// late peer times out too (F7). A peer that runs another op through the generic path (its ring
// bytes arrive instead) is judged by the op header it sent there.
#include <sched.h>

#include <cstdlib>
#include <cstring>

#include "algorithm/alg_context.h"
#include "algorithm/reduce_kernel.h"
#include "comm/communicator.h"
#include "comm/consistency.h"
#include "comm/op_observer.h"
#include "common/cpu_relax.h"
#include "common/hccl_result.h"
#include "common/tsc_clock.h"
#include "log/plog.h"
#include "runtime/device_memory.h"
#include "runtime/profiler.h"
#include "transport/shm_link.h"


namespace vigil::comm {

namespace {

// Waiting for the peer's part: spin (when this host has a core per rank and the peer did not
// last post from this thread's CPU), then poll with sched_yield (the peer may need this core),
// then sleep on the doorbell the peer rings. Spinning longer lost under load (2 ranks, 2 cores,
// load ~2.6, 1,000 ops per size: 5 us gave 12-15 us per op when the ranks shared a core and
// 0.7-0.9 when not, 50 us 50-120 us, 500 us 1-340 us); on a shared core every spin is lost.
constexpr auto kSpin = std::chrono::microseconds(5);
constexpr auto kYieldPoll = std::chrono::milliseconds(2);
constexpr int kSleepMs = 50;  // abort and deadline seen at least this often
// How often a rank that finds its peer on its CPU may move to another.
constexpr auto kMoveEvery = std::chrono::milliseconds(10);
// How long an inline run waits on the caller's thread before it leaves the rest to the stream.
constexpr auto kInlineBudget = std::chrono::microseconds(50);
// How long an enqueuer that runs its stream's queued direct ops (RunQueuedOp) waits for a late
// peer: a peer that runs its own queue down posts within a microsecond, one that stays away
// (busy computing) costs each enqueue this much until the stream's worker takes the queue
// over (the handoff time; the worker then waits for it).
constexpr auto kQueuedBudget = std::chrono::microseconds(5);

// What SameOp (consistency.cc) compares, folded into one word: equal ops, equal words.
uint64_t CheckWord(const OpFingerprint& fp) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  };
  mix(fp.coll_seq);
  mix(fp.count);
  mix(uint64_t{fp.type} << 32 | fp.dtype);
  mix(uint64_t{fp.recv_dtype} << 32 | fp.reduce);
  mix(fp.root);
  mix(fp.vhash);
  return h | 1;  // never 0
}

// Moves the calling thread off its CPU onto another it may run on: its allowed CPUs less this
// one, then all of them again (the kernel moves it at once and leaves it there). Nothing when
// it may run on one CPU only (the program pinned it) or the calls fail.
bool MoveToAnotherCpu() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
    return false;
  }
  const int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) return false;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (sched_setaffinity(0, sizeof(others), &others) != 0) return false;
  sched_setaffinity(0, sizeof(allowed), &allowed);
  return true;
}

std::string Where(const transport::Link* link) {
  const transport::Endpoint& r = link->remote();
  return fmt::format("rank[{}] ({}:{}, {} link)", r.rank, r.host_ip, r.port,
                     transport::LinkTypeName(link->type()));
}

}  // namespace

size_t DirectBytesFromEnv() {
  static const size_t value = [] {
    const char* env = std::getenv("VIGIL_DIRECT_MAX_BYTES");
    if (env == nullptr || *env == '\0') return transport::kShmDirectBytes;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end != '\0') {
      HCCL_WARNING("VIGIL_DIRECT_MAX_BYTES={} is not a byte count; using {}", env,
                   transport::kShmDirectBytes);
      return transport::kShmDirectBytes;
    }
    return std::min<size_t>(v, transport::kShmDirectBytes);
  }();
  return value;
}

void Communicator::NoteDirectLink() {
  transport::Link* link = transport_->link(rank() ^ 1);
  if (link == nullptr) return;  // not linked yet: the op that links it looks again
  direct_noted_ = true;
  const size_t max = link->direct_max_bytes();
  if (max == 0) return;
  direct_link_ = link;
  direct_max_.store(max, std::memory_order_relaxed);
  direct_ready_.store(true, std::memory_order_release);
  HCCL_RUN_INFO("[InitChannelStage]communicator[{}] rank[{}]: AllReduce, Broadcast, AllGather, "
                "ReduceScatter, Reduce and AlltoAll of up to {} bytes a rank go through the direct slots "
                "of the shm link to rank[{}]",
                identifier(), rank(), max, rank() ^ 1);
}

std::string Communicator::ChoiceReason(const OpDesc& op, alg::Algo algo) const {
  const uint64_t bytes = op.count * DataTypeSize(op.dtype);
  const std::string where = fmt::format("{} ranks on {} host{}", size(), host_count_,
                                        host_count_ == 1 ? "" : "s");
  if (DirectOp(op.type) && op.count > 0 && size() == 2 && host_count_ == 1 &&
      Env().transport != "tcp" && bytes <= direct_option_) {
    return fmt::format("{}, {} B <= direct {} B: shm direct slots", where, bytes, direct_option_);
  }
  const std::string& spec = options_.algo.empty() ? Env().algo : options_.algo;
  if (!spec.empty()) return fmt::format("{}, {} B, HCCL_ALGO[{}]", where, bytes, spec);
  if (algo == alg::Algo::kHierarchical) return fmt::format("{}, {} B: per-host levels", where, bytes);
  if (LevelsAreOneRankAHost(op.type)) {
    return fmt::format("{}, {} B: one rank a host, the inter-host level over all ranks", where,
                       bytes);
  }
  if (op.type == OpType::kAllReduce && size() > 1) {
    constexpr uint64_t kOneShot = alg::detail::kOneShotBytes;
    constexpr uint64_t kSmall = 64u << 10;
    if (bytes <= kOneShot) return fmt::format("{}, {} B <= one-shot {} B", where, bytes, kOneShot);
    if (bytes <= kSmall) return fmt::format("{}, {} B <= small {} B", where, bytes, kSmall);
    return fmt::format("{}, {} B > small {} B", where, bytes, kSmall);
  }
  return fmt::format("{}, {} B", where, bytes);
}

namespace {

bool Overlap(const void* a, const void* b, size_t n) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + n && y < x + n;
}

// The bytes the peer of rank `me` posts for op (Communicator::DirectPart on its side).
size_t PeerPartBytes(const OpDesc& op, uint32_t me) {
  const size_t n = op.count * DataTypeSize(op.dtype);
  switch (op.type) {
    case OpType::kReduce:
      return me == op.root ? n : 0;
    case OpType::kBroadcast:
      return me == op.root ? 0 : n;
    default:
      return n;
  }
}

}  // namespace

const void* Communicator::DirectPart(const OpDesc& op, size_t* bytes) const {
  const size_t n = op.count * DataTypeSize(op.dtype);
  const uint32_t peer = rank() ^ 1;
  *bytes = n;
  switch (op.type) {
    case OpType::kReduceScatter:
    case OpType::kAlltoAll:
      return static_cast<const char*>(op.send) + peer * n;
    case OpType::kReduce:
      if (rank() == op.root) *bytes = 0;
      return rank() == op.root ? nullptr : op.send;
    case OpType::kBroadcast:
      if (rank() != op.root) *bytes = 0;
      return rank() == op.root ? op.send : nullptr;
    default:  // AllReduce, AllGather
      return op.send;
  }
}

void Communicator::FinishDirect(const OpDesc& op, const void* theirs) {
  const size_t n = op.count * DataTypeSize(op.dtype);
  const uint32_t me = rank();
  // A reduction's own part: read while its output is written, so copied first when the two
  // overlap other than exactly (element i of the output must not land on element j != i of it).
  auto reduce = [&](const void* mine) {
    alignas(64) char copy[transport::kShmDirectBytes];
    if (mine != op.recv && Overlap(mine, op.recv, n)) {
      std::memcpy(copy, mine, n);
      mine = copy;
    }
    alg::Reduce2(op.recv, mine, theirs, op.count, op.dtype, op.reduce);
  };
  switch (op.type) {
    case OpType::kAllReduce:
      reduce(op.send);
      break;
    case OpType::kReduceScatter:
      reduce(static_cast<const char*>(op.send) + me * n);
      break;
    case OpType::kReduce:
      if (me == op.root) reduce(op.send);
      break;
    case OpType::kBroadcast:
      if (me != op.root) std::memcpy(op.recv, theirs, n);
      break;
    case OpType::kAllGather: {
      // This rank's block first: its input may lie where the peer's block goes.
      char* out = static_cast<char*>(op.recv);
      if (op.send != out + me * n) std::memmove(out + me * n, op.send, n);
      std::memcpy(out + (me ^ 1) * n, theirs, n);
      break;
    }
    case OpType::kAlltoAll: {
      // This rank's own block first (its part for the peer is in the slot already): the peer's
      // block may go where this rank's own block is read from.
      char* out = static_cast<char*>(op.recv);
      const char* own = static_cast<const char*>(op.send) + me * n;
      if (own != out + me * n) std::memmove(out + me * n, own, n);
      std::memcpy(out + (me ^ 1) * n, theirs, n);
      break;
    }
    default:
      break;
  }
}

aclError Communicator::RunDirect(const OpDesc& op, const OpRecord& record, uint64_t seq,
                                 bool posted, bool bounded) {
  transport::Link* link = direct_link_;
  const size_t expect = PeerPartBytes(op, rank());
  if (!posted) {
    const OpFingerprint fp = MakeFingerprint(op, record.index, seq, rank());
    direct_check_ = CheckWord(fp);
    size_t part_bytes = 0;
    const void* part = DirectPart(op, &part_bytes);
    link->DirectPost(seq, direct_check_, &fp, part, part_bytes);
  }
  // When the peer's part came, as far as a clock read already made tells within the op's
  // own work (AwaitDirect): its start when it was there at once; kUnread when the op resumes
  // now (posted earlier) or its wait ended in a yield or a sleep.
  SteadyClock::time_point came = posted ? kUnread : direct_start_;
  for (;;) {
    uint64_t check = 0;
    size_t bytes = 0;
    const void* theirs = link->DirectPeek(seq, expect, &check, &bytes);
    aclError rc = ACL_SUCCESS;
    if (theirs == nullptr) [[unlikely]] {
      theirs = AwaitDirect(op, record, seq, bounded, &check, &bytes, &rc, &came);
      if (theirs == nullptr) return rc;
    }
    if (check != direct_check_) [[unlikely]] {
      if (JudgeDirectHead(op, record, seq, link->DirectPeerHead(seq), &rc)) return rc;
    }
    FinishDirect(op, theirs);
    // The peer took its part back while it was read (it gave the op up): as if never sent.
    if (!link->DirectStillPosted(seq)) [[unlikely]] {
      bounded = false;
      came = kUnread;
      continue;
    }
    // Its end: the clock read that saw the part come, or the op's start when it was there at
    // once, the op's own work since being well under a microsecond; read now when neither.
    NotifyFinish(record, HCCL_SUCCESS, nullptr, came != kUnread ? came : TscNow());
    return ACL_SUCCESS;
  }
}

const void* Communicator::AwaitDirect(const OpDesc& op, const OpRecord& record, uint64_t seq,
                                      bool bounded, uint64_t* check, size_t* bytes, aclError* rc,
                                      SteadyClock::time_point* came) {
  transport::Link* link = direct_link_;
  const size_t n = op.count * DataTypeSize(op.dtype);
  const size_t expect = PeerPartBytes(op, rank());
  // From the op's start (read just before it posted): no clock read of its own.
  const SteadyClock::time_point entered = direct_start_;
  const SteadyClock::time_point spin_until = entered + kSpin;
  const SteadyClock::time_point yield_until = entered + kYieldPoll;
  auto transfer_failed = [&](HcclResult code, bool timed_out, std::string reason) {
    transport::ProgressError pe;
    pe.code = code;
    pe.link = link;
    pe.timed_out = timed_out;
    pe.reason = std::move(reason);
    // This rank gives the op up: a late peer must not complete it with the part posted here.
    if (timed_out || code != HCCL_E_REMOTE) link->AbandonOp();
    *rc = FailTransfer(record, nullptr, pe, code);
    return nullptr;
  };
  // A peer on this CPU cannot post while this thread spins there: yield to it at once. When the
  // host has a CPU for each rank, this thread also moves to another CPU it may run on (at most
  // every kMoveEvery): the kernel keeps two threads that wake each other on one CPU, where
  // every op is a switch between processes (7-15 us a switch here, against 0.6-1 us an op on
  // two CPUs).
  bool spinning = spin_wait_;
  if (spinning && link->DirectPeerOnThisCpu(seq)) {
    spinning = false;
    if (entered - direct_moved_ >= kMoveEvery && MoveToAnotherCpu()) {
      direct_moved_ = entered;
      link->DirectNoteCpu();
    }
  }
  for (uint32_t i = 1;; ++i) {
    if (const void* theirs = link->DirectPeek(seq, expect, check, bytes)) return theirs;
    if (spinning && i % 16 != 0) {
      CpuRelax();
      continue;
    }
    const SteadyClock::time_point now = SteadyClock::now();
    // Within 16 spins of a part seen next (well under a microsecond): its time of arrival.
    *came = now;
    if (link->broken()) {
      // What the peer posted before it died or closed is still its part.
      if (const void* theirs = link->DirectPeek(seq, expect, check, bytes)) return theirs;
      return transfer_failed(
          HCCL_E_REMOTE, false,
          fmt::format("link error during the direct exchange of {} bytes with {}, nothing "
                      "received",
                      n, Where(link)));
    }
    if (const int code = abort_.load(std::memory_order_acquire); code != 0) {
      return transfer_failed(ToHcclResult(code), false,
                             fmt::format("aborted while waiting for the direct exchange of {} "
                                         "bytes with {}",
                                         n, Where(link)));
    }
    if (now >= direct_deadline_) {
      return transfer_failed(
          HCCL_E_TIMEOUT, true,
          fmt::format("timeout waiting for the direct exchange of {} bytes with {}: nothing "
                      "arrived (has it entered this op?)",
                      n, Where(link)));
    }
    // Another op of the peer: it runs ahead, or its bytes came through the ring. Looked at
    // before the slot is looked at again: a peer that posted this op and went on to the next
    // posted this op first.
    const uint64_t latest = link->DirectPeerLatest();
    const bool ring = link->ring_pending();
    if (latest > seq || ring) [[unlikely]] {
      if (const void* theirs = link->DirectPeek(seq, expect, check, bytes)) return theirs;
      if (latest > seq) {
        if (JudgeDirectHead(op, record, seq, link->DirectPeerHead(latest), rc)) return nullptr;
      } else {
        return RingInstead(op, record, seq, rc);
      }
    }
    if (bounded && now >= direct_give_back_) {
      *rc = kDirectPending;
      return nullptr;
    }
    if (spinning && now < spin_until) {
      CpuRelax();
      continue;
    }
    spinning = false;
    *came = kUnread;  // a part seen after a yield or a sleep came at some time during it
    if (now < yield_until) {
      sched_yield();
    } else {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(direct_deadline_ - now).count();
      link->DirectSleep(seq, static_cast<int>(std::clamp<int64_t>(left + 1, 1, kSleepMs)));
    }
  }
}

const void* Communicator::RingInstead(const OpDesc& op, const OpRecord& record, uint64_t seq,
                                      aclError* rc) {
  // The peer's op does not go direct: its op header is the first thing of its ring bytes.
  transport::Link* link = direct_link_;
  OpFingerprint head{};
  size_t got = 0;
  while (got < sizeof(head) && SteadyClock::now() < direct_deadline_ && !link->broken()) {
    size_t moved = 0;
    if (link->TryRecv(reinterpret_cast<char*>(&head) + got, sizeof(head) - got, &moved) !=
        HCCL_SUCCESS) {
      break;
    }
    got += moved;
    if (moved == 0) sched_yield();
  }
  if (got == sizeof(head) && JudgeDirectHead(op, record, seq, &head, rc)) return nullptr;
  failure_.reason = fmt::format(
      "rank[{}] runs op index[{}] through the link's rings, this rank through its direct slots",
      rank() ^ 1, record.index);
  failure_.remote_rank = rank() ^ 1;
  CloseLinks(failure_.reason);
  *rc = FailOp(record, nullptr, OpFailure::Kind::kOther, HCCL_E_INTERNAL);
  return nullptr;
}

bool Communicator::JudgeDirectHead(const OpDesc& op, const OpRecord& record, uint64_t seq,
                                   const void* head, aclError* rc) {
  if (head == nullptr) return false;
  const bool report = consistency_check_.load();
  fingerprint_.Reset(MakeFingerprint(op, record.index, seq, rank()), rank(), size(), report);
  alg::OpHeader* h = fingerprint_.header();
  const transport::HeadVerdict verdict = h->hook.on_head(h->hook.ctx, rank() ^ 1, head);
  if (verdict == transport::HeadVerdict::kAccept) return false;
  if (verdict == transport::HeadVerdict::kFail) {
    *rc = FailMismatch(op, record, nullptr, fingerprint_.result());
    return true;
  }
  // The check is off: wait as a held transfer would, then time out (EI0002), as the generic
  // path does.
  group_.wait.deadline = direct_deadline_;
  group_.wait.abort = &abort_;
  const transport::ProgressError pe = WaitOut(rank() ^ 1, group_);
  direct_link_->AbandonOp();
  *rc = FailTransfer(record, nullptr, pe, pe.code);
  return true;
}

Communicator::InlineRun Communicator::TryRunDirect(const OpDesc& op, const OpRecord& record,
                                                   rt::Stream* stream,
                                                   SteadyClock::time_point now) {
  if (!stream->BeginInline()) return InlineRun::kNotRun;
  const auto began = rt::prof::Active() ? rt::prof::Clock::now() : rt::prof::Clock::time_point{};
  std::string detail;
  const aclError rc = StartDirect(op, record, kInlineBudget, &detail, now);
  if (rc == kDirectNotRun) {
    stream->CancelInline();
    return InlineRun::kNotRun;
  }
  if (rc == kDirectPending) return InlineRun::kPending;
  stream->EndInline(rt::TaskType::kHccl, rc, &detail, began);
  return InlineRun::kDone;
}

aclError Communicator::StartDirect(const OpDesc& op, const OpRecord& record,
                                   SteadyClock::duration budget, std::string* detail,
                                   std::optional<SteadyClock::time_point> now) {
  if (!exec_mu_.try_lock()) return kDirectNotRun;  // another stream's op (F8): Execute reports it
  // Only with valid buffers (a fault is the queued op's to report, as it checks them again)
  // and nothing wrong with the communicator. Buffers other than those checked last are looked
  // up here, so the first op after another kind (a barrier, a larger op) runs inline too: had
  // it been queued, every op enqueued behind it would have found it in flight and queued too.
  const BufferKey key{op.type, op.send, op.recv, op.count, op.dtype, op.root};
  const uint64_t checked_at = rt::DeviceMemory::Instance().Generation();
  bool unchanged = false;
  if (!DirectFits(op) || links_closed_.load() || abort_.load() != 0 || destroyed_.load() ||
      FaultyUserBuffer(op, key, checked_at, &unchanged) != nullptr) {
    exec_mu_.unlock();
    return kDirectNotRun;
  }
  if (!unchanged) NoteBuffersChecked(op, key, checked_at);
  if (failure_dirty_) {
    failure_ = OpFailure{};
    failure_dirty_ = false;
  }
  running_stream_.store(record.stream_id, std::memory_order_relaxed);
  running_type_.store(static_cast<int>(op.type), std::memory_order_relaxed);
  const SteadyClock::time_point start = now ? *now : TscNow();
  NotifyStart(record, start);
  direct_start_ = start;
  direct_deadline_ = options_.exec_timeout_s > 0
                         ? start + std::chrono::seconds(options_.exec_timeout_s)
                         : SteadyClock::time_point::max();
  direct_give_back_ = start + budget;
  aclError rc;
  try {
    rc = RunDirect(op, record, ++coll_seq_, /*posted=*/false, /*bounded=*/true);
  } catch (const std::exception& e) {  // as a queued task's (rt::Stream)
    rc = ACL_ERROR_RT_INTERNAL_ERROR;
    *detail = std::string("task threw: ") + e.what();
  }
  if (rc == kDirectPending) return rc;
  CountEnded();
  exec_mu_.unlock();
  if (rc != ACL_SUCCESS && detail->empty()) *detail = record.tag();
  return rc;
}

aclError Communicator::ResumeDirect(const OpDesc& op, const OpRecord& record,
                                    std::optional<SteadyClock::duration> budget) {
  // exec_mu_ is still held by the run that posted (an atomic word: any thread may release it).
  direct_give_back_ =
      budget ? SteadyClock::now() + *budget : SteadyClock::time_point::max();
  aclError rc;
  try {
    rc = RunDirect(op, record, coll_seq_, /*posted=*/true, /*bounded=*/budget.has_value());
  } catch (...) {
    CountEnded();
    exec_mu_.unlock();
    throw;
  }
  if (rc == kDirectPending) return rc;
  CountEnded();
  exec_mu_.unlock();
  return rc;
}

aclError Communicator::RunQueuedOp(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                                   const alg::HierPlan& plan, bool* posted) {
  if (!rt::RunningQueued()) {
    return *posted ? ResumeDirect(op, record, std::nullopt) : Execute(op, record, algo, plan);
  }
  // Its enqueuer runs the stream's queue down (communicator_enqueue.cc): for a short while only.
  aclError rc;
  if (*posted) {
    rc = ResumeDirect(op, record, kQueuedBudget);
  } else {
    std::string detail;
    rc = StartDirect(op, record, kQueuedBudget, &detail);
    *posted = rc == kDirectPending;
  }
  return rc == kDirectPending || rc == kDirectNotRun ? rt::kTaskNotDone : rc;
}

}  // namespace vigil::comm
