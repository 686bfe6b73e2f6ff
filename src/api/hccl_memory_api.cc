// The memory a communicator may use (hccl/hccl_comm.h): HcclCommSetMemoryRange,
// HcclCommUnsetMemoryRange, HcclCommActivateCommMemory, HcclCommDeactivateCommMemory. The
// bookkeeping is comm/memory_ranges.h; ops on activated memory need nothing more here, since
// every host address the acl runtime mapped is usable by the transports. A piece activated
// must be a physical allocation (aclrtMallocPhysical) mapped (aclrtMapMem) at exactly that
// address with exactly that size: runtime/virtual_memory.h knows every one.
#include <cstdint>

#include "api/hccl_api_util.h"
#include "log/plog.h"
#include "runtime/virtual_memory.h"

using vigil::api::ArgError;

namespace {

HcclResult Done(const char* api, const std::string& error) {
  if (!error.empty()) return ArgError(api, HCCL_E_PARA, error);
  return HCCL_SUCCESS;
}

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

extern "C" {

HcclResult HcclCommSetMemoryRange(HcclComm comm, void* baseVirPtr, size_t size, size_t alignment,
                                  uint64_t flags) {
  constexpr const char* kApi = "HcclCommSetMemoryRange";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (baseVirPtr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [baseVirPtr] is nullptr");
  if (alignment != 0) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("alignment[{}] is invalid: only 0 is supported", alignment));
  }
  if (flags != 0) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("flags[{}] is invalid: only 0 is supported", flags));
  }
  HcclResult rc = Done(kApi, c->memory_ranges().Set(Addr(baseVirPtr), size));
  if (rc == HCCL_SUCCESS) {
    HCCL_RUN_INFO("{}: communicator[{}] range [{}, +{}) set", kApi, c->identifier(),
                  fmt::ptr(baseVirPtr), size);
  }
  return rc;
}

HcclResult HcclCommUnsetMemoryRange(HcclComm comm, void* baseVirPtr) {
  constexpr const char* kApi = "HcclCommUnsetMemoryRange";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (baseVirPtr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [baseVirPtr] is nullptr");
  return Done(kApi, c->memory_ranges().Unset(Addr(baseVirPtr)));
}

HcclResult HcclCommActivateCommMemory(HcclComm comm, void* virPtr, size_t size, size_t offset,
                                      aclrtDrvMemHandle handle, uint64_t flags) {
  constexpr const char* kApi = "HcclCommActivateCommMemory";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (virPtr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [virPtr] is nullptr");
  if (handle == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [handle] is nullptr");
  if (offset != 0) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("offset[{}] is invalid: only 0 is supported", offset));
  }
  if (flags != 0) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("flags[{}] is invalid: only 0 is supported", flags));
  }
  std::string why;
  if (!vigil::rt::vmm::IsMappedAt(handle, virPtr, size, &why)) {
    return ArgError(kApi, HCCL_E_PARA, fmt::format("virPtr[{}] size[{}]: {}", virPtr, size, why));
  }
  return Done(kApi, c->memory_ranges().Activate(Addr(virPtr), size, handle));
}

HcclResult HcclCommDeactivateCommMemory(HcclComm comm, void* virPtr) {
  constexpr const char* kApi = "HcclCommDeactivateCommMemory";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (virPtr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [virPtr] is nullptr");
  return Done(kApi, c->memory_ranges().Deactivate(Addr(virPtr)));
}

}  // extern "C"
