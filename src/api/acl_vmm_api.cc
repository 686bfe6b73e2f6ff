// The virtual memory calls of acl/acl_rt.h: argument checks as CANN's acl layer makes them
// (ACL_ERROR_INVALID_PARAM and one ERROR line), then runtime/virtual_memory.h.
#include "acl/acl.h"
#include "api/acl_api_util.h"
#include "runtime/virtual_memory.h"

namespace {

using vigil::api::Guard;
using vigil::api::RawEnum;

#define CHECK_ZERO(api, arg)                                                                      \
  do {                                                                                            \
    if ((arg) != 0) {                                                                             \
      VIGIL_RT_FAIL("{} failed: param {}[{}] must be 0.", api, #arg, static_cast<uint64_t>(arg)); \
      return ACL_ERROR_INVALID_PARAM;                                                             \
    }                                                                                             \
  } while (0)

// The properties of a physical allocation Vigil can make: pinned device memory of a valid
// device, with an HBM or device-chosen attribute (the DDR ones name host-side memory).
aclError CheckProp(const char* api, const aclrtPhysicalMemProp* prop) {
  const int handle_type = RawEnum(prop->handleType);
  const int allocation_type = RawEnum(prop->allocationType);
  const int attr = RawEnum(prop->memAttr);
  const int location = RawEnum(prop->location.type);
  if (handle_type != ACL_MEM_HANDLE_TYPE_NONE) {
    VIGIL_RT_FAIL("{} failed: param prop->handleType[{}] must be ACL_MEM_HANDLE_TYPE_NONE.", api,
                  handle_type);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (allocation_type != ACL_MEM_ALLOCATION_TYPE_PINNED) {
    VIGIL_RT_FAIL(
        "{} failed: param prop->allocationType[{}] must be "
        "ACL_MEM_ALLOCATION_TYPE_PINNED.",
        api, allocation_type);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (location != ACL_MEM_LOCATION_TYPE_DEVICE) {
    VIGIL_RT_FAIL(
        "{} failed: param prop->location.type[{}] must be ACL_MEM_LOCATION_TYPE_DEVICE "
        "(host physical memory is not supported).",
        api, location);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (!vigil::rt::IsValidDevice(static_cast<int32_t>(prop->location.id))) {
    VIGIL_RT_FAIL("{} failed: param prop->location.id[{}] is not a valid device (count {}).", api,
                  prop->location.id, vigil::rt::DeviceCount());
    return ACL_ERROR_INVALID_PARAM;
  }
  const bool ddr = attr == ACL_DDR_MEM || attr == ACL_DDR_MEM_HUGE || attr == ACL_DDR_MEM_NORMAL ||
                   attr == ACL_DDR_MEM_P2P_HUGE || attr == ACL_DDR_MEM_P2P_NORMAL;
  if (ddr || attr < ACL_DDR_MEM || attr > ACL_MEM_P2P_HUGE1G) {
    VIGIL_RT_FAIL("{} failed: param prop->memAttr[{}] is not supported for device memory{}.", api,
                  attr, ddr ? " (DDR attributes name host memory)" : "");
    return ACL_ERROR_INVALID_PARAM;
  }
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtReserveMemAddress(void** virPtr, size_t size, size_t alignment,
                                                    void* expectPtr, uint64_t flags) {
  constexpr const char* kApi = "aclrtReserveMemAddress";
  CHECK_NOT_NULL(kApi, virPtr);
  if (size == 0) {
    VIGIL_RT_FAIL("{} failed: param size must be greater than 0.", kApi);
    return ACL_ERROR_INVALID_PARAM;
  }
  CHECK_ZERO(kApi, alignment);
  if (expectPtr != nullptr) {
    VIGIL_RT_FAIL("{} failed: param expectPtr[{}] must be null.", kApi, expectPtr);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (flags > 1) {
    VIGIL_RT_FAIL("{} failed: param flags[{}] must be 0 (normal pages) or 1 (huge pages).", kApi,
                  flags);
    return ACL_ERROR_INVALID_PARAM;
  }
  REQUIRE_CURRENT_DEVICE(kApi, dev);
  return Guard(kApi, [&] { return vigil::rt::vmm::Reserve(dev, size, virPtr); });
}

ACL_FUNC_VISIBILITY aclError aclrtReleaseMemAddress(void* virPtr) {
  CHECK_NOT_NULL("aclrtReleaseMemAddress", virPtr);
  return Guard("aclrtReleaseMemAddress", [&] { return vigil::rt::vmm::Release(virPtr); });
}

ACL_FUNC_VISIBILITY aclError aclrtMallocPhysical(aclrtDrvMemHandle* handle, size_t size,
                                                 const aclrtPhysicalMemProp* prop, uint64_t flags) {
  constexpr const char* kApi = "aclrtMallocPhysical";
  CHECK_NOT_NULL(kApi, handle);
  CHECK_NOT_NULL(kApi, prop);
  if (size == 0) {
    VIGIL_RT_FAIL("{} failed: param size must be greater than 0.", kApi);
    return ACL_ERROR_INVALID_PARAM;
  }
  CHECK_ZERO(kApi, flags);
  if (aclError rc = CheckProp(kApi, prop); rc != ACL_SUCCESS) return rc;
  return Guard(kApi, [&] {
    return vigil::rt::vmm::MallocPhysical(static_cast<int32_t>(prop->location.id), size, handle);
  });
}

ACL_FUNC_VISIBILITY aclError aclrtFreePhysical(aclrtDrvMemHandle handle) {
  CHECK_NOT_NULL("aclrtFreePhysical", handle);
  return Guard("aclrtFreePhysical", [&] { return vigil::rt::vmm::FreePhysical(handle); });
}

ACL_FUNC_VISIBILITY aclError aclrtMapMem(void* virPtr, size_t size, size_t offset,
                                         aclrtDrvMemHandle handle, uint64_t flags) {
  constexpr const char* kApi = "aclrtMapMem";
  CHECK_NOT_NULL(kApi, virPtr);
  CHECK_NOT_NULL(kApi, handle);
  if (size == 0) {
    VIGIL_RT_FAIL("{} failed: param size must be greater than 0.", kApi);
    return ACL_ERROR_INVALID_PARAM;
  }
  CHECK_ZERO(kApi, offset);
  CHECK_ZERO(kApi, flags);
  return Guard(kApi, [&] { return vigil::rt::vmm::Map(virPtr, size, handle); });
}

ACL_FUNC_VISIBILITY aclError aclrtUnmapMem(void* virPtr) {
  CHECK_NOT_NULL("aclrtUnmapMem", virPtr);
  return Guard("aclrtUnmapMem", [&] { return vigil::rt::vmm::Unmap(virPtr); });
}

ACL_FUNC_VISIBILITY aclError aclrtMemGetAllocationGranularity(aclrtPhysicalMemProp* prop,
                                                              aclrtMemGranularityOptions option,
                                                              size_t* granularity) {
  constexpr const char* kApi = "aclrtMemGetAllocationGranularity";
  CHECK_NOT_NULL(kApi, prop);
  CHECK_NOT_NULL(kApi, granularity);
  if (aclError rc = CheckProp(kApi, prop); rc != ACL_SUCCESS) return rc;
  switch (RawEnum(option)) {
    case ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM:
      *granularity = vigil::rt::vmm::MinimumGranularity();
      return ACL_SUCCESS;
    case ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED:
      *granularity = vigil::rt::vmm::kRecommendedGranularity;
      return ACL_SUCCESS;
    default:
      VIGIL_RT_FAIL("{} failed: param option[{}] is not a valid aclrtMemGranularityOptions.", kApi,
                    RawEnum(option));
      return ACL_ERROR_INVALID_PARAM;
  }
}

}  // extern "C"
