// Communicator state (hccl/hccl_comm.h): HcclCommSuspend, HcclCommResume, HcclCommGetStatus,
// HcclCommRegCommStateCallback, and HcclCommGetHandleWithName.
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/hccl_api_util.h"
#include "api/hccl_comm_state.h"
#include "log/plog.h"

using vigil::api::ArgError;

namespace vigil::api {

namespace {

struct Registered {
  HcclCommStateCallback cb;
  void* args;
};

std::mutex g_callbacks_mu;
std::map<std::string, Registered>& Callbacks() {
  static auto* callbacks = new std::map<std::string, Registered>();
  return *callbacks;
}

const char* PhaseName(HcclCommStatePhase phase) {
  switch (phase) {
    case HCCL_COMM_STATE_PHASE_DESTROY_PRE: return "DESTROY_PRE";
    case HCCL_COMM_STATE_PHASE_DESTROY_POST: return "DESTROY_POST";
    case HCCL_COMM_STATE_PHASE_RESUME_PRE: return "RESUME_PRE";
    case HCCL_COMM_STATE_PHASE_RESUME_POST: return "RESUME_POST";
    default: return "INVALID";
  }
}

// Names longer than this are refused (as HCCL does).
constexpr size_t kMaxRegNameLength = 160;

}  // namespace

HcclResult NotifyCommState(HcclComm comm, HcclCommStatePhase phase) {
  std::vector<std::pair<std::string, Registered>> callbacks;
  {
    // Called without the lock: a callback may call HCCL (even register another one).
    std::lock_guard<std::mutex> lock(g_callbacks_mu);
    callbacks.assign(Callbacks().begin(), Callbacks().end());
  }
  for (const auto& [name, reg] : callbacks) {
    const HcclResult rc = reg.cb(comm, phase, reg.args);
    if (rc != HCCL_SUCCESS) {
      HCCL_ERROR("[CommState]callback regName[{}] failed at phase[{}] of comm[{}]: {}", name,
                 PhaseName(phase), fmt::ptr(comm), ResultName(rc));
      return rc;
    }
    HCCL_RUN_INFO("[CommState]callback regName[{}] done at phase[{}] of comm[{}]", name,
                  PhaseName(phase), fmt::ptr(comm));
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::api

extern "C" {

HcclResult HcclCommSuspend(HcclComm comm) {
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError("HcclCommSuspend", HCCL_E_PARA, "comm is null, destroyed or unknown");
  c->set_suspended(true);
  HCCL_RUN_INFO("HcclCommSuspend: communicator[{}] rank[{}] takes no new op until "
                "HcclCommResume; ops queued before run to their end",
                c->identifier(), c->rank());
  return HCCL_SUCCESS;
}

HcclResult HcclCommResume(HcclComm comm) {
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError("HcclCommResume", HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (HcclResult rc = vigil::api::NotifyCommState(comm, HCCL_COMM_STATE_PHASE_RESUME_PRE);
      rc != HCCL_SUCCESS) {
    return rc;
  }
  c->set_suspended(false);
  HCCL_RUN_INFO("HcclCommResume: communicator[{}] rank[{}] takes ops again", c->identifier(),
                c->rank());
  return vigil::api::NotifyCommState(comm, HCCL_COMM_STATE_PHASE_RESUME_POST);
}

HcclResult HcclCommGetStatus(const char* commId, HcclCommStatus* status) {
  constexpr const char* kApi = "HcclCommGetStatus";
  if (commId == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [commId] is nullptr");
  if (status == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [status] is nullptr");
  auto c = vigil::api::LookupComm(vigil::api::FindCommByName(commId));
  if (!c) {
    return ArgError(kApi, HCCL_E_NOT_FOUND,
                    fmt::format("no live communicator of this process is named [{}]",
                                std::string(commId, strnlen(commId, COMM_NAME_MAX_LENGTH))));
  }
  *status = c->suspended() ? HCCL_COMM_STATUS_SUSPENDING : HCCL_COMM_STATUS_READY;
  return HCCL_SUCCESS;
}

HcclResult HcclCommRegCommStateCallback(const char* regName, HcclCommStateCallback cb,
                                        void* args) {
  constexpr const char* kApi = "HcclCommRegCommStateCallback";
  if (regName == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [regName] is nullptr");
  if (cb == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [cb] is nullptr");
  const size_t len = strnlen(regName, vigil::api::kMaxRegNameLength);
  if (len == 0 || len >= vigil::api::kMaxRegNameLength) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("regName length is invalid: expected 1 to {} characters",
                                vigil::api::kMaxRegNameLength - 1));
  }
  {
    std::lock_guard<std::mutex> lock(vigil::api::g_callbacks_mu);
    vigil::api::Callbacks()[regName] = vigil::api::Registered{cb, args};
  }
  HCCL_RUN_INFO("HcclCommRegCommStateCallback: regName[{}] registered, args[{}]", regName,
                fmt::ptr(args));
  return HCCL_SUCCESS;
}

HcclResult HcclCommGetHandleWithName(const char* commName, HcclComm* comm) {
  constexpr const char* kApi = "HcclCommGetHandleWithName";
  if (commName == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [commName] is nullptr");
  if (comm == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [comm] is nullptr");
  HcclComm found = vigil::api::FindCommByName(commName);
  if (found == nullptr) {
    return ArgError(kApi, HCCL_E_NOT_FOUND,
                    fmt::format("no live communicator of this process is named [{}]",
                                std::string(commName, strnlen(commName, COMM_NAME_MAX_LENGTH))));
  }
  *comm = found;
  return HCCL_SUCCESS;
}

}  // extern "C"
