// The communicator reports every op's life to observers (DFX sits above comm, so it registers
// here): entry log and task-exception records, heartbeat op in/out counters, flight recorder.
#pragma once

#include <memory>

#include "comm/op.h"

namespace vigil::comm {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // On the caller's thread, after the op got its index/tag/stream task id, before it can run.
  virtual void OnEnqueue(const OpRecord& op) = 0;
  // On the thread that runs the op (the stream's worker, or a thread synchronizing the stream:
  // rt::Stream's handoff), as OnFinish and OnTasks. `now`: the op's start, read once by the communicator for all who
  // need it (its HCCL_EXEC_TIMEOUT deadline, the heartbeat, the flight recorder): a clock read
  // costs ~40 instructions, a tenth of an op's own work.
  virtual void OnStart(const OpRecord& op, SteadyClock::time_point now) = 0;
  // Failure is null on success. `leave`: when the op ended, read by the communicator as `now`
  // above (an op through the direct slots that found its peer's part at once passes its start:
  // its own work since is well under a microsecond).
  virtual void OnFinish(const OpRecord& op, HcclResult result, const OpFailure* failure,
                        SteadyClock::time_point leave) = 0;
  // Just before OnFinish, with the op's tasks: only when task-level
  // tracking is on (HCCL_DIAGNOSE_ENABLE=1).
  virtual void OnTasks(const OpRecord& op, const std::shared_ptr<alg::TaskLog>& tasks) {
    (void)op;
    (void)tasks;
  }

  // An op retry began, recovered or gave up (comm/op_retry.h), on the op's thread.
  virtual void OnRetry(const OpRecord& op, const RetryEvent& event) {
    (void)op;
    (void)event;
  }

  // This observer's slot in CommInfo::observer_state (kMaxOpObservers until registered).
  size_t slot() const { return slot_; }
  // This observer's per-communicator state of the op's communicator (null until it stores some).
  std::shared_ptr<void>& State(const OpRecord& op) const { return StateOf(*op.comm); }
  std::shared_ptr<void>& StateOf(const CommInfo& info) const { return info.observer_state[slot_]; }

 private:
  friend bool AddOpObserver(OpObserver* observer);
  size_t slot_ = kMaxOpObservers;
};

// Process-wide observers, called in registration order. Observers live for the process
// (registered once, never removed), so calls need no lock. Gives the observer its slot; false
// (and never called) when kMaxOpObservers are registered already.
bool AddOpObserver(OpObserver* observer);

// Fan-out helpers used by the communicator.
void NotifyEnqueue(const OpRecord& op);
void NotifyStart(const OpRecord& op, SteadyClock::time_point now);
void NotifyFinish(const OpRecord& op, HcclResult result, const OpFailure* failure,
                  SteadyClock::time_point leave);
// With the clock read here (TscNow).
void NotifyFinish(const OpRecord& op, HcclResult result, const OpFailure* failure);
void NotifyTasks(const OpRecord& op, const std::shared_ptr<alg::TaskLog>& tasks);
void NotifyRetry(const OpRecord& op, const RetryEvent& event);

}  // namespace vigil::comm
