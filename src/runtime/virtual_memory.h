// Virtual memory over host memory (aclrtReserveMemAddress, aclrtMallocPhysical, aclrtMapMem):
// a reservation is a PROT_NONE range of address space, a physical allocation a memfd charged
// to the device budget, and a mapping that memfd mapped MAP_FIXED|MAP_SHARED into a
// reservation, where the device memory map (device_memory.h) sees it as device memory. Errors
// are logged here, one RUNTIME ERROR line each, with CANN's codes: ACL_ERROR_RT_PARAM_INVALID
// for a misuse (mapping over a mapping, unmapping what is not mapped, releasing a reservation
// or freeing a handle still mapped), ACL_ERROR_RT_INVALID_HANDLE for an unknown handle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "acl/acl_base.h"

namespace vigil::rt::vmm {

// The host page size: what mmap can map at.
size_t MinimumGranularity();
constexpr size_t kRecommendedGranularity = size_t{2} << 20;  // a transparent huge page

// size is rounded up to the minimum granularity.
aclError Reserve(int32_t device, size_t size, void** out);
aclError Release(void* base);
aclError MallocPhysical(int32_t device, size_t size, void** handle);
aclError FreePhysical(void* handle);
// The whole of `handle` (size must be its size) at addr, page-aligned inside a reservation.
aclError Map(void* addr, size_t size, void* handle);
aclError Unmap(void* addr);

// Whether `handle` is a live physical allocation mapped at exactly addr (and, size != 0,
// with that size); else false and *why says what is wrong. Logs nothing.
bool IsMappedAt(void* handle, const void* addr, size_t size, std::string* why);

}  // namespace vigil::rt::vmm
