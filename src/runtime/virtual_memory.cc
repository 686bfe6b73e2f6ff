// Virtual memory: reservations and mappings live in the device memory map; the physical
// allocations (memfds) and which address each is mapped at are kept here.
#include "runtime/virtual_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/device_memory.h"
#include "runtime/handle_quarantine.h"
#include "runtime/rt_log.h"

namespace vigil::rt::vmm {
namespace {

struct PhysicalMem {
  int fd = -1;
  size_t size = 0;     // as asked for: a mapping must have exactly this size
  size_t charged = 0;  // size rounded up to pages, charged to the device budget
  int32_t device = -1;
  std::vector<uintptr_t> mapped_at;  // where it is mapped now
  ~PhysicalMem() {
    if (fd >= 0) close(fd);
  }
};

struct Registry {
  std::mutex mu;  // taken before the device memory map's lock, never after
  std::unordered_map<void*, std::shared_ptr<PhysicalMem>> handles;
  std::map<uintptr_t, void*> mappings;  // mapping address -> handle
};

Registry& Reg() {
  static Registry* registry = new Registry();  // leaked: used until process exit
  return *registry;
}

size_t RoundUp(size_t n, size_t unit) {
  const size_t r = (n + unit - 1) / unit * unit;
  return r < n ? 0 : r;  // 0: overflow
}

std::string Where(const std::vector<uintptr_t>& at) {
  std::string s;
  for (uintptr_t a : at) s += fmt::format("{}{:#x}", s.empty() ? "" : ", ", a);
  return s;
}

}  // namespace

size_t MinimumGranularity() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

aclError Reserve(int32_t device, size_t size, void** out) {
  const size_t len = RoundUp(size, MinimumGranularity());
  void* p = len == 0
                ? MAP_FAILED
                : mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    VIGIL_RT_FAIL("Reserve virtual memory failed: {} bytes of address space on device {}: {}.",
                  size, device, len == 0 ? "size too large" : std::strerror(errno));
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  DeviceMemory::Instance().AddReservation(device, p, len);
  *out = p;
  RT_DEBUG("Reserved virtual memory [{}, +{:#x}) on device {}.", p, len, device);
  return ACL_SUCCESS;
}

aclError Release(void* base) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  return DeviceMemory::Instance().RemoveReservation(base);
}

aclError MallocPhysical(int32_t device, size_t size, void** handle) {
  const size_t charged = RoundUp(size, MinimumGranularity());
  if (charged == 0) {
    VIGIL_RT_FAIL("Malloc physical memory failed: size {} is too large.", size);
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  aclError rc = DeviceMemory::Instance().Charge(device, charged, "physical memory");
  if (rc != ACL_SUCCESS) return rc;
  auto mem = HandleQuarantine<PhysicalMem>::Make();
  mem->size = size;
  mem->charged = charged;
  mem->device = device;
  mem->fd = memfd_create("vigil_physical", MFD_CLOEXEC);
  if (mem->fd < 0 || ftruncate(mem->fd, static_cast<off_t>(charged)) != 0) {
    const int err = errno;
    DeviceMemory::Instance().Uncharge(device, charged);
    VIGIL_RT_FAIL("Malloc physical memory failed: {} bytes on device {}: {}.", size, device,
                  std::strerror(err));
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  std::lock_guard<std::mutex> lock(Reg().mu);
  *handle = mem.get();
  Reg().handles.emplace(mem.get(), std::move(mem));
  return ACL_SUCCESS;
}

aclError FreePhysical(void* handle) {
  std::shared_ptr<PhysicalMem> mem;
  {
    std::lock_guard<std::mutex> lock(Reg().mu);
    auto it = Reg().handles.find(handle);
    if (it == Reg().handles.end()) {
      VIGIL_RT_FAIL(
          "Free physical memory failed: handle[{}] is not a physical allocation "
          "(freed already, or foreign).",
          handle);
      return ACL_ERROR_RT_INVALID_HANDLE;
    }
    if (!it->second->mapped_at.empty()) {
      VIGIL_RT_FAIL(
          "Free physical memory failed: handle[{}] (size {:#x}) is still mapped at {}: "
          "unmap it (aclrtUnmapMem) first.",
          handle, it->second->size, Where(it->second->mapped_at));
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    mem = std::move(it->second);
    Reg().handles.erase(it);
  }
  DeviceMemory::Instance().Uncharge(mem->device, mem->charged);
  return ACL_SUCCESS;  // the memfd closes with the last reference
}

aclError Map(void* addr, size_t size, void* handle) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  auto it = Reg().handles.find(handle);
  if (it == Reg().handles.end()) {
    VIGIL_RT_FAIL(
        "Map memory failed: handle[{}] is not a physical allocation (freed already, or "
        "foreign).",
        handle);
    return ACL_ERROR_RT_INVALID_HANDLE;
  }
  PhysicalMem& mem = *it->second;
  if (size != mem.size || size % MinimumGranularity() != 0) {
    VIGIL_RT_FAIL(
        "Map memory failed: size {:#x} must be the physical allocation's size {:#x}, a "
        "multiple of the {}-byte granularity.",
        size, mem.size, MinimumGranularity());
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  aclError rc =
      DeviceMemory::Instance().AddMapping(addr, size, mem.device, "mapped virtual memory", [&] {
        void* p = mmap(addr, size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED, mem.fd, 0);
        if (p != MAP_FAILED) return true;
        VIGIL_RT_FAIL("Map memory failed: mmap of {:#x} bytes at {}: {}.", size, addr,
                      std::strerror(errno));
        return false;
      });
  if (rc != ACL_SUCCESS) return rc;
  mem.mapped_at.push_back(reinterpret_cast<uintptr_t>(addr));
  Reg().mappings[reinterpret_cast<uintptr_t>(addr)] = handle;
  return ACL_SUCCESS;
}

aclError Unmap(void* addr) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  size_t size = 0;
  aclError rc = DeviceMemory::Instance().RemoveMapping(
      addr,
      [&] {
        // The pages go back to the reservation: inaccessible, and nothing else lands there.
        mmap(addr, size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      },
      &size);
  if (rc != ACL_SUCCESS) return rc;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  auto m = Reg().mappings.find(a);
  if (m != Reg().mappings.end()) {
    auto h = Reg().handles.find(m->second);
    if (h != Reg().handles.end()) std::erase(h->second->mapped_at, a);
    Reg().mappings.erase(m);
  }
  return ACL_SUCCESS;
}

bool IsMappedAt(void* handle, const void* addr, size_t size, std::string* why) {
  std::lock_guard<std::mutex> lock(Reg().mu);
  auto h = Reg().handles.find(handle);
  if (h == Reg().handles.end()) {
    *why = fmt::format("handle[{}] is not a physical allocation of aclrtMallocPhysical", handle);
    return false;
  }
  const PhysicalMem& mem = *h->second;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (std::find(mem.mapped_at.begin(), mem.mapped_at.end(), a) == mem.mapped_at.end()) {
    *why = mem.mapped_at.empty() ? fmt::format("handle[{}] is not mapped (aclrtMapMem)", handle)
                                 : fmt::format("handle[{}] is mapped at {}, not at {}", handle,
                                               Where(mem.mapped_at), addr);
    return false;
  }
  if (size != 0 && size != mem.size) {
    *why = fmt::format("handle[{}] mapped at {} holds {:#x} bytes, not {:#x}", handle, addr,
                       mem.size, size);
    return false;
  }
  return true;
}

}  // namespace vigil::rt::vmm
