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

// The formatters never call localtime_r on the hot path (glibc's zone lock is not fork-safe):
// the UTC offset is cached per 15 minutes and refreshed under a mutex held across fork().
// Registers that mutex's fork handlers now; the plog writer calls it before registering its
// own, so its lock is always taken first (its file-name stamps are formatted under it).
void InitTimeZoneCache();
// Tests only: forget the cached offset (after changing TZ).
void ResetTimeZoneCacheForTesting();

}  // namespace vigil
