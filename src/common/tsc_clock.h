// SteadyClock's time, read from the CPU's time-stamp counter where that is safe: for the clock
// reads of every op (its start and its finish in the flight recorder), which on a small op are a
// sizable part of its host work. clock_gettime(CLOCK_MONOTONIC) costs ~24 ns on this VM (kvm
// guest, vDSO), the counter ~10 ns: an 8-byte AllReduce between two ranks takes ~230 ns, two
// reads of the clock were ~45 of them.
//
// Only where the kernel itself keeps time with the counter (clocksource "tsc": it is then
// invariant and synchronized across CPUs, or the kernel would have left it); elsewhere, and on
// other CPUs than x86-64, it is SteadyClock::now(). Each thread converts with its own anchor (a
// SteadyClock reading and the counter beside it) and the process's rate, measured between two
// of its anchors 1 ms apart at first and 50 ms apart from then on, so that it follows the
// kernel's clock (NTP slews included) to within about a microsecond; a thread re-anchors at
// most every 50 ms of the counter. Until the process has a rate (its first millisecond of
// reads) TscNow reads SteadyClock: the first read of a process is best made early (the API's
// first call), so that its ops find the rate there.
#pragma once

#include "common/time_util.h"

namespace vigil {

SteadyClock::time_point TscNow();

// Tests: whether TscNow reads the counter on this machine (false: it is SteadyClock::now()).
bool TscClockUsable();

// Tests: whether this thread's next TscNow converts a counter read (it has an anchor and the
// process's rate), rather than reading SteadyClock.
bool TscThreadConverts();

}  // namespace vigil
