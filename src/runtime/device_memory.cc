// Device memory: mmap'ed host memory under a per-device budget, plus an address map.
//
// A freed allocation keeps its address range reserved (remapped PROT_NONE, pages released) so
// nothing else in the process can be placed there while the freed record exists: a later copy
// into it is then reliably a use-after-free, never a false alarm on unrelated host memory.
// Only the newest kMaxFreedRecords are kept; an evicted record's range is unmapped for real.
#include "runtime/device_memory.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "common/env_config.h"
#include "common/tls.h"
#include "log/plog.h"
#include "runtime/rt_log.h"

namespace vigil::rt {
namespace {

// Identity of a mapping, to tell "the caller has not unmapped its unregistered buffer yet"
// from "someone else mapped new memory at that address".
struct VmaId {
  uintptr_t start = 0;
  uintptr_t end = 0;
  uint64_t offset = 0;
  uint64_t inode = 0;
  uint64_t dev = 0;
  bool valid = false;
  bool operator==(const VmaId&) const = default;
};

struct LiveAlloc {
  size_t size;
  size_t map_len;  // mapped length (size rounded up to pages); 0 for registered memory
  int32_t device;
  std::string purpose;
};

struct FreedAlloc {
  size_t size;
  size_t map_len;  // > 0: we still hold the PROT_NONE reservation and must munmap it
  int32_t device;
  std::string purpose;
  uint64_t seq;  // matches freed_order entries (stale ones are skipped)
  VmaId vma{};   // unregistered memory: the caller's mapping at Unregister time
};

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uintptr_t EndOf(uintptr_t p, size_t n) {
  uintptr_t end = p + n;
  return end < p ? UINTPTR_MAX : end;  // saturate instead of wrapping
}

// Whether every page of [begin, end) is mapped in this process (msync only walks the mappings
// and fails with ENOMEM on a hole).
bool RangeMapped(uintptr_t begin, uintptr_t end) {
  if (end <= begin) return false;
  const uintptr_t page = PageSize();
  const uintptr_t first = begin / page * page;
  const uintptr_t last = (end + page - 1) / page * page;
  return msync(reinterpret_cast<void*>(first), last - first, MS_ASYNC) == 0;
}

// The mapping (VMA) that contains addr, from /proc/self/maps; read only when registering or
// unregistering caller memory and when a copy touches a freed registered range, all rare.
VmaId FindVma(uintptr_t addr) {
  VmaId id;
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return id;
  char line[512];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long start = 0, end = 0, offset = 0, inode = 0;
    unsigned int dev_major = 0, dev_minor = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &start, &end, perms, &offset, &dev_major,
                    &dev_minor, &inode) != 7) {
      continue;
    }
    if (addr >= start && addr < end) {
      id = VmaId{start, end, offset, inode, (static_cast<uint64_t>(dev_major) << 32) | dev_minor,
                 true};
      break;
    }
  }
  std::fclose(f);
  return id;
}

}  // namespace

// A range a thread's guard found live (inside one live allocation) or host (no live allocation
// starts in it and no freed record overlaps it), valid while the map's generation is `gen`.
struct Remembered {
  uint64_t gen = 0;                                // live_gen when found; 0 never matches
  uintptr_t base = 0, alloc_end = 0, map_end = 0;  // host: the range checked is [base, map_end)
  size_t size = 0;
  int32_t device = -1;
  bool host = false;
};

// Lock-free readers (EnterFast): a copy marks its thread's slot busy, and a writer that takes
// memory away (Free, Unregister, UnregisterAndUnmap) raises `writing` and then waits until no
// slot is busy, Dekker-style (both sides store, then load the other's flag, seq_cst): either
// the reader sees the writer and takes the shared lock instead, or the writer sees the reader
// and waits for its copy to end.
struct alignas(64) ReaderSlot {
  std::atomic<uint32_t> busy{0};
  std::atomic<uint32_t> owned{0};  // claimed by a live thread
};

struct DeviceMemory::Impl {
  mutable std::shared_mutex mu;
  std::map<uintptr_t, LiveAlloc> live;
  // Bumped (under the exclusive lock) whenever `live` changes: a thread's remembered ranges
  // (Remembered) are valid while it is unchanged. Every change of `freed` that could turn a
  // host range into a freed one comes with a change of `live` (Free, Unregister).
  std::atomic<uint64_t> live_gen{1};
  std::map<uintptr_t, FreedAlloc> freed;
  std::deque<std::pair<uintptr_t, uint64_t>> freed_order;  // oldest first
  uint64_t freed_seq = 0;
  std::unordered_map<int32_t, size_t> used;

  static constexpr uint32_t kReaderSlots = 256;  // threads beyond this take the shared lock
  ReaderSlot readers[kReaderSlots];
  std::atomic<uint32_t> readers_used{0};  // slots [0, readers_used) were ever claimed
  std::atomic<uint32_t> writing{0};       // a writer is taking memory away (under mu)

  std::atomic<uint32_t>* ClaimReaderSlot() {
    for (uint32_t i = 0; i < kReaderSlots; ++i) {
      uint32_t free_slot = 0;
      if (!readers[i].owned.compare_exchange_strong(free_slot, 1)) continue;
      uint32_t used_now = readers_used.load();
      while (used_now < i + 1 && !readers_used.compare_exchange_weak(used_now, i + 1)) {
      }
      return &readers[i].busy;
    }
    return nullptr;
  }

  // Under the exclusive lock, before memory is taken away: no lock-free copy is in progress
  // once this returns, and none starts until EndWrite.
  void BeginWrite() {
    writing.store(1, std::memory_order_seq_cst);
    const uint32_t n = readers_used.load(std::memory_order_seq_cst);
    for (uint32_t i = 0; i < n; ++i) {
      for (int spins = 0; readers[i].busy.load(std::memory_order_seq_cst) != 0; ++spins) {
        if (spins > 64) sched_yield();
      }
    }
  }
  void EndWrite() { writing.store(0, std::memory_order_release); }

  // Drops freed records overlapping [p, end): that range now belongs to a new allocation.
  void DropFreedOverlapping(uintptr_t p, uintptr_t end) {
    auto it = freed.lower_bound(p);
    if (it != freed.begin()) {
      auto prev = std::prev(it);
      if (EndOf(prev->first, std::max(prev->second.size, prev->second.map_len)) > p) it = prev;
    }
    while (it != freed.end() && it->first < end) it = freed.erase(it);
  }

  void AddFreed(uintptr_t base, FreedAlloc rec) {
    rec.seq = ++freed_seq;
    freed_order.emplace_back(base, rec.seq);
    freed[base] = std::move(rec);
    while (freed.size() > kMaxFreedRecords && !freed_order.empty()) {
      auto [old_base, old_seq] = freed_order.front();
      freed_order.pop_front();
      auto it = freed.find(old_base);
      if (it == freed.end() || it->second.seq != old_seq) continue;  // stale
      if (it->second.map_len > 0) munmap(reinterpret_cast<void*>(old_base), it->second.map_len);
      freed.erase(it);
    }
    // Stale entries (records dropped by reuse) are skipped lazily; compact when they pile up.
    if (freed_order.size() > 2 * kMaxFreedRecords) {
      std::deque<std::pair<uintptr_t, uint64_t>> kept;
      for (auto& e : freed_order) {
        auto it = freed.find(e.first);
        if (it != freed.end() && it->second.seq == e.second) kept.push_back(e);
      }
      freed_order.swap(kept);
    }
  }

  // A freed range we reserved stays freed. A range the caller mapped and unregistered is freed
  // while unmapped or still under the caller's same mapping; a different mapping there now is
  // someone else's memory (e.g. a host malloc placed in the hole), never a false fault.
  static bool StillFreed(uintptr_t base, const FreedAlloc& f, uintptr_t p, uintptr_t end) {
    if (f.map_len > 0) return true;
    const uintptr_t lo = std::max(p, base);
    const uintptr_t hi = std::min(end, EndOf(base, f.size));
    if (!RangeMapped(lo, hi)) return true;
    return f.vma.valid && FindVma(lo) == f.vma;
  }

  // Each thread's last ranges found live or host: the per-op guards check the same few buffers
  // (user buffers, CCL buffer, the op header on the stack) again and again, ~10 times per op.
  // Trivially constructed and destroyed, so reaching it costs one TLS lookup and no guard
  // (~20 instructions a check otherwise); the reader slot is given back by SlotOwner.
  struct ThreadState {
    Remembered slot[4];
    unsigned next;
    std::atomic<uint32_t>* busy;  // this thread's reader slot
    bool claimed;                 // tried to claim one
  };
  static ThreadState& Tls() {
    static thread_local constinit ThreadState state{};
    return TlsOnce(state);
  }
  // At thread exit: the slot goes back for another thread, and a guard that runs later on this
  // thread (another thread_local's destructor) takes the lock.
  struct SlotOwner {
    ~SlotOwner() {
      ThreadState& t = Tls();
      if (t.busy != nullptr) {
        reinterpret_cast<ReaderSlot*>(t.busy)->owned.store(0, std::memory_order_release);
      }
      t.busy = nullptr;
      t.claimed = true;
    }
  };
  static void ClaimFor(Impl& m, ThreadState& t) {
    static thread_local SlotOwner owner;  // constructed here, on the thread's first claim
    (void)owner;
    t.claimed = true;
    t.busy = m.ClaimReaderSlot();
  }
  // This thread's reader slot, claimed on first use; false when none was free (the thread
  // always takes the lock then).
  static bool HasSlot(Impl& m, ThreadState& t) {
    if (t.busy == nullptr) {
      if (t.claimed) return false;
      ClaimFor(m, t);
    }
    return t.busy != nullptr;
  }
  // Publishes the thread's busy flag for a copy checked under generation gen, or gives it back
  // and returns nullptr (the lock decides instead): a writer that started before the flag shows
  // in `writing` (seq_cst both ways), and one that finished since gen was read moved live_gen.
  static std::atomic<uint32_t>* Publish(Impl& m, ThreadState& t, uint64_t gen) {
    t.busy->store(1, std::memory_order_seq_cst);
    if (m.writing.load(std::memory_order_seq_cst) != 0 ||
        m.live_gen.load(std::memory_order_relaxed) != gen) {
      t.busy->store(0, std::memory_order_release);
      return nullptr;
    }
    return t.busy;
  }

  // What this thread remembers of [p, p+n) under generation gen: kLive, kOverflow or kHost
  // (*hit: the range remembered), or kFreed meaning "not known here: look it up".
  static AddrState Remembers(const ThreadState& t, uint64_t gen, uintptr_t p, size_t n,
                             const Remembered** hit = nullptr) {
    const uintptr_t end = EndOf(p, n == 0 ? 1 : n);
    for (const Remembered& h : t.slot) {
      if (h.gen != gen) continue;
      if (h.host) {
        if (p < h.base || end > h.map_end) continue;
        if (hit != nullptr) *hit = &h;
        return AddrState::kHost;
      }
      if (p >= h.base && p < h.map_end) {
        if (hit != nullptr) *hit = &h;
        return end <= h.alloc_end ? AddrState::kLive : AddrState::kOverflow;
      }
    }
    return AddrState::kFreed;
  }

  AddrCheck CheckLocked(const void* ptr, size_t size, bool with_purpose = true) const {
    AddrCheck check;
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    const uintptr_t end = EndOf(p, size == 0 ? 1 : size);
    // The caller holds mu (shared at least), so live_gen cannot move under us.
    const uint64_t gen = live_gen.load(std::memory_order_relaxed);
    auto fill = [&](uintptr_t base, uintptr_t alloc_end, size_t alloc_size, int32_t device) {
      check.state = (p < alloc_end && end <= alloc_end) ? AddrState::kLive : AddrState::kOverflow;
      check.device = device;
      check.alloc_base = base;
      check.alloc_size = alloc_size;
    };
    ThreadState& t = Tls();
    auto live_it = live.upper_bound(p);
    if (live_it != live.begin()) {
      auto it = std::prev(live_it);
      const LiveAlloc& a = it->second;
      // The page padding after an allocation is still "past its end".
      const uintptr_t alloc_end = EndOf(it->first, a.size);
      const uintptr_t map_end = EndOf(it->first, std::max(a.size, a.map_len));
      if (p < map_end) {
        fill(it->first, alloc_end, a.size, a.device);
        if (with_purpose) check.purpose = a.purpose;
        t.slot[t.next++ % 4] =
            Remembered{gen, it->first, alloc_end, map_end, a.size, a.device, false};
        return check;
      }
    }
    auto ft = freed.lower_bound(end);
    if (ft != freed.begin()) {
      --ft;
      const FreedAlloc& f = ft->second;
      if (EndOf(ft->first, std::max(f.size, f.map_len)) > p) {
        if (StillFreed(ft->first, f, p, end)) {
          check.state = AddrState::kFreed;
          check.device = f.device;
          check.alloc_base = ft->first;
          check.alloc_size = f.size;
          if (with_purpose) check.purpose = f.purpose;
        }
        return check;  // host, but not remembered: it depends on who maps the range now
      }
    }
    // Host, and no live allocation starts inside the range either (a range inside this one
    // could otherwise start in one): remembered. Freed records do not overlap each other, so
    // the one nearest below `end` not reaching p means none overlaps.
    if (live_it == live.end() || live_it->first >= end) {
      t.slot[t.next++ % 4] = Remembered{gen, p, end, end, 0, -1, true};
    }
    return check;
  }
};

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
  }
  return "unknown";
}

std::string DescribeCopyFault(const CopyFault& fault, const void* dst, const void* src, size_t n) {
  const AddrCheck& c = fault.check;
  const void* side = fault.on_dst ? dst : src;
  std::string what =
      c.state == AddrState::kFreed ? "touches freed memory" : "runs past the end of its allocation";
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
  if (it == m.live.end() || it->second.map_len == 0) {
    std::string why;
    if (it != m.live.end()) {
      why = fmt::format("registered memory ({}, size {}) must be unregistered, not freed",
                        it->second.purpose, it->second.size);
    } else if (m.freed.count(p) != 0) {
      why = fmt::format("double free: already freed ({}, size {}, device {})",
                        m.freed.at(p).purpose, m.freed.at(p).size, m.freed.at(p).device);
    } else {
      AddrCheck c = m.CheckLocked(ptr, 1);
      if (c.state == AddrState::kLive || c.state == AddrState::kOverflow) {
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
  auto bad = [](AddrState s) { return s == AddrState::kFreed || s == AddrState::kOverflow; };
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
