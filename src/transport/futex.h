// Futex wait/wake on 32-bit words that may live in memory shared between processes (a memfd
// mapped MAP_SHARED): the non-PRIVATE operations key on the backing page, so a waiter in one
// process is woken by a waker in another. Waits are always bounded by a timeout.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace vigil::transport {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

// Sleeps while *word == expected, at most timeout_ms (spurious returns are fine).
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int timeout_ms) {
  if (timeout_ms <= 0) return;
  timespec ts;
  ts.tv_sec = timeout_ms / 1000;
  ts.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1000000L;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// A wake-up word shared by every shm link of one Transport: writers bump seq and wake only
// when waiters says someone sleeps, so the fast path costs one shared load.
struct Doorbell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};

  void Ring() {
    seq.fetch_add(1, std::memory_order_seq_cst);
    FutexWakeAll(&seq);
  }
  void RingIfWaiting() {
    if (waiters.load(std::memory_order_seq_cst) != 0) Ring();
  }
};

}  // namespace vigil::transport
