#include "inproc_link.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace vigil::alg::test {

void Doorbell::Ring() {
  {
    std::lock_guard<std::mutex> lock(mu);
    ++gen;
  }
  cv.notify_all();
}

void Doorbell::Wait(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu);
  if (gen == seen) {
    cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return gen != seen; });
  }
  seen = gen;
}

size_t Pipe::Write(const void* p, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t cap = buf_.size();
  n = std::min(n, cap - size_);
  const auto* src = static_cast<const char*>(p);
  size_t tail = (head_ + size_) % cap;
  for (size_t done = 0; done < n;) {
    const size_t run = std::min(n - done, cap - tail);
    std::memcpy(buf_.data() + tail, src + done, run);
    done += run;
    tail = (tail + run) % cap;
  }
  size_ += n;
  return n;
}

size_t Pipe::Read(void* p, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t cap = buf_.size();
  n = std::min(n, size_);
  auto* dst = static_cast<char*>(p);
  for (size_t done = 0; done < n;) {
    const size_t run = std::min(n - done, cap - head_);
    std::memcpy(dst + done, buf_.data() + head_, run);
    done += run;
    head_ = (head_ + run) % cap;
  }
  size_ -= n;
  return n;
}

InprocLink::InprocLink(World* world, uint32_t self, uint32_t peer)
    : world_(world), self_(self), peer_(peer) {
  remote_.rank = peer;
  remote_.host_ip = "127.0.0.1";
  remote_.host_id = "inproc";
}

HcclResult InprocLink::TrySend(const void* buf, size_t n, size_t* moved) {
  *moved = 0;
  if (broken()) return HCCL_E_REMOTE;
  *moved = world_->pipe(self_, peer_).Write(buf, n);
  if (*moved > 0) world_->bell(peer_).Ring();
  return HCCL_SUCCESS;
}

HcclResult InprocLink::TryRecv(void* buf, size_t n, size_t* moved) {
  *moved = 0;
  if (broken()) return HCCL_E_REMOTE;
  *moved = world_->pipe(peer_, self_).Read(buf, n);
  if (*moved > 0) world_->bell(peer_).Ring();
  return HCCL_SUCCESS;
}

void InprocLink::WaitReady(bool /*for_send*/, int timeout_ms) {
  world_->bell(self_).Wait(timeout_ms);
}

bool InprocLink::broken() const {
  return world_->IsBroken(self_, peer_);
}

uintptr_t InprocLink::wait_domain() const {
  return reinterpret_cast<uintptr_t>(&world_->bell(self_));
}

World::World(uint32_t nranks, size_t pipe_capacity)
    : n_(nranks), broken_(new std::atomic<bool>[nranks * nranks]) {
  for (uint32_t i = 0; i < n_ * n_; ++i) {
    pipes_.push_back(std::make_unique<Pipe>(pipe_capacity));
    broken_[i].store(false);
  }
  for (uint32_t r = 0; r < n_; ++r) bells_.push_back(std::make_unique<Doorbell>());
  for (uint32_t a = 0; a < n_; ++a) {
    for (uint32_t b = 0; b < n_; ++b) {
      links_.push_back(a == b ? nullptr : std::make_unique<InprocLink>(this, a, b));
    }
  }
}

std::vector<transport::Link*> World::LinksOf(uint32_t rank) {
  std::vector<transport::Link*> out(n_, nullptr);
  for (uint32_t b = 0; b < n_; ++b) out[b] = links_[rank * n_ + b].get();
  return out;
}

void World::Break(uint32_t a, uint32_t b) {
  broken_[a * n_ + b].store(true, std::memory_order_release);
  broken_[b * n_ + a].store(true, std::memory_order_release);
  bell(a).Ring();
  bell(b).Ring();
}

Group MakeGroup(World& world, uint32_t rank, int timeout_ms) {
  Group g;
  g.rank = rank;
  g.size = world.size();
  g.links = world.LinksOf(rank);
  g.wait.deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  return g;
}

}  // namespace vigil::alg::test
