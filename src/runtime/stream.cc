// Streams: one worker thread per stream runs tasks in FIFO order — or the thread that
// synchronizes the stream runs them itself.
//
// Cheap enqueue: Enqueue takes the stream mutex once and wakes the worker only when it is in
// its long sleep; the executor swaps the whole pending queue out under the lock and runs the
// batch unlocked. Completion is published per task through an atomic counter, so a Synchronize
// waiting for an earlier task is not held up by a later blocking task of the same batch; the
// executor takes the mutex to wake a waiter only when one is registered. A task its enqueuer
// runs inline (a small HCCL op) claims and releases the stream without the mutex: `executing`
// is taken by compare-and-swap by every executor, and the queue's length is mirrored in an
// atomic for the claim's look; only a task queued meanwhile or a waiting Synchronize makes the
// release take the mutex, to wake the thread that takes over.
//
// The handoff: a program that synchronizes right after it enqueues (a blocking collective, a
// barrier, a training step) would pay two thread switches per op for a worker to run it — the
// wake-up of the worker and the wake-up of the waiting caller, each ~1.5 us on a busy host and
// more than the op itself for small messages. So a task queued while the stream is active waits
// up to the handoff time (VIGIL_STREAM_HANDOFF_US, default 500 us) for a Synchronize to run it
// on the caller's thread; only then the worker, which looks every handoff time while the stream
// is active, runs it. Tasks still start within the handoff time when nobody synchronizes (a
// host that waits on a peer, an event or another stream instead), so the stream stays
// asynchronous: no program that works with a worker per stream can hang with this. One
// executor at a time (`executing`), in task order either way. A stream idle for ~50 ms lets its
// worker sleep until the next Enqueue wakes it; 0 turns the handoff off (the worker runs
// everything, at once). While every task queued between two looks was run by a synchronizing
// caller (a blocking collective per step), the looks back off, up to kMaxBackoff handoff times
// apart; a second task queued before anyone took the first wakes the worker at once, and an
// event wait kicks it as before, so only a lone task that nobody waits for may start that late.
#include "runtime/stream.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "log/plog.h"
#include "runtime/device.h"
#include "runtime/handle_quarantine.h"
#include "runtime/profiler.h"
#include "runtime/rt_log.h"
#include "runtime/stream_capture.h"
#include "runtime/task_queue.h"

namespace vigil::rt {
namespace {

std::atomic<uint32_t> g_next_stream_id{2};  // CANN's user streams start at small ids

struct CallbackRegistry {
  std::mutex mu;
  int next_id = 1;
  std::map<int, std::shared_ptr<TaskFailCallback>> callbacks;
};

CallbackRegistry& Callbacks() {
  static CallbackRegistry* registry =
      new CallbackRegistry();  // leaked: workers may outlive statics
  return *registry;
}

struct StreamRegistry {
  std::mutex mu;
  // Bumped (under mu) whenever a stream leaves the registry: StreamFromHandle's per-thread
  // cache of its last answer stays good while it is unchanged.
  std::atomic<uint64_t> removals{0};
  std::unordered_map<void*, std::shared_ptr<Stream>> streams;
  std::map<int32_t, std::shared_ptr<Stream>> defaults;  // per device
};

StreamRegistry& Registry() {
  static StreamRegistry* registry = new StreamRegistry();  // leaked, as above
  return *registry;
}

// Every live stream, registered as a handle or not, for KickAllStreams.
struct LiveStreams {
  std::mutex mu;
  std::unordered_set<Stream*> all;
};

LiveStreams& Live() {
  static LiveStreams* live = new LiveStreams();  // leaked, as above
  return *live;
}

}  // namespace

const char* TaskTypeName(TaskType type) {
  switch (type) {
    case TaskType::kMemcpy:
      return "Memcpy";
    case TaskType::kMemset:
      return "Memset";
    case TaskType::kNotifyRecord:
      return "NotifyRecord";
    case TaskType::kNotifyWait:
      return "NotifyWait";
    case TaskType::kEventRecord:
      return "EventRecord";
    case TaskType::kEventWait:
      return "EventWait";
    case TaskType::kKernel:
      return "Kernel";
    case TaskType::kHccl:
      return "Hccl";
    case TaskType::kHostFunc:
      return "HostFunc";
  }
  return "Unknown";
}

struct Stream::Impl {
  // What the worker is doing, for Push to know whether it must wake it.
  enum class WorkerState { kAwake, kLooking, kSleeping };

  // Claims the stream for this thread (false: another thread runs it): `executing` is taken by
  // compare-and-swap, so that an inline run claims it without the mutex (BeginInline).
  bool Claim() {
    bool idle = false;
    return executing.compare_exchange_strong(idle, true);
  }
  // Claims the stream, swaps the pending queue out (under mu, held by `lock`) and runs it
  // unlocked on this thread; false when another thread has the stream.
  bool RunPending(Stream& stream, std::unique_lock<std::mutex>& lock);
  void RunBatch(Stream& stream, TaskQueue::Chunk* batch);
  // Runs one task (unless the stream drops it) and reports its failure; its result.
  aclError RunTask(Stream& stream, QueuedTask& task);
  // A task ran or was dropped: its completion, published (and a Synchronize woken for it).
  void Complete(QueuedTask& task);

  mutable std::mutex mu;
  std::condition_variable cv_work;  // worker waits here when it has nothing to take
  std::condition_variable cv_done;  // Synchronize waits here
  TaskQueue pending;                // guarded by mu
  // How many tasks `pending` holds (written under mu): the inline claim's look without it.
  std::atomic<uint32_t> queued{0};
  // Id of the last task: taken by Push (under mu) and EndInline (without it).
  std::atomic<uint32_t> last_id{0};
  std::atomic<uint32_t> taken_upto{0};  // last task id an executor took (under mu, or inline)
  // A thread runs a batch of this stream or an inline task: set by Claim, cleared by the
  // claimer (under mu, except at the end of an inline run).
  std::atomic<bool> executing{false};
  bool take_now = false;    // guarded by mu: the worker takes what is queued at once
  WorkerState worker_state = WorkerState::kAwake;  // guarded by mu
  // guarded by mu: the worker's look is later than the handoff time (Push wakes it when a
  // second task is queued before a Synchronize took the first)
  bool backed_off = false;
  std::atomic<bool> stopping{false};     // written under mu
  std::chrono::microseconds handoff{0};  // see the file comment; 0 = the worker runs everything
  // The thread running a batch now (the worker or a synchronizing caller): a task that
  // synchronizes its own stream would wait for itself.
  std::atomic<std::thread::id> executor{};
  aclError first_error = ACL_SUCCESS;  // guarded by mu: first failure since the last Synchronize
  // first_error or failing set (written under mu): Synchronize's lock-free look reads it.
  std::atomic<bool> has_error{false};
  std::atomic<uint32_t> completed{0};  // id of the last task run or dropped
  std::atomic<int> sync_waiters{0};
  // The lowest task id a Synchronize waits for: the worker wakes waiters only then, not after
  // every task (a wake-up per op costs two context switches on a busy host).
  std::atomic<uint32_t> sync_wake_at{UINT32_MAX};
  std::atomic<bool> failing{false};  // drop tasks until the next Synchronize
  std::atomic<bool> stop_on_failure{true};  // else a failure does not set `failing`
  std::thread worker;
};

namespace {

// VIGIL_STREAM_HANDOFF_US: how long a queued task waits for a Synchronize to run it.
std::chrono::microseconds DefaultHandoff() {
  static const std::chrono::microseconds value = [] {
    const char* env = std::getenv("VIGIL_STREAM_HANDOFF_US");
    if (env == nullptr || *env == '\0') return std::chrono::microseconds(500);
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (*end != '\0' || v < 0 || v > 1000000) {
      VIGIL_RT_FAIL(
          "VIGIL_STREAM_HANDOFF_US={} is not a number of microseconds in [0, 1000000]; "
          "using 500.",
          env);
      return std::chrono::microseconds(500);
    }
    return std::chrono::microseconds(v);
  }();
  return value;
}

// Looks without finding anything to take before the worker sleeps until an Enqueue wakes it.
constexpr auto kActiveWindow = std::chrono::milliseconds(50);
// How far the worker's looks back off while synchronizing callers run every task themselves:
// up to this many handoff times apart (2 ms by default). Each look wakes the worker, and on a
// host with more busy ranks than cores every wake-up preempts a rank and stirs the scheduler's
// placement: at one look per 500 us per stream, a blocking 64 B AllReduce of 4 ranks on 2 cores
// took ~10-20% more wall and CPU time per op. 4 rather than 16 (8 ms): as fast in paired quiet
// rounds (6.2 vs 6.9 us per op, -z 1, 8 rounds), and a lone task queued for overlap after a
// stretch of blocking ops starts at most ~2.5 ms late (a backed-off look, then one handoff time)
// rather than ~8.5.
constexpr int kMaxBackoff = 4;

}  // namespace

Stream::Stream(int32_t device) : Stream(device, DefaultHandoff()) {}

Stream::Stream(int32_t device, std::chrono::microseconds handoff)
    : impl_(std::make_unique<Impl>()),
      id_(g_next_stream_id.fetch_add(1)),
      device_(device),
      capture_(std::make_unique<StreamCapture>()) {
  impl_->handoff = handoff;
  impl_->worker = std::thread([this] {
    std::string name = "vigil_strm" + std::to_string(id_);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    BindThreadDevice(device_);
    Impl& s = *impl_;
    const bool handoff_on = s.handoff.count() > 0;
    const int looks_while_active =
        handoff_on ? std::max<int>(1, static_cast<int>(kActiveWindow / s.handoff)) : 0;
    uint32_t aged_upto = 0;  // tasks up to this id were queued at the last look: take them
    uint32_t seen_last = 0;
    int idle_looks = 0;       // in handoff times
    int backoff = 1;          // the next look comes after backoff x the handoff time
    bool worker_ran = false;  // the worker ran a batch since its last look
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
      if (!s.pending.empty() && !s.executing &&
          (!handoff_on || s.stopping || s.take_now || s.sync_waiters.load() > 0 ||
           s.taken_upto.load() < aged_upto)) {
        s.take_now = false;
        if (s.RunPending(*this, lock)) worker_ran = true;
        continue;
      }
      if (s.stopping && s.pending.empty() && !s.executing) break;
      const uint32_t last = s.last_id.load(std::memory_order_relaxed);
      aged_upto = last;
      if (last != seen_last) {
        seen_last = last;
        idle_looks = 0;
        // Every task queued since the last look already ran on a synchronizing caller: the
        // handoff is at work and this look was for nothing, so the next one comes later.
        backoff = s.pending.empty() && !worker_ran ? std::min(backoff * 2, kMaxBackoff) : 1;
      } else if (!s.pending.empty()) {
        backoff = 1;
      }
      worker_ran = false;
      if (!handoff_on || (s.pending.empty() && (idle_looks += backoff) > looks_while_active)) {
        s.worker_state = Impl::WorkerState::kSleeping;
        s.cv_work.wait(lock);
      } else {
        s.worker_state = Impl::WorkerState::kLooking;
        s.backed_off = backoff > 1;
        s.cv_work.wait_for(lock, s.handoff * backoff);
        s.backed_off = false;
      }
      s.worker_state = Impl::WorkerState::kAwake;
    }
  });
  std::lock_guard<std::mutex> lock(Live().mu);
  Live().all.insert(this);
}

bool Stream::Impl::RunPending(Stream& stream, std::unique_lock<std::mutex>& lock) {
  if (!Claim()) return false;  // an inline run: its end hands what is queued on
  TaskQueue::Chunk* const batch = pending.TakeAll();
  queued.store(0);
  taken_upto.store(last_id.load(std::memory_order_relaxed), std::memory_order_relaxed);
  lock.unlock();
  executor.store(std::this_thread::get_id(), std::memory_order_relaxed);
  RunBatch(stream, batch);
  executor.store(std::thread::id(), std::memory_order_relaxed);
  lock.lock();
  executing.store(false);
  pending.Recycle(batch);
  // Tasks queued meanwhile have waited already: a caller that is done leaves them to the
  // worker at once. Resumable ones first (a chain of small ops, queued while a late one ran)
  // wait for their enqueuer to run them down (RunQueued) or for the worker's next look.
  if (stopping || (!pending.empty() && (sync_waiters.load() > 0 || !pending.Front()->resumable))) {
    take_now = true;
    if (worker_state != WorkerState::kAwake) cv_work.notify_one();
  }
  return true;
}

void Stream::Impl::RunBatch(Stream& stream, TaskQueue::Chunk* batch) {
  for (TaskQueue::Chunk* chunk = batch; chunk != nullptr; chunk = chunk->next) {
    for (size_t i = chunk->begin; i < chunk->used; ++i) {
      QueuedTask& task = chunk->tasks[i];
      RunTask(stream, task);
      Complete(task);
    }
  }
}

aclError Stream::Impl::RunTask(Stream& stream, QueuedTask& task) {
  // Event records still run on a failed stream: they only mark progress, and dropping them
  // would leave host waiters blocked forever.
  if (failing.load(std::memory_order_relaxed) && task.type != TaskType::kEventRecord) {
    return ACL_SUCCESS;
  }
  std::string detail;
  aclError rc;
  // Timed only while a device is profiled (aclprofStart): one relaxed load otherwise.
  const bool profiled = prof::Active();
  const prof::Clock::time_point began = profiled ? prof::Clock::now() : prof::Clock::time_point{};
  try {
    rc = task.fn(&detail);
  } catch (const std::exception& e) {
    rc = ACL_ERROR_RT_INTERNAL_ERROR;
    detail = std::string("task threw: ") + e.what();
  }
  if (rc == kTaskNotDone) return rc;  // it runs again (RunQueued)
  if (profiled) {
    prof::Record(prof::Span{stream.device_, stream.id_, task.id, task.type, rc, began,
                            prof::Clock::now()});
  }
  if (rc != ACL_SUCCESS) {
    TaskFailInfo info;
    info.device = stream.device_;
    info.stream_id = stream.id_;
    info.task_id = task.id;
    info.retcode = rc;
    info.type = task.type;
    info.detail = std::move(detail);
    stream.ReportFailure(info);
  }
  return rc;
}

void Stream::Impl::Complete(QueuedTask& task) {
  task.fn = nullptr;  // release what the task captured before signalling completion
  completed.store(task.id);
  if (sync_waiters.load() > 0 && task.id >= sync_wake_at.load()) {
    { std::lock_guard<std::mutex> wake(mu); }
    cv_done.notify_all();
  }
}

void Stream::SetStopOnFailure(bool stop) { impl_->stop_on_failure.store(stop); }

void Stream::ReportFailure(const TaskFailInfo& info) {
  VIGIL_RT_FAIL(
      "Task execute failed, device_id={}, stream_id={}, task_id={}, task_type={}, retCode={:#x}"
      "({}), {}",
      info.device, info.stream_id, info.task_id, TaskTypeName(info.type), info.retcode,
      info.retcode, info.detail.empty() ? "no detail" : info.detail);
  std::vector<std::shared_ptr<TaskFailCallback>> callbacks;
  {
    std::lock_guard<std::mutex> lock(Callbacks().mu);
    for (auto& [id, cb] : Callbacks().callbacks) callbacks.push_back(cb);
  }
  for (auto& cb : callbacks) (*cb)(info);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->first_error == ACL_SUCCESS) impl_->first_error = info.retcode;
  impl_->has_error.store(true, std::memory_order_release);
  if (impl_->stop_on_failure.load()) impl_->failing.store(true);
}

Stream::~Stream() {
  if (Recording()) AbandonCapture();
  {
    std::lock_guard<std::mutex> lock(Live().mu);
    Live().all.erase(this);
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping.store(true);
  }
  impl_->cv_work.notify_one();
  if (impl_->worker.joinable()) {
    if (impl_->worker.get_id() == std::this_thread::get_id()) {
      // Destroyed from one of its own tasks: the worker cannot join itself; it exits after
      // this task because stopping is set and nothing more can be enqueued.
      impl_->worker.detach();
    } else {
      impl_->worker.join();
    }
  }
}

uint32_t Stream::Push(TaskType type, void (*fill)(TaskFn& slot, void* ctx), void* ctx,
                      bool resumable) {
  if (Recording()) [[unlikely]] {
    if (const uint32_t position = PushCaptured(type, fill, ctx); position != 0) return position;
  }
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  const bool had_pending = !s.pending.empty();
  QueuedTask& task = s.pending.Next();
  fill(task.fn, ctx);  // first: if building the task throws, nothing was queued
  // An inline run's end takes its id without the mutex (EndInline).
  const uint32_t id = s.last_id.fetch_add(1, std::memory_order_relaxed) + 1;
  task.id = id;
  task.type = type;
  task.resumable = resumable;
  s.pending.Commit();
  s.queued.fetch_add(1);
  if (s.worker_state == Impl::WorkerState::kSleeping || (s.backed_off && had_pending)) {
    // One wake-up is enough for everything queued until it looks; it then takes the task after
    // the handoff time unless a Synchronize runs it first. A worker that looks only now and
    // then (its callers synchronized every task) is woken as soon as tasks pile up unsynchronized.
    s.worker_state = Impl::WorkerState::kAwake;
    s.backed_off = false;
    s.cv_work.notify_one();
  }
  return id;
}

namespace {
thread_local bool t_running_queued = false;
}  // namespace

bool RunningQueued() { return t_running_queued; }

bool Stream::RunQueued() {
  if (Recording()) return false;
  Impl& s = *impl_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (s.executing.load() || s.stopping.load(std::memory_order_relaxed) ||
      s.failing.load(std::memory_order_relaxed)) {
    return false;
  }
  QueuedTask* task = s.pending.Front();
  if (task == nullptr) return true;
  if (!task->resumable || !s.Claim()) return false;
  s.executor.store(std::this_thread::get_id(), std::memory_order_relaxed);
  t_running_queued = true;
  bool idle = false;
  for (;;) {
    lock.unlock();
    const aclError rc = s.RunTask(*this, *task);
    if (rc != kTaskNotDone) s.Complete(*task);
    lock.lock();
    if (rc == kTaskNotDone) break;  // it stays first, for the next run
    if (task->id > s.taken_upto.load()) s.taken_upto.store(task->id);
    s.pending.PopFront();
    s.queued.fetch_sub(1);
    task = s.pending.Front();
    if (task == nullptr) {
      idle = true;
      break;
    }
    // A failure drops what follows (RunTask) until a Synchronize, as a worker would.
    if (!task->resumable || s.stopping || s.failing.load(std::memory_order_relaxed)) break;
  }
  t_running_queued = false;
  s.executor.store(std::thread::id(), std::memory_order_relaxed);
  s.executing.store(false);
  // A Synchronize (or the destructor) that came meanwhile waits for the worker to take the rest.
  if (!s.pending.empty() && (s.sync_waiters.load() > 0 || s.stopping)) {
    s.take_now = true;
    if (s.worker_state != Impl::WorkerState::kAwake) s.cv_work.notify_one();
  }
  return idle;
}

bool Stream::BeginInline() {
  if (Recording()) return false;
  Impl& s = *impl_;
  // Without the mutex (two lock pairs were ~10% of a 2-rank 8 B AllReduce): a look, the claim,
  // and the look again, for a task another thread queued in between (one enqueuer per stream is
  // the contract, but a breach must not run a task ahead of one queued before it).
  if (s.queued.load() != 0 || s.stopping.load(std::memory_order_relaxed) ||
      s.failing.load(std::memory_order_relaxed) || !s.Claim()) {
    return false;
  }
  if (s.queued.load() != 0 || s.stopping.load() || s.failing.load()) [[unlikely]] {
    CancelInline();
    return false;
  }
  s.executor.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return true;
}

void Stream::CancelInline(bool take_now) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  s.executor.store(std::thread::id(), std::memory_order_relaxed);
  s.executing.store(false);
  // Queued by another thread meanwhile: theirs now. Queued by the claimer (take_now false):
  // as any queued task, for a Synchronize to run within the handoff time, else the worker.
  if ((take_now && !s.pending.empty()) || s.stopping) {
    s.take_now = true;
    if (s.worker_state != Impl::WorkerState::kAwake) s.cv_work.notify_one();
  }
}

uint32_t Stream::EndInline(TaskType type, aclError rc, std::string* detail,
                           std::chrono::steady_clock::time_point began) {
  Impl& s = *impl_;
  const bool profiled = prof::Active();
  // Without the mutex, as BeginInline: the claim keeps every other executor out meanwhile.
  const uint32_t id = s.last_id.fetch_add(1, std::memory_order_relaxed) + 1;
  s.taken_upto.store(id, std::memory_order_relaxed);
  if (rc != ACL_SUCCESS || profiled) [[unlikely]] {
    if (profiled) {
      prof::Record(prof::Span{device_, id_, id, type, rc, began, prof::Clock::now()});
    }
    if (rc != ACL_SUCCESS) {
      TaskFailInfo info;
      info.device = device_;
      info.stream_id = id_;
      info.task_id = id;
      info.retcode = rc;
      info.type = type;
      if (detail != nullptr) info.detail = std::move(*detail);
      ReportFailure(info);
    }
  }
  s.completed.store(id);
  s.executor.store(std::thread::id(), std::memory_order_relaxed);
  s.executing.store(false);
  // After the release, in this order (Push counts its task before the worker looks at
  // `executing`): a task queued meanwhile, or the destructor, gets the worker now.
  if (s.queued.load() != 0 || s.stopping.load()) [[unlikely]] {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.pending.empty() || s.stopping) {
      s.take_now = true;
      if (s.worker_state != Impl::WorkerState::kAwake) s.cv_work.notify_one();
    }
  }
  if (s.sync_waiters.load() > 0) {
    { std::lock_guard<std::mutex> wake(s.mu); }  // a waiter between its look and its wait
    s.cv_done.notify_all();
  }
  return id;
}

uint32_t Stream::PeekNextTaskId() const {
  return impl_->last_id.load(std::memory_order_relaxed) + 1;
}

uint32_t Stream::LastTaskId() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->last_id;
}

uint32_t Stream::CompletedTaskId() const {
  return impl_->completed.load();
}

aclError Stream::Synchronize(int32_t timeout_ms) {
  if (Capturing()) [[unlikely]] {
    // Its tasks are recorded, not run: there is nothing to wait for (CANN refuses it too).
    VIGIL_RT_FAIL("Stream synchronize failed: stream_id={} is capturing (aclmdlRICaptureBegin); "
                  "synchronizing a stream during the capture stage is not supported.", id_);
    return ACL_ERROR_RT_STREAM_CAPTURED;
  }
  Impl& s = *impl_;
  if (s.worker.get_id() == std::this_thread::get_id() ||
      s.executor.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
    VIGIL_RT_FAIL("Stream synchronize failed: stream_id={} synchronized from its own task.", id_);
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  // Every task enqueued so far done and none failed (an op that ran inline, the usual case of a
  // blocking op): nothing to wait for and nothing to clear, without the lock. A failure is
  // reported before its task counts as completed, so it is seen here once its task is.
  if (s.completed.load(std::memory_order_acquire) == s.last_id.load(std::memory_order_acquire) &&
      !s.has_error.load(std::memory_order_acquire)) {
    return ACL_SUCCESS;
  }
  std::unique_lock<std::mutex> lock(s.mu);
  const uint32_t target = s.last_id;
  auto done = [&] { return s.completed.load() >= target; };
  // Without a timeout this thread runs what is queued itself (see the file comment); with one
  // it must be free to return at the timeout, so the worker runs it, at once.
  if (timeout_ms < 0 && s.handoff.count() > 0) {
    while (!done() && !s.pending.empty() && !s.executing.load()) {
      const int32_t caller_device = CurrentDevice();
      BindThreadDevice(device_);
      const bool ran = s.RunPending(*this, lock);
      BindThreadDevice(caller_device);
      if (!ran) break;  // an inline run has the stream: its end wakes this wait
    }
  }
  bool finished = true;
  if (!done()) {
    s.sync_waiters.fetch_add(1);
    if (target < s.sync_wake_at.load()) s.sync_wake_at.store(target);         // under mu
    if (s.worker_state != Impl::WorkerState::kAwake) s.cv_work.notify_one();  // take it now
    if (timeout_ms < 0) {
      s.cv_done.wait(lock, done);
    } else {
      finished = s.cv_done.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
    }
    if (s.sync_waiters.fetch_sub(1) == 1) s.sync_wake_at.store(UINT32_MAX);
  }
  if (!finished) {
    uint32_t completed = s.completed.load();
    lock.unlock();
    VIGIL_RT_FAIL(
        "Stream synchronize timeout: device_id={}, stream_id={}, timeout={}ms, last task_id={}, "
        "completed task_id={}, executing task_id={}.",
        device_, id_, timeout_ms, target, completed, completed + 1);
    return ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
  }
  aclError err = s.first_error;
  s.first_error = ACL_SUCCESS;
  s.has_error.store(false, std::memory_order_relaxed);
  s.failing.store(false);
  return err;
}

void Stream::Kick() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.pending.empty() || s.executing.load()) return;
  s.take_now = true;
  if (s.worker_state != Impl::WorkerState::kAwake) s.cv_work.notify_one();
}

Stream* StreamFromHandle(void* handle) {
  if (handle == nullptr) return nullptr;
  // Every op looks its stream up: a thread usually names the same one again, and answering from
  // the cache saves the registry's lock and hash lookup. A raw pointer, as before: the caller
  // does not keep the stream alive (StreamRef does).
  struct Last {
    void* handle = nullptr;
    Stream* stream = nullptr;
    uint64_t removals = 0;
  };
  thread_local Last last;
  StreamRegistry& registry = Registry();
  if (handle == last.handle && registry.removals.load(std::memory_order_acquire) == last.removals) {
    return last.stream;
  }
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.streams.find(handle);
  if (it == registry.streams.end()) return nullptr;
  last = Last{handle, it->second.get(), registry.removals.load(std::memory_order_relaxed)};
  return last.stream;
}

std::shared_ptr<Stream> StreamRef(void* handle) {
  if (handle == nullptr) return nullptr;
  // A blocking op synchronizes its stream after every call: the same cache as StreamFromHandle's,
  // holding the stream weakly (a destroyed one is not kept alive by it).
  struct Last {
    void* handle = nullptr;
    std::weak_ptr<Stream> stream;
    uint64_t removals = 0;
  };
  thread_local Last last;
  StreamRegistry& registry = Registry();
  if (handle == last.handle && registry.removals.load(std::memory_order_acquire) == last.removals) {
    if (std::shared_ptr<Stream> stream = last.stream.lock()) return stream;
  }
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.streams.find(handle);
  if (it == registry.streams.end()) return nullptr;
  last.handle = handle;
  last.stream = it->second;
  last.removals = registry.removals.load(std::memory_order_relaxed);
  return it->second;
}

std::shared_ptr<Stream> DefaultStream(int32_t device) {
  std::lock_guard<std::mutex> lock(Registry().mu);
  auto& slot = Registry().defaults[device];
  if (!slot) slot = HandleQuarantine<Stream>::Make(device);
  return slot;
}

Stream* CreateStream(int32_t device) {
  auto stream = HandleQuarantine<Stream>::Make(device);
  Stream* raw = stream.get();
  std::lock_guard<std::mutex> lock(Registry().mu);
  Registry().streams.emplace(raw, std::move(stream));
  return raw;
}

aclError DestroyStream(void* handle) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard<std::mutex> lock(Registry().mu);
    auto it = Registry().streams.find(handle);
    if (it == Registry().streams.end()) return ACL_ERROR_RT_PARAM_INVALID;
    if (it->second->Capturing()) {
      VIGIL_RT_FAIL("Stream destroy failed: stream_id={} is capturing; end the capture "
                    "(aclmdlRICaptureEnd) before destroying the stream.", it->second->id());
      return ACL_ERROR_RT_STREAM_CAPTURED;
    }
    stream = std::move(it->second);
    Registry().streams.erase(it);
    Registry().removals.fetch_add(1, std::memory_order_release);
  }
  stream.reset();  // drains and joins unless another thread still holds a reference
  return ACL_SUCCESS;
}

void DestroyDeviceStreams(int32_t device) {
  std::vector<std::shared_ptr<Stream>> doomed;
  {
    std::lock_guard<std::mutex> lock(Registry().mu);
    auto& streams = Registry().streams;
    for (auto it = streams.begin(); it != streams.end();) {
      if (device < 0 || it->second->device() == device) {
        doomed.push_back(std::move(it->second));
        it = streams.erase(it);
        Registry().removals.fetch_add(1, std::memory_order_release);
      } else {
        ++it;
      }
    }
    auto& defaults = Registry().defaults;
    for (auto it = defaults.begin(); it != defaults.end();) {
      if (device < 0 || it->first == device) {
        doomed.push_back(std::move(it->second));
        it = defaults.erase(it);
        Registry().removals.fetch_add(1, std::memory_order_release);
      } else {
        ++it;
      }
    }
  }
  doomed.clear();  // outside the registry lock: each destructor drains and joins
}

void DestroyAllStreams() {
  DestroyDeviceStreams(-1);
}

void KickAllStreams() {
  LiveStreams& live = Live();
  std::lock_guard<std::mutex> lock(live.mu);  // a stream leaves the set before it dies
  for (Stream* stream : live.all) stream->Kick();
}

aclError SynchronizeDeviceStreams(int32_t device, int32_t timeout_ms) {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(Registry().mu);
    for (auto& [handle, stream] : Registry().streams) {
      if (stream->device() == device) streams.push_back(stream);
    }
    auto it = Registry().defaults.find(device);
    if (it != Registry().defaults.end()) streams.push_back(it->second);
  }
  // This thread runs the first stream's tasks itself; the others' workers start theirs now.
  for (size_t i = 1; i < streams.size(); ++i) streams[i]->Kick();
  aclError first = ACL_SUCCESS;
  for (auto& stream : streams) {
    aclError rc = stream->Synchronize(timeout_ms);
    if (first == ACL_SUCCESS) first = rc;
  }
  return first;
}

int RegisterTaskFailCallback(TaskFailCallback cb) {
  std::lock_guard<std::mutex> lock(Callbacks().mu);
  int id = Callbacks().next_id++;
  Callbacks().callbacks.emplace(id, std::make_shared<TaskFailCallback>(std::move(cb)));
  return id;
}

void UnregisterTaskFailCallback(int id) {
  std::lock_guard<std::mutex> lock(Callbacks().mu);
  Callbacks().callbacks.erase(id);
}

}  // namespace vigil::rt
