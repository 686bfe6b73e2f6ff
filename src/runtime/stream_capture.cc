// Graph capture: the models, their handles, the capture-mode rule and the Stream's capture
// methods (stream.h declares them; the queue itself stays in stream.cc).
#include "runtime/stream_capture.h"

#include <array>
#include <atomic>
#include <map>
#include <unordered_map>
#include <utility>

#include "log/plog.h"
#include "runtime/device.h"
#include "runtime/event.h"
#include "runtime/handle_quarantine.h"
#include "runtime/rt_log.h"

namespace vigil::rt {
namespace {

std::atomic<uint32_t> g_next_model_id{1};

struct ModelRegistry {
  std::mutex mu;
  std::unordered_map<void*, std::shared_ptr<CapturedModel>> models;
};

ModelRegistry& Models() {
  static ModelRegistry* registry = new ModelRegistry();  // leaked: streams may outlive statics
  return *registry;
}

void RegisterModel(const std::shared_ptr<CapturedModel>& model) {
  std::lock_guard<std::mutex> lock(Models().mu);
  Models().models.emplace(model.get(), model);
}

void UnregisterModel(const CapturedModel* model) {
  std::shared_ptr<CapturedModel> doomed;
  {
    std::lock_guard<std::mutex> lock(Models().mu);
    auto it = Models().models.find(const_cast<CapturedModel*>(model));
    if (it == Models().models.end()) return;
    doomed = std::move(it->second);
    Models().models.erase(it);
  }
}

// The running captures by mode: per device (CANN's per-context mode) and per beginning thread.
// `active` lets an unsafe call that meets no capture at all skip the lock.
constexpr size_t kModes = 3;
using ModeCounts = std::array<int, kModes>;

struct CaptureModes {
  std::mutex mu;
  std::atomic<int> active{0};
  std::map<int32_t, ModeCounts> by_device;
  std::map<std::thread::id, ModeCounts> by_thread;
};

CaptureModes& Modes() {
  static CaptureModes* modes = new CaptureModes();  // leaked, as above
  return *modes;
}

thread_local CaptureMode t_exchange_mode = CaptureMode::kGlobal;

void ModeEnter(int32_t device, std::thread::id thread, CaptureMode mode) {
  CaptureModes& m = Modes();
  std::lock_guard<std::mutex> lock(m.mu);
  ++m.by_device[device][static_cast<size_t>(mode)];
  ++m.by_thread[thread][static_cast<size_t>(mode)];
  m.active.fetch_add(1);
}

void ModeExit(int32_t device, std::thread::id thread, CaptureMode mode) {
  CaptureModes& m = Modes();
  std::lock_guard<std::mutex> lock(m.mu);
  auto drop = [mode](auto& map, const auto& key) {
    auto it = map.find(key);
    if (it == map.end()) return;
    int& n = it->second[static_cast<size_t>(mode)];
    if (n > 0) --n;
    if (it->second == ModeCounts{}) map.erase(it);
  };
  drop(m.by_device, device);
  drop(m.by_thread, thread);
  m.active.fetch_sub(1);
}

// The strictest mode with a running capture (kModes when none).
size_t Strictest(const std::map<int32_t, ModeCounts>& map, int32_t key) {
  auto it = map.find(key);
  if (it == map.end()) return kModes;
  for (size_t i = 0; i < kModes; ++i) {
    if (it->second[i] > 0) return i;
  }
  return kModes;
}

size_t Strictest(const std::map<std::thread::id, ModeCounts>& map, std::thread::id key) {
  auto it = map.find(key);
  if (it == map.end()) return kModes;
  for (size_t i = 0; i < kModes; ++i) {
    if (it->second[i] > 0) return i;
  }
  return kModes;
}

const char* StatusName(CaptureStatus status) {
  switch (status) {
    case CaptureStatus::kNone: return "none";
    case CaptureStatus::kActive: return "active";
    case CaptureStatus::kInvalidated: return "invalidated";
  }
  return "unknown";
}

}  // namespace

bool AnyCaptureRunning() {
  return Modes().active.load(std::memory_order_acquire) != 0;
}

const char* CaptureModeName(CaptureMode mode) {
  switch (mode) {
    case CaptureMode::kGlobal: return "GLOBAL";
    case CaptureMode::kThreadLocal: return "THREAD_LOCAL";
    case CaptureMode::kRelaxed: return "RELAXED";
  }
  return "UNKNOWN";
}

// ---- CapturedModel ----

CapturedModel::CapturedModel(int32_t device, uint32_t origin_stream_id)
    : id_(g_next_model_id.fetch_add(1)), device_(device), origin_stream_id_(origin_stream_id) {}

bool CapturedModel::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

size_t CapturedModel::task_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size();
}

void CapturedModel::Add(CapturedTask task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.push_back(std::move(task));
}

void CapturedModel::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
}

aclError CapturedModel::Replay(Stream& stream, std::string* why) {
  std::vector<CapturedTask> tasks;  // a task update may replace some meanwhile
  std::vector<Stream*> lanes{&stream};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_) {
      *why = fmt::format("model_id={} is still being captured on stream_id={}; end the capture "
                         "(aclmdlRICaptureEnd) before executing it", id_, origin_stream_id_);
      return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    if (lane_count_ > 1 && stream.Recording()) {
      *why = fmt::format("model_id={} runs on {} streams (cross-stream capture); executing it "
                         "inside another capture is not supported by Vigil", id_, lane_count_);
      return ACL_ERROR_FEATURE_UNSUPPORTED;
    }
    // The joined streams' lanes run on streams of the model's own, made at the first replay.
    while (lanes_.size() + 1 < lane_count_) lanes_.push_back(std::make_unique<Stream>(device_));
    for (const auto& lane : lanes_) lanes.push_back(lane.get());
    tasks = tasks_;
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].stale) continue;
    std::string reason = tasks[i].stale();
    if (!reason.empty()) {
      *why = fmt::format("model_id={} task[{}] ({}) cannot be replayed: {}", id_, i,
                         tasks[i].what, reason);
      return ACL_ERROR_RT_MODEL_EXECUTE;
    }
  }
  if (stream.Recording()) {
    // Executed on a capturing stream: the model's tasks become part of that capture.
    size_t recorded = 0;
    while (recorded < tasks.size() && stream.Capture(tasks[recorded])) ++recorded;
    if (recorded == tasks.size()) return ACL_SUCCESS;
    tasks.erase(tasks.begin(), tasks.begin() + static_cast<std::ptrdiff_t>(recorded));
  }
  // In capture order, across the lanes: each replayed record is reserved before the waits on
  // it are queued, so the lanes synchronize as they did when captured.
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CapturedTask& task = tasks[i];
    Stream& target = *lanes[task.lane < lanes.size() ? task.lane : 0];
    if (task.fn) {
      target.Enqueue(task.type, [fn = task.fn](std::string* detail) { return (*fn)(detail); });
      continue;
    }
    const aclError rc = task.replay(target);
    if (rc != ACL_SUCCESS) {
      *why = fmt::format("model_id={} task[{}] ({}) failed to queue, retCode={}", id_, i,
                         task.what, rc);
      return rc;
    }
  }
  return ACL_SUCCESS;
}

void CapturedModel::ReplaceTasks(size_t at, std::vector<CapturedTask> tasks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < tasks.size() && at + i < tasks_.size(); ++i) {
    tasks[i].lane = tasks_[at + i].lane;  // runs where the task it replaces ran
    tasks_[at + i] = std::move(tasks[i]);
  }
}

std::vector<std::string> CapturedModel::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lines;
  lines.push_back(fmt::format("model_id={}, device_id={}, capture stream_id={}, task count={}, "
                              "streams={}, capture {}.",
                              id_, device_, origin_stream_id_, tasks_.size(), lane_count_,
                              finished_ ? "ended" : "running"));
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const CapturedTask& t = tasks_[i];
    lines.push_back(fmt::format("model_id={} task[{}]: type={}, lane={}, {}, {}.", id_, i,
                                TaskTypeName(t.type), t.lane,
                                t.fn ? "recorded" : "re-issued per replay", t.what));
  }
  return lines;
}

bool StreamCapture::Record(CapturedTask&& task) {
  if (model) {
    task.lane = lane;
    model->Add(std::move(task));
    return true;
  }
  if (updating) {
    update_tasks.push_back(std::move(task));
    return true;
  }
  return false;
}

// ---- handles ----

std::shared_ptr<CapturedModel> ModelRef(void* handle) {
  if (handle == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(Models().mu);
  auto it = Models().models.find(handle);
  return it == Models().models.end() ? nullptr : it->second;
}

aclError DestroyModel(void* handle) {
  std::shared_ptr<CapturedModel> doomed;
  {
    std::lock_guard<std::mutex> lock(Models().mu);
    auto it = Models().models.find(handle);
    if (it == Models().models.end()) return ACL_ERROR_RT_PARAM_INVALID;
    if (!it->second->finished()) return ACL_ERROR_RT_MODEL_CAPTURED;
    doomed = std::move(it->second);
    Models().models.erase(it);
  }
  return ACL_SUCCESS;  // replays still queued hold the model until they ran
}

// ---- the unsafe-call rule ----

aclError CheckUnsafeCall(const char* api) {
  CaptureModes& m = Modes();
  if (m.active.load(std::memory_order_acquire) == 0) return ACL_SUCCESS;
  const CaptureMode exchange = t_exchange_mode;
  if (exchange == CaptureMode::kRelaxed) return ACL_SUCCESS;
  const int32_t device = CurrentDevice();
  size_t device_mode;
  size_t thread_mode;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    device_mode = Strictest(m.by_device, device);
    thread_mode = Strictest(m.by_thread, std::this_thread::get_id());
  }
  constexpr size_t kGlobal = static_cast<size_t>(CaptureMode::kGlobal);
  constexpr size_t kThreadLocal = static_cast<size_t>(CaptureMode::kThreadLocal);
  const bool own = thread_mode == kGlobal || thread_mode == kThreadLocal;
  const bool forbidden =
      exchange == CaptureMode::kGlobal ? (device_mode == kGlobal || own) : own;
  if (!forbidden) return ACL_SUCCESS;
  const size_t shown = own ? thread_mode : device_mode;
  VIGIL_RT_FAIL(
      "{} failed: operation not permitted while a stream captures (aclmdlRICaptureBegin mode {}{}"
      ") and this thread's capture mode is {}; call it before the capture, or switch this thread "
      "to ACL_MODEL_RI_CAPTURE_MODE_RELAXED with aclmdlRICaptureThreadExchangeMode.",
      api, CaptureModeName(static_cast<CaptureMode>(shown)),
      own ? ", begun on this thread" : fmt::format(", on device {}", device),
      CaptureModeName(exchange));
  return ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;
}

CaptureMode ExchangeThreadCaptureMode(CaptureMode mode) {
  const CaptureMode old = t_exchange_mode;
  t_exchange_mode = mode;
  return old;
}

// ---- Stream's capture methods ----

aclError Stream::BeginCapture(CaptureMode mode) {
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.model) {
    VIGIL_RT_FAIL("Stream begin capture failed: stream_id={} is already in capture status ({}, "
                  "model_id={}).",
                  id_, StatusName(c.status), c.model->id());
    return ACL_ERROR_RT_STREAM_CAPTURED;
  }
  auto model = HandleQuarantine<CapturedModel>::Make(device_, id_);
  RegisterModel(model);
  c.model = std::move(model);
  c.mode = mode;
  c.status = CaptureStatus::kActive;
  c.thread = std::this_thread::get_id();
  ModeEnter(device_, c.thread, mode);
  recording_.fetch_or(kCapturing, std::memory_order_release);
  RT_RUN_INFO("capture begin success, device_id={}, model_id={}, stream_id={}, mode={}.", device_,
              c.model->id(), id_, CaptureModeName(mode));
  return ACL_SUCCESS;
}

aclError Stream::EndCapture(std::shared_ptr<CapturedModel>* out) {
  StreamCapture& c = *capture_;
  std::shared_ptr<CapturedModel> model;
  enum class Outcome { kEnded, kWrongThread, kInvalidated, kUnjoined } outcome = Outcome::kEnded;
  std::string unjoined;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.model) {
      VIGIL_RT_FAIL("Stream end capture failed: stream_id={} is not in capture status; call "
                    "aclmdlRICaptureBegin on it first.", id_);
      return ACL_ERROR_RT_STREAM_NOT_CAPTURED;
    }
    if (c.lane != 0) {
      VIGIL_RT_FAIL("Stream end capture failed: the capture of model_id={} was not begun on "
                    "stream_id={} (it joined it by an event wait); end it on the stream that "
                    "began it.", c.model->id(), id_);
      return ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED;
    }
    if (c.open_group) {
      VIGIL_RT_FAIL("Stream end capture failed: a task group is still open on stream_id={} "
                    "(model_id={}); close it with aclmdlRICaptureTaskGrpEnd first.", id_,
                    c.model->id());
      return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
    }
    model = std::move(c.model);
    if (c.mode != CaptureMode::kRelaxed && c.thread != std::this_thread::get_id()) {
      outcome = Outcome::kWrongThread;
    } else if (c.status != CaptureStatus::kActive) {
      outcome = Outcome::kInvalidated;
    } else if (unjoined = model->UnjoinedLane(); !unjoined.empty()) {
      outcome = Outcome::kUnjoined;
    }
    ModeExit(device_, c.thread, c.mode);
    c.status = CaptureStatus::kNone;
    recording_.fetch_and(static_cast<uint8_t>(~kCapturing), std::memory_order_release);
  }
  // The streams that joined leave the capture with it.
  for (Stream* side : model->TakeSides()) side->LeaveCapture(model.get());
  ReleaseCaptureEvents(*model);
  switch (outcome) {
    case Outcome::kEnded:
      break;
    case Outcome::kWrongThread:
      UnregisterModel(model.get());
      VIGIL_RT_FAIL("Stream end capture failed: stream_id={} (model_id={}) began a non-RELAXED "
                    "capture on another thread; it must end on that thread. The capture is "
                    "dropped.", id_, model->id());
      return ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD;
    case Outcome::kInvalidated:
      UnregisterModel(model.get());
      VIGIL_RT_FAIL("Stream end capture failed: the capture of stream_id={} (model_id={}) is "
                    "invalid because an error occurred during it; no model is returned.", id_,
                    model->id());
      return ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED;
    case Outcome::kUnjoined:
      UnregisterModel(model.get());
      VIGIL_RT_FAIL("Stream end capture failed: model_id={} of stream_id={}: {}; in a "
                    "cross-stream capture every joined stream must end with an event record "
                    "that the capturing stream waits on. The capture is dropped.",
                    model->id(), id_, unjoined);
      return ACL_ERROR_RT_STREAM_UNJOINED;
  }
  model->Finish();
  RT_RUN_INFO("capture end success, device_id={}, model_id={}, stream_id={}, task count={}, "
              "streams={}.",
              device_, model->id(), id_, model->task_count(), model->lane_count());
  *out = std::move(model);
  return ACL_SUCCESS;
}

CaptureStatus Stream::GetCaptureInfo(std::shared_ptr<CapturedModel>* model) const {
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  *model = c.model;
  return c.model ? c.status : CaptureStatus::kNone;
}

bool Stream::Capture(CapturedTask& task) {
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.Record(std::move(task));
}

uint32_t Stream::PushCaptured(TaskType type, void (*fill)(TaskFn& slot, void* ctx), void* ctx) {
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.model && !c.updating) return 0;  // ended meanwhile: queued as usual (fill not called)
  try {
    CapturedTask task;
    task.type = type;
    task.fn = std::make_shared<TaskFn>();
    fill(*task.fn, ctx);
    task.what = fmt::format("captured on stream_id={}", id_);
    c.Record(std::move(task));
  } catch (...) {
    // The task is lost: a replay would be missing it.
    if (c.model) c.status = CaptureStatus::kInvalidated;
    throw;
  }
  return static_cast<uint32_t>(c.model ? c.model->task_count() : c.update_tasks.size());
}

void Stream::AbandonCapture() {
  StreamCapture& c = *capture_;
  std::shared_ptr<CapturedModel> model;
  uint32_t lane = 0;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.updating) {
      c.updating->updating.store(false);
      c.updating.reset();
      c.update_tasks.clear();
      recording_.fetch_and(static_cast<uint8_t>(~kUpdating), std::memory_order_release);
    }
    if (!c.model) return;
    c.open_group.reset();
    model = std::move(c.model);
    lane = c.lane;
    c.lane = 0;
    if (lane == 0) ModeExit(device_, c.thread, c.mode);
    c.status = CaptureStatus::kNone;
    recording_.fetch_and(static_cast<uint8_t>(~kCapturing), std::memory_order_release);
  }
  if (lane != 0) {  // a joined stream: the capture goes on without it (and cannot end well)
    model->RemoveSide(this);
    RT_WARNING("stream_id={} destroyed while joined to the capture of model_id={}.", id_,
               model->id());
    return;
  }
  for (Stream* side : model->TakeSides()) side->LeaveCapture(model.get());
  ReleaseCaptureEvents(*model);
  UnregisterModel(model.get());
  RT_WARNING("stream_id={} destroyed while capturing: model_id={} dropped.", id_, model->id());
}

void Stream::LeaveCapture(const CapturedModel* model) {
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.model.get() != model) return;
  c.model.reset();
  c.lane = 0;
  c.open_group.reset();
  c.status = CaptureStatus::kNone;
  recording_.fetch_and(static_cast<uint8_t>(~kCapturing), std::memory_order_release);
}

}  // namespace vigil::rt
