// Events in captures: records and waits kept for replay, the checks at the capture's boundary,
// and cross-stream capture (a stream that waits on a record of a running capture joins it as
// one more lane of the model, and must join back before the capture ends).
#include <map>

#include "runtime/event.h"
#include "runtime/rt_log.h"
#include "runtime/stream.h"
#include "runtime/stream_capture.h"

namespace vigil::rt {
namespace {

// The events that running captures record, and which capture (the latest to record it).
struct CapturedEvents {
  std::mutex mu;
  std::map<const Event*, std::weak_ptr<CapturedModel>> running;
};

CapturedEvents& Events() {
  static CapturedEvents* events = new CapturedEvents();  // leaked: streams may outlive statics
  return *events;
}

// A record kept for replay: each replay reserves the event's next record as it is queued.
CapturedTask RecordTask(const std::shared_ptr<Event>& event) {
  CapturedTask task;
  task.type = TaskType::kEventRecord;
  task.event = event.get();
  task.what = fmt::format("event record, event {}", fmt::ptr(event.get()));
  task.replay = [event](Stream& target) {
    const uint64_t seq = event->NextRecordSeq();
    target.Enqueue(TaskType::kEventRecord, [event, seq](std::string*) {
      event->Complete(seq);
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  };
  return task;
}

// A wait kept for replay: for the record reserved last when the replay queues it.
CapturedTask WaitTask(const std::shared_ptr<Event>& event) {
  CapturedTask task;
  task.type = TaskType::kEventWait;
  task.event = event.get();
  task.what = fmt::format("event wait, event {}", fmt::ptr(event.get()));
  task.replay = [event](Stream& target) {
    const uint64_t seq = event->LastRecordSeq();
    target.Enqueue(TaskType::kEventWait, [event, seq](std::string*) {
      event->WaitFor(seq, -1);
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  };
  return task;
}

}  // namespace

// ---- the model's capture-time state ----

size_t CapturedModel::lane_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lane_count_;
}

void CapturedModel::AddCaptureEvent(const Event* event) {
  std::lock_guard<std::mutex> lock(mu_);
  capture_events_.insert(event);
}

bool CapturedModel::RecordsEvent(const Event* event) const {
  std::lock_guard<std::mutex> lock(mu_);
  return capture_events_.count(event) != 0;
}

uint32_t CapturedModel::AddSide(Stream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sides_taken_) return 0;
  sides_.push_back(stream);
  side_ids_.push_back(stream->id());
  lane_count_ = sides_.size() + 1;
  return static_cast<uint32_t>(sides_.size());
}

void CapturedModel::RemoveSide(const Stream* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Stream*& side : sides_) {
    if (side == stream) side = nullptr;  // its lane stays: its tasks are recorded
  }
}

std::vector<Stream*> CapturedModel::TakeSides() {
  std::lock_guard<std::mutex> lock(mu_);
  sides_taken_ = true;
  std::vector<Stream*> sides;
  for (Stream* side : sides_) {
    if (side != nullptr) sides.push_back(side);
  }
  sides_.clear();
  return sides;
}

std::set<const Event*> CapturedModel::TakeCaptureEvents() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(capture_events_);
}

std::string CapturedModel::UnjoinedLane() const {
  std::lock_guard<std::mutex> lock(mu_);
  bool lane0_waits = false;
  for (uint32_t lane = 1; lane < lane_count_; ++lane) {
    const uint32_t stream_id = lane - 1 < side_ids_.size() ? side_ids_[lane - 1] : 0;
    size_t last = tasks_.size();
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].lane == lane) last = i;
    }
    if (last == tasks_.size()) continue;
    const CapturedTask& end = tasks_[last];
    if (end.type != TaskType::kEventRecord) {
      return fmt::format("joined stream_id={} ends with a {} task, not an event record",
                         stream_id, TaskTypeName(end.type));
    }
    bool waited = false;
    for (size_t i = last + 1; i < tasks_.size(); ++i) {
      const CapturedTask& t = tasks_[i];
      if (t.type != TaskType::kEventWait || t.event != end.event || t.lane == lane) continue;
      waited = true;
      lane0_waits = lane0_waits || t.lane == 0;
    }
    if (!waited) {
      return fmt::format("the last record of joined stream_id={} (event {}) is waited on by no "
                         "other stream of the capture", stream_id, fmt::ptr(end.event));
    }
  }
  if (lane_count_ > 1 && !lane0_waits) {
    return "the capturing stream waits on no joined stream's last record";
  }
  return {};
}

// ---- the registry of captured events ----

std::shared_ptr<CapturedModel> CaptureRecording(const Event* event) {
  std::lock_guard<std::mutex> lock(Events().mu);
  auto it = Events().running.find(event);
  return it == Events().running.end() ? nullptr : it->second.lock();
}

void ReleaseCaptureEvents(CapturedModel& model) {
  const std::set<const Event*> events = model.TakeCaptureEvents();
  std::lock_guard<std::mutex> lock(Events().mu);
  for (const Event* e : events) {
    auto it = Events().running.find(e);
    if (it == Events().running.end()) continue;
    std::shared_ptr<CapturedModel> owner = it->second.lock();
    if (!owner || owner.get() == &model) Events().running.erase(it);
  }
}

// ---- the hooks ----

aclError CaptureEventRecord(Stream& stream, const std::shared_ptr<Event>& event, bool* handled) {
  *handled = false;
  if (!stream.Recording()) return ACL_SUCCESS;
  StreamCapture& c = *stream.capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.model && !c.updating) return ACL_SUCCESS;  // ended meanwhile: an ordinary record
  std::shared_ptr<CapturedModel> model = c.model;
  c.Record(RecordTask(event));
  if (model) {
    model->AddCaptureEvent(event.get());
    std::lock_guard<std::mutex> events_lock(Events().mu);
    Events().running[event.get()] = model;
  }
  *handled = true;
  return ACL_SUCCESS;
}

aclError CaptureEventWait(Stream& stream, const std::shared_ptr<Event>& event, bool* handled) {
  *handled = false;
  if (!stream.Recording()) {
    if (!AnyCaptureRunning()) return ACL_SUCCESS;
    std::shared_ptr<CapturedModel> model = CaptureRecording(event.get());
    if (!model) return ACL_SUCCESS;
    // Cross-stream capture: this stream joins the capture that records the event.
    if (DefaultStream(stream.device()).get() == &stream) {
      VIGIL_RT_FAIL("aclrtStreamWaitEvent failed: event {} is recorded by the running capture "
                    "of model_id={}; the default stream cannot join a capture.",
                    fmt::ptr(event.get()), model->id());
      return ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT;
    }
    StreamCapture& c = *stream.capture_;
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.model || c.updating) return ACL_SUCCESS;  // raced with a capture of its own
    const uint32_t lane = model->AddSide(&stream);
    if (lane == 0) return ACL_SUCCESS;  // the capture ended meanwhile: an ordinary wait
    c.model = model;
    c.lane = lane;
    c.status = CaptureStatus::kActive;
    c.thread = std::this_thread::get_id();
    stream.recording_.fetch_or(Stream::kCapturing, std::memory_order_release);
    c.Record(WaitTask(event));
    RT_RUN_INFO("stream_id={} joined the capture of model_id={} (lane {}) by waiting on event {}.",
                stream.id(), model->id(), lane, fmt::ptr(event.get()));
    *handled = true;
    return ACL_SUCCESS;
  }
  StreamCapture& c = *stream.capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.model && !c.updating) return ACL_SUCCESS;  // ended meanwhile: an ordinary wait
  if (c.model && !c.model->RecordsEvent(event.get())) {
    std::shared_ptr<CapturedModel> other = CaptureRecording(event.get());
    if (other) {
      VIGIL_RT_FAIL("aclrtStreamWaitEvent failed: event {} is recorded by the capture of "
                    "model_id={} while stream_id={} captures model_id={}; merging two captures "
                    "is not supported by Vigil.", fmt::ptr(event.get()), other->id(),
                    stream.id(), c.model->id());
      return ACL_ERROR_FEATURE_UNSUPPORTED;
    }
    if (event->LastRecordSeq() != 0) {
      VIGIL_RT_FAIL("aclrtStreamWaitEvent failed: stream_id={} captures (model_id={}) and event "
                    "{} was recorded outside the capture; a captured wait needs its record in "
                    "the same model.", stream.id(), c.model->id(), fmt::ptr(event.get()));
      return ACL_ERROR_RT_CAPTURE_DEPENDENCY;
    }
  }
  c.Record(WaitTask(event));
  *handled = true;
  return ACL_SUCCESS;
}

aclError CheckEventNotCaptured(const Event* event, const char* api) {
  if (!AnyCaptureRunning()) return ACL_SUCCESS;
  if (!CaptureRecording(event)) return ACL_SUCCESS;
  VIGIL_RT_FAIL("{} failed: event {} is recorded by a running capture; its record runs only "
                "when the model is executed, so it cannot be synchronized during the capture.",
                api, fmt::ptr(event));
  return ACL_ERROR_RT_EVENT_CAPTURED;
}

}  // namespace vigil::rt
