// Events and notifies. An Event is recorded by a stream task and waited on by another stream's
// task or by the host (aclrtSynchronizeEvent); a wait captures the record count at enqueue time.
// A Notify is the same flag, set and waited on by tasks, with a timeout on the wait — HCCL's
// notify record / notify wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "acl/acl_base.h"

namespace vigil::rt {

class Event {
 public:
  Event();
  ~Event();
  // Called from a stream task: marks record number `seq` complete.
  void Complete(uint64_t seq);
  // Host side: reserves the next record number (aclrtRecordEvent does this at enqueue time).
  uint64_t NextRecordSeq();
  uint64_t LastRecordSeq() const;
  // Waits until record `seq` completed; timeout_ms < 0: forever. false on timeout.
  bool WaitFor(uint64_t seq, int64_t timeout_ms);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

Event* EventFromHandle(void* handle);
// Same, keeping the event alive (tasks that record or wait on it hold this reference).
std::shared_ptr<Event> EventRef(void* handle);
Event* CreateEvent();  // belongs to the calling thread's current device
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
