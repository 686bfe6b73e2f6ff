// Graph capture (CANN's aclmdlRI): while a stream captures, the work enqueued on it is recorded
// into a CapturedModel instead of run; a replay queues the recorded tasks, in order, on a stream.
//
// Two kinds of task are recorded. A plain task (a memcpy, ...) is the stream task itself, kept
// and run again as is by every replay. A replayed task (an HCCL op, an event record or wait) is
// a function that queues fresh work on the replay stream each time: a collective must be a new
// execution on every replay (a new op index, its own records), as if the program had called it
// again, and an event record a new record.
//
// A stream that waits on an event the capture recorded joins the capture (cross-stream
// capture): its tasks are recorded as another lane of the model, which a replay runs on a
// stream of the model's own, ordered by the same events (capture_events.cc).
//
// Capture modes (aclmdlRICaptureMode) restrict the unsafe calls (synchronous aclrtMemcpy and
// aclrtMemset) while captures run: GLOBAL forbids them to every thread whose device has a GLOBAL
// capture running, THREAD_LOCAL to the thread that began the capture, RELAXED to nobody; a
// thread may relax itself with ExchangeThreadCaptureMode. Rules and codes are CANN's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl_base.h"
#include "runtime/stream.h"
#include "runtime/task_fn.h"

namespace vigil::rt {

class Event;

enum class CaptureMode : int { kGlobal = 0, kThreadLocal = 1, kRelaxed = 2 };
enum class CaptureStatus : int { kNone = 0, kActive = 1, kInvalidated = 2 };

const char* CaptureModeName(CaptureMode mode);  // "GLOBAL", "THREAD_LOCAL", "RELAXED"

// One recorded task: exactly one of `fn` and `replay` is set.
struct CapturedTask {
  TaskType type = TaskType::kKernel;
  std::shared_ptr<TaskFn> fn;                  // a plain task, run as is by every replay
  std::function<aclError(Stream&)> replay;     // queues fresh work on the replay stream
  std::function<std::string()> stale;          // optional: why `replay` can run no more ("" ok)
  std::string what;                            // for aclmdlRIDebugPrint
  // The stream it was captured on: 0 the one that began the capture, k the k-th stream that
  // joined it (cross-stream capture); a replay runs lane k on the model's k-th own stream.
  uint32_t lane = 0;
  const Event* event = nullptr;  // an event record's or wait's event
};

class CapturedModel;

// A task group (aclrtTaskGrp handles are its address): tasks [begin, end) of its model, which a
// task update may replace by tasks of the same number and types.
struct CaptureTaskGroup {
  std::weak_ptr<CapturedModel> model;  // the model owns its groups
  size_t begin = 0;
  size_t end = 0;
  std::vector<TaskType> types;
  std::atomic<bool> updating{false};  // one stream updates it at a time
};
// null when unknown, or when its model was destroyed.
std::shared_ptr<CaptureTaskGroup> TaskGroupRef(void* handle);

class CapturedModel {
 public:
  CapturedModel(int32_t device, uint32_t origin_stream_id);
  CapturedModel(const CapturedModel&) = delete;
  CapturedModel& operator=(const CapturedModel&) = delete;

  uint32_t id() const { return id_; }
  int32_t device() const { return device_; }
  uint32_t origin_stream_id() const { return origin_stream_id_; }
  // Whether the capture that records it has ended (only then it may be replayed).
  bool finished() const;
  size_t task_count() const;

  // Queues one replay on `stream`: every task in capture order. A stream that captures itself
  // records the tasks into its own capture instead (a model inside a model). Nothing is queued
  // when a task cannot be replayed (its communicator destroyed): ACL_ERROR_RT_MODEL_EXECUTE and
  // *why says which; an unfinished model: ACL_ERROR_RT_MODEL_EXECUTE.
  aclError Replay(Stream& stream, std::string* why);
  // One line per task ("task[0] type=Memcpy ..."), after a header line.
  std::vector<std::string> Describe() const;
  // Replaces tasks [at, at + tasks.size()) (a task update; the caller checked the range).
  void ReplaceTasks(size_t at, std::vector<CapturedTask> tasks);
  // Streams: the one that began the capture, then the ones that joined it.
  size_t lane_count() const;

  // While captured (capture_events.cc): the events its records name, and the streams that
  // joined the capture by waiting on one of them.
  void AddCaptureEvent(const Event* event);
  bool RecordsEvent(const Event* event) const;
  uint32_t AddSide(Stream* stream);  // the stream's lane; 0 when the capture has ended
  void RemoveSide(const Stream* stream);
  std::vector<Stream*> TakeSides();  // at capture end (the lanes stay counted)
  std::set<const Event*> TakeCaptureEvents();
  // "" when every joined stream joined back: its last task records an event that another
  // lane waits on later, and lane 0 waits on one of them. Else what is wrong.
  std::string UnjoinedLane() const;

 private:
  // They record into it while capturing (stream_capture.cc).
  friend class Stream;
  friend struct StreamCapture;
  friend aclError CaptureEventRecord(Stream&, const std::shared_ptr<Event>&, bool*);
  friend aclError CaptureEventWait(Stream&, const std::shared_ptr<Event>&, bool*);
  void Add(CapturedTask task);
  void Finish();

  const uint32_t id_;
  const int32_t device_;
  const uint32_t origin_stream_id_;
  mutable std::mutex mu_;
  std::vector<CapturedTask> tasks_;  // guarded by mu_
  bool finished_ = false;
  std::vector<std::shared_ptr<CaptureTaskGroup>> groups_;  // guarded by mu_
  std::set<const Event*> capture_events_;                 // guarded by mu_
  std::vector<Stream*> sides_;         // guarded by mu_: joined streams, while captured
  std::vector<uint32_t> side_ids_;     // guarded by mu_: their stream ids, for messages
  bool sides_taken_ = false;           // guarded by mu_: the capture ended, none may join
  size_t lane_count_ = 1;              // guarded by mu_
  std::vector<std::unique_ptr<Stream>> lanes_;  // guarded by mu_: replay streams of lanes 1..
};

// aclmdlRI handles are CapturedModel addresses, registered from BeginCapture until Destroy (or
// until a capture ends without a model).
std::shared_ptr<CapturedModel> ModelRef(void* handle);  // null when unknown or destroyed
// ACL_ERROR_RT_PARAM_INVALID for an unknown or destroyed handle, ACL_ERROR_RT_MODEL_CAPTURED
// for a model still being captured; the caller logs.
aclError DestroyModel(void* handle);

// A stream's capture state (Stream holds one).
struct StreamCapture {
  std::mutex mu;
  std::shared_ptr<CapturedModel> model;  // set while capturing
  CaptureMode mode = CaptureMode::kGlobal;  // lane 0 only
  CaptureStatus status = CaptureStatus::kNone;
  std::thread::id thread;  // the thread that began it
  uint32_t lane = 0;  // CapturedTask::lane of what this stream records
  std::shared_ptr<CaptureTaskGroup> open_group;  // between TaskGrpBegin and TaskGrpEnd
  std::shared_ptr<CaptureTaskGroup> updating;    // between TaskUpdateBegin and TaskUpdateEnd
  std::vector<CapturedTask> update_tasks;        // what the update collected so far

  // Records `task` into the model, or the update; false when neither is running.
  bool Record(CapturedTask&& task);
};

// The unsafe-call rule for the calling thread on its current device: ACL_SUCCESS, or
// ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT with one ERROR line naming `api` and the capture mode.
aclError CheckUnsafeCall(const char* api);
// Whether any capture runs in the process (cheap: the fast path of the hooks).
bool AnyCaptureRunning();
// aclmdlRICaptureThreadExchangeMode: sets this thread's mode, returns the previous one.
CaptureMode ExchangeThreadCaptureMode(CaptureMode mode);

// Events in captures (hooks of aclrtRecordEvent, aclrtStreamWaitEvent, aclrtSynchronizeEvent).
// The first two set *handled when they took the call over; otherwise it goes on as usual.
// A record on a capturing stream is kept for replay: each replay reserves a new record of the
// event as it is queued, so a wait queued after that replay waits for it. Capturing reserves
// none (nothing runs then).
aclError CaptureEventRecord(Stream& stream, const std::shared_ptr<Event>& event, bool* handled);
// A wait on a capturing stream is kept for replay (it waits for the event's last record when
// the replay is queued) if the same capture records the event or nothing ever recorded it. A
// wait on a record made outside the capture is ACL_ERROR_RT_CAPTURE_DEPENDENCY (CANN's code).
// A stream that does not capture and waits on a record of a running capture joins that capture
// (cross-stream capture): its tasks are recorded as a lane of the model until the capture ends,
// and it must join back (its last task a record that the capturing stream waits on) or
// aclmdlRICaptureEnd fails with ACL_ERROR_RT_STREAM_UNJOINED. The default stream cannot join
// (ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT); a capturing stream waiting on another capture's
// record (merging two captures) is ACL_ERROR_FEATURE_UNSUPPORTED. One ERROR line each.
aclError CaptureEventWait(Stream& stream, const std::shared_ptr<Event>& event, bool* handled);
// The model whose running capture records `event` (null when none).
std::shared_ptr<CapturedModel> CaptureRecording(const Event* event);
// At a capture's end: its events are no longer captured.
void ReleaseCaptureEvents(CapturedModel& model);

// ACL_ERROR_RT_EVENT_CAPTURED (one ERROR line naming `api`) while a running capture records
// `event`: its record runs only when the model is replayed.
aclError CheckEventNotCaptured(const Event* event, const char* api);

}  // namespace vigil::rt
