// Streams: asynchronous FIFO executors, one worker thread each ("vigil_strm<id>").
// Enqueue returns at once with the task's id; tasks of one stream run in order, on the worker
// or on a thread that synchronizes the stream (which then runs them itself instead of waiting
// for the worker: stream.cc, "the handoff"). A task that returns an error calls the registered
// task-failure callbacks with (device, streamId, taskId, retcode), the stream drops the tasks
// queued behind it, and the next Synchronize returns the error (after which the stream is
// usable again).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "acl/acl_base.h"
#include "runtime/task_fn.h"

namespace vigil::rt {

enum class TaskType {
  kMemcpy,
  kMemset,
  kNotifyRecord,
  kNotifyWait,
  kEventRecord,
  kEventWait,
  kKernel,
  kHccl,
  kHostFunc,  // a host function or callback of the program (aclrtLaunchHostFunc, ...Callback)
};

// Graph capture (stream_capture.h).
enum class CaptureMode : int;
enum class CaptureStatus : int;
class CapturedModel;
struct CapturedTask;
struct StreamCapture;
class Event;
class Stream;
aclError CaptureEventRecord(Stream& stream, const std::shared_ptr<Event>& event, bool* handled);
aclError CaptureEventWait(Stream& stream, const std::shared_ptr<Event>& event, bool* handled);

struct TaskFailInfo {
  int32_t device = -1;
  uint32_t stream_id = 0;
  uint32_t task_id = 0;
  aclError retcode = ACL_SUCCESS;
  TaskType type = TaskType::kKernel;
  std::string detail;  // what the task said about its failure
};

class Stream {
 public:
  // device: the device the stream belongs to (the creating thread's current device).
  explicit Stream(int32_t device);
  // handoff: how long a queued task waits for a Synchronize to run it before the worker does
  // (0: the worker runs every task at once). The one-argument form takes
  // VIGIL_STREAM_HANDOFF_US (default 500 us).
  Stream(int32_t device, std::chrono::microseconds handoff);
  ~Stream();  // drains queued tasks, then joins the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  uint32_t id() const { return id_; }
  int32_t device() const { return device_; }

  // Queues fn (any aclError(std::string*) callable, or a TaskFn), built in its queue slot;
  // returns its task id (per stream, increasing from 1).
  template <typename F>
  uint32_t Enqueue(TaskType type, F&& fn) {
    using Ref = std::remove_reference_t<F>;
    return Push(
        type,
        [](TaskFn& slot, void* ctx) { slot.Emplace(std::forward<F>(*static_cast<Ref*>(ctx))); },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }
  // Same, with the callable make() returns, built straight into its slot (it never moves).
  // resumable: the task may return kTaskNotDone when RunQueued runs it (see there).
  template <typename Make>
  uint32_t EnqueueMade(TaskType type, Make&& make, bool resumable = false) {
    using Ref = std::remove_reference_t<Make>;
    return Push(
        type, [](TaskFn& slot, void* ctx) { slot.EmplaceMade(*static_cast<Ref*>(ctx)); },
        const_cast<void*>(static_cast<const void*>(std::addressof(make))), resumable);
  }
  // The id the next Enqueue will return (so a caller can record the op first); lock-free, as
  // only the stream's one enqueuer (the CANN contract) moves it.
  uint32_t PeekNextTaskId() const;

  // Waits until every task enqueued so far has run. timeout_ms < 0: forever.
  // Returns the first task error since the last Synchronize (and clears it: the stream then runs
  // tasks again), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046, as CANN) on timeout with one
  // RT_ERROR line, else ACL_SUCCESS. After a failure, queued tasks are dropped until this call
  // (event records still run, so host/stream waiters on them never hang).
  aclError Synchronize(int32_t timeout_ms = -1);
  // The worker runs what is queued now, without waiting for a Synchronize to take it: for a
  // host that waits on something else (an event, another stream) this stream's tasks may feed.
  void Kick();

  // aclrtSetStreamFailureMode: stop (the default) drops the tasks queued behind a failed one
  // until the next Synchronize; otherwise they run. Synchronize returns the first error either way.
  void SetStopOnFailure(bool stop);

  // Tasks enqueued so far and tasks finished (run or dropped); for diagnostics.
  uint32_t LastTaskId() const;
  uint32_t CompletedTaskId() const;

  // Inline execution: the caller runs the stream's next task itself, at once, instead of
  // queuing it (a small HCCL op: comm/communicator_direct.cc). Only when
  // nothing of the stream is queued or running, the stream neither records nor drops tasks
  // after a failure, and it is not being destroyed: BeginInline then claims the stream (no
  // other thread runs its tasks meanwhile; tasks queued meanwhile wait) and returns true. The
  // claimer then either runs the task and calls EndInline with its result, which gives the
  // task the next task id, completes it as the worker would (a failure reports, calls the
  // task-failure callbacks and is returned by the next Synchronize) and returns its id; or
  // calls CancelInline and queues the task as usual. The task id EndInline gives is
  // PeekNextTaskId() as read before BeginInline (one enqueuer per stream: the CANN contract).
  // CancelInline(false): the claimer queued the task's rest itself meanwhile (as the stream's
  // next task, with the id EndInline would have given): it runs as any queued task does, on
  // a Synchronize or after the handoff time on the worker.
  bool BeginInline();

  // The stream's one enqueuer runs what is queued itself, now, from the first task on, for as
  // long as each task is resumable (EnqueueMade) and the stream is neither running, failing nor
  // being destroyed: a resumable task run so (RunningQueued() true) does a bounded part of its
  // work and returns kTaskNotDone when it must wait longer; it then stays first in the queue
  // and runs again later, there or on the worker or a Synchronize (which run it to its end).
  // So a chain of small ops queued behind one that waited (each found the one before in
  // flight) is run down by the next enqueue instead of by a worker woken for it. Returns true
  // when nothing is queued or running any more.
  bool RunQueued();
  void CancelInline(bool take_now = true);
  // `began`: when the task started (prof::Clock, for a profiling span; ignored unprofiled).
  uint32_t EndInline(TaskType type, aclError rc, std::string* detail,
                     std::chrono::steady_clock::time_point began);

  // Graph capture (stream_capture.cc). While the stream captures, Enqueue records its tasks
  // into the capture's model and returns their position in it (from 1); nothing runs, and
  // Synchronize and DestroyStream refuse with ACL_ERROR_RT_STREAM_CAPTURED.
  // BeginCapture: ACL_ERROR_RT_STREAM_CAPTURED when capturing already (one ERROR line).
  aclError BeginCapture(CaptureMode mode);
  // Ends the capture and hands its model over: ACL_ERROR_RT_STREAM_NOT_CAPTURED when not
  // capturing, ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD from another thread than the one that
  // began a non-RELAXED capture, ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED when an error spoilt
  // it (the capture ends then too, without a model). One ERROR line for each.
  aclError EndCapture(std::shared_ptr<CapturedModel>* model);
  // The capture status, and the model being recorded (null when none).
  CaptureStatus GetCaptureInfo(std::shared_ptr<CapturedModel>* model) const;
  bool Capturing() const { return (recording_.load(std::memory_order_acquire) & kCapturing) != 0; }
  // Capturing, or collecting the new tasks of a task group (TaskUpdate): Enqueue records.
  bool Recording() const { return recording_.load(std::memory_order_acquire) != 0; }
  // Records `task` into the capture (or the task update); false (and `task` untouched) when
  // the stream records neither.
  bool Capture(CapturedTask& task);

  // Task groups (capture_task_group.cc): a range of a capture's tasks whose tasks a later
  // update replaces. Codes as CANN's: ACL_ERROR_RT_STREAM_NOT_CAPTURED when the stream does
  // not capture, ACL_ERROR_STREAM_TASK_GROUP_STATUS for a group begun twice or ended unbegun.
  aclError BeginTaskGroup();
  aclError EndTaskGroup(void** handle);
  // On a stream that does not capture: the tasks enqueued until EndTaskUpdate are collected
  // (not run) and then replace the group's tasks, which they must match in number and type
  // (else ACL_ERROR_RT_INTERNAL_ERROR, CANN's code, and the group is unchanged).
  aclError BeginTaskUpdate(void* handle);
  aclError EndTaskUpdate();

 private:
  friend aclError CaptureEventRecord(Stream&, const std::shared_ptr<Event>&, bool*);
  friend aclError CaptureEventWait(Stream&, const std::shared_ptr<Event>&, bool*);
  // Under the queue's lock: fills the next slot (fill(slot, ctx)), then publishes it.
  uint32_t Push(TaskType type, void (*fill)(TaskFn& slot, void* ctx), void* ctx,
                bool resumable = false);
  // Push while capturing: records the task instead; 0 when the capture ended meanwhile.
  uint32_t PushCaptured(TaskType type, void (*fill)(TaskFn& slot, void* ctx), void* ctx);
  void AbandonCapture();  // the stream dies while capturing
  // A capture this stream joined (by an event wait) ends: it records no more.
  void LeaveCapture(const CapturedModel* model);
  void ReportFailure(const TaskFailInfo& info);  // log, callbacks, enter the dropping state
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint32_t id_;
  int32_t device_;
  static constexpr uint8_t kCapturing = 1;  // recording_ bits
  static constexpr uint8_t kUpdating = 2;
  std::atomic<uint8_t> recording_{0};
  std::unique_ptr<StreamCapture> capture_;
};

// What a resumable task returns from a bounded run it must finish later (Stream::RunQueued).
constexpr aclError kTaskNotDone = -1000;
// Whether the calling thread runs a task for Stream::RunQueued (a bounded run).
bool RunningQueued();

const char* TaskTypeName(TaskType type);  // "Memcpy", "NotifyWait", ...

// aclrtStream handles are Stream*; this validates a handle (nullptr when unknown/destroyed).
Stream* StreamFromHandle(void* handle);
// Same, but keeps the stream alive while the caller uses it (a concurrent DestroyStream then
// only unregisters it; the last reference joins the worker).
std::shared_ptr<Stream> StreamRef(void* handle);
// The device's default stream (CANN's null aclrtStream), created on first use.
std::shared_ptr<Stream> DefaultStream(int32_t device);
Stream* CreateStream(int32_t device);     // registers the handle
aclError DestroyStream(void* handle);     // ACL_ERROR_RT_PARAM_INVALID for an unknown handle
// aclrtResetDevice / aclFinalize: destroys the device's (or every) registered stream.
void DestroyDeviceStreams(int32_t device);
void DestroyAllStreams();
// Kick() on every live stream (handle or not): a thread about to block on an event or notify.
void KickAllStreams();
// aclrtSynchronizeDevice: synchronizes every stream of the device; the first error.
aclError SynchronizeDeviceStreams(int32_t device, int32_t timeout_ms = -1);

using TaskFailCallback = std::function<void(const TaskFailInfo&)>;
// Returns a registration id; callbacks run on the thread that ran the failing task (the
// stream's worker or a thread synchronizing the stream).
int RegisterTaskFailCallback(TaskFailCallback cb);
void UnregisterTaskFailCallback(int id);

}  // namespace vigil::rt
