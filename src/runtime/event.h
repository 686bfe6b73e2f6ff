// Events and notifies. An Event is recorded by a stream task and waited on by another stream's
// task or by the host (aclrtSynchronizeEvent); a wait captures the record count at enqueue time.
// Events made with ACL_EVENT_SYNC are also flags (WaitRecorded): recorded by any record that
// completed and not cleared by a reset since, whenever either happened. A Notify is the same
// flag, set and waited on by tasks, with a timeout on the wait — HCCL's notify record / wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "acl/acl_base.h"

namespace vigil::rt {

// How an event was made: what it may be used for (acl/acl_rt.h).
enum class EventKind {
  kDefault,   // aclrtCreateEvent: waits, resets, queries and timestamps
  kWithFlag,  // aclrtCreateEventWithFlag: ACL_EVENT_SYNC / ACL_EVENT_TIME_LINE say which
  kEx,        // aclrtCreateEventExWithFlag: as kWithFlag, but never reset or queried
};

class Event {
 public:
  Event();
  Event(EventKind kind, uint32_t flags);
  ~Event();
  EventKind kind() const { return kind_; }
  uint32_t flags() const { return flags_; }  // ACL_EVENT_* bits (0 for kDefault)
  bool Syncs() const;       // may be waited on by a stream and reset
  bool Timestamps() const;  // records the moment a record completes

  // Called from a stream task: marks record number `seq` complete.
  void Complete(uint64_t seq);
  // Host side: reserves the next record number (aclrtRecordEvent does this at enqueue time).
  uint64_t NextRecordSeq();
  uint64_t LastRecordSeq() const;
  // Waits until record `seq` completed; timeout_ms < 0: forever. false on timeout.
  bool WaitFor(uint64_t seq, int64_t timeout_ms);
  // Waits until the event is recorded: a record completed after the last reset (or ever).
  bool WaitRecorded(int64_t timeout_ms);
  // Called from a stream task: clears the recorded state and the timestamp.
  void Reset();

  enum class Status { kNeverRecorded, kPending, kComplete, kReset };
  // kComplete: recorded, the last record enqueued completed, no reset since.
  Status GetStatus() const;
  // When the last record enqueued completed (kComplete only; else false).
  bool LastCompleteTime(std::chrono::steady_clock::time_point* at) const;

  // Waits on this event queued on streams and not finished (aclrtQueryEventWaitStatus).
  void AddWaiter();
  void RemoveWaiter();
  uint64_t Waiters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  EventKind kind_ = EventKind::kDefault;
  uint32_t flags_ = 0;
};

Event* EventFromHandle(void* handle);
// Same, keeping the event alive (tasks that record or wait on it hold this reference).
std::shared_ptr<Event> EventRef(void* handle);
// Belongs to the calling thread's current device.
Event* CreateEvent(EventKind kind = EventKind::kDefault, uint32_t flags = 0);
aclError DestroyEvent(void* handle);  // ACL_ERROR_RT_PARAM_INVALID for an unknown handle
void DestroyDeviceEvents(int32_t device);

class Notify {
 public:
  Notify();
  ~Notify();
  void Record();
  // Consumes one record; false on timeout (timeout_ms < 0: forever).
  bool Wait(int64_t timeout_ms);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::rt
