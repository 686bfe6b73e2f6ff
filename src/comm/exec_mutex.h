// The lock that keeps one op of a communicator at a time: a mutex (lock, try_lock, unlock, so
// std::unique_lock takes it) on one atomic word. Every op takes it once and it is contended only
// when a user feeds one communicator from two streams at once (fault F8), so the uncontended
// pair is what counts: one compare-and-swap and one exchange, where pthread_mutex_trylock and
// pthread_mutex_unlock cost ~85 instructions an op. A waiter sleeps in the kernel (atomic wait).
#pragma once

#include <atomic>
#include <cstdint>

namespace vigil::comm {

class ExecMutex {
 public:
  bool try_lock() {
    uint32_t free = kFree;
    return word_.compare_exchange_strong(free, kHeld, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }
  void lock() {
    if (try_lock()) return;
    // Contended: mark the word so the holder's unlock wakes us, and sleep until it is free.
    while (word_.exchange(kContended, std::memory_order_acquire) != kFree) {
      word_.wait(kContended, std::memory_order_relaxed);
    }
  }
  void unlock() {
    if (word_.exchange(kFree, std::memory_order_release) == kContended) word_.notify_one();
  }

 private:
  static constexpr uint32_t kFree = 0;
  static constexpr uint32_t kHeld = 1;
  static constexpr uint32_t kContended = 2;  // held, and someone may be waiting
  std::atomic<uint32_t> word_{kFree};
};

}  // namespace vigil::comm
