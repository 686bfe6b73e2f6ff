// Device memory: mmap'ed host memory under a per-device budget, plus an address map.
//
// A freed allocation keeps its address range reserved (remapped PROT_NONE, pages released) so
// nothing else in the process can be placed there while the freed record exists: a later copy
// into it is then reliably a use-after-free, never a false alarm on unrelated host memory.
// Only the newest kMaxFreedRecords are kept; an evicted record's range is unmapped for real.
#include "runtime/device_memory.h"

#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <shared_mutex>

#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/device_memory_map.h"
#include "runtime/rt_log.h"

namespace vigil::rt {

namespace {
// Not a member: a member function of a shared library may be interposed, so the compiler
// would call it instead of inlining it (~100 instructions per op).
inline __attribute__((always_inline)) DeviceMemory::Impl& Map() {
  static DeviceMemory::Impl* impl = new DeviceMemory::Impl();  // leaked: outlives statics
  return *impl;
}
}  // namespace

const char* AddrStateName(AddrState state) {
  switch (state) {
    case AddrState::kHost:
      return "host";
    case AddrState::kLive:
      return "live";
    case AddrState::kFreed:
      return "freed";
    case AddrState::kOverflow:
      return "overflow";
    case AddrState::kUnmapped:
      return "unmapped";
  }
  return "unknown";
}

std::string DescribeCopyFault(const CopyFault& fault, const void* dst, const void* src, size_t n) {
  const AddrCheck& c = fault.check;
  const void* side = fault.on_dst ? dst : src;
  std::string what = c.state == AddrState::kFreed      ? "touches freed memory"
                     : c.state == AddrState::kUnmapped ? "touches unmapped virtual memory"
                                                       : "runs past the end of its allocation";
  return fmt::format(
      "{}[{}] size[{:#x}] {} ({}, base[{:#x}], size[{:#x}], device {}); src[{}] dst[{}]",
      fault.on_dst ? "dst" : "src", side, n, what, c.purpose.empty() ? "device memory" : c.purpose,
      c.alloc_base, c.alloc_size, c.device, src, dst);
}

DeviceMemory& DeviceMemory::Instance() {
  static DeviceMemory* instance = new DeviceMemory();  // leaked: stream workers outlive statics
  return *instance;
}

DeviceMemory::Impl* DeviceMemory::impl() {
  return &Map();
}

const DeviceMemory::Impl* DeviceMemory::impl() const {
  return const_cast<DeviceMemory*>(this)->impl();
}

uint64_t DeviceMemory::Budget() const {
  return Env().device_memory;
}

aclError DeviceMemory::Alloc(int32_t device, size_t size, void** out, const std::string& purpose) {
  if (out == nullptr) {
    VIGIL_RT_FAIL("Device malloc failed: devPtr is nullptr (device {}, size {}).", device, size);
    return ACL_ERROR_INVALID_PARAM;
  }
  *out = nullptr;
  if (size == 0) {
    VIGIL_RT_FAIL("Device malloc failed: size is 0 (device {}).", device);
    return ACL_ERROR_INVALID_PARAM;
  }
  Impl& m = *impl();
  const uint64_t budget = Budget();
  {
    std::unique_lock<std::shared_mutex> lock(m.mu);
    size_t& used = m.used[device];
    if (budget != 0 && (size > budget || used > budget - size)) {
      size_t used_now = used;
      lock.unlock();
      VIGIL_RT_FAIL(
          "Device malloc failed: out of device memory on device {}: requested size={} bytes, "
          "used={} bytes, budget={} bytes (VIGIL_DEVICE_MEMORY), purpose={}.",
          device, size, used_now, budget, purpose);
      return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    used += size;  // reserved before mapping so concurrent allocations cannot overshoot
  }
  const size_t page = PageSize();
  const size_t map_len = (size + page - 1) / page * page;
  void* p = map_len < size ? MAP_FAILED
                           : mmap(nullptr, map_len, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    {
      std::unique_lock<std::shared_mutex> lock(m.mu);
      m.used[device] -= size;
    }
    VIGIL_RT_FAIL("Device malloc failed: mmap of {} bytes on device {} failed: {}.", size, device,
                  std::strerror(err));
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  if (map_len >= (2u << 20)) madvise(p, map_len, MADV_HUGEPAGE);  // like HUGE_FIRST; best effort
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  {
    std::unique_lock<std::shared_mutex> lock(m.mu);
    m.DropFreedOverlapping(base, EndOf(base, map_len));
    m.live[base] = LiveAlloc{size, map_len, device, purpose};
    m.live_gen.fetch_add(1, std::memory_order_relaxed);
  }
  *out = p;
  return ACL_SUCCESS;
}

aclError DeviceMemory::Free(void* ptr) {
  if (ptr == nullptr) {
    VIGIL_RT_FAIL("Device free failed: devPtr is nullptr.");
    return ACL_ERROR_INVALID_PARAM;
  }
  Impl& m = *impl();
  std::unique_lock<std::shared_mutex> lock(m.mu);
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = m.live.find(p);
  if (it == m.live.end() || it->second.map_len == 0 || it->second.reservation != 0) {
    std::string why;
    if (it != m.live.end() && it->second.reservation != 0) {
      why = fmt::format(
          "mapped virtual memory (size {}) must be unmapped with aclrtUnmapMem, "
          "not freed",
          it->second.size);
    } else if (it != m.live.end()) {
      why = fmt::format("registered memory ({}, size {}) must be unregistered, not freed",
                        it->second.purpose, it->second.size);
    } else if (m.freed.count(p) != 0) {
      why = fmt::format("double free: already freed ({}, size {}, device {})",
                        m.freed.at(p).purpose, m.freed.at(p).size, m.freed.at(p).device);
    } else {
      AddrCheck c = m.CheckLocked(ptr, 1);
      if (c.state == AddrState::kUnmapped) {
        why = "reserved virtual memory (release it with aclrtReleaseMemAddress)";
      } else if (c.state == AddrState::kLive || c.state == AddrState::kOverflow) {
        why = fmt::format("interior pointer of allocation base[{:#x}] size {} on device {}",
                          c.alloc_base, c.alloc_size, c.device);
      } else {
        why = "not a device allocation (foreign pointer)";
      }
    }
    lock.unlock();
    VIGIL_RT_FAIL("Device free failed: devPtr[{}] is invalid: {}.", ptr, why);
    return ACL_ERROR_RT_MEMORY_FREE;
  }
  m.BeginWrite();
  LiveAlloc a = std::move(it->second);
  m.live.erase(it);
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  m.used[a.device] -= a.size;
  // Release the pages but keep the range reserved while its freed record exists.
  void* r = mmap(ptr, a.map_len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  size_t reserved = r == MAP_FAILED ? 0 : a.map_len;
  if (r == MAP_FAILED) munmap(ptr, a.map_len);
  m.AddFreed(p, FreedAlloc{a.size, reserved, a.device, std::move(a.purpose), 0, VmaId{}});
  m.EndWrite();
  return ACL_SUCCESS;
}

aclError DeviceMemory::Register(int32_t device, void* ptr, size_t size,
                                const std::string& purpose) {
  if (ptr == nullptr || size == 0) {
    VIGIL_RT_FAIL("Register device memory failed: {} (device {}, purpose {}).",
                  ptr == nullptr ? "ptr is nullptr" : "size is 0", device, purpose);
    return ACL_ERROR_INVALID_PARAM;
  }
  Impl& m = *impl();
  const uint64_t budget = Budget();
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  std::unique_lock<std::shared_mutex> lock(m.mu);
  // Reject overlap with any live range.
  auto it = m.live.lower_bound(EndOf(base, size));
  if (it != m.live.begin()) {
    --it;
    if (EndOf(it->first, std::max(it->second.size, it->second.map_len)) > base) {
      uintptr_t other = it->first;
      lock.unlock();
      VIGIL_RT_FAIL(
          "Register device memory failed: ptr[{}] size {} overlaps live allocation "
          "base[{:#x}] ({}).",
          ptr, size, other, purpose);
      return ACL_ERROR_INVALID_PARAM;
    }
  }
  if (m.ReservationOverlapping(base, EndOf(base, size)) != m.reserved.end()) {
    lock.unlock();
    VIGIL_RT_FAIL(
        "Register device memory failed: ptr[{}] size {} overlaps reserved virtual "
        "memory ({}).",
        ptr, size, purpose);
    return ACL_ERROR_INVALID_PARAM;
  }
  size_t& used = m.used[device];
  if (budget != 0 && (size > budget || used > budget - size)) {
    size_t used_now = used;
    lock.unlock();
    VIGIL_RT_FAIL(
        "Register device memory failed: out of device memory on device {}: requested size={} "
        "bytes, used={} bytes, budget={} bytes (VIGIL_DEVICE_MEMORY), purpose={}.",
        device, size, used_now, budget, purpose);
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  used += size;
  m.DropFreedOverlapping(base, EndOf(base, size));
  m.live[base] = LiveAlloc{size, 0, device, purpose};
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  return ACL_SUCCESS;
}

aclError DeviceMemory::Unregister(void* ptr) {
  Impl& m = *impl();
  std::unique_lock<std::shared_mutex> lock(m.mu);
  auto it = m.live.find(reinterpret_cast<uintptr_t>(ptr));
  if (ptr == nullptr || it == m.live.end() || it->second.map_len != 0) {
    lock.unlock();
    VIGIL_RT_FAIL("Unregister device memory failed: ptr[{}] is not registered memory.", ptr);
    return ptr == nullptr ? ACL_ERROR_INVALID_PARAM : ACL_ERROR_RT_MEMORY_FREE;
  }
  m.BeginWrite();
  LiveAlloc a = std::move(it->second);
  m.live.erase(it);
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  m.used[a.device] -= a.size;
  // The caller unmaps it; the freed record makes in-flight copies into it fail cleanly.
  FreedAlloc rec{
      a.size, 0, a.device, std::move(a.purpose), 0, FindVma(reinterpret_cast<uintptr_t>(ptr))};
  m.AddFreed(reinterpret_cast<uintptr_t>(ptr), std::move(rec));
  m.EndWrite();
  return ACL_SUCCESS;
}

aclError DeviceMemory::UnregisterAndUnmap(void* ptr) {
  Impl& m = *impl();
  std::unique_lock<std::shared_mutex> lock(m.mu);
  const uintptr_t base = reinterpret_cast<uintptr_t>(ptr);
  auto it = m.live.find(base);
  if (ptr == nullptr || it == m.live.end() || it->second.map_len != 0 || base % PageSize() != 0) {
    lock.unlock();
    VIGIL_RT_FAIL("Unregister device memory failed: ptr[{}] is not page-aligned registered memory.",
                  ptr);
    return ptr == nullptr ? ACL_ERROR_INVALID_PARAM : ACL_ERROR_RT_MEMORY_FREE;
  }
  m.BeginWrite();
  LiveAlloc a = std::move(it->second);
  m.live.erase(it);
  m.live_gen.fetch_add(1, std::memory_order_relaxed);
  m.used[a.device] -= a.size;
  const size_t page = PageSize();
  const size_t map_len = (a.size + page - 1) / page * page;
  // Atomically swaps the caller's pages for an inaccessible reservation (no window in which
  // another mapping could land there); in-flight copies hold the shared lock, so none is mid-copy.
  void* r =
      mmap(ptr, map_len, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  size_t reserved = r == MAP_FAILED ? 0 : map_len;
  if (r == MAP_FAILED) munmap(ptr, map_len);
  m.AddFreed(base, FreedAlloc{a.size, reserved, a.device, std::move(a.purpose), 0, VmaId{}});
  m.EndWrite();
  return ACL_SUCCESS;
}

AddrCheck DeviceMemory::Check(const void* ptr, size_t size, bool with_purpose) const {
  Impl& m = Map();
  if (!with_purpose) {
    // A snapshot either way: the lock would be let go before the caller acts on the answer.
    const Remembered* hit = nullptr;
    const AddrState known = Impl::Remembers(Impl::Tls(), m.live_gen.load(std::memory_order_acquire),
                                            reinterpret_cast<uintptr_t>(ptr), size, &hit);
    if (known != AddrState::kFreed) {
      AddrCheck check;
      check.state = known;
      if (known != AddrState::kHost) {
        check.device = hit->device;
        check.alloc_base = hit->base;
        check.alloc_size = hit->size;
      }
      return check;
    }
  }
  std::shared_lock<std::shared_mutex> lock(m.mu);
  return m.CheckLocked(ptr, size, with_purpose);
}

AddrState DeviceMemory::State(const void* ptr, size_t size) const {
  Impl& m = Map();
  const AddrState known = Impl::Remembers(Impl::Tls(), m.live_gen.load(std::memory_order_acquire),
                                          reinterpret_cast<uintptr_t>(ptr), size);
  if (known != AddrState::kFreed) return known;
  std::shared_lock<std::shared_mutex> lock(m.mu);
  return m.CheckLocked(ptr, size, false).state;
}

std::atomic<uint32_t>* DeviceMemory::EnterFast(const void* dst, size_t dst_n, const void* src,
                                               size_t src_n) const {
  Impl& m = Map();
  Impl::ThreadState& t = Impl::Tls();
  if (!Impl::HasSlot(m, t)) return nullptr;
  const uint64_t gen = m.live_gen.load(std::memory_order_acquire);
  auto fine = [&](const void* p, size_t n) {
    if (p == nullptr || n == 0) return true;  // as CheckRanges: nothing to check
    const AddrState s = Impl::Remembers(t, gen, reinterpret_cast<uintptr_t>(p), n);
    return s == AddrState::kLive || s == AddrState::kHost;
  };
  if (!fine(dst, dst_n) || !fine(src, src_n)) return nullptr;
  return Impl::Publish(m, t, gen);
}

std::atomic<uint32_t>* DeviceMemory::EnterAt(uint64_t gen) const {
  Impl& m = Map();
  Impl::ThreadState& t = Impl::Tls();
  if (!Impl::HasSlot(m, t)) return nullptr;
  if (m.live_gen.load(std::memory_order_acquire) != gen) return nullptr;
  return Impl::Publish(m, t, gen);
}

uint64_t DeviceMemory::Generation() const {
  return Map().live_gen.load(std::memory_order_acquire);
}

bool DeviceMemory::LockShared() const {
  Map().mu.lock_shared();
  return true;
}

void DeviceMemory::UnlockShared() const {
  Map().mu.unlock_shared();
}

bool DeviceMemory::CheckRanges(void* dst, size_t dst_n, const void* src, size_t src_n,
                               CopyFault* fault) const {
  auto bad = [](AddrState s) { return IsFault(s); };
  if (dst != nullptr && dst_n > 0) {
    if (bad(Map().CheckLocked(dst, dst_n, false).state)) {
      if (fault != nullptr) *fault = CopyFault{true, true, Map().CheckLocked(dst, dst_n)};
      return false;
    }
  }
  if (src != nullptr && src_n > 0) {
    if (bad(Map().CheckLocked(src, src_n, false).state)) {
      if (fault != nullptr) *fault = CopyFault{true, false, Map().CheckLocked(src, src_n)};
      return false;
    }
  }
  if (fault != nullptr) *fault = CopyFault{};
  return true;
}

aclError DeviceMemory::CheckedCopy(void* dst, const void* src, size_t n, CopyFault* fault) {
  if (n == 0) {
    if (fault != nullptr) *fault = CopyFault{};
    return ACL_SUCCESS;
  }
  return Guarded(dst, n, src, n, fault, [&] { std::memmove(dst, src, n); });
}

size_t DeviceMemory::UsedBytes(int32_t device) const {
  std::shared_lock<std::shared_mutex> lock(Map().mu);
  auto it = Map().used.find(device);
  return it == Map().used.end() ? 0 : it->second;
}

size_t DeviceMemory::FreedRecordCount() const {
  std::shared_lock<std::shared_mutex> lock(Map().mu);
  return Map().freed.size();
}

}  // namespace vigil::rt
