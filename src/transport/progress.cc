// The progress engine: drives every transfer of one algorithm step at once.
//
// Each sweep offers every pending transfer to its link (non-blocking). When a sweep moves
// nothing, it spins for a few microseconds (a peer on another core may be about to publish),
// then polls with sched_yield() for up to kYieldPoll (with more ranks than cores the peer is
// often waiting for our core), then blocks: on one link's WaitReady when all pending links
// share a wake domain (shm links of one Transport) or only one is pending, on poll(2) over the
// sockets when every pending link is pollable (TCP), else briefly on one link in turn. Blocking
// waits are capped so the abort flag and the deadline are noticed within kMaxBlockMs.
//
// A transfer may carry a head (an op header) ahead of its body: a receive's hook judges the
// head before any body byte is taken, and a send's gate may hold its body back (link.h).
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/cpu_relax.h"
#include "common/hccl_result.h"
#include "transport/link.h"

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

HcclResult Link::TrySend2(const void* a, size_t na, const void* b, size_t nb, size_t* moved) {
  size_t m1 = 0, m2 = 0;
  HcclResult r = TrySend(a, na, &m1);
  if (r == HCCL_SUCCESS && m1 == na && nb > 0) r = TrySend(b, nb, &m2);
  *moved = m1 + m2;
  return r;
}

namespace {

// Idle waiting, in three phases. A peer on another core publishes within a few hundred
// nanoseconds of being ready, so first spin briefly (unless WaitPolicy::spin is off: more ranks
// than cores). Then poll with sched_yield(): with more
// ranks than cores (the usual case on a shared host) the peer we wait for is often runnable on
// our own core, and yielding hands it the CPU at the cost of a syscall instead of a futex
// sleep and wake-up (two context switches and a syscall on the waker's side). OpenMPI's vader
// does the same when oversubscribed. Only after that, block until woken.
// The yield phase lasts 2 ms: a rendezvous step of a 1-2 MiB AlltoAll (every peer reads its
// block from this rank's buffer, 4 ranks on 2 cores) often waits longer than 200 us, and a rank
// asleep in a futex then finished late — 2 ms instead of 200 us gave AlltoAll 1-2 MiB +20%
// busbw (better in 7 of 8 alternating rounds each) and changed neither AllReduce, AllGather nor
// small-message latency. A peer late by more than that (a rank still computing) costs at most
// 2 ms of yields before this rank sleeps.
constexpr auto kSpin = std::chrono::microseconds(2);
constexpr auto kYieldPoll = std::chrono::milliseconds(2);
// Between two yields, poll shm links without entering the kernel for this long: a yield with
// nothing else runnable on our core returns at once, and a waiter whose peer runs on the other
// core then spent its wait in back-to-back sched_yield calls (~26 per 64 B AllReduce, 4 ranks on
// 2 cores: more syscall time than the op's own work).
constexpr auto kYieldGap = std::chrono::microseconds(1);
constexpr int kMaxBlockMs = 50;    // abort/deadline checked at least this often
constexpr int kRotateBlockMs = 1;  // waiting on one of several unrelated links

std::string Describe(const Xfer& x, size_t done) {
  const Endpoint& r = x.link->remote();
  return fmt::format("{} of {} bytes {} rank[{}] ({}:{}, {} link), {} bytes done",
                     x.send ? "send" : "recv", x.head_bytes + x.bytes, x.send ? "to" : "from",
                     r.rank, r.host_ip, r.port, LinkTypeName(x.link->type()), done);
}

int MsUntil(SteadyClock::time_point deadline, int cap) {
  if (deadline == SteadyClock::time_point::max()) return cap;
  auto now = SteadyClock::now();
  if (deadline <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
  return static_cast<int>(std::min<int64_t>(ms, cap));
}

// Body bytes x may move now: all of them, or its eager window while its gate is closed.
size_t BodyCap(const Xfer& x) {
  return x.gate != nullptr && !*x.gate ? x.eager : x.bytes;
}

// One non-blocking attempt on x; *moved gets the bytes moved (head and body). A send moves
// no body byte past `body_cap` (its gate's eager window while the gate is closed).
HcclResult Step(Xfer& x, size_t done, size_t* moved, size_t body_cap) {
  const size_t hb = x.head_bytes;
  if (done < hb) {
    char* h = static_cast<char*>(x.head) + done;
    const size_t nb = std::min(x.bytes, body_cap);
    if (x.send && nb == 0) return x.link->TrySend(h, hb - done, moved);
    if (x.send && x.lend) return x.link->TrySendLent(h, hb - done, x.buf, nb, moved);
    if (x.send) return x.link->TrySend2(h, hb - done, x.buf, nb, moved);
    // Never past the head: the hook runs first.
    return x.link->TryRecvHead(h, hb - done, x.bytes, moved);
  }
  char* p = static_cast<char*>(x.buf) + (done - hb);
  const size_t left = std::min(x.bytes, body_cap) - (done - hb);
  if (x.send && x.lend) return x.link->TrySendLent(nullptr, 0, p, left, moved);
  return x.send ? x.link->TrySend(p, left, moved) : x.link->TryRecv(p, left, moved);
}

// A failed Progress tells each transfer how far it got (Xfer::done).
HcclResult Failed(std::vector<Xfer>& xfers, const size_t* done, HcclResult rc) {
  for (size_t i = 0; i < xfers.size(); ++i) xfers[i].done = done[i];
  return rc;
}

HcclResult ProgressAll(std::vector<Xfer>& xfers, const WaitPolicy& wait, ProgressError* error);

// How long a failed Progress keeps reading heads from links that are already broken or closed:
// what a peer sent before it closed arrives within this on loopback and LANs (the peer's data
// socket EOF, or the shm ring's end, usually stops the look much sooner).
constexpr auto kLastLook = std::chrono::milliseconds(200);

// A transfer failed: before Progress returns, the heads (op headers) that peers already sent
// on this step's receives are still taken and judged. A peer that rejected this rank's op and
// closed its links sent its own header first; the mismatch it shows is the root cause and must
// be named (EI0005), not the close that followed it (a late rank would otherwise see only
// closed links). Healthy links get one non-blocking try, broken ones are read until their data
// ends or kLastLook passes. True when a hook rejected a head (*err then says so).
bool LastLook(std::vector<Xfer>& xfers, size_t* done, const bool* held, ProgressError* err) {
  const auto until = SteadyClock::now() + kLastLook;
  bool rejected = false;
  for (size_t i = 0; i < xfers.size() && !rejected; ++i) {
    Xfer& x = xfers[i];
    if (x.send || x.hook == nullptr || held[i] || done[i] >= x.head_bytes) continue;
    for (;;) {
      size_t moved = 0;
      if (Step(x, done[i], &moved, 0) != HCCL_SUCCESS) break;
      done[i] += moved;
      if (done[i] >= x.head_bytes) {
        if (x.hook->on_head(x.hook->ctx, x.hook_arg, x.head) == HeadVerdict::kFail) {
          err->code = HCCL_E_PARA;
          err->link = x.link;
          err->reason = fmt::format("op header rejected during {} (after: {})",
                                    Describe(x, done[i]), err->reason);
          rejected = true;
        }
        break;
      }
      if (moved > 0) continue;
      if (!x.link->broken() || SteadyClock::now() >= until) break;
      x.link->WaitReady(false, MsUntil(until, kMaxBlockMs));
    }
  }
  return rejected;
}

}  // namespace

HcclResult Progress(std::vector<Xfer>& xfers, const WaitPolicy& wait, ProgressError* error) {
  const HcclResult rc = ProgressAll(xfers, wait, error);
  if (rc != HCCL_SUCCESS) {
    // Giving up: no peer may read a lent buffer after the caller got it back.
    for (Xfer& x : xfers) {
      if (x.send && x.lend && x.link != nullptr) x.link->RecallLent();
    }
  }
  return rc;
}

namespace {

HcclResult ProgressAll(std::vector<Xfer>& xfers, const WaitPolicy& wait, ProgressError* error) {
  ProgressError local_error;
  ProgressError* err = error != nullptr ? error : &local_error;
  *err = ProgressError{};

  const size_t n = xfers.size();
  // Small transfers lists are the rule; keep the bookkeeping off the heap.
  size_t done_small[16];
  std::vector<size_t> done_big;
  size_t* done = done_small;
  if (n > 16) {
    done_big.assign(n, 0);
    done = done_big.data();
  } else {
    std::fill(done_small, done_small + n, 0);
  }
  for (size_t i = 0; i < n; ++i) {
    const Xfer& x = xfers[i];
    if ((x.bytes > 0 && (x.link == nullptr || x.buf == nullptr)) ||
        (x.head_bytes > 0 && (x.link == nullptr || x.head == nullptr))) {
      err->code = HCCL_E_PARA;
      err->link = x.link;
      err->reason = fmt::format("transfer {} of {} bytes has no {}", i, x.head_bytes + x.bytes,
                                x.link == nullptr ? "link" : "buffer");
      return err->code;
    }
  }

  // Receives whose head the hook put on hold: their bodies are never taken.
  bool held_small[16] = {};
  std::vector<char> held_big;
  bool* held = held_small;
  if (n > 16) {
    held_big.assign(n, 0);
    held = reinterpret_cast<bool*>(held_big.data());
  }

  size_t pending_small[16];
  std::vector<size_t> pending_big;
  size_t* pending = pending_small;
  if (n > 16) {
    pending_big.resize(n);
    pending = pending_big.data();
  }
  size_t npending = 0;
  std::vector<pollfd> fds;
  size_t rotate = 0;
  bool idle = false;
  SteadyClock::time_point idle_since{};
  SteadyClock::time_point last_yield{};
  bool poll_between_yields = false;

  size_t nheld = 0;
  IdleWork* idle_work = wait.idle;
  for (;;) {
    bool moved_any = false;
    npending = 0;
    for (size_t i = 0; i < n; ++i) {
      Xfer& x = xfers[i];
      const size_t total = x.head_bytes + x.bytes;
      if (held[i]) {
        pending[npending++] = i;
        continue;
      }
      while (done[i] < total) {
        const size_t body_cap = BodyCap(x);
        if (done[i] >= x.head_bytes + body_cap) break;
        size_t moved = 0;
        HcclResult r = Step(x, done[i], &moved, body_cap);
        if (r != HCCL_SUCCESS) {
          err->code = r;
          err->link = x.link;
          err->reason = fmt::format("link error during {}", Describe(x, done[i]));
          if (LastLook(xfers, done, held, err)) return Failed(xfers, done, err->code);
          return Failed(xfers, done, r);
        }
        if (moved == 0) break;
        const bool head_arrived = !x.send && x.hook != nullptr && done[i] < x.head_bytes &&
                                  done[i] + moved >= x.head_bytes;
        done[i] += moved;
        moved_any = true;
        if (head_arrived) {
          const HeadVerdict v = x.hook->on_head(x.hook->ctx, x.hook_arg, x.head);
          if (v == HeadVerdict::kFail) {
            err->code = HCCL_E_PARA;
            err->link = x.link;
            err->reason = fmt::format("op header rejected during {}", Describe(x, done[i]));
            return Failed(xfers, done, err->code);
          }
          if (v == HeadVerdict::kHold) {
            held[i] = true;
            ++nheld;
            break;
          }
        }
      }
      if (done[i] < total) pending[npending++] = i;
    }
    if (npending == 0) return HCCL_SUCCESS;

    for (const std::atomic<int>* flag : {wait.abort, wait.abort2}) {
      const int code = flag != nullptr ? flag->load(std::memory_order_acquire) : 0;
      if (code != 0) {
        const Xfer& x = xfers[pending[0]];
        err->code = ToHcclResult(code);
        err->link = x.link;
        err->reason = fmt::format("aborted while waiting for {}", Describe(x, done[pending[0]]));
        return Failed(xfers, done, err->code);
      }
    }
    if (moved_any) {
      idle = false;
      continue;
    }
    if (idle_work != nullptr) {
      if (!idle_work->Step()) idle_work = nullptr;
      continue;  // the links again before the next piece: they come first
    }
    auto now = SteadyClock::now();
    if (now >= wait.deadline) {
      const Xfer& x = xfers[pending[0]];
      err->code = HCCL_E_TIMEOUT;
      err->link = x.link;
      err->timed_out = true;
      err->reason = fmt::format("timeout waiting for {} ({} transfers pending)",
                                Describe(x, done[pending[0]]), npending);
      return Failed(xfers, done, err->code);
    }
    if (!idle) {
      idle = true;
      idle_since = now;
      // Polling between yields pays only where a sweep is a few loads (shm), not recv calls.
      poll_between_yields = true;
      for (size_t k = 0; k < npending && poll_between_yields; ++k) {
        poll_between_yields = xfers[pending[k]].link->type() == LinkType::kShm;
      }
    }
    if (wait.spin && now - idle_since < kSpin) {
      for (int k = 0; k < 32; ++k) CpuRelax();
      continue;
    }
    if (now - idle_since < kYieldPoll) {
      if (poll_between_yields && now - last_yield < kYieldGap) {
        for (int k = 0; k < 32; ++k) CpuRelax();
        continue;
      }
      sched_yield();
      last_yield = SteadyClock::now();
      continue;
    }

    for (size_t j = 0; j < npending && nheld > 0; ++j) {
      // Checked only when a whole sweep moved nothing: what the other links still hold (a
      // neighbour's header, say) is taken first.
      const Xfer& x = xfers[pending[j]];
      if (held[pending[j]] && x.link->broken()) {
        err->code = HCCL_E_REMOTE;
        err->link = x.link;
        err->reason = fmt::format("link error during {}", Describe(x, done[pending[j]]));
        return Failed(xfers, done, err->code);
      }
    }
    if (nheld == npending) {
      // Only held transfers left (an op mismatch): wait for a link to break, the deadline or
      // the abort flag; their data is there, so no link wait would block.
      ::usleep(1000);
      continue;
    }
    if (nheld > 0) {
      // Wait on what is not held.
      size_t k = 0;
      for (size_t j = 0; j < npending; ++j) {
        if (!held[pending[j]]) pending[k++] = pending[j];
      }
      npending = k;
    }

    {
      // A send its gate holds back waits for a receive of this step (the peer's header), not
      // for its link: a socket with room is always writable, so polling it returned at once
      // and the wait spun (TCP AllReduce 1-4 MiB, 4 ranks: ~100x the poll calls).
      size_t k = 0;
      for (size_t j = 0; j < npending; ++j) {
        const Xfer& x = xfers[pending[j]];
        if (!(x.send && done[pending[j]] >= x.head_bytes + BodyCap(x))) {
          pending[k++] = pending[j];
        }
      }
      if (k == 0) {
        // Only gated sends: their gates' receives finished in an earlier Progress call that
        // left them closed (a caller's bug, or a test); wait for the deadline or the abort.
        ::usleep(1000);
        continue;
      }
      npending = k;
    }

    // Block. Prefer a wait that any pending link can end.
    const Xfer& first = xfers[pending[0]];
    uintptr_t domain = first.link->wait_domain();
    bool same_domain = domain != 0;
    for (size_t k = 1; k < npending && same_domain; ++k) {
      same_domain = xfers[pending[k]].link->wait_domain() == domain;
    }
    if (npending == 1 || same_domain) {
      first.link->WaitReady(first.send, MsUntil(wait.deadline, kMaxBlockMs));
      continue;
    }
    fds.clear();
    bool pollable = true;
    for (size_t k = 0; k < npending && pollable; ++k) {
      const Xfer& x = xfers[pending[k]];
      pollable = x.link->AppendPollFds(x.send, &fds);
    }
    if (pollable && !fds.empty()) {
      (void)::poll(fds.data(), fds.size(), MsUntil(wait.deadline, kMaxBlockMs));
      continue;
    }
    const Xfer& x = xfers[pending[rotate++ % npending]];
    x.link->WaitReady(x.send, MsUntil(wait.deadline, kRotateBlockMs));
  }
}

}  // namespace

}  // namespace vigil::transport
