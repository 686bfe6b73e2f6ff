// A spin-wait hint: tells the CPU the caller is busy-waiting on memory another core will write,
// so it yields pipeline resources to a sibling hyperthread and leaves the loop without a memory
// order mis-speculation when the write lands. On other architectures it does nothing.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace vigil {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace vigil
