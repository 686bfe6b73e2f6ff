// The task-exception handler: keeps, per stream, the ops queued by communicators (bounded, as
// HCCL's taskMap), and when the runtime reports a failed task it finds the op from
// (streamId, taskId) and writes HCCL's three ERROR lines — base, groupRank, opData — then the
// error code's screen line (EI0002 for a wait timeout, EI0012 for a faulting copy, EI0013 for a
// broken link). Only the first code per process reaches the screen, as in HCCL.
#pragma once

#include "comm/op_observer.h"

namespace vigil::dfx {

// Installs the handler as the communicators' op observer and the runtime's task-fail callback.
// Idempotent; called by the API layer before the first communicator exists.
void InstallTaskExceptionHandler();

// The newest failed op of the communicator whose HcclComm handle is `comm_handle`, among the ops
// the handler still keeps (VigilCommGetLastErrorMessage). False when there is none.
bool LastFailedOp(const void* comm_handle, comm::OpRecord* op, comm::OpFailure* failure);

// The EI code whose screen line this failed op raised ("" when none).
const char* FailureErrorCode(const comm::OpRecord& op, const comm::OpFailure& failure);

}  // namespace vigil::dfx
