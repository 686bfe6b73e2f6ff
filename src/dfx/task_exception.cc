#include "dfx/task_exception.h"

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/dtype.h"
#include "common/env_config.h"
#include "dfx/cluster_monitor.h"
#include "dfx/entry_log.h"
#include "dfx/flight_recorder.h"
#include "dfx/root_cause.h"
#include "log/plog.h"
#include "runtime/stream.h"

namespace vigil::dfx {

namespace {

constexpr size_t kOpsPerStream = 2048;  // HCCL keeps 2048 tasks per stream
constexpr size_t kTaskOps = 2000;       // HCCL_DIAGNOSE_ENABLE: task detail of the last 2000 ops

struct Tracked {
  comm::OpRecord op;
  std::optional<comm::OpFailure> failure;
  std::shared_ptr<alg::TaskLog> tasks;  // HCCL_DIAGNOSE_ENABLE=1 only
};

// The last kOpsPerStream failed ops of one stream, oldest first: grows to kOpsPerStream, then a
// new op overwrites the oldest slot in place.
struct StreamOps {
  std::vector<Tracked> slots;
  size_t first = 0;  // slot of the oldest op once full

  size_t size() const { return slots.size(); }
  Tracked& At(size_t i) { return slots[(first + i) % slots.size()]; }

  Tracked& Push() {
    if (slots.size() < kOpsPerStream) return slots.emplace_back();
    Tracked& oldest = slots[first];
    first = (first + 1) % slots.size();
    return oldest;
  }
};

// The op the calling thread runs (from OnStart to OnFinish: a stream worker, or a thread that
// synchronizes a stream), and the task detail it got just before its OnFinish: a task-failure
// callback runs on the thread that ran the failing task right after it, while the op's record
// (in the task) is still alive.
// Trivial, so that it needs no guard (one TLS lookup per op); the task detail, only with
// HCCL_DIAGNOSE_ENABLE=1, lives apart.
struct Running {
  const comm::OpRecord* op = nullptr;
  bool has_tasks = false;
};
thread_local Running t_running;
thread_local std::shared_ptr<alg::TaskLog> t_tasks;

// What a task that did not complete was waiting for, in words.
std::string WaitFor(const alg::TaskRecord& t) {
  if (!t.send && t.done < t.head) {
    return fmt::format("op header of rank[{}] (has it entered this op?)", t.remote);
  }
  if (!t.send) return fmt::format("data from rank[{}]", t.remote);
  return fmt::format("rank[{}] to take the data (its op header or free link buffer)", t.remote);
}

std::string P(const void* p) { return fmt::format("{}", fmt::ptr(p)); }

// A data link that broke because its peer's process exited is not a network fault: report it as
// HCCL does an op left waiting on a dead rank (notify wait, EI0002) — the heartbeat has named the
// rank LOST — and keep EI0013 for links whose two ends are alive.
comm::OpFailure::Kind ReportedKind(const comm::OpRecord& op, const comm::OpFailure& f) {
  if (f.kind == comm::OpFailure::Kind::kLink && PeerExited(op, f.remote_rank)) {
    return comm::OpFailure::Kind::kAbort;
  }
  return f.kind;
}

// Only a failed op is reported, and it reaches OnFinish with its failure on the stream worker
// before the runtime's task-failure callback: the handler keeps failed ops only, so queuing an
// op costs it nothing but the entry log.
class TaskExceptionHandler : public comm::OpObserver {
 public:
  void OnEnqueue(const comm::OpRecord& op) override {
    if (Env().entry_log) LogOpEntry(op);
  }

  void OnStart(const comm::OpRecord& op, SteadyClock::time_point) override { t_running.op = &op; }

  void OnTasks(const comm::OpRecord&, const std::shared_ptr<alg::TaskLog>& tasks) override {
    t_tasks = tasks;
    t_running.has_tasks = true;
    std::lock_guard<std::mutex> lock(mu_);
    // Task detail of the last kTaskOps ops only, as HCCL caches it.
    task_ops_.push_back(tasks);
    if (task_ops_.size() > kTaskOps) {
      task_ops_.front()->tasks.clear();
      task_ops_.front()->tasks.shrink_to_fit();
      task_ops_.pop_front();
    }
  }

  void OnFinish(const comm::OpRecord& op, HcclResult result, const comm::OpFailure* failure,
                SteadyClock::time_point) override {
    Running& running = t_running;
    running.op = nullptr;
    if (result == HCCL_SUCCESS && !running.has_tasks) return;  // the common case, kept short
    FinishSlow(op, result, failure, running);
  }

  [[gnu::noinline]] void FinishSlow(const comm::OpRecord& op, HcclResult result,
                                    const comm::OpFailure* failure, Running& running) {
    if (result == HCCL_SUCCESS || failure == nullptr) {
      if (running.has_tasks) {
        running.has_tasks = false;
        t_tasks.reset();
      }
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    Tracked& t = by_stream_[op.stream_id].Push();
    t.op = op;
    t.failure = *failure;
    t.tasks.reset();
    if (running.has_tasks) {
      running.has_tasks = false;
      t.tasks = std::move(t_tasks);
    }
  }

  bool LastFailed(const void* comm_handle, comm::OpRecord* op, comm::OpFailure* failure) {
    std::lock_guard<std::mutex> lock(mu_);
    const Tracked* newest = nullptr;
    for (const auto& [stream, q] : by_stream_) {
      for (const Tracked& t : q.slots) {
        if (!t.failure || t.op.comm_handle != comm_handle) continue;
        if (newest == nullptr || t.op.index > newest->op.index) newest = &t;
      }
    }
    if (newest == nullptr) return false;
    *op = newest->op;
    *failure = *newest->failure;
    return true;
  }

  void OnTaskFail(const rt::TaskFailInfo& info) {
    Tracked tracked;
    Running& running = t_running;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Tracked* t = FindLocked(info.stream_id, info.task_id);
      if (t != nullptr) {
        tracked = *t;
      } else if (running.op != nullptr && running.op->stream_id == info.stream_id &&
                 running.op->task_id == info.task_id) {
        tracked.op = *running.op;  // the op ended without reaching OnFinish (it threw)
        if (running.has_tasks) tracked.tasks = std::move(t_tasks);
      } else {
        running.op = nullptr;
        HCCL_INFO("task streamID[{}] taskID[{}] failed; stream not found or task not from HCCL",
                  info.stream_id, info.task_id);
        return;
      }
    }
    running = Running{};
    t_tasks.reset();
    Report(tracked);
  }

 private:
  Tracked* FindLocked(uint32_t stream_id, uint32_t task_id) {
    auto it = by_stream_.find(stream_id);
    if (it == by_stream_.end()) return nullptr;
    // Newest match wins, as HCCL pops from the back.
    StreamOps& ops = it->second;
    for (size_t i = ops.size(); i-- > 0;) {
      if (ops.At(i).op.task_id == task_id) return &ops.At(i);
    }
    return nullptr;
  }

  void Report(const Tracked& t) {
    const comm::OpRecord& op = t.op;
    const bool timeout = t.failure && t.failure->kind == comm::OpFailure::Kind::kTimeout;
    const char* stage = timeout ? "[TaskExecStage][Timeout][Host]" : "[TaskExecStage][RunFailed][Host]";
    HCCL_ERROR("{}Task run failed, base information is streamID:[{}], taskID[{}], tag[{}], "
               "AlgType(level 0-1-2):[{}].",
               stage, op.stream_id, op.task_id, op.tag(), op.alg_type());
    HCCL_ERROR("{}Task run failed, groupRank information is group:[{}], user define "
               "information[{}], rankSize[{}], rankId[{}].",
               stage, op.identifier(), op.user_name(), op.nranks, op.rank);
    std::string reduce;
    if (comm::OpHasReduce(op.type)) reduce = fmt::format("reduceType[{}], ", ReduceOpName(op.reduce));
    HCCL_ERROR("{}Task run failed, opData information is timeStamp:[{}], deviceId[{}], index[{}], "
               "count[{}], {}src[{}], dst[{}], dataType[{}].",
               stage, FormatPlogTime(op.enqueue_time), op.device, op.index, op.count, reduce,
               P(op.src), P(op.dst), DataTypeName(op.dtype));
    if (t.tasks) {
      if (const alg::TaskRecord* task = t.tasks->failed()) {
        // Task-level tracking (HCCL_DIAGNOSE_ENABLE=1): the transfer the op failed on.
        HCCL_ERROR("{}Task run failed, para information is task[{}/{}], taskType[{}], "
                   "remoteRank[{}], linkType[{}], size[{}], bytesDone[{}], waitFor[{}], tag[{}].",
                   stage, task->id, t.tasks->total, alg::TaskTypeName(*task), task->remote,
                   transport::LinkTypeName(task->link), task->bytes, task->done, WaitFor(*task),
                   op.tag());
      }
    }
    const std::vector<HbEvent> key = ReportClusterException(op);
    if (!t.failure) return;
    const comm::OpFailure& f = *t.failure;
    if (f.kind == comm::OpFailure::Kind::kResource) {
      HCCL_ERROR("{}Task run failed, reason is link establishment could not allocate device "
                 "memory for its QPs [{}] (HCCL_RDMA_QPS_PER_CONNECTION[{}] per link), tag[{}].",
                 stage, f.reason, Env().qps_per_connection, op.tag());
    } else if (!f.reason.empty()) {
      HCCL_ERROR("{}Task run failed, reason is {}, tag[{}].", stage, f.reason, op.tag());
    }
    const std::string remote = f.remote_rank >= 0 ? std::to_string(f.remote_rank) : "unknown";
    const std::string group = fmt::format(
        "group:[{}], user define information[{}], rankSize[{}], rankId[{}]", op.identifier(),
        op.user_name(), op.nranks, op.rank);
    switch (ReportedKind(op, f)) {
      case comm::OpFailure::Kind::kTimeout:
      case comm::OpFailure::Kind::kAbort: {
        if (f.kind == comm::OpFailure::Kind::kAbort && f.code == HCCL_E_AGAIN) {
          // Aborted on purpose (VigilCommShrink with VIGIL_SHRINK_ABORT): no fault to raise.
          HCCL_RUN_WARNING("[TaskExecStage]op tag[{}] index[{}] was aborted by VigilCommShrink "
                           "(VIGIL_SHRINK_ABORT), HCCL_E_AGAIN",
                           op.tag(), op.index);
          break;
        }
        const std::string base = fmt::format(
            "streamID:[{}], taskID[{}], taskType[Notify Wait], tag[{}], AlgType(level 0-1-2):[{}].",
            op.stream_id, op.task_id, op.tag(), op.alg_type());
        ScreenOnce(op, key, "EI0002",
                   {remote, base,
                    fmt::format("index[{}], count[{}], dataType[{}]", op.index, op.count,
                                DataTypeName(op.dtype)),
                    group});
        break;
      }
      case comm::OpFailure::Kind::kCopyFault: {
        const std::string base = fmt::format(
            "streamID:[{}], taskID[{}], taskType[Memcpy], tag[{}], AlgType(level 0-1-2):[{}].",
            op.stream_id, op.task_id, op.tag(), op.alg_type());
        const std::string task = fmt::format(
            "src:[{}], dst:[{}], size:[{:#x}], notify id:[0xffffffffffffffff], link type:[{}], "
            "remote rank:[{}]",
            P(f.copy_src), P(f.copy_dst), f.copy_bytes,
            f.link_type.empty() ? "LOCAL" : f.link_type, remote);
        ScreenOnce(op, key, "EI0012", {remote, base, task, group});
        break;
      }
      case comm::OpFailure::Kind::kResource:
        ScreenOnce(op, {}, "EI0011", {f.reason});
        break;
      case comm::OpFailure::Kind::kParam:
        // The communicator raised EI0005 itself when it found the inconsistency.
        break;
      case comm::OpFailure::Kind::kLink:
        ScreenOnce(op, key, "EI0013",
                   {f.local_ip, std::to_string(f.local_device), f.local_ip, f.remote_ip,
                    std::to_string(f.remote_device), f.remote_ip});
        break;
      default:
        break;
    }
  }

  // HCCL's line, and beside it the root cause the heartbeat events name (none when they name
  // none: an op that failed on its own, a memory fault, or no heartbeat).
  void ScreenOnce(const comm::OpRecord& op, const std::vector<HbEvent>& key, const char* code,
                  const std::vector<std::string>& args) {
    std::call_once(screen_once_, [&] { log::ScreenError(code, args, RootCauseLines(op, key)); });
  }

  std::mutex mu_;
  std::map<uint32_t, StreamOps> by_stream_;
  std::deque<std::shared_ptr<alg::TaskLog>> task_ops_;
  std::once_flag screen_once_;
};

std::atomic<TaskExceptionHandler*> g_handler{nullptr};

}  // namespace

void InstallTaskExceptionHandler() {
  static TaskExceptionHandler* handler = [] {
    auto* h = new TaskExceptionHandler();  // lives for the process: callbacks may fire at exit
    g_handler.store(h);
    comm::AddOpObserver(h);
    rt::RegisterTaskFailCallback([h](const rt::TaskFailInfo& info) { h->OnTaskFail(info); });
    InstallFlightRecorder();  // observes after the handler, so failures are recorded first
    return h;
  }();
  (void)handler;
}

bool LastFailedOp(const void* comm_handle, comm::OpRecord* op, comm::OpFailure* failure) {
  TaskExceptionHandler* h = g_handler.load();
  return h != nullptr && h->LastFailed(comm_handle, op, failure);
}

const char* FailureErrorCode(const comm::OpRecord& op, const comm::OpFailure& failure) {
  // As Report() raises them.
  switch (ReportedKind(op, failure)) {
    case comm::OpFailure::Kind::kTimeout:
    case comm::OpFailure::Kind::kAbort: return "EI0002";
    case comm::OpFailure::Kind::kCopyFault: return "EI0012";
    case comm::OpFailure::Kind::kResource: return "EI0011";
    case comm::OpFailure::Kind::kParam: return "EI0005";
    case comm::OpFailure::Kind::kLink: return "EI0013";
    case comm::OpFailure::Kind::kOther: break;
  }
  return "";
}

}  // namespace vigil::dfx
