// HcclCommWorkingDevNicSet (hccl/hccl_comm.h): which NIC of a device a rank's links use.
#include "api/hccl_api_util.h"
#include "log/plog.h"

using vigil::api::ArgError;

extern "C" {

HcclResult HcclCommWorkingDevNicSet(HcclComm comm, uint32_t* ranks, bool* useBackup,
                                    uint32_t nRanks) {
  constexpr const char* kApi = "HcclCommWorkingDevNicSet";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (ranks == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [ranks] is nullptr");
  if (useBackup == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [useBackup] is nullptr");
  if (nRanks == 0 || nRanks > c->size()) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("nRanks[{}] is invalid: expected 1 to rankSize[{}]", nRanks,
                                c->size()));
  }
  bool backup = false;
  for (uint32_t i = 0; i < nRanks; ++i) {
    if (ranks[i] >= c->size()) {
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("ranks[{}]={} is invalid: expected < rankSize[{}]", i, ranks[i],
                                  c->size()));
    }
    backup = backup || useBackup[i];
  }
  if (backup) {
    HCCL_ERROR("[{}]a backup NIC was asked for, but ranks here talk over the host's own network "
               "interfaces and have no backup device NIC to switch to, return HCCL_E_NOT_SUPPORT",
               kApi);
    return HCCL_E_NOT_SUPPORT;
  }
  // Every rank already works on its main NIC.
  return HCCL_SUCCESS;
}

}  // extern "C"
