// Vigil's extensions to the C API (vigil/ext.h): the root-cause text of a communicator's
// failure, put together from what DFX keeps (the task-exception handler's failed op, the
// heartbeat's events), for frameworks that raise it in their own exception.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "api/hccl_api_util.h"
#include "common/error_codes.h"
#include "dfx/cluster_monitor.h"
#include "dfx/heartbeat_event.h"
#include "dfx/task_exception.h"
#include "vigil/ext.h"

namespace {

using vigil::api::ArgError;

// "<ip/id>" of every member, as the heartbeat names them (heartbeat.cc Attach).
std::vector<std::string> MemberUids(const vigil::comm::Communicator& c) {
  std::map<std::pair<std::string, int32_t>, int> same;
  for (const auto& r : c.ranks()) ++same[{r.host_ip, r.device}];
  std::vector<std::string> uids;
  for (const auto& r : c.ranks()) {
    uids.push_back(vigil::dfx::RankUid(r.host_ip, r.device, r.pid, same[{r.host_ip, r.device}] > 1));
  }
  return uids;
}

std::string RankOf(const std::vector<std::string>& uids, const std::string& uid) {
  auto it = std::find(uids.begin(), uids.end(), uid);
  const std::string rank = it == uids.end() ? "?" : std::to_string(it - uids.begin());
  return fmt::format("rank [{}] ({})", rank, uid);
}

std::string LastErrorText(HcclComm handle, const vigil::comm::Communicator& c) {
  vigil::comm::OpRecord op;
  vigil::comm::OpFailure failure;
  std::string text;
  if (vigil::dfx::LastFailedOp(handle, &op, &failure)) {
    text = fmt::format("{} failed on communicator [{}] rank [{}]: op index [{}] tag [{}], {}",
                       vigil::comm::OpTypeName(op.type), c.identifier(), c.rank(), op.index,
                       op.tag(), vigil::api::ResultName(failure.code));
    const char* code = vigil::dfx::FailureErrorCode(op, failure);
    if (const vigil::ErrorCodeInfo* info = vigil::FindErrorCode(code)) {
      text += fmt::format(", {} {}", info->code, info->title);
    }
    if (!failure.reason.empty()) text += ": " + failure.reason;
  } else if (c.async_error() != HCCL_SUCCESS) {
    text = fmt::format("communicator [{}] rank [{}] has async error {}", c.identifier(), c.rank(),
                       vigil::api::ResultName(c.async_error()));
    // No failed op kept: name the heartbeat events of the last 300 s about its members.
    op.comm = c.info();
    op.enqueue_time = vigil::WallClock::now();
  } else {
    return text;
  }
  const std::vector<std::string> uids = MemberUids(c);
  for (const vigil::dfx::HbEvent& e : vigil::dfx::ClusterExceptionEvents(op)) {
    text += fmt::format("\ncrimer {} status [{}], informer {}\n{}", RankOf(uids, e.crimer),
                        vigil::dfx::HbStatusName(e.status), RankOf(uids, e.informer),
                        vigil::dfx::FormatClusterExceptionLine(e));
  }
  return text;
}

}  // namespace

HcclResult VigilCommGetLastErrorMessage(HcclComm comm, char* buf, size_t len) {
  constexpr const char* kApi = "VigilCommGetLastErrorMessage";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (buf == nullptr || len == 0) return ArgError(kApi, HCCL_E_PTR, "ptr [buf] is nullptr or len is 0");
  const std::string text = LastErrorText(comm, *c);
  const size_t n = std::min(text.size(), len - 1);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  return HCCL_SUCCESS;
}
