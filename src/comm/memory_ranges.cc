#include "comm/memory_ranges.h"

#include <fmt/format.h>

namespace vigil::comm {

namespace {

std::string Hex(uintptr_t p) { return fmt::format("{:#x}", p); }

}  // namespace

std::map<uintptr_t, MemoryRanges::Piece>::const_iterator MemoryRanges::Holding(
    const std::map<uintptr_t, Piece>& map, uintptr_t ptr) {
  auto it = map.upper_bound(ptr);
  if (it == map.begin()) return map.end();
  --it;
  return ptr - it->first < it->second.size ? it : map.end();
}

bool MemoryRanges::Overlaps(const std::map<uintptr_t, Piece>& map, uintptr_t ptr, size_t size) {
  // The first entry starting at or after ptr, and the one before it.
  auto it = map.lower_bound(ptr);
  if (it != map.end() && it->first < ptr + size) return true;
  if (it != map.begin()) {
    --it;
    if (it->first + it->second.size > ptr) return true;
  }
  return false;
}

std::string MemoryRanges::Set(uintptr_t base, size_t size) {
  if (size == 0) return "size[0] is invalid: expected > 0";
  if (base + size < base) return fmt::format("range {} + {} bytes wraps around", Hex(base), size);
  std::lock_guard<std::mutex> lock(mu_);
  if (Overlaps(ranges_, base, size)) {
    auto it = Holding(ranges_, base);
    if (it == ranges_.end()) it = ranges_.lower_bound(base);
    return fmt::format("range [{}, {}) overlaps the range set at {} ({} bytes)", Hex(base),
                       Hex(base + size), Hex(it->first), it->second.size);
  }
  ranges_[base] = Piece{size, nullptr};
  return "";
}

std::string MemoryRanges::Unset(uintptr_t base) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ranges_.find(base);
  if (it == ranges_.end()) {
    return fmt::format("baseVirPtr[{}] is not the base of a range set by HcclCommSetMemoryRange",
                       Hex(base));
  }
  auto active = active_.lower_bound(base);
  if (active != active_.end() && active->first < base + it->second.size) {
    return fmt::format("the range at {} still holds memory activated at {}: call "
                       "HcclCommDeactivateCommMemory first",
                       Hex(base), Hex(active->first));
  }
  ranges_.erase(it);
  return "";
}

std::string MemoryRanges::Activate(uintptr_t ptr, size_t size, const void* handle) {
  if (size == 0) return "size[0] is invalid: expected > 0";
  if (handle == nullptr) return "handle is nullptr";
  if (ptr + size < ptr) return fmt::format("piece {} + {} bytes wraps around", Hex(ptr), size);
  std::lock_guard<std::mutex> lock(mu_);
  auto range = Holding(ranges_, ptr);
  if (range == ranges_.end()) {
    return fmt::format("virPtr[{}] is not inside a range set by HcclCommSetMemoryRange",
                       Hex(ptr));
  }
  if (ptr + size > range->first + range->second.size) {
    return fmt::format("piece [{}, {}) ends past its range [{}, {})", Hex(ptr), Hex(ptr + size),
                       Hex(range->first), Hex(range->first + range->second.size));
  }
  if (Overlaps(active_, ptr, size)) {
    return fmt::format("piece [{}, {}) overlaps memory activated before", Hex(ptr),
                       Hex(ptr + size));
  }
  active_[ptr] = Piece{size, handle};
  return "";
}

std::string MemoryRanges::Deactivate(uintptr_t ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = active_.find(ptr);
  if (it == active_.end()) {
    return fmt::format("virPtr[{}] is not the start of memory activated by "
                       "HcclCommActivateCommMemory",
                       Hex(ptr));
  }
  active_.erase(it);
  return "";
}

bool MemoryRanges::Activated(uintptr_t ptr, size_t size) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = Holding(active_, ptr);
  return it != active_.end() && ptr + size <= it->first + it->second.size;
}

size_t MemoryRanges::range_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ranges_.size();
}

size_t MemoryRanges::active_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_.size();
}

}  // namespace vigil::comm
