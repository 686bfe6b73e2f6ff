#include "common/tsc_clock.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>

#include "common/tls.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace vigil {

#if defined(__x86_64__)
namespace {

bool KernelKeepsTimeWithTsc() {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return static_cast<bool>(f >> name) && name == "tsc";
}

struct Anchor {
  uint64_t tsc = 0;          // the counter at `ns`; 0: no anchor yet
  int64_t ns = 0;            // SteadyClock's nanoseconds since its epoch
  double ns_per_tick = 0;    // the process's rate when anchored; 0: none yet
  uint64_t span_ticks = 0;   // how long an anchor serves
};

// An anchor is off by at most half of kTightTicks (~100 ns here): a SteadyClock read bracketed
// by two counter reads at most this far apart was not preempted (a vDSO read is ~60 ticks).
constexpr uint64_t kTightTicks = 500;
// The rate is measured between two anchors of the process at least kFirstRateNs apart (it is
// then off by at most ~2e-4), and again whenever the newer is kSpanNs old (~4e-6 from then
// on, following the kernel's clock and its NTP slews). A thread's anchor serves kServeFactor
// times the span its rate was measured over, at most kSpanNs: a converted time is off by at
// most ~0.1 us + that time x the rate's error, ~1 us at the end of the span.
constexpr int64_t kFirstRateNs = 1'000'000;
constexpr int64_t kSpanNs = 50'000'000;
constexpr int64_t kServeFactor = 5;

thread_local Anchor g_anchor;

// The process's rate, shared by its threads: one that starts reading the clock uses it at once
// instead of measuring its own over its first kSpanNs (which, when it ran ops, made each of
// those reads a SteadyClock read beside two counter reads). Held by one Reanchor at a time
// (g_busy); one that finds it held returns its SteadyClock read and anchors on a later read, so
// that no read waits (nor one in a child forked while another thread held it).
struct ProcessRate {
  uint64_t base_tsc = 0;  // the anchor the next rate is measured from; 0: none yet
  int64_t base_ns = 0;
  double ns_per_tick = 0;   // 0: none yet
  int64_t measured_ns = 0;  // over how long
};
std::atomic<bool> g_busy{false};
ProcessRate g_rate;

SteadyClock::time_point Reanchor(Anchor& a, uint64_t before) {
  const SteadyClock::time_point now = SteadyClock::now();
  const uint64_t after = __rdtsc();
  if (after < before || after - before > kTightTicks) return now;
  const uint64_t t = before + (after - before) / 2;
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  double ns_per_tick = 0;
  int64_t measured_ns = 0;
  {
    if (g_busy.exchange(true, std::memory_order_acquire)) return now;
    ProcessRate& r = g_rate;
    if (r.base_tsc == 0 || t <= r.base_tsc || ns <= r.base_ns) {
      r.base_tsc = t;
      r.base_ns = ns;
    } else if (const int64_t span = ns - r.base_ns;
               span >= kSpanNs || (span >= kFirstRateNs && span > r.measured_ns)) {
      r.ns_per_tick = static_cast<double>(span) / static_cast<double>(t - r.base_tsc);
      r.measured_ns = span;
      if (span >= kSpanNs) {  // the next rate from here: it follows the kernel's clock
        r.base_tsc = t;
        r.base_ns = ns;
      }
    }
    ns_per_tick = r.ns_per_tick;
    measured_ns = r.measured_ns;
    g_busy.store(false, std::memory_order_release);
  }
  if (ns_per_tick <= 0) {
    a = Anchor{};
    return now;
  }
  const int64_t serve_ns = std::min(kSpanNs, kServeFactor * measured_ns);
  a = Anchor{t, ns, ns_per_tick,
             static_cast<uint64_t>(static_cast<double>(serve_ns) / ns_per_tick)};
  return now;
}

}  // namespace
#endif

bool TscClockUsable() {
#if defined(__x86_64__)
  static const bool usable = KernelKeepsTimeWithTsc();
  return usable;
#else
  return false;
#endif
}

bool TscThreadConverts() {
#if defined(__x86_64__)
  const Anchor& a = g_anchor;
  return TscClockUsable() && a.ns_per_tick > 0 && __rdtsc() - a.tsc < a.span_ticks;
#else
  return false;
#endif
}

SteadyClock::time_point TscNow() {
#if defined(__x86_64__)
  if (!TscClockUsable()) return SteadyClock::now();
  Anchor& a = TlsOnce(g_anchor);
  const uint64_t t = __rdtsc();
  const uint64_t d = t - a.tsc;
  if (a.ns_per_tick > 0 && t >= a.tsc && d < a.span_ticks) {
    const auto ns = a.ns + static_cast<int64_t>(static_cast<double>(d) * a.ns_per_tick);
    return SteadyClock::time_point(
        std::chrono::duration_cast<SteadyClock::duration>(std::chrono::nanoseconds(ns)));
  }
  return Reanchor(a, t);
#else
  return SteadyClock::now();
#endif
}

}  // namespace vigil
