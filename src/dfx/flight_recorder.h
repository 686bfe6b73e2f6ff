// The flight recorder: the last kFlightOpsPerComm ops of every communicator of the process
// (tag, index, type, count, dtype, reduce op, root, stream, enter/start/leave times, state), kept
// in a ring buffer by an op observer, and dumped as JSON next to the plog
//   $ASCEND_PROCESS_LOG_PATH/run/flight/flight-<pid>_<YYYYMMDDhhmmssmmm>[_<n>].json
// when an op fails (before aclrtSynchronizeStream returns its error) and on SIGUSR1 (the signal
// handler only posts a semaphore; the "vigil_flight" thread writes the file). So diagnose has
// each rank's exact op sequence even when entry logging (HCCL_ENTRY_LOG_ENABLE) was off.
//
// Schema "vigil.flight/1":
//   {"schema":"vigil.flight/1","pid":..,"host":..,"reason":..,"dump_time":"<plog stamp>",
//    "comms":[{"identifier":..,"rank":..,"nranks":..,"rankSize":..,"device":..,"pid":..,
//              "host":..,"reason":..,"dump_time":..,"userDefine":..,
//              "ops":[{"index":..,"tag":..,"op":"AllReduce","count":..,"dataType":"float32",
//                      "reduceType":"sum"|null,"root":..|null,"streamId":..,"taskId":..,
//                      "algType":..,"enter":"2025-10-24-11:16:55.490.253","start":..|null,
//                      "leave":..|null,"state":"queued|running|done|failed",
//                      "result":<HcclResult>,"error":"..",
//                      "tasksTotal":..,"tasks":[{"task":1,"type":"Notify Wait","remote":1,
//                        "link":"SHM","bytes":..,"done":..,"state":"done|failed|pending"}],
//                      "retries":[{"step":"begin|recovered|failed","attempt":..,"maxCnt":..,
//                        "epoch":..,"link":[a,b],"origin":..,"time":..,"lostSeconds":..,
//                        "reason":..}]}]}],
//    "shrinks":[..] (RecordShrink below)}
// Ops are oldest first. Times are local plog stamps. "tasks" (the newest alg::TaskLog::kMaxTasks
// transfers of the op) only with HCCL_DIAGNOSE_ENABLE=1; "retries" only for ops an op retry
// touched (comm/op_retry.h). An op recovered by retry writes a dump too (a few per process).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/op.h"
#include "common/time_util.h"

namespace vigil::dfx {

inline constexpr size_t kFlightOpsPerComm = 256;

// Registers the recorder as an op observer and arms SIGUSR1 (unless the program already handles
// it). Idempotent; called from InstallTaskExceptionHandler.
void InstallFlightRecorder();

// A new communicator's recorder state, before its handle is returned, so that its ops record
// themselves without a lock (one made otherwise gets it at its first op, under the lock).
void AttachFlightRecorder(const std::shared_ptr<const comm::CommInfo>& info);

// Writes a dump now; returns its path ("" when nothing could be written). Thread-safe.
std::string DumpFlightRecorder(const std::string& reason);

// A shrink this process took part in (VigilCommShrink). The last kFlightShrinks are written
// into every dump after "comms", as
//   "shrinks":[{"from":..,"to":..,"fromRank":..,"toRank":..,"fromSize":..,"toSize":..,
//               "excluded":[..],"coordinator":..,"time":"<plog stamp>","agreementMs":..,"ms":..}]
// and a dump is written at once (reason "communicator shrunk: ...").
inline constexpr size_t kFlightShrinks = 16;
struct ShrinkRecord {
  std::string from, to;  // identifiers
  uint32_t from_rank = 0, to_rank = 0, from_size = 0, to_size = 0;
  std::vector<uint32_t> excluded;
  uint32_t coordinator = 0;
  int64_t agreement_ms = 0, ms = 0;
  WallClock::time_point at;
};
void RecordShrink(const ShrinkRecord& record);

}  // namespace vigil::dfx
