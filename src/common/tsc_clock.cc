#include "common/tsc_clock.h"

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
  double ns_per_tick = 0;    // measured between the last two anchors; 0: not yet
  uint64_t span_ticks = 0;   // how long an anchor serves
};

// A rate from anchors at least this far apart, and an anchor serves for as long: an anchor is
// off by at most half of kTightTicks (~100 ns), so the rate by at most ~4e-6 and a converted
// time by ~0.2 us at the end of the span, plus what NTP slews meanwhile (<= 25 us over 50 ms in
// theory, nothing like it in practice).
constexpr int64_t kSpanNs = 50'000'000;
// A SteadyClock read bracketed by two counter reads at most this far apart was not preempted
// (a vDSO read is ~60 ticks here): only such reads become anchors.
constexpr uint64_t kTightTicks = 500;

thread_local Anchor g_anchor;

SteadyClock::time_point Reanchor(Anchor& a, uint64_t before) {
  const SteadyClock::time_point now = SteadyClock::now();
  const uint64_t after = __rdtsc();
  if (after < before || after - before > kTightTicks) return now;
  const uint64_t t = before + (after - before) / 2;
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  if (a.tsc == 0 || t <= a.tsc || ns <= a.ns) {
    a = Anchor{t, ns, a.ns_per_tick, a.span_ticks};
    return now;
  }
  if (ns - a.ns < kSpanNs) return now;  // too close for a rate: keep the older anchor
  const double ns_per_tick = static_cast<double>(ns - a.ns) / static_cast<double>(t - a.tsc);
  a = Anchor{t, ns, ns_per_tick, static_cast<uint64_t>(static_cast<double>(kSpanNs) / ns_per_tick)};
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
