// Turning an op into work on its stream: queued as a task (the stream's worker, or a thread
// that synchronizes the stream, runs it), or run at once on the calling thread.
//
// Inline execution. A small collective on a stream with nothing queued or running, on a
// communicator with no op in flight, runs on the caller's thread inside its API call: no task
// is built or queued, no other thread is woken, and the Synchronize that follows finds it done.
// The task id, the op's records (flight recorder, heartbeat, entry log, profiling) and its
// failure report are the same as a queued task's (rt::Stream::BeginInline/EndInline).
//
// Running an op inside its API call makes the call wait for the peers, where a queued op lets
// the caller go on. That is safe only if every peer runs the op without first needing anything
// the caller would do after the call returns (a program may queue an op on each of two
// communicators and have its peers queue them in the other order). So a rank first announces
// the collective (its sequence number on the communicator, in shared memory its shm peers read:
// transport::Transport::Announce) and runs it inline only once every peer has announced it too.
// A rank that announced has committed the op to a stream with nothing ahead of it, so it runs
// the op now (inline) or soon (queued: the worker takes it within the stream's handoff time, or
// a Synchronize does) whatever its caller does next; waiting for it cannot deadlock. Peers that
// do not announce within kAnnounceWait (1 ms: late, busy, or on TCP links, which cannot tell) leave
// the op to the queue as before. VIGIL_INLINE_MAX_BYTES (default 65536; 0 turns it off) bounds
// the ops that may run inline, by their largest buffer.
#include <sched.h>

#include <cstdlib>

#include "comm/communicator.h"
#include "comm/consistency.h"
#include "comm/op_observer.h"
#include "common/cpu_relax.h"
#include "common/dtype.h"
#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/profiler.h"

namespace vigil::comm {

namespace {

// How long a rank that announced a collective waits for its peers to announce it before it
// leaves the op to its stream. Ranks that run in step (a training loop, a benchmark) announce
// within a microsecond or two of each other. It must exceed what falling back costs: a rank
// that gave up runs the op from its queue (a Synchronize, or the worker's wake-up: 250-350 us
// measured on a 2-core VM), and with a shorter wait its peer, arriving that much later, gave up
// in turn, so that every op after one miss fell back (2-rank blocking AllReduce: 10 and 200 us
// waits gave ~150-215 us per op, 1 ms none).
constexpr auto kAnnounceWait = std::chrono::milliseconds(1);

uint64_t InlineMaxBytes() {
  static const uint64_t value = [] {
    const char* env = std::getenv("VIGIL_INLINE_MAX_BYTES");
    if (env == nullptr || *env == '\0') return uint64_t{64} << 10;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (*end != '\0') {
      HCCL_WARNING("VIGIL_INLINE_MAX_BYTES={} is not a byte count; using 65536", env);
      return uint64_t{64} << 10;
    }
    return static_cast<uint64_t>(v);
  }();
  return value;
}

}  // namespace

inline alg::Algo Communicator::CachedAlgorithm(const OpDesc& op, alg::HierPlan* plan) const {
  static_assert(static_cast<int>(alg::Algo::kHierarchical) < 8, "an algorithm packs in 3 bits");
  const uint64_t bytes = op.count * DataTypeSize(op.dtype);
  const uint64_t hit = alg_cache_[static_cast<size_t>(op.type)].load(std::memory_order_relaxed);
  if (hit != 0 && (hit >> 10) == bytes) [[likely]] {
    plan->level0 = static_cast<alg::Algo>((hit >> 4) & 7);
    plan->level1 = static_cast<alg::Algo>((hit >> 7) & 7);
    return static_cast<alg::Algo>((hit >> 1) & 7);
  }
  return PickAndCache(op, bytes, plan);
}

HcclResult Communicator::Enqueue(std::shared_ptr<Communicator>&& comm, OpDesc&& op,
                                 rt::Stream* stream, const void* handle, bool may_inline) {
  Communicator& self = *comm;
  if (self.destroyed_.load()) return HCCL_E_PARA;
  alg::HierPlan plan;
  const alg::Algo algo = self.CachedAlgorithm(op, &plan);
  // Before the record counts this op among those queued.
  const bool try_inline = may_inline && self.MayRunInline(op, algo);
  // Every field written once (default-initialized first, then assigned, cost ~18 instructions).
  OpRecord record{
      .comm = self.info_,
      .type = op.type,
      .alg_type_index = AlgTypeIndex(algo, plan),
      .index = self.next_index_.fetch_add(1),
      .count = op.count,
      .dtype = op.dtype,
      .reduce = op.reduce,
      .root = op.root,
      .src = op.send,
      .dst = op.recv,
      .stream_id = stream->id(),
      // The task id is known only once enqueued, but the observer must see the op before it
      // can run; the stream's next id is reserved under the caller's ordering (one enqueuer per
      // stream at a time is the CANN contract).
      .task_id = stream->PeekNextTaskId(),
      .device = self.device(),
      .rank = self.rank(),
      .nranks = self.size(),
      .comm_handle = handle,
      .enqueue_time = WallClock::now(),
  };
  NotifyEnqueue(record);
  if (Env().entry_log) {
    // Beside the Entry line: the algorithm the op runs (HCCL logs its executor choice too).
    HCCL_RUN_INFO(
        "[SelectAlg]tag[{}], index[{}], count[{}], algName[{}], AlgType(level 0-1-2):[{}]",
        record.tag(), record.index, record.count, alg::AlgoName(algo), record.alg_type());
  }
  if (try_inline && self.TryRunInline(op, record, algo, plan, stream)) return HCCL_SUCCESS;
  // The task keeps the op, its record and the communicator in place (rt::TaskFn): queuing it
  // allocates nothing, and the task is built straight into its queue slot (no move of it).
  auto make = [&] {
    return [comm = std::move(comm), op = std::move(op), record = std::move(record), algo,
            plan](std::string* detail) {
      aclError rc = comm->Execute(op, record, algo, plan);
      if (rc != ACL_SUCCESS && detail != nullptr) *detail = record.tag();
      return rc;
    };
  };
  static_assert(rt::TaskFn::Fits<std::invoke_result_t<decltype(make)&>>(),
                "an op's task must fit in place");
  stream->EnqueueMade(rt::TaskType::kHccl, make);
  return HCCL_SUCCESS;
}


bool Communicator::MayRunInline(const OpDesc& op, alg::Algo algo) const {
  if (size() < 2 || algo == alg::Algo::kHierarchical) return false;
  uint64_t bytes = op.count * DataTypeSize(op.dtype);
  switch (op.type) {
    case OpType::kAllReduce:
    case OpType::kBroadcast:
    case OpType::kReduce:
    case OpType::kBarrier:
      break;
    case OpType::kAllGather:
    case OpType::kReduceScatter:
    case OpType::kScatter:
      bytes *= size();  // the buffer of all ranks' blocks
      break;
    default:
      return false;  // per-rank counts or p2p: not worth a special case
  }
  const uint64_t max = InlineMaxBytes();
  return max != 0 && bytes <= max && in_flight() == 0 && Linked(op.type, algo);
}

bool Communicator::AnnounceAndWait() {
  // The group's links are those of every earlier op (exec_mu_ is held): the first op of the
  // communicator, which makes them, is queued.
  if (!group_links_complete_) return false;
  for (const transport::Link* link : group_.links) {
    if (link != nullptr && link->type() != transport::LinkType::kShm) return false;
  }
  const uint64_t seq = coll_seq_ + 1;  // what ExecuteHeld numbers this collective
  transport_->Announce(seq);
  auto all_announced = [&] {
    for (const transport::Link* link : group_.links) {
      if (link != nullptr && link->peer_announced() < seq) return false;
    }
    return true;
  };
  if (all_announced()) return true;
  const SteadyClock::time_point until = SteadyClock::now() + kAnnounceWait;
  for (uint32_t i = 1;; ++i) {
    CpuRelax();
    if (all_announced()) return true;
    if (i % 32 == 0) {
      if (abort_.load(std::memory_order_relaxed) != 0 || SteadyClock::now() >= until) {
        return false;
      }
      // More ranks than cores: the peer may need this core to get there.
      if (!spin_wait_) sched_yield();
    }
  }
}

bool Communicator::TryRunInline(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                                const alg::HierPlan& plan, rt::Stream* stream) {
  if (!stream->BeginInline()) return false;
  if (!exec_mu_.try_lock()) {  // another stream's op (fault F8): Execute reports it
    stream->CancelInline();
    return false;
  }
  if (!AnnounceAndWait()) {
    exec_mu_.unlock();
    stream->CancelInline();
    return false;
  }
  const auto began =
      rt::prof::Active() ? rt::prof::Clock::now() : rt::prof::Clock::time_point{};
  aclError rc;
  std::string detail;
  try {
    rc = ExecuteHeld(op, record, algo, plan);
  } catch (const std::exception& e) {  // as a queued task's (rt::Stream)
    rc = ACL_ERROR_RT_INTERNAL_ERROR;
    detail = std::string("task threw: ") + e.what();
  }
  exec_mu_.unlock();
  if (rc != ACL_SUCCESS && detail.empty()) detail = record.tag();
  stream->EndInline(rt::TaskType::kHccl, rc, &detail, began);
  return true;
}

}  // namespace vigil::comm
