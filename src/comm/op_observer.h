// The communicator reports every op's life to an observer (DFX sits above comm, so it registers
// itself here): entry log, task-exception records, op in/out counters, flight recorder.
#pragma once

#include "comm/op.h"

namespace vigil::comm {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // On the caller's thread, after the op got its index/tag/stream task id, before it can run.
  virtual void OnEnqueue(const OpRecord& op) = 0;
  // On the stream worker.
  virtual void OnStart(const OpRecord& op) = 0;
  // On the stream worker; failure is null on success.
  virtual void OnFinish(const OpRecord& op, HcclResult result, const OpFailure* failure) = 0;
};

// One process-wide observer (set once by the API layer before the first communicator).
void SetOpObserver(OpObserver* observer);
OpObserver* GetOpObserver();

}  // namespace vigil::comm
