// The communicator-state callbacks of HcclCommRegCommStateCallback, for the calls that pass the
// phases (HcclCommDestroy, HcclCommResume).
#pragma once

#include "hccl/hccl_comm.h"

namespace vigil::api {

// Calls every registered callback with (comm, phase); the first failing one's result is
// returned (after an ERROR line naming it), as HCCL stops at it.
HcclResult NotifyCommState(HcclComm comm, HcclCommStatePhase phase);

}  // namespace vigil::api
