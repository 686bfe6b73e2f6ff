// HCCL ops enqueued on a capturing stream (aclmdlRICaptureBegin): recorded so that every replay
// of the model enqueues the op afresh on the replay stream (a new op index, its own entry log,
// flight-recorder and task-exception records, a fresh fingerprint exchange), exactly as if the
// program had called it again there. All ranks replay in the same order, so the ops match.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "hccl/hccl.h"
#include "runtime/stream.h"

namespace vigil::api {

// Records `op` of `comm` (its API handle `handle`) into `stream`'s capture; when the capture
// ended meanwhile, enqueues it as usual (Communicator::Enqueue's result).
HcclResult CaptureOp(std::shared_ptr<comm::Communicator> comm, comm::OpDesc&& op,
                     rt::Stream* stream, HcclComm handle);

}  // namespace vigil::api
