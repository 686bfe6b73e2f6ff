// Heartbeat events and the exact log lines HCCL prints for them (seed: 集群心跳机制), kept as
// pure functions so they are tested without sockets.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "dfx/heartbeat_frame.h"

namespace vigil::dfx {

// "LOST", "STUCK", "ERROR CQE", "OK" (status[..] in the run-log line).
const char* HbStatusName(HbStatus status);
// "Heartbeat Lost Occurred", "Stuck Occurred", "Error cqe Occurred" (ExceptionType[..]).
const char* HbExceptionType(HbStatus status);
// Print order of the Cluster Exception lines: ERROR CQE (0) > STUCK (1) > LOST (2).
int HbPriority(HbStatus status);

struct HbEvent {
  std::string crimer;    // IP/ID of the faulty rank
  std::string informer;  // IP/ID of the rank that discovered it (kept while forwarded)
  HbStatus status = HbStatus::kOk;
  WallClock::time_point arrival;  // when this process learned of it (Arrival Time)
  uint64_t discovered_us = 0;     // wall clock at the informer
};

// "[TaskExecStage][HeartbeatAbnormal]local rank [L]: crimer rank [C] status[S] by informer rank
// [I]"
std::string FormatAbnormalLine(const std::string& local, const HbEvent& e);

// "[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[C], Arrival Time:[Thu
// Oct 23 17:25:58 2025], Discoverer:[I], ExceptionType:[..], Possible Reason:.." — Discoverer
// for LOST only, reasons as HCCL prints them.
std::string FormatClusterExceptionLine(const HbEvent& e);

struct CqeEnd {
  std::string server;
  std::string device_id;
  std::string device_ip;
};
// "[TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], time:[2025-09-15
// 08:38:12.776654],localInfo{server[..],deviceId[..],deviceIp[..]}, remoteIP{server[..],..}"
std::string FormatCqeLine(uint32_t status, WallClock::time_point when, const CqeEnd& local,
                          const CqeEnd& remote);

// The events worth naming when an op of a communicator fails: those about a member of that
// communicator, and any that arrived after the op was enqueued less a jitter of 300 s (HCCL's
// JITTER_TIME; its "one exec timeout ago" window does not fit ops that fail fast). Sorted by
// priority, then arrival.
std::vector<HbEvent> SelectKeyEvents(const std::vector<HbEvent>& events,
                                     const std::set<std::string>& comm_members,
                                     WallClock::time_point op_enqueued);

// Identity of a rank in heartbeat lines: "<host ip>/<device id>" like HCCL's
// "<serverIp>/<devicePhyId>"; when two ranks of one communicator share host ip and device
// (several processes on one device) the pid is appended, "<ip>/<device>#<pid>", so it stays
// unique.
std::string RankUid(const std::string& host_ip, int32_t device, uint32_t pid, bool disambiguate);

}  // namespace vigil::dfx
