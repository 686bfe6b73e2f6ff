// The progress engine: drives every transfer of one algorithm step at once.
//
// Each sweep offers every pending transfer to its link (non-blocking). When a sweep moves
// nothing, it spins for a few microseconds (a peer on another core may be about to publish),
// then blocks: on one link's WaitReady when all pending links share a wake domain (shm links
// of one Transport) or only one is pending, on poll(2) over the sockets when every pending link
// is pollable (TCP), else briefly on one link in turn. Blocking waits are capped so the abort
// flag and the deadline are noticed within kMaxBlockMs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "transport/link.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VIGIL_CPU_RELAX() _mm_pause()
#else
#define VIGIL_CPU_RELAX() \
  do {                    \
  } while (0)
#endif

namespace vigil::transport {

const char* LinkTypeName(LinkType type) {
  switch (type) {
    case LinkType::kShm:
      return "SHM";
    case LinkType::kTcp:
      return "TCP";
  }
  return "UNKNOWN";
}

namespace {

constexpr auto kSpin = std::chrono::microseconds(5);
constexpr int kMaxBlockMs = 50;    // abort/deadline checked at least this often
constexpr int kRotateBlockMs = 1;  // waiting on one of several unrelated links

std::string Describe(const Xfer& x, size_t done) {
  const Endpoint& r = x.link->remote();
  return fmt::format("{} of {} bytes {} rank[{}] ({}:{}, {} link), {} bytes done",
                     x.send ? "send" : "recv", x.bytes, x.send ? "to" : "from", r.rank, r.host_ip,
                     r.port, LinkTypeName(x.link->type()), done);
}

int MsUntil(SteadyClock::time_point deadline, int cap) {
  if (deadline == SteadyClock::time_point::max()) return cap;
  auto now = SteadyClock::now();
  if (deadline <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
  return static_cast<int>(std::min<int64_t>(ms, cap));
}

}  // namespace

HcclResult Progress(std::vector<Xfer>& xfers, const WaitPolicy& wait, ProgressError* error) {
  ProgressError local_error;
  ProgressError* err = error != nullptr ? error : &local_error;
  *err = ProgressError{};

  const size_t n = xfers.size();
  std::vector<size_t> done(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (xfers[i].bytes > 0 && (xfers[i].link == nullptr || xfers[i].buf == nullptr)) {
      err->code = HCCL_E_PARA;
      err->link = xfers[i].link;
      err->reason = fmt::format("transfer {} of {} bytes has no {}", i, xfers[i].bytes,
                                xfers[i].link == nullptr ? "link" : "buffer");
      return err->code;
    }
  }

  std::vector<size_t> pending;
  pending.reserve(n);
  std::vector<pollfd> fds;
  size_t rotate = 0;
  bool idle = false;
  SteadyClock::time_point idle_since{};

  for (;;) {
    bool moved_any = false;
    pending.clear();
    for (size_t i = 0; i < n; ++i) {
      Xfer& x = xfers[i];
      while (done[i] < x.bytes) {
        size_t moved = 0;
        char* p = static_cast<char*>(x.buf) + done[i];
        HcclResult r = x.send ? x.link->TrySend(p, x.bytes - done[i], &moved)
                              : x.link->TryRecv(p, x.bytes - done[i], &moved);
        if (r != HCCL_SUCCESS) {
          err->code = r;
          err->link = x.link;
          err->reason = fmt::format("link error during {}", Describe(x, done[i]));
          return r;
        }
        if (moved == 0) break;
        done[i] += moved;
        moved_any = true;
      }
      if (done[i] < x.bytes) pending.push_back(i);
    }
    if (pending.empty()) return HCCL_SUCCESS;

    if (wait.abort != nullptr) {
      int code = wait.abort->load(std::memory_order_acquire);
      if (code != 0) {
        const Xfer& x = xfers[pending.front()];
        err->code = static_cast<HcclResult>(code);
        err->link = x.link;
        err->reason = fmt::format("aborted while waiting for {}", Describe(x, done[pending.front()]));
        return err->code;
      }
    }
    if (moved_any) {
      idle = false;
      continue;
    }
    auto now = SteadyClock::now();
    if (now >= wait.deadline) {
      const Xfer& x = xfers[pending.front()];
      err->code = HCCL_E_TIMEOUT;
      err->link = x.link;
      err->timed_out = true;
      err->reason = fmt::format("timeout waiting for {} ({} transfers pending)",
                                Describe(x, done[pending.front()]), pending.size());
      return err->code;
    }
    if (!idle) {
      idle = true;
      idle_since = now;
    }
    if (now - idle_since < kSpin) {
      for (int k = 0; k < 32; ++k) VIGIL_CPU_RELAX();
      continue;
    }

    // Block. Prefer a wait that any pending link can end.
    const Xfer& first = xfers[pending.front()];
    uintptr_t domain = first.link->wait_domain();
    bool same_domain = domain != 0;
    for (size_t k = 1; k < pending.size() && same_domain; ++k) {
      same_domain = xfers[pending[k]].link->wait_domain() == domain;
    }
    if (pending.size() == 1 || same_domain) {
      first.link->WaitReady(first.send, MsUntil(wait.deadline, kMaxBlockMs));
      continue;
    }
    fds.clear();
    bool pollable = true;
    for (size_t k = 0; k < pending.size() && pollable; ++k) {
      const Xfer& x = xfers[pending[k]];
      pollable = x.link->AppendPollFds(x.send, &fds);
    }
    if (pollable && !fds.empty()) {
      (void)::poll(fds.data(), fds.size(), MsUntil(wait.deadline, kMaxBlockMs));
      continue;
    }
    const Xfer& x = xfers[pending[rotate++ % pending.size()]];
    x.link->WaitReady(x.send, MsUntil(wait.deadline, kRotateBlockMs));
  }
}

}  // namespace vigil::transport
