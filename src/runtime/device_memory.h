// Device memory: host memory under a per-device budget (VIGIL_DEVICE_MEMORY) with an address
// map of live and freed allocations. A copy whose source or destination touches a freed range,
// or runs past the end of a live allocation, fails like an SDMA page-table fault instead of
// corrupting memory. Pointers outside every device allocation are host memory and unchecked.
//
// A copy (CheckedCopy, Guarded) runs as a reader of the map and a Free, Unregister or
// UnregisterAndUnmap waits for the readers in progress before it changes the map, so a
// concurrent Free (comm destroyed before sync) is seen by the next copy and never races one in
// progress. The readers of the per-op guards take no lock: each thread remembers the ranges it
// found live (or host) and, while the map's generation is unchanged, marks itself busy in a
// slot of its own that the writers wait on (see device_memory.cc); anything else takes the
// map's shared lock as before.
//
// Virtual memory (runtime/virtual_memory.h): a reservation is address space with nothing
// behind it (kUnmapped); the pieces mapped into it are live allocations, and pieces adjacent in
// one reservation count as one: a range may span them, never a hole or the reservation's end.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "acl/acl_base.h"

namespace vigil::rt {

enum class AddrState {
  kHost,      // not inside any device allocation, live or freed
  kLive,      // the whole range lies inside one live allocation
  kFreed,     // the range touches an allocation that has been freed
  kOverflow,  // starts in a live allocation but runs past its end
  kUnmapped,  // touches a reserved virtual range where nothing is mapped
};

// Whether a copy touching a range in this state faults.
inline bool IsFault(AddrState s) {
  return s == AddrState::kFreed || s == AddrState::kOverflow || s == AddrState::kUnmapped;
}

struct AddrCheck {
  AddrState state = AddrState::kHost;
  int32_t device = -1;
  uintptr_t alloc_base = 0;  // the allocation that contains (or contained) the start
  size_t alloc_size = 0;
  std::string purpose;       // "user", "CCL input buffer", ...
};

struct CopyFault {
  bool faulted = false;
  bool on_dst = false;  // which side faulted
  AddrCheck check;      // the faulting side's address check
};

const char* AddrStateName(AddrState state);  // "host", "live", "freed", "overflow", "unmapped"

// One line for logs and task-failure details: which side, address, size, and the allocation
// it hit, e.g. "dst[0x7f..] size[0x80] touches freed memory (CCL input buffer, base[0x7f..],
// size[0x1000], device 1)".
std::string DescribeCopyFault(const CopyFault& fault, const void* dst, const void* src, size_t n);

class DeviceMemory {
 public:
  static DeviceMemory& Instance();

  // Allocates `size` bytes on `device` (64-byte aligned, zero-filled pages on demand).
  // ACL_ERROR_RT_MEMORY_ALLOCATION when the device budget would be exceeded.
  aclError Alloc(int32_t device, size_t size, void** out, const std::string& purpose = "user");
  // ACL_ERROR_RT_MEMORY_FREE for a pointer that is not the base of a live allocation
  // (double free, foreign pointer, interior pointer).
  aclError Free(void* ptr);

  // Adds memory the caller mapped itself (e.g. a shared-memory CCL buffer) to the map and the
  // device budget. Unregister removes it from the budget and marks the range freed.
  aclError Register(int32_t device, void* ptr, size_t size, const std::string& purpose);
  // The caller unmaps the range itself afterwards. Copies touching it fault from Unregister on,
  // whether or not the caller has unmapped it yet; once a different mapping occupies the
  // address (e.g. a later host malloc), it is host memory again, so a stale record never
  // blocks unrelated memory.
  aclError Unregister(void* ptr);
  // Unregister for page-aligned registered memory, and the runtime takes the mapping over: the
  // range is replaced by an inaccessible reservation (the caller must NOT munmap it), so copies
  // into it fault from this moment on and nothing else can be placed there while the freed
  // record exists. Preferred for CCL buffers destroyed with work possibly in flight.
  aclError UnregisterAndUnmap(void* ptr);

  // Virtual memory, for runtime/virtual_memory.cc, which logs nothing these log. The caller
  // mapped [base, base+size) PROT_NONE; it is `device`'s reserved address space from now on.
  aclError AddReservation(int32_t device, void* base, size_t size);
  // ACL_ERROR_RT_PARAM_INVALID while a mapping lies inside. The runtime keeps the range
  // reserved (PROT_NONE) as a freed record, so a later access is a use after release.
  aclError RemoveReservation(void* base);
  // Once [addr, addr+size) lies page-aligned, unmapped, inside one reservation of `device`,
  // map_fn maps it (under the map's lock; false: it failed and logged why) and it is live.
  aclError AddMapping(void* addr, size_t size, int32_t device, const std::string& purpose,
                      const std::function<bool()>& map_fn);
  // addr must be where a mapping starts; unmap_fn makes its pages the reservation's again,
  // after every copy in progress finished. *size: the mapping's size.
  aclError RemoveMapping(void* addr, const std::function<void()>& unmap_fn, size_t* size);
  // Physical memory of aclrtMallocPhysical against the device budget
  // (ACL_ERROR_RT_MEMORY_ALLOCATION when it would be exceeded).
  aclError Charge(int32_t device, size_t size, const std::string& purpose);
  void Uncharge(int32_t device, size_t size);

  // with_purpose=false: purpose stays empty (the per-op guards need it only for a fault report,
  // and copying it allocates when it is longer than the short-string buffer), and a range this
  // thread found live or host before is answered without a lock.
  AddrCheck Check(const void* ptr, size_t size, bool with_purpose = true) const;
  // Check(ptr, size, false).state, for the per-op guards (no AddrCheck to build and destroy).
  AddrState State(const void* ptr, size_t size) const;

  // memcpy(dst, src, n) after checking both ranges; on a fault copies nothing, fills *fault
  // and returns ACL_ERROR_RT_SYS_DMA.
  aclError CheckedCopy(void* dst, const void* src, size_t n, CopyFault* fault);
  // Runs fn() while holding the shared lock, after checking the ranges like CheckedCopy
  // (for reductions that read and write device memory in place).
  template <typename Fn>
  aclError Guarded(void* dst, size_t dst_n, const void* src, size_t src_n, CopyFault* fault, Fn&& fn);

  // The map's generation: a range found live or host (State, Check, a guard) stays so while it
  // is unchanged (every Alloc, Free, Register and Unregister moves it). Never 0.
  uint64_t Generation() const;
  // Guarded for ranges the caller found live or host while Generation() was `gen`: as long as
  // it still is, fn runs without the ranges being looked up again (an op checks its buffers once
  // and then runs many guarded reductions inside them); otherwise, or for gen 0, as Guarded.
  template <typename Fn>
  aclError GuardedSince(uint64_t gen, void* dst, size_t dst_n, const void* src, size_t src_n,
                        CopyFault* fault, Fn&& fn);

  size_t UsedBytes(int32_t device) const;
  uint64_t Budget() const;  // 0 = unlimited
  size_t FreedRecordCount() const;  // bounded (kMaxFreedRecords); tests
  static constexpr size_t kMaxFreedRecords = 4096;

  struct Impl;  // device_memory.cc

 private:
  DeviceMemory() = default;
  Impl* impl();
  const Impl* impl() const;
  bool LockShared() const;
  void UnlockShared() const;
  bool CheckRanges(void* dst, size_t dst_n, const void* src, size_t src_n, CopyFault* fault) const;
  // The lock-free guard: when this thread's remembered ranges show both ranges live or host
  // and no writer is at work, marks the thread busy and returns its busy flag (the caller
  // clears it, release, once done); else nullptr and the caller takes the shared lock.
  std::atomic<uint32_t>* EnterFast(const void* dst, size_t dst_n, const void* src,
                                   size_t src_n) const;
  // EnterFast for ranges known live or host at generation gen: nullptr unless the map is
  // still at gen.
  std::atomic<uint32_t>* EnterAt(uint64_t gen) const;
};

template <typename Fn>
aclError DeviceMemory::Guarded(void* dst, size_t dst_n, const void* src, size_t src_n,
                               CopyFault* fault, Fn&& fn) {
  if (std::atomic<uint32_t>* busy = EnterFast(dst, dst_n, src, src_n)) {
    fn();
    busy->store(0, std::memory_order_release);
    if (fault != nullptr && fault->faulted) *fault = CopyFault{};
    return ACL_SUCCESS;
  }
  LockShared();
  if (!CheckRanges(dst, dst_n, src, src_n, fault)) {
    UnlockShared();
    return ACL_ERROR_RT_SYS_DMA;
  }
  fn();
  UnlockShared();
  return ACL_SUCCESS;
}

template <typename Fn>
aclError DeviceMemory::GuardedSince(uint64_t gen, void* dst, size_t dst_n, const void* src,
                                    size_t src_n, CopyFault* fault, Fn&& fn) {
  if (std::atomic<uint32_t>* busy = gen != 0 ? EnterAt(gen) : nullptr) {
    fn();
    busy->store(0, std::memory_order_release);
    if (fault != nullptr && fault->faulted) *fault = CopyFault{};
    return ACL_SUCCESS;
  }
  return Guarded(dst, dst_n, src, src_n, fault, std::forward<Fn>(fn));
}

}  // namespace vigil::rt
