// Task groups of a capture (aclmdlRICaptureTaskGrpBegin/End) and their updates
// (aclmdlRICaptureTaskUpdateBegin/End): the group marks a range of the model's tasks; an update
// collects the tasks enqueued on a stream that does not capture and puts them in the range's
// place, so later replays run them instead (an HCCL op with other buffers, a copy to elsewhere).
// Replays queued before the update keep the tasks they were queued with.
#include <unordered_map>

#include "runtime/rt_log.h"
#include "runtime/stream.h"
#include "runtime/stream_capture.h"

namespace vigil::rt {
namespace {

struct GroupRegistry {
  std::mutex mu;
  std::unordered_map<void*, std::weak_ptr<CaptureTaskGroup>> groups;
};

GroupRegistry& Groups() {
  static GroupRegistry* registry = new GroupRegistry();  // leaked: streams may outlive statics
  return *registry;
}

}  // namespace

std::shared_ptr<CaptureTaskGroup> TaskGroupRef(void* handle) {
  if (handle == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(Groups().mu);
  auto it = Groups().groups.find(handle);
  if (it == Groups().groups.end()) return nullptr;
  std::shared_ptr<CaptureTaskGroup> group = it->second.lock();
  if (!group || group->model.expired()) {
    Groups().groups.erase(it);  // its model was destroyed
    return nullptr;
  }
  return group;
}

aclError Stream::BeginTaskGroup() {
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.model) {
    VIGIL_RT_FAIL("Task group begin failed: stream_id={} is not in capture status; a task group "
                  "marks tasks of a capture.", id_);
    return ACL_ERROR_RT_STREAM_NOT_CAPTURED;
  }
  if (c.open_group) {
    VIGIL_RT_FAIL("Task group begin failed: a task group is already open on stream_id={}.", id_);
    return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
  }
  c.open_group = std::make_shared<CaptureTaskGroup>();
  c.open_group->model = c.model;
  c.open_group->begin = c.model->task_count();
  return ACL_SUCCESS;
}

aclError Stream::EndTaskGroup(void** handle) {
  *handle = nullptr;
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.model) {
    VIGIL_RT_FAIL("Task group end failed: stream_id={} is not in capture status.", id_);
    return ACL_ERROR_RT_STREAM_NOT_CAPTURED;
  }
  if (!c.open_group) {
    VIGIL_RT_FAIL("Task group end failed: no task group was begun on stream_id={} "
                  "(aclmdlRICaptureTaskGrpBegin).", id_);
    return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
  }
  std::shared_ptr<CaptureTaskGroup> group = std::move(c.open_group);
  CapturedModel& model = *c.model;
  {
    std::lock_guard<std::mutex> model_lock(model.mu_);
    group->end = model.tasks_.size();
    for (size_t i = group->begin; i < group->end; ++i) group->types.push_back(model.tasks_[i].type);
    model.groups_.push_back(group);
  }
  {
    std::lock_guard<std::mutex> groups_lock(Groups().mu);
    Groups().groups[group.get()] = group;
  }
  RT_RUN_INFO("task group end success, model_id={}, stream_id={}, tasks [{}, {}).", model.id(),
              id_, group->begin, group->end);
  *handle = group.get();
  return ACL_SUCCESS;
}

aclError Stream::BeginTaskUpdate(void* handle) {
  std::shared_ptr<CaptureTaskGroup> group = TaskGroupRef(handle);
  if (!group) {
    VIGIL_RT_FAIL("Task update begin failed: param handle[{}] is not a valid task group (unknown, "
                  "or its model was destroyed).", handle);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  StreamCapture& c = *capture_;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.model) {
    VIGIL_RT_FAIL("Task update begin failed: stream_id={} is capturing; a task update is made on "
                  "a stream that does not capture.", id_);
    return ACL_ERROR_RT_STREAM_CAPTURED;
  }
  if (c.updating) {
    VIGIL_RT_FAIL("Task update begin failed: stream_id={} is already updating a task group.", id_);
    return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
  }
  if (group->updating.exchange(true)) {
    VIGIL_RT_FAIL("Task update begin failed: task group[{}] is being updated on another stream.",
                  handle);
    return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
  }
  c.updating = std::move(group);
  c.update_tasks.clear();
  recording_.fetch_or(kUpdating, std::memory_order_release);
  return ACL_SUCCESS;
}

aclError Stream::EndTaskUpdate() {
  StreamCapture& c = *capture_;
  std::shared_ptr<CaptureTaskGroup> group;
  std::vector<CapturedTask> tasks;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.updating) {
      VIGIL_RT_FAIL("Task update end failed: stream_id={} is not updating a task group "
                    "(aclmdlRICaptureTaskUpdateBegin).", id_);
      return ACL_ERROR_STREAM_TASK_GROUP_STATUS;
    }
    group = std::move(c.updating);
    tasks = std::move(c.update_tasks);
    c.update_tasks.clear();
    recording_.fetch_and(static_cast<uint8_t>(~kUpdating), std::memory_order_release);
  }
  group->updating.store(false);
  std::shared_ptr<CapturedModel> model = group->model.lock();
  if (!model) {
    VIGIL_RT_FAIL("Task update end failed: the model of the task group updated on stream_id={} "
                  "was destroyed; nothing updated.", id_);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  bool same = tasks.size() == group->types.size();
  for (size_t i = 0; same && i < tasks.size(); ++i) same = tasks[i].type == group->types[i];
  if (!same) {
    std::string got, want;
    for (const CapturedTask& t : tasks) got += std::string(got.empty() ? "" : ",") + TaskTypeName(t.type);
    for (TaskType t : group->types) want += std::string(want.empty() ? "" : ",") + TaskTypeName(t);
    VIGIL_RT_FAIL("Task update end failed: stream_id={} enqueued {} task(s) [{}] but the task "
                  "group of model_id={} holds {} [{}]; they must match in number and type. "
                  "Nothing updated.", id_, tasks.size(), got, model->id(), group->types.size(),
                  want);
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  model->ReplaceTasks(group->begin, std::move(tasks));
  RT_RUN_INFO("task update success, model_id={}, stream_id={}, tasks [{}, {}) replaced.",
              model->id(), id_, group->begin, group->end);
  return ACL_SUCCESS;
}

}  // namespace vigil::rt
