// The memory a communicator is told about: address ranges reserved for it
// (HcclCommSetMemoryRange) and the pieces of them activated with physical memory
// (HcclCommActivateCommMemory). Bookkeeping only: the acl runtime maps the memory; this keeps
// what the user declared consistent (no overlaps, pieces inside a range, nothing left active
// when a range goes) and says what is wrong when it is not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace vigil::comm {

class MemoryRanges {
 public:
  // Each returns "" on success, else what is wrong (for the caller's HCCL_E_PARA line).
  std::string Set(uintptr_t base, size_t size);
  std::string Unset(uintptr_t base);
  std::string Activate(uintptr_t ptr, size_t size, const void* handle);
  std::string Deactivate(uintptr_t ptr);

  // Whether [ptr, ptr + size) lies inside one activated piece.
  bool Activated(uintptr_t ptr, size_t size) const;
  size_t range_count() const;
  size_t active_count() const;

 private:
  struct Piece {
    size_t size;
    const void* handle;  // the physical allocation (aclrtDrvMemHandle); ranges: nullptr
  };
  // The entry of `map` whose [start, start + size) holds ptr, or end.
  static std::map<uintptr_t, Piece>::const_iterator Holding(const std::map<uintptr_t, Piece>& map,
                                                            uintptr_t ptr);
  static bool Overlaps(const std::map<uintptr_t, Piece>& map, uintptr_t ptr, size_t size);

  mutable std::mutex mu_;
  std::map<uintptr_t, Piece> ranges_;  // by base
  std::map<uintptr_t, Piece> active_;  // by start
};

}  // namespace vigil::comm
