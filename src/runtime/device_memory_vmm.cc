// The device memory map's part of virtual memory: reservations, the mappings inside them, and
// the budget of physical allocations (runtime/virtual_memory.cc does the rest).
#include <sys/mman.h>

#include <mutex>
#include <shared_mutex>

#include "common/env_config.h"
#include "runtime/device_memory.h"
#include "runtime/device_memory_map.h"
#include "runtime/rt_log.h"

namespace vigil::rt {

aclError DeviceMemory::AddReservation(int32_t device, void* base, size_t size) {
  Impl& m = *impl();
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  std::unique_lock<std::shared_mutex> lock(m.mu);
  // A fresh mmap: nothing live can be there; a stale record of memory someone unmapped can.
  m.DropFreedOverlapping(b, EndOf(b, size));
  m.reserved[b] = Reservation{size, device};
  // A range a thread remembered as host memory may lie here now.
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  return ACL_SUCCESS;
}

aclError DeviceMemory::RemoveReservation(void* base) {
  Impl& m = *impl();
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  std::unique_lock<std::shared_mutex> lock(m.mu);
  auto it = m.reserved.find(b);
  if (it == m.reserved.end()) {
    lock.unlock();
    VIGIL_RT_FAIL(
        "Release virtual memory failed: virPtr[{}] is not the start of an address "
        "range reserved by aclrtReserveMemAddress (released already, or foreign).",
        base);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  const size_t size = it->second.size;
  size_t mappings = 0;
  uintptr_t first = 0;
  for (auto l = m.live.lower_bound(b); l != m.live.end() && l->first < EndOf(b, size); ++l) {
    if (l->second.reservation != b) continue;
    if (mappings++ == 0) first = l->first;
  }
  if (mappings != 0) {
    lock.unlock();
    VIGIL_RT_FAIL(
        "Release virtual memory failed: virPtr[{}] size {} still has {} mapping(s), "
        "the first at {:#x}: unmap them (aclrtUnmapMem) before releasing.",
        base, size, mappings, first);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  m.BeginWrite();
  const int32_t device = it->second.device;
  m.reserved.erase(it);
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  // The pages are PROT_NONE already: keep them reserved while the freed record exists.
  m.AddFreed(b, FreedAlloc{size, size, device, "released virtual memory", 0, VmaId{}});
  m.EndWrite();
  return ACL_SUCCESS;
}

aclError DeviceMemory::AddMapping(void* addr, size_t size, int32_t device,
                                  const std::string& purpose, const std::function<bool()>& map_fn) {
  Impl& m = *impl();
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t end = EndOf(a, size);
  std::unique_lock<std::shared_mutex> lock(m.mu);
  auto r = m.ReservationOverlapping(a, a + 1);
  std::string why;
  if (r == m.reserved.end()) {
    why = "it is not inside an address range reserved by aclrtReserveMemAddress";
  } else if (a % PageSize() != 0) {
    why = fmt::format("it is not aligned to the {}-byte granularity", PageSize());
  } else if (end > EndOf(r->first, r->second.size)) {
    why = fmt::format("[{}, +{:#x}) runs past the end of its reservation (base {:#x}, size {:#x})",
                      addr, size, r->first, r->second.size);
  } else if (r->second.device != device) {
    why = fmt::format("the reservation belongs to device {}, the physical memory to device {}",
                      r->second.device, device);
  } else {
    auto l = m.live.lower_bound(end);
    if (l != m.live.begin() && EndOf(std::prev(l)->first, std::prev(l)->second.size) > a) {
      --l;
      why = fmt::format("[{}, +{:#x}) overlaps the mapping at {:#x} (size {:#x}): unmap it first",
                        addr, size, l->first, l->second.size);
    }
  }
  if (!why.empty()) {
    lock.unlock();
    VIGIL_RT_FAIL("Map memory failed: virPtr[{}] size {:#x}: {}.", addr, size, why);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  if (!map_fn()) return ACL_ERROR_RT_MEMORY_ALLOCATION;
  m.live[a] = LiveAlloc{size, size, device, purpose, r->first};
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  return ACL_SUCCESS;
}

aclError DeviceMemory::RemoveMapping(void* addr, const std::function<void()>& unmap_fn,
                                     size_t* size) {
  Impl& m = *impl();
  std::unique_lock<std::shared_mutex> lock(m.mu);
  auto it = m.live.find(reinterpret_cast<uintptr_t>(addr));
  if (it == m.live.end() || it->second.reservation == 0) {
    const AddrCheck c = m.CheckLocked(addr, 1, false);
    lock.unlock();
    std::string why =
        c.state == AddrState::kUnmapped ? "nothing is mapped there"
        : c.state == AddrState::kLive && it == m.live.end()
            ? fmt::format("it lies inside the mapping at {:#x}: unmap by that address",
                          c.alloc_base)
            : "it is not virtual memory mapped by aclrtMapMem";
    VIGIL_RT_FAIL("Unmap memory failed: virPtr[{}]: {}.", addr, why);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  m.BeginWrite();  // no copy into the pages is in progress from here on
  *size = it->second.size;
  unmap_fn();
  m.live.erase(it);
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  m.EndWrite();
  return ACL_SUCCESS;
}

aclError DeviceMemory::Charge(int32_t device, size_t size, const std::string& purpose) {
  Impl& m = *impl();
  const uint64_t budget = Budget();
  std::unique_lock<std::shared_mutex> lock(m.mu);
  size_t& used = m.used[device];
  if (budget != 0 && (size > budget || used > budget - size)) {
    const size_t used_now = used;
    lock.unlock();
    VIGIL_RT_FAIL(
        "Device malloc failed: out of device memory on device {}: requested size={} bytes, "
        "used={} bytes, budget={} bytes (VIGIL_DEVICE_MEMORY), purpose={}.",
        device, size, used_now, budget, purpose);
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  used += size;
  return ACL_SUCCESS;
}

void DeviceMemory::Uncharge(int32_t device, size_t size) {
  Impl& m = *impl();
  std::unique_lock<std::shared_mutex> lock(m.mu);
  m.used[device] -= size;
}

}  // namespace vigil::rt
