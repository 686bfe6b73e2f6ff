// Test-only transport: ranks are threads of this process, and every ordered pair of ranks has a
// bounded byte pipe (a ring buffer under a mutex), so a sender blocks once `capacity` bytes are
// in flight and flow control is exercised as on a real link. All links of one rank share a
// doorbell (the wait domain), so transport::Progress can block on any of them at once.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "algorithm/collective.h"
#include "transport/link.h"

namespace vigil::alg::test {

// One rank's wake-up bell: rung whenever a pipe it reads gains data or a pipe it writes gains
// room. WaitReady returns at once if it rang since the last WaitReady returned (no lost wakeups).
struct Doorbell {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t gen = 0;
  uint64_t seen = 0;
  void Ring();
  void Wait(int timeout_ms);
};

class Pipe {
 public:
  explicit Pipe(size_t capacity) : buf_(capacity) {}
  // Non-blocking; *moved may be 0.
  size_t Write(const void* p, size_t n);
  size_t Read(void* p, size_t n);

 private:
  std::mutex mu_;
  std::vector<char> buf_;
  size_t head_ = 0;  // next byte to read
  size_t size_ = 0;  // bytes in the pipe
};

class World;

class InprocLink : public transport::Link {
 public:
  InprocLink(World* world, uint32_t self, uint32_t peer);
  transport::LinkType type() const override { return transport::LinkType::kShm; }
  const transport::Endpoint& remote() const override { return remote_; }
  HcclResult TrySend(const void* buf, size_t n, size_t* moved) override;
  HcclResult TryRecv(void* buf, size_t n, size_t* moved) override;
  void WaitReady(bool for_send, int timeout_ms) override;
  bool broken() const override;
  uintptr_t wait_domain() const override;

 private:
  World* world_;
  uint32_t self_;
  uint32_t peer_;
  transport::Endpoint remote_;
};

class World {
 public:
  World(uint32_t nranks, size_t pipe_capacity);
  uint32_t size() const { return n_; }
  // Links of `rank`, indexed by member (nullptr for itself).
  std::vector<transport::Link*> LinksOf(uint32_t rank);
  // Both directions between a and b fail with HCCL_E_REMOTE from now on.
  void Break(uint32_t a, uint32_t b);

  Pipe& pipe(uint32_t from, uint32_t to) { return *pipes_[from * n_ + to]; }
  Doorbell& bell(uint32_t rank) { return *bells_[rank]; }
  bool IsBroken(uint32_t a, uint32_t b) const {
    return broken_[a * n_ + b].load(std::memory_order_acquire);
  }

 private:
  uint32_t n_;
  std::vector<std::unique_ptr<Pipe>> pipes_;
  std::vector<std::unique_ptr<Doorbell>> bells_;
  std::vector<std::unique_ptr<InprocLink>> links_;
  std::unique_ptr<std::atomic<bool>[]> broken_;
};

// A group for `rank` over the world's links with a deadline `timeout_ms` from now.
Group MakeGroup(World& world, uint32_t rank, int timeout_ms = 30000);

// Runs fn(rank) on one named thread per rank and joins them all.
template <typename Fn>
void RunRanks(uint32_t n, Fn fn) {
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&fn, r] {
      char name[16];
      snprintf(name, sizeof(name), "alg_rank%u", r);
      pthread_setname_np(pthread_self(), name);
      fn(r);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace vigil::alg::test
