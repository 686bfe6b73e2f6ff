// What the securec functions share (include/securec.h): the size limits per character
// type, overlap tests and a clear the compiler may not drop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>

#include "securec.h"

namespace vigil::securec {

// The largest destMax/count each string function accepts, in elements of its character type.
template <typename Char>
inline constexpr size_t kStringMax = SECUREC_STRING_MAX_LEN / sizeof(Char);

inline size_t BoundedLength(const char* s, size_t max) {
  return strnlen(s, max);
}
inline size_t BoundedLength(const wchar_t* s, size_t max) {
  return wcsnlen(s, max);
}

// Addresses compared as integers: the buffers may belong to unrelated objects, where ordering
// the pointers themselves is unspecified.
inline uintptr_t Addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

// Whether [a, a + bytes) and [b, b + bytes) share a byte; equal starts are not counted (every
// function treats dest == src on its own).
inline bool RangesOverlap(const void* a, const void* b, size_t bytes) {
  const uintptr_t x = Addr(a);
  const uintptr_t y = Addr(b);
  return (x < y && y - x < bytes) || (y < x && x - y < bytes);
}

// memset that survives optimisation: a secret being wiped is often never read again, and after
// inlining the compiler could otherwise drop the store as dead.
inline void FillBytes(void* dest, int c, size_t bytes) {
  memset(dest, c, bytes);
  __asm__ __volatile__("" : : "r"(dest) : "memory");
}

}  // namespace vigil::securec
