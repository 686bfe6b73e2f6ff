// The device memory map's state, shared by device_memory.cc (allocations, checks) and
// device_memory_vmm.cc (virtual memory); internal to those two files.
#pragma once

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
#include <string>
#include <unordered_map>

#include "common/tls.h"
#include "runtime/device_memory.h"

namespace vigil::rt {

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
  uintptr_t reservation = 0;  // a mapping of virtual memory: the reservation it lies in
};

// Address space reserved by aclrtReserveMemAddress (PROT_NONE where nothing is mapped).
struct Reservation {
  size_t size;
  int32_t device;
};

struct FreedAlloc {
  size_t size;
  size_t map_len;  // > 0: we still hold the PROT_NONE reservation and must munmap it
  int32_t device;
  std::string purpose;
  uint64_t seq;  // matches freed_order entries (stale ones are skipped)
  VmaId vma{};   // unregistered memory: the caller's mapping at Unregister time
};

inline size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

inline uintptr_t EndOf(uintptr_t p, size_t n) {
  uintptr_t end = p + n;
  return end < p ? UINTPTR_MAX : end;  // saturate instead of wrapping
}

// Whether every page of [begin, end) is mapped in this process (msync only walks the mappings
// and fails with ENOMEM on a hole).
inline bool RangeMapped(uintptr_t begin, uintptr_t end) {
  if (end <= begin) return false;
  const uintptr_t page = PageSize();
  const uintptr_t first = begin / page * page;
  const uintptr_t last = (end + page - 1) / page * page;
  return msync(reinterpret_cast<void*>(first), last - first, MS_ASYNC) == 0;
}

// The mapping (VMA) that contains addr, from /proc/self/maps; read only when registering or
// unregistering caller memory and when a copy touches a freed registered range, all rare.
inline VmaId FindVma(uintptr_t addr) {
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

// A range a thread's guard found live (inside one live allocation) or host (no live allocation
// starts in it and no freed record overlaps it), valid while the map's generation is `gen`.
struct Remembered {
  uint64_t gen = 0;                                // live_gen when found; 0 never matches
  uintptr_t base = 0, alloc_end = 0, map_end = 0;  // host: the range checked is [base, map_end)
  size_t size = 0;
  int32_t device = -1;
  bool host = false;
  // A mapping of virtual memory (and the ones adjacent to it when found): a range running past
  // alloc_end may go on into another mapping, so that is looked up rather than kOverflow.
  bool mapped = false;
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
  std::map<uintptr_t, Reservation> reserved;

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
        if (end > h.alloc_end && h.mapped) continue;  // may go on into the next mapping
        if (hit != nullptr) *hit = &h;
        return end <= h.alloc_end ? AddrState::kLive : AddrState::kOverflow;
      }
    }
    return AddrState::kFreed;
  }

  // The reservation overlapping [p, end), or reserved.end().
  std::map<uintptr_t, Reservation>::const_iterator ReservationOverlapping(uintptr_t p,
                                                                          uintptr_t end) const {
    auto it = reserved.lower_bound(end);
    if (it == reserved.begin()) return reserved.end();
    --it;
    return EndOf(it->first, it->second.size) > p ? it : reserved.end();
  }

  // A range that starts in mapping `first` of a reservation and runs past its end: live when
  // the mappings after it, adjacent in the same reservation, cover the rest; kUnmapped when it
  // reaches a hole of the reservation, kOverflow when it runs past the reservation's end.
  // Remembered as one live range of the adjacent mappings when live.
  AddrCheck CheckMapped(std::map<uintptr_t, LiveAlloc>::const_iterator first, uintptr_t end,
                        bool with_purpose) const {
    const uintptr_t res = first->second.reservation;
    uintptr_t run_end = EndOf(first->first, first->second.size);
    for (auto it = std::next(first);
         run_end < end && it != live.end() && it->first == run_end && it->second.reservation == res;
         ++it) {
      run_end = EndOf(it->first, it->second.size);
    }
    AddrCheck check;
    check.device = first->second.device;
    check.alloc_base = first->first;
    check.alloc_size = run_end - first->first;
    if (with_purpose) check.purpose = first->second.purpose;
    if (end <= run_end) {
      check.state = AddrState::kLive;
      ThreadState& t = Tls();
      t.slot[t.next++ % 4] = Remembered{live_gen.load(std::memory_order_relaxed),
                                        first->first,
                                        run_end,
                                        run_end,
                                        check.alloc_size,
                                        check.device,
                                        false,
                                        true};
      return check;
    }
    auto r = reserved.find(res);
    const bool hole = r != reserved.end() && run_end < EndOf(res, r->second.size);
    check.state = hole ? AddrState::kUnmapped : AddrState::kOverflow;
    return check;
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
        if (a.reservation != 0 && end > alloc_end) return CheckMapped(it, end, with_purpose);
        fill(it->first, alloc_end, a.size, a.device);
        if (with_purpose) check.purpose = a.purpose;
        t.slot[t.next++ % 4] = Remembered{gen,    it->first, alloc_end, map_end,
                                          a.size, a.device,  false,     a.reservation != 0};
        return check;
      }
    }
    // Reserved address space with nothing mapped where the range starts, or a range that
    // reaches into a reservation from outside: its holes fault like any unmapped address.
    if (auto r = ReservationOverlapping(p, end); r != reserved.end()) {
      check.state = AddrState::kUnmapped;
      check.device = r->second.device;
      check.alloc_base = r->first;
      check.alloc_size = r->second.size;
      if (with_purpose) check.purpose = "reserved virtual memory";
      return check;
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

}  // namespace vigil::rt
