// HcclCreateSubCommConfig (hccl/hccl_comm.h): a communicator over some ranks of a parent.
// Sub-rank 0 makes the sub-communicator's root info and sends it to the other members over the
// parent's links; then every member joins it as HcclCommInitRootInfoConfig would.
#include <set>

#include "api/hccl_api_util.h"
#include "api/hccl_group.h"
#include "api/hccl_init.h"
#include "bootstrap/root_info.h"
#include "log/plog.h"

using vigil::api::ArgError;

namespace {

constexpr const char* kApi = "HcclCreateSubCommConfig";

// Sub-rank 0's root info reaches every member: sends from rankIds[0], a receive elsewhere.
HcclResult ShareRootInfo(HcclComm parent, const uint32_t* rank_ids, uint32_t rank_num,
                         uint32_t sub_rank, HcclRootInfo* root_info) {
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) {
    return ArgError(kApi, HCCL_E_RUNTIME,
                    "no stream could be made to share the root info: call aclrtSetDevice first");
  }
  HcclResult rc = HCCL_SUCCESS;
  if (sub_rank == 0) {
    std::vector<HcclSendRecvItem> items;
    for (uint32_t i = 1; i < rank_num; ++i) {
      items.push_back(HcclSendRecvItem{HCCL_SEND, root_info, HCCL_ROOT_INFO_BYTES,
                                       HCCL_DATA_TYPE_INT8, rank_ids[i]});
    }
    rc = HcclBatchSendRecv(items.data(), static_cast<uint32_t>(items.size()), parent, stream);
  } else {
    rc = HcclRecv(root_info, HCCL_ROOT_INFO_BYTES, HCCL_DATA_TYPE_INT8, rank_ids[0], parent,
                  stream);
  }
  const aclError sync = aclrtSynchronizeStream(stream);
  aclrtDestroyStream(stream);
  if (rc == HCCL_SUCCESS && sync != ACL_SUCCESS) {
    rc = ArgError(kApi, HCCL_E_RUNTIME,
                  fmt::format("sharing the root info over the parent communicator failed "
                              "(aclError {}); see the task exception lines above",
                              sync));
  }
  return rc;
}

}  // namespace

extern "C" {

HcclResult HcclCreateSubCommConfig(HcclComm* comm, uint32_t rankNum, uint32_t* rankIds,
                                   uint64_t subCommId, uint32_t subCommRankId,
                                   HcclCommConfig* config, HcclComm* subComm) {
  if (HcclResult rc = vigil::api::EnsureProcessReady(kApi); rc != HCCL_SUCCESS) return rc;
  if (comm == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [comm] is nullptr");
  if (rankIds == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [rankIds] is nullptr");
  if (subComm == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [subComm] is nullptr");
  auto parent = vigil::api::LookupComm(*comm);
  if (!parent) return ArgError(kApi, HCCL_E_PARA, "*comm is null, destroyed or unknown");
  if (rankNum == 0 || rankNum > parent->size()) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("rankNum[{}] is invalid: expected 1 to the parent's rankSize[{}]",
                                rankNum, parent->size()));
  }
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < rankNum; ++i) {
    if (rankIds[i] >= parent->size()) {
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("rankIds[{}]={} is invalid: expected < the parent's "
                                  "rankSize[{}]",
                                  i, rankIds[i], parent->size()));
    }
    if (!seen.insert(rankIds[i]).second) {
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("rankIds[{}]={} is listed twice", i, rankIds[i]));
    }
  }
  if (subCommRankId >= rankNum) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("subCommRankId[{}] is invalid: expected < rankNum[{}]",
                                subCommRankId, rankNum));
  }
  if (rankIds[subCommRankId] != parent->rank()) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("rankIds[subCommRankId {}]={} is not this rank: the caller is "
                                "rank[{}] of the parent",
                                subCommRankId, rankIds[subCommRankId], parent->rank()));
  }
  if (vigil::api::InGroup()) {
    return ArgError(kApi, HCCL_E_PARA, "called between HcclGroupStart and HcclGroupEnd");
  }

  HcclRootInfo root_info{};
  if (subCommRankId == 0) {
    vigil::bootstrap::RootInfo created;
    if (HcclResult rc = vigil::bootstrap::CreateRootInfo(&root_info, &created);
        rc != HCCL_SUCCESS) {
      return ArgError(kApi, rc, "the sub-communicator's root info could not be made");
    }
  }
  if (rankNum > 1) {
    if (HcclResult rc = ShareRootInfo(*comm, rankIds, rankNum, subCommRankId, &root_info);
        rc != HCCL_SUCCESS) {
      return rc;
    }
  }
  vigil::bootstrap::RootInfo root;
  std::string error;
  if (vigil::bootstrap::DecodeRootInfo(root_info, &root, &error) != HCCL_SUCCESS) {
    return ArgError(kApi, HCCL_E_INTERNAL, "the root info from sub-rank 0 is invalid: " + error);
  }
  const std::string& parent_name =
      parent->user_name().empty() ? parent->identifier() : parent->user_name();
  HCCL_RUN_INFO("{}: rank[{}] of [{}] joins sub-communicator subCommId[{}] as sub-rank[{}] of "
                "[{}]",
                kApi, parent->rank(), parent_name, subCommId, subCommRankId, rankNum);
  return vigil::api::InitWithRoot(kApi, rankNum, root, subCommRankId, config, subComm,
                                  parent->ranks()[parent->rank()].host_ip,
                                  fmt::format("{}_sub_{}", parent_name, subCommId)
                                      .substr(0, COMM_NAME_MAX_LENGTH - 1));
}

}  // extern "C"
