// The event calls of acl/acl_rt.h over runtime/event.h: create (with flags), record, reset,
// wait, query, synchronize, elapsed time. What an event may be used for follows how it was made
// (EventKind, ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE); a use it does not allow is rejected with
// ACL_ERROR_RT_PARAM_INVALID and one ERROR line naming the flag it lacks.
#include <chrono>
#include <memory>
#include <string>

#include "acl/acl.h"
#include "api/acl_api_util.h"
#include "runtime/event.h"
#include "runtime/stream.h"
#include "runtime/stream_capture.h"

namespace {

using vigil::api::Guard;
using vigil::api::ResolveEvent;
using vigil::api::ResolveStream;
using vigil::rt::Event;
using vigil::rt::EventKind;
using vigil::rt::Stream;

constexpr uint32_t kSupportedFlags = ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE;
constexpr uint32_t kKnownFlags =
    kSupportedFlags | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_EXTERNAL;

aclError CreateWithFlag(const char* api, aclrtEvent* event, uint32_t flag, EventKind kind) {
  CHECK_NOT_NULL(api, event);
  if ((flag & ~kKnownFlags) != 0) {
    VIGIL_RT_FAIL("{} failed: param flag[{:#x}] has unknown bits {:#x}.", api, flag,
                  flag & ~kKnownFlags);
    return ACL_ERROR_INVALID_PARAM;
  }
  if ((flag & ~kSupportedFlags) != 0) {
    VIGIL_RT_FAIL(
        "{} failed: param flag[{:#x}]: {} is not supported by Vigil's CPU devices.", api, flag,
        (flag & ACL_EVENT_CAPTURE_STREAM_PROGRESS) != 0 ? "ACL_EVENT_CAPTURE_STREAM_PROGRESS"
                                                        : "ACL_EVENT_EXTERNAL");
    return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
  }
  REQUIRE_CURRENT_DEVICE(api, dev);
  (void)dev;
  return Guard(api, [&]() -> aclError {
    *event = vigil::rt::CreateEvent(kind, flag);
    return ACL_SUCCESS;
  });
}

const char* KindCall(EventKind kind) {
  switch (kind) {
    case EventKind::kDefault:
      return "aclrtCreateEvent";
    case EventKind::kWithFlag:
      return "aclrtCreateEventWithFlag";
    case EventKind::kEx:
      return "aclrtCreateEventExWithFlag";
  }
  return "?";
}

// The event, if it may be used by `api` as asked: `sync` (waited on, reset), `resettable`,
// `queryable`, `stamped` (has timestamps). Otherwise null and one ERROR line.
std::shared_ptr<Event> UsableEvent(const char* api, aclrtEvent handle, bool sync, bool no_ex,
                                   bool stamped, aclError* rc) {
  auto ev = ResolveEvent(api, handle);
  if (!ev) {
    *rc = ACL_ERROR_RT_PARAM_INVALID;
    return nullptr;
  }
  std::string lacks;
  if (no_ex && ev->kind() == EventKind::kEx) {
    lacks = "an event of aclrtCreateEventExWithFlag cannot be used here";
  } else if (sync && !ev->Syncs()) {
    lacks = fmt::format("it was made by {} without ACL_EVENT_SYNC", KindCall(ev->kind()));
  } else if (stamped && !ev->Timestamps()) {
    lacks = fmt::format("it was made by {} without ACL_EVENT_TIME_LINE, so it has no timestamps",
                        KindCall(ev->kind()));
  }
  if (!lacks.empty()) {
    VIGIL_RT_FAIL("{} failed: param event[{}]: {}.", api, handle, lacks);
    *rc = ACL_ERROR_RT_PARAM_INVALID;
    return nullptr;
  }
  *rc = ACL_SUCCESS;
  return ev;
}

// When the event's last record completed; CANN's codes when it cannot say.
aclError CompleteTime(const char* api, aclrtEvent handle,
                      std::chrono::steady_clock::time_point* at) {
  aclError rc = ACL_SUCCESS;
  auto ev = UsableEvent(api, handle, false, false, true, &rc);
  if (!ev) return rc;
  if (ev->LastCompleteTime(at)) return ACL_SUCCESS;
  switch (ev->GetStatus()) {
    case Event::Status::kNeverRecorded:
      // CANN: "event recorder null", reported as an internal error.
      VIGIL_RT_FAIL("{} failed: event[{}] was never recorded (event recorder null).", api, handle);
      return ACL_ERROR_RT_INTERNAL_ERROR;
    case Event::Status::kPending:
      VIGIL_RT_FAIL(
          "{} failed: event[{}]: its last record is not complete yet, so it has no "
          "timestamp (synchronize its stream first).",
          api, handle);
      return ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID;
    case Event::Status::kReset:
    case Event::Status::kComplete:
      break;
  }
  VIGIL_RT_FAIL("{} failed: event[{}] was reset after its last record, so it has no timestamp.",
                api, handle);
  return ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID;
}

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent* event) {
  CHECK_NOT_NULL("aclrtCreateEvent", event);
  REQUIRE_CURRENT_DEVICE("aclrtCreateEvent", dev);
  (void)dev;
  return Guard("aclrtCreateEvent", [&]() -> aclError {
    *event = vigil::rt::CreateEvent();
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  return CreateWithFlag("aclrtCreateEventWithFlag", event, flag, EventKind::kWithFlag);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEventExWithFlag(aclrtEvent* event, uint32_t flag) {
  return CreateWithFlag("aclrtCreateEventExWithFlag", event, flag, EventKind::kEx);
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event) {
  CHECK_NOT_NULL("aclrtDestroyEvent", event);
  aclError rc = vigil::rt::DestroyEvent(event);
  if (rc != ACL_SUCCESS) {
    VIGIL_RT_FAIL(
        "aclrtDestroyEvent failed: param event[{}] is not a valid event (unknown or "
        "destroyed).",
        event);
  }
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  CHECK_NOT_NULL("aclrtRecordEvent", event);
  return Guard("aclrtRecordEvent", [&]() -> aclError {
    auto ev = ResolveEvent("aclrtRecordEvent", event);
    if (!ev) return ACL_ERROR_RT_PARAM_INVALID;
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream("aclrtRecordEvent", stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    bool captured = false;  // graph capture: recorded for replays (runtime/stream_capture.h)
    rc = vigil::rt::CaptureEventRecord(*s, ev, &captured);
    if (rc != ACL_SUCCESS || captured) return rc;
    uint64_t seq = ev->NextRecordSeq();
    s->Enqueue(vigil::rt::TaskType::kEventRecord, [ev, seq](std::string*) {
      ev->Complete(seq);
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  constexpr const char* kApi = "aclrtResetEvent";
  CHECK_NOT_NULL(kApi, event);
  return Guard(kApi, [&]() -> aclError {
    aclError rc = ACL_SUCCESS;
    auto ev = UsableEvent(kApi, event, true, true, false, &rc);
    if (!ev) return rc;
    std::shared_ptr<Stream> s;
    rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    // A record task in kind: it only marks the event, and must run on a failed stream as well.
    s->Enqueue(vigil::rt::TaskType::kEventRecord, [ev](std::string*) {
      ev->Reset();
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  constexpr const char* kApi = "aclrtStreamWaitEvent";
  CHECK_NOT_NULL(kApi, event);
  return Guard(kApi, [&]() -> aclError {
    aclError rc = ACL_SUCCESS;
    auto ev = UsableEvent(kApi, event, true, false, false, &rc);
    if (!ev) return rc;
    std::shared_ptr<Stream> s;
    rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    bool captured = false;  // graph capture: recorded for replays (runtime/stream_capture.h)
    rc = vigil::rt::CaptureEventWait(*s, ev, &captured);
    if (rc != ACL_SUCCESS || captured) return rc;
    // Counted as waiting from now until the task ran or was dropped with its stream's queue.
    ev->AddWaiter();
    std::shared_ptr<void> waiting(nullptr, [ev](void*) { ev->RemoveWaiter(); });
    if (ev->kind() != EventKind::kDefault) {
      // A flag: the wait blocks until the event is recorded, by a record queued later too.
      s->Enqueue(vigil::rt::TaskType::kEventWait, [ev, waiting](std::string*) {
        ev->WaitRecorded(-1);
        return ACL_SUCCESS;
      });
      return ACL_SUCCESS;
    }
    // Waits for the record enqueued last before this call; a never-recorded event is seq 0.
    uint64_t seq = ev->LastRecordSeq();
    s->Enqueue(vigil::rt::TaskType::kEventWait, [ev, seq, waiting](std::string*) {
      ev->WaitFor(seq, -1);
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event,
                                                   aclrtEventRecordedStatus* status) {
  constexpr const char* kApi = "aclrtQueryEventStatus";
  CHECK_NOT_NULL(kApi, event);
  CHECK_NOT_NULL(kApi, status);
  auto ev = ResolveEvent(kApi, event);
  if (!ev) return ACL_ERROR_RT_PARAM_INVALID;
  *status = ev->GetStatus() == Event::Status::kComplete ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                                                        : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus* status) {
  constexpr const char* kApi = "aclrtQueryEvent";
  CHECK_NOT_NULL(kApi, event);
  CHECK_NOT_NULL(kApi, status);
  aclError rc = ACL_SUCCESS;
  auto ev = UsableEvent(kApi, event, false, true, false, &rc);
  if (!ev) return rc;
  *status = ev->GetStatus() == Event::Status::kComplete ? ACL_EVENT_STATUS_COMPLETE
                                                        : ACL_EVENT_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtQueryEventWaitStatus(aclrtEvent event,
                                                       aclrtEventWaitStatus* status) {
  constexpr const char* kApi = "aclrtQueryEventWaitStatus";
  CHECK_NOT_NULL(kApi, event);
  CHECK_NOT_NULL(kApi, status);
  aclError rc = ACL_SUCCESS;
  auto ev = UsableEvent(kApi, event, false, true, false, &rc);
  if (!ev) return rc;
  *status = ev->Waiters() == 0 ? ACL_EVENT_WAIT_STATUS_COMPLETE : ACL_EVENT_WAIT_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
  CHECK_NOT_NULL("aclrtSynchronizeEvent", event);
  if (timeout < -1 || timeout == 0) {
    VIGIL_RT_FAIL(
        "aclrtSynchronizeEventWithTimeout failed: param timeout[{}] must be -1 "
        "(forever) or > 0 ms.",
        timeout);
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard("aclrtSynchronizeEvent", [&]() -> aclError {
    auto ev = ResolveEvent("aclrtSynchronizeEvent", event);
    if (!ev) return ACL_ERROR_RT_PARAM_INVALID;
    aclError rc = vigil::rt::CheckEventNotCaptured(ev.get(), "aclrtSynchronizeEvent");
    if (rc != ACL_SUCCESS) return rc;
    uint64_t seq = ev->LastRecordSeq();
    if (!ev->WaitFor(seq, timeout)) {
      VIGIL_RT_FAIL(
          "aclrtSynchronizeEventWithTimeout failed: event[{}] record {} not complete "
          "after {} ms.",
          event, seq, timeout);
      return ACL_ERROR_RT_EVENT_SYNC_TIMEOUT;
    }
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event) {
  return aclrtSynchronizeEventWithTimeout(event, -1);
}

ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent,
                                                   aclrtEvent endEvent) {
  constexpr const char* kApi = "aclrtEventElapsedTime";
  CHECK_NOT_NULL(kApi, ms);
  CHECK_NOT_NULL(kApi, startEvent);
  CHECK_NOT_NULL(kApi, endEvent);
  std::chrono::steady_clock::time_point start, end;
  aclError rc = CompleteTime(kApi, startEvent, &start);
  if (rc == ACL_SUCCESS) rc = CompleteTime(kApi, endEvent, &end);
  if (rc != ACL_SUCCESS) return rc;
  *ms = std::chrono::duration<float, std::milli>(end - start).count();
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t* timestamp) {
  constexpr const char* kApi = "aclrtEventGetTimestamp";
  CHECK_NOT_NULL(kApi, timestamp);
  CHECK_NOT_NULL(kApi, event);
  std::chrono::steady_clock::time_point at;
  aclError rc = CompleteTime(kApi, event, &at);
  if (rc != ACL_SUCCESS) return rc;
  *timestamp = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch()).count());
  return ACL_SUCCESS;
}

}  // extern "C"
