// Turning an op into work on its stream: queued as a task (the stream's worker, or a thread
// that synchronizes the stream, runs it), or run at once on the calling thread: a small op of a
// 2-rank communicator on shm, on an idle stream, through the link's direct slots
// (communicator_direct.cc), which leaves its rest to the stream when the peer is late; the
// next such op's enqueue then runs that rest and what queued behind it first, bounded.
#include "comm/communicator.h"
#include "comm/consistency.h"
#include "comm/op_observer.h"
#include "common/dtype.h"
#include "common/env_config.h"
#include "common/time_util.h"
#include "common/tsc_clock.h"
#include "log/plog.h"
#include "runtime/profiler.h"

namespace vigil::comm {

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
  // Before the record counts this op among those queued. Ops of the communicator in flight
  // (queued behind one whose peer was late, each having found the one before in flight): the
  // enqueuer runs them down first, so that the chain ends here rather than at a Synchronize.
  const bool direct = may_inline && self.DirectFits(op);
  bool try_inline = direct && self.in_flight() == 0;
  if (direct && !try_inline) {
    try_inline = stream->RunQueued() && self.in_flight() == 0;
  }
  // An op that may run inline reads the clock once: its enqueue (wall) time and, unless an
  // entry log line comes between, its start.
  const SteadyClock::time_point now = try_inline ? TscNow() : SteadyClock::time_point{};
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
      .enqueue_time = try_inline ? WallAt(now) : WallClock::now(),
  };
  NotifyEnqueue(record);
  if (Env().entry_log) {
    // Beside the Entry line: the algorithm the op runs (HCCL logs its executor choice too).
    HCCL_RUN_INFO(
        "[SelectAlg]tag[{}], index[{}], count[{}], algName[{}], AlgType(level 0-1-2):[{}], "
        "reason[{}]",
        record.tag(), record.index, record.count, alg::AlgoName(algo), record.alg_type(),
        self.ChoiceReason(op, algo));
  }
  // Inline: done, or posted with its rest to queue (resume: the stream stays claimed until then).
  bool resume = false;
  if (try_inline) {
    const InlineRun run = self.TryRunDirect(
        op, record, stream, Env().entry_log ? SteadyClock::now() : now);
    if (run == InlineRun::kDone) return HCCL_SUCCESS;
    resume = run == InlineRun::kPending;
  }
  // The task keeps the op, its record and the communicator in place (rt::TaskFn): queuing it
  // allocates nothing, and the task is built straight into its queue slot (no move of it).
  auto make = [&] {
    return [comm = std::move(comm), op = std::move(op), record = std::move(record), algo,
            plan, posted = resume](std::string* detail) mutable {
      const aclError rc = comm->RunQueuedOp(op, record, algo, plan, &posted);
      if (rc != ACL_SUCCESS && rc != rt::kTaskNotDone && detail != nullptr) {
        *detail = record.tag();
      }
      return rc;
    };
  };
  static_assert(rt::TaskFn::Fits<std::invoke_result_t<decltype(make)&>>(),
                "an op's task must fit in place");
  // A direct op's task may be run by a later enqueue (RunQueued), a bounded run at a time.
  stream->EnqueueMade(rt::TaskType::kHccl, make, /*resumable=*/direct);
  // Its rest is the stream's next task, as any queued one: a Synchronize's, a later enqueue's
  // (RunQueued) or, after the handoff time, the worker's.
  if (resume) stream->CancelInline(/*take_now=*/false);
  return HCCL_SUCCESS;
}

}  // namespace vigil::comm
