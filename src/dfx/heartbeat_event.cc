#include "dfx/heartbeat_event.h"

#include <fmt/format.h>

#include <algorithm>

namespace vigil::dfx {

namespace {
constexpr auto kJitter = std::chrono::seconds(300);  // HCCL's JITTER_TIME
}

const char* HbStatusName(HbStatus status) {
  switch (status) {
    case HbStatus::kLost:
      return "LOST";
    case HbStatus::kStuck:
      return "STUCK";
    case HbStatus::kCqe:
      return "ERROR CQE";
    case HbStatus::kOk:
      break;
  }
  return "OK";
}

const char* HbExceptionType(HbStatus status) {
  switch (status) {
    case HbStatus::kLost:
      return "Heartbeat Lost Occurred";
    case HbStatus::kStuck:
      return "Stuck Occurred";
    case HbStatus::kCqe:
      return "Error cqe Occurred";
    case HbStatus::kOk:
      break;
  }
  return "Unknown";
}

int HbPriority(HbStatus status) {
  switch (status) {
    case HbStatus::kCqe:
      return 0;
    case HbStatus::kStuck:
      return 1;
    case HbStatus::kLost:
      return 2;
    case HbStatus::kOk:
      break;
  }
  return 3;
}

std::string FormatAbnormalLine(const std::string& local, const HbEvent& e) {
  return fmt::format(
      "[TaskExecStage][HeartbeatAbnormal]local rank [{}]: crimer rank [{}] status[{}] by "
      "informer rank [{}]",
      local, e.crimer, HbStatusName(e.status), e.informer);
}

std::string FormatClusterExceptionLine(const HbEvent& e) {
  std::string line = fmt::format(
      "[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[{}], Arrival "
      "Time:[{}]",
      e.crimer, FormatCTime(e.arrival));
  switch (e.status) {
    case HbStatus::kLost:
      line += fmt::format(
          ", Discoverer:[{}], ExceptionType:[{}], Possible Reason:1. Process has "
          "exited, 2. Network Disconnected",
          e.informer, HbExceptionType(e.status));
      break;
    case HbStatus::kStuck:
      line += fmt::format(
          ", ExceptionType:[{}], Possible Reason:1.Host process is stuck, "
          "2.Device task is stuck",
          HbExceptionType(e.status));
      break;
    case HbStatus::kCqe:
      line += fmt::format(
          ", ExceptionType:[{}], Possible Reason:1.Network Disconnected, "
          "2.Remote Rank Coredown",
          HbExceptionType(e.status));
      break;
    case HbStatus::kOk:
      break;
  }
  return line;
}

std::string FormatCqeLine(uint32_t status, WallClock::time_point when, const CqeEnd& local,
                          const CqeEnd& remote) {
  return fmt::format(
      "[TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[{}], time:[{}],"
      "localInfo{{server[{}],deviceId[{}],deviceIp[{}]}}, "
      "remoteIP{{server[{}],deviceId[{}],deviceIp[{}]}}",
      status, FormatCqeTime(when), local.server, local.device_id, local.device_ip, remote.server,
      remote.device_id, remote.device_ip);
}

std::vector<HbEvent> SelectKeyEvents(const std::vector<HbEvent>& events,
                                     const std::set<std::string>& comm_members,
                                     WallClock::time_point op_enqueued) {
  std::vector<HbEvent> key;
  for (const HbEvent& e : events) {
    if (e.status == HbStatus::kOk) continue;
    if (comm_members.count(e.crimer) != 0 || e.arrival + kJitter >= op_enqueued) {
      key.push_back(e);
    }
  }
  std::stable_sort(key.begin(), key.end(), [](const HbEvent& a, const HbEvent& b) {
    if (HbPriority(a.status) != HbPriority(b.status)) {
      return HbPriority(a.status) < HbPriority(b.status);
    }
    return a.arrival < b.arrival;
  });
  return key;
}

std::string RankUid(const std::string& host_ip, int32_t device, uint32_t pid, bool disambiguate) {
  if (disambiguate) return fmt::format("{}/{}#{}", host_ip, device, pid);
  return fmt::format("{}/{}", host_ip, device);
}

}  // namespace vigil::dfx
