// Communicator calls of hccl/hccl.h: root info, init (root info, rank table, all devices),
// queries, async error, destroy. Argument checks only; the work is in comm/ and bootstrap/.
#include <cstring>
#include <thread>
#include <vector>

#include "api/hccl_api_util.h"
#include "api/hccl_comm_state.h"
#include "api/hccl_config.h"
#include "api/hccl_init.h"
#include "bootstrap/root_info.h"
#include "common/env_config.h"
#include "dfx/cluster_monitor.h"
#include "dfx/entry_log.h"
#include "dfx/flight_recorder.h"
#include "log/plog.h"
#include "runtime/device.h"

using vigil::api::ArgError;
using vigil::api::EnsureProcessReady;
using vigil::api::InitWithRoot;
using vigil::api::LookupComm;

namespace {

// Reports why Communicator::Create failed with the matching error code.
void ReportInitFailure(const vigil::comm::InitFailure& failure, const vigil::comm::CommOptions& o,
                       HcclResult rc) {
  using Kind = vigil::comm::InitFailure::Kind;
  switch (failure.kind) {
    case Kind::kBufferOom:
      vigil::log::ScreenError("EI9001", {std::to_string(2ull * o.buffsize_mb) + "MB",
                                         std::to_string(o.buffsize_mb), failure.detail});
      HCCL_ERROR("[InitGroupStage][Resource]CCL buffer allocation failed: {}. Each communicator "
                 "takes 2 x HCCL_BUFFSIZE ({}M); lower HCCL_BUFFSIZE or "
                 "HcclCommConfig.hcclBufferSize, return {}",
                 failure.detail, o.buffsize_mb, vigil::api::ResultName(rc));
      break;
    case Kind::kRendezvous:
    case Kind::kTransport:
      HCCL_ERROR("[InitGroupStage][{}]communicator init failed: rank[{}] of ranks[{}], "
                 "identifier[{}]: {}, return {}",
                 failure.kind == Kind::kRendezvous ? "RanktableDetect" : "Resource", o.rank,
                 o.nranks, o.root.identifier, failure.detail, vigil::api::ResultName(rc));
      break;
    case Kind::kNone:
      break;
  }
}

}  // namespace

namespace vigil::api {

HcclResult InitWithRoot(const char* api, uint32_t nRanks, const bootstrap::RootInfo& root,
                        uint32_t rank, const HcclCommConfig* config, HcclComm* comm,
                        const std::string& host_ip, const std::string& default_name,
                        const comm::CommOptions* inherit) {
  const vigil::EnvConfig& env = vigil::Env();
  vigil::comm::CommOptions options;
  options.nranks = nRanks;
  options.rank = rank;
  options.root = root;
  options.buffsize_mb = env.buffsize_mb;
  options.exec_timeout_s = env.exec_timeout_s;
  if (inherit != nullptr) {
    options.buffsize_mb = inherit->buffsize_mb;
    options.exec_timeout_s = inherit->exec_timeout_s;
    options.algo = inherit->algo;
    options.udi = inherit->udi;
    options.op_expansion_mode = inherit->op_expansion_mode;
    options.sym_win_max_gb = inherit->sym_win_max_gb;
  }
  options.host_ip = host_ip;
  options.user_name = default_name;
  if (HcclResult rc = ApplyCommConfig(api, config, &options); rc != HCCL_SUCCESS) return rc;
  if (inherit != nullptr && config == nullptr) options.deterministic = inherit->deterministic;
  if (options.user_name.empty()) options.user_name = default_name;
  int32_t device = vigil::rt::CurrentDevice();
  options.device = device < 0 ? 0 : device;

  vigil::dfx::LogCommInitEntry(nRanks, rank, root.host_ip, root.port, root.identifier,
                               options.device);
  std::shared_ptr<vigil::comm::Communicator> created;
  vigil::comm::InitFailure failure;
  HcclResult rc = vigil::comm::Communicator::Create(options, &created, &failure);
  if (rc != HCCL_SUCCESS) {
    ReportInitFailure(failure, options, rc);
    return rc;
  }
  HCCL_RUN_INFO("Communicator Key Info: identifier[{}], rankSize[{}], serverNum[{}], "
                "buffSize[{}]M, execTimeOut[{}]s",
                root.identifier, nRanks, created->host_count(), options.buffsize_mb,
                options.exec_timeout_s);
  const auto& me = created->ranks()[rank];
  HCCL_RUN_INFO("LocalRank Key Info: userRank[{}], hostIp[{}], devicePhyId[{}], pid[{}]", rank,
                me.host_ip, me.device, me.pid);
  vigil::dfx::AttachHeartbeat(created);
  vigil::dfx::AttachFlightRecorder(created->info());
  *comm = vigil::api::RegisterComm(std::move(created));
  return HCCL_SUCCESS;
}

}  // namespace vigil::api

extern "C" {

HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo) {
  if (HcclResult rc = EnsureProcessReady("HcclGetRootInfo"); rc != HCCL_SUCCESS) return rc;
  if (rootInfo == nullptr) return ArgError("HcclGetRootInfo", HCCL_E_PTR, "ptr [rootInfo] is nullptr");
  vigil::bootstrap::RootInfo info;
  HcclResult rc = vigil::bootstrap::CreateRootInfo(rootInfo, &info);
  if (rc != HCCL_SUCCESS) {
    HCCL_ERROR("[InitGroupStage][HcclGetRootInfo]root info creation failed, return {}",
               vigil::api::ResultName(rc));
    return rc;
  }
  HCCL_RUN_INFO("HcclGetRootInfo success: host ip[{}] port[{}] identifier[{}]", info.host_ip,
                info.port, info.identifier);
  return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfoConfig(uint32_t nRanks, const HcclRootInfo* rootInfo,
                                      uint32_t rank, const HcclCommConfig* config,
                                      HcclComm* comm) {
  const char* api = config ? "HcclCommInitRootInfoConfig" : "HcclCommInitRootInfo";
  if (HcclResult rc = EnsureProcessReady(api); rc != HCCL_SUCCESS) return rc;
  if (rootInfo == nullptr) return ArgError(api, HCCL_E_PTR, "ptr [rootInfo] is nullptr");
  if (comm == nullptr) return ArgError(api, HCCL_E_PTR, "ptr [comm] is nullptr");
  if (nRanks == 0) return ArgError(api, HCCL_E_PARA, "nRanks[0] is invalid: expected >= 1");
  if (rank >= nRanks) {
    return ArgError(api, HCCL_E_PARA,
                    fmt::format("rank[{}] is invalid: expected < nRanks[{}]", rank, nRanks));
  }
  vigil::bootstrap::RootInfo root;
  std::string error;
  if (vigil::bootstrap::DecodeRootInfo(*rootInfo, &root, &error) != HCCL_SUCCESS) {
    return ArgError(api, HCCL_E_PARA, "rootInfo is invalid: " + error);
  }
  return InitWithRoot(api, nRanks, root, rank, config, comm);
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank,
                                HcclComm* comm) {
  return HcclCommInitRootInfoConfig(nRanks, rootInfo, rank, nullptr, comm);
}

HcclResult HcclCommInitClusterInfoConfig(const char* clusterInfo, uint32_t rank,
                                         HcclCommConfig* config, HcclComm* comm) {
  const char* api = config ? "HcclCommInitClusterInfoConfig" : "HcclCommInitClusterInfo";
  if (HcclResult rc = EnsureProcessReady(api); rc != HCCL_SUCCESS) return rc;
  if (clusterInfo == nullptr) return ArgError(api, HCCL_E_PTR, "ptr [clusterInfo] is nullptr");
  if (comm == nullptr) return ArgError(api, HCCL_E_PTR, "ptr [comm] is nullptr");
  vigil::bootstrap::RankTable table;
  std::string error;
  if (vigil::bootstrap::LoadRankTable(clusterInfo, &table, &error) != HCCL_SUCCESS) {
    vigil::log::ScreenError("EI0004", {clusterInfo, error});
    return ArgError(api, HCCL_E_PARA, fmt::format("rank table [{}] is invalid: {}", clusterInfo, error));
  }
  const uint32_t nranks = static_cast<uint32_t>(table.ranks.size());
  if (rank >= nranks) {
    return ArgError(api, HCCL_E_PARA,
                    fmt::format("rank[{}] is invalid: rank table [{}] holds {} ranks", rank,
                                clusterInfo, nranks));
  }
  vigil::bootstrap::RootInfo root;
  if (vigil::bootstrap::RootInfoFromRankTable(table, rank, &root, &error) != HCCL_SUCCESS) {
    return ArgError(api, HCCL_E_PARA, fmt::format("rank table [{}]: {}", clusterInfo, error));
  }
  // The rank table names each rank's host: its links listen there (HCCL_IF_IP still wins).
  const std::string self_ip =
      vigil::Env().if_ip.empty() ? vigil::bootstrap::RankTableSelfIp(table, rank) : "";
  return InitWithRoot(api, nranks, root, rank, config, comm, self_ip);
}

HcclResult HcclCommInitClusterInfo(const char* clusterInfo, uint32_t rank, HcclComm* comm) {
  return HcclCommInitClusterInfoConfig(clusterInfo, rank, nullptr, comm);
}

HcclResult HcclCommInitAll(uint32_t ndev, int32_t* devices, HcclComm* comms) {
  const char* api = "HcclCommInitAll";
  if (HcclResult rc = EnsureProcessReady(api); rc != HCCL_SUCCESS) return rc;
  if (devices == nullptr) return ArgError(api, HCCL_E_PTR, "ptr [devices] is nullptr");
  if (comms == nullptr) return ArgError(api, HCCL_E_PTR, "ptr [comms] is nullptr");
  if (ndev == 0) return ArgError(api, HCCL_E_PARA, "ndev[0] is invalid: expected >= 1");
  for (uint32_t i = 0; i < ndev; ++i) {
    if (!vigil::rt::IsValidDevice(devices[i])) {
      return ArgError(api, HCCL_E_PARA,
                      fmt::format("devices[{}]={} is invalid: expected [0, {})", i, devices[i],
                                  vigil::rt::DeviceCount()));
    }
    for (uint32_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        return ArgError(api, HCCL_E_PARA,
                        fmt::format("devices[{}] and devices[{}] are both device {}", j, i,
                                    devices[i]));
      }
    }
  }
  HcclRootInfo root_info;
  if (HcclResult rc = HcclGetRootInfo(&root_info); rc != HCCL_SUCCESS) return rc;
  std::vector<HcclResult> results(ndev, HCCL_SUCCESS);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      vigil::rt::SetCurrentDevice(devices[i]);
      results[i] = HcclCommInitRootInfo(ndev, &root_info, i, &comms[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (uint32_t i = 0; i < ndev; ++i) {
    if (results[i] != HCCL_SUCCESS) {
      for (uint32_t j = 0; j < ndev; ++j) {
        if (results[j] == HCCL_SUCCESS) HcclCommDestroy(comms[j]);
        comms[j] = nullptr;
      }
      return results[i];
    }
  }
  return HCCL_SUCCESS;
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize) {
  auto c = LookupComm(comm);
  if (!c) return ArgError("HcclGetRankSize", HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (rankSize == nullptr) return ArgError("HcclGetRankSize", HCCL_E_PTR, "ptr [rankSize] is nullptr");
  *rankSize = c->size();
  return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank) {
  auto c = LookupComm(comm);
  if (!c) return ArgError("HcclGetRankId", HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (rank == nullptr) return ArgError("HcclGetRankId", HCCL_E_PTR, "ptr [rank] is nullptr");
  *rank = c->rank();
  return HCCL_SUCCESS;
}

HcclResult HcclGetCommName(HcclComm comm, char* commName) {
  auto c = LookupComm(comm);
  if (!c) return ArgError("HcclGetCommName", HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (commName == nullptr) return ArgError("HcclGetCommName", HCCL_E_PTR, "ptr [commName] is nullptr");
  const std::string& name = c->user_name().empty() ? c->identifier() : c->user_name();
  const size_t n = std::min<size_t>(name.size(), COMM_NAME_MAX_LENGTH - 1);
  memcpy(commName, name.data(), n);
  commName[n] = '\0';
  return HCCL_SUCCESS;
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult* asyncError) {
  auto c = LookupComm(comm);
  if (!c) return ArgError("HcclGetCommAsyncError", HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (asyncError == nullptr) {
    return ArgError("HcclGetCommAsyncError", HCCL_E_PTR, "ptr [asyncError] is nullptr");
  }
  *asyncError = c->async_error();
  return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) {
  if (!LookupComm(comm)) {
    return ArgError("HcclCommDestroy", HCCL_E_PARA, "comm is null, destroyed or unknown");
  }
  if (HcclResult rc = vigil::api::NotifyCommState(comm, HCCL_COMM_STATE_PHASE_DESTROY_PRE);
      rc != HCCL_SUCCESS) {
    return rc;
  }
  auto c = vigil::api::UnregisterComm(comm);
  if (!c) return ArgError("HcclCommDestroy", HCCL_E_PARA, "comm is null, destroyed or unknown");
  vigil::dfx::LogCommDestroyEntry(comm, c->identifier(), c->rank());
  vigil::dfx::DetachHeartbeat(c.get());
  c->Destroy();
  return vigil::api::NotifyCommState(comm, HCCL_COMM_STATE_PHASE_DESTROY_POST);
}

const char* HcclGetErrorString(HcclResult code) {
  switch (code) {
    case HCCL_SUCCESS: return "no error";
    case HCCL_E_PARA: return "parameter error";
    case HCCL_E_PTR: return "empty pointer";
    case HCCL_E_MEMORY: return "memory error";
    case HCCL_E_INTERNAL: return "internal error";
    case HCCL_E_NOT_SUPPORT: return "not support feature";
    case HCCL_E_NOT_FOUND: return "not found specific resource";
    case HCCL_E_UNAVAIL: return "resource unavailable";
    case HCCL_E_SYSCALL: return "call system interface error";
    case HCCL_E_TIMEOUT: return "timeout";
    case HCCL_E_OPEN_FILE_FAILURE: return "open file fail";
    case HCCL_E_TCP_CONNECT: return "tcp connect fail";
    case HCCL_E_ROCE_CONNECT: return "roce connect fail";
    case HCCL_E_TCP_TRANSFER: return "tcp transfer fail";
    case HCCL_E_ROCE_TRANSFER: return "roce transfer fail";
    case HCCL_E_RUNTIME: return "call runtime api fail";
    case HCCL_E_DRV: return "call driver api fail";
    case HCCL_E_PROFILING: return "call profiling api fail";
    case HCCL_E_CCE: return "call cce api fail";
    case HCCL_E_NETWORK: return "call network api fail";
    case HCCL_E_AGAIN: return "try again";
    case HCCL_E_REMOTE: return "error cqe";
    case HCCL_E_SUSPENDING: return "error communicator suspending";
    case HCCL_E_OPRETRY_FAIL: return "retry constraint";
    case HCCL_E_OOM: return "out of memory";
    case HCCL_E_IN_STATUS: return "the error information is in the status";
    default: return "unknown error";
  }
}

}  // extern "C"
