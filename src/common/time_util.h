// Clocks and the time formats of CANN logs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace vigil {

using SteadyClock = std::chrono::steady_clock;
using WallClock = std::chrono::system_clock;

// "2025-10-24-11:18:29.597.044" (plog line stamps, opData timeStamp).
std::string FormatPlogTime(WallClock::time_point t);
// The same 27 characters written into buf (no terminating NUL), without allocating: the plog
// writer's hot path. Returns kPlogTimeLength.
inline constexpr size_t kPlogTimeLength = 27;
size_t FormatPlogTimeTo(WallClock::time_point t, char* buf);
// "20251024111652406" (plog file names: YYYYMMDDhhmmssmmm).
std::string FormatFileStamp(WallClock::time_point t);
// "Thu Oct 23 17:25:58 2025" (Cluster Exception Location, Arrival Time).
std::string FormatCTime(WallClock::time_point t);
// "2025-09-15 08:38:12.776654" (CQE error time).
std::string FormatCqeTime(WallClock::time_point t);
// Parses FormatPlogTime's form back (local time); false when malformed.
bool ParsePlogTime(const std::string& text, WallClock::time_point* out);

// Microseconds since the epoch (identifiers, flight recorder).
uint64_t NowMicros();

// The wall time at steady time `t` (a moment just read): t plus the thread's last measured
// offset between the two clocks, measured again when it is over a second old. One steady read
// gives both times for an op's records (a clock read costs ~35 ns here, a sizable part of a
// small op's host work); the wall time is off by at most the clocks' drift over that second
// (NTP slews <= 0.5 ms/s) and follows a step of the wall clock within a second.
WallClock::time_point WallAt(SteadyClock::time_point t);

// The formatters never call localtime_r on the hot path (glibc's zone lock is not fork-safe):
// the UTC offset is cached per 15 minutes and refreshed under a mutex held across fork().
// Registers that mutex's fork handlers now; the plog writer calls it before registering its
// own, so its lock is always taken first (its file-name stamps are formatted under it).
void InitTimeZoneCache();
// Tests only: forget the cached offset (after changing TZ).
void ResetTimeZoneCacheForTesting();

}  // namespace vigil
