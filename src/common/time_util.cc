#include "common/time_util.h"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>

#include "common/tls.h"

namespace vigil {
namespace {

// Local time without glibc's localtime_r on the hot path. localtime_r takes glibc's internal
// tzset lock, which no fork handler protects: a child forked while another thread held it
// deadlocks on its first log line. So the UTC offset is cached per 15-minute bucket (zone
// transitions fall on such boundaries), refreshed under our own mutex that is held across
// fork(), and the calendar fields are computed arithmetically.

constexpr int64_t kBucketSeconds = 900;

std::mutex& TzMutex() {
  static std::mutex* mu = [] {
    auto* m = new std::mutex;  // leaked: used from static destructors and fork handlers
    pthread_atfork([] { TzMutex().lock(); }, [] { TzMutex().unlock(); },
                   [] { TzMutex().unlock(); });
    return m;
  }();
  return *mu;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// (bucket + 1) << 32 | uint32(offset); 0 = empty. One atomic so readers see a matching pair.
std::atomic<uint64_t> g_offset_cache{0};
// Bumped by ResetTimeZoneCacheForTesting so per-thread formatted prefixes are dropped too.
std::atomic<uint32_t> g_zone_generation{0};

int64_t UtcOffset(int64_t sec) {
  const int64_t bucket = FloorDiv(sec, kBucketSeconds);
  const uint64_t tag = static_cast<uint64_t>(bucket + 1) & 0xffffffffull;
  const uint64_t packed = g_offset_cache.load(std::memory_order_acquire);
  if (packed != 0 && (packed >> 32) == tag) {
    return static_cast<int32_t>(static_cast<uint32_t>(packed & 0xffffffffull));
  }
  std::lock_guard<std::mutex> lock(TzMutex());
  const time_t t = static_cast<time_t>(bucket * kBucketSeconds);
  struct tm tm {};
  localtime_r(&t, &tm);
  const int64_t offset = tm.tm_gmtoff;
  g_offset_cache.store((tag << 32) | static_cast<uint32_t>(static_cast<int32_t>(offset)),
                       std::memory_order_release);
  return offset;
}

struct Civil {
  int year, month, day, hour, minute, second, weekday;  // month 1..12, weekday 0 = Sunday
};

// Days since 1970-01-01 to a proleptic Gregorian date (the well-known era/day-of-era method).
Civil CivilFromLocalSeconds(int64_t local) {
  const int64_t days = FloorDiv(local, 86400);
  const int64_t sod = local - days * 86400;
  const int64_t z = days + 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  Civil c;
  c.year = static_cast<int>(y);
  c.month = static_cast<int>(m);
  c.day = static_cast<int>(d);
  c.hour = static_cast<int>(sod / 3600);
  c.minute = static_cast<int>(sod / 60 % 60);
  c.second = static_cast<int>(sod % 60);
  c.weekday = static_cast<int>(days + 4 - FloorDiv(days + 4, 7) * 7);  // 1970-01-01: Thursday
  return c;
}

struct Split {
  int64_t sec;
  int64_t micros;  // [0, 1e6)
};

Split SplitTime(WallClock::time_point t) {
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const int64_t sec = FloorDiv(us, 1000000);
  return {sec, us - sec * 1000000};
}

Civil LocalCivil(int64_t sec) { return CivilFromLocalSeconds(sec + UtcOffset(sec)); }

}  // namespace

void InitTimeZoneCache() { UtcOffset(SplitTime(WallClock::now()).sec); }

void ResetTimeZoneCacheForTesting() {
  std::lock_guard<std::mutex> lock(TzMutex());
  tzset();
  g_offset_cache.store(0, std::memory_order_release);
  g_zone_generation.fetch_add(1, std::memory_order_relaxed);
}

size_t FormatPlogTimeTo(WallClock::time_point t, char* buf) {
  const Split s = SplitTime(t);
  // The "YYYY-MM-DD-hh:mm:ss" part changes once a second: format it once per thread and second.
  thread_local int64_t cached_sec = INT64_MIN;
  thread_local uint32_t cached_generation = 0;
  thread_local char prefix[64];  // 19 used; the slack keeps -Wformat-truncation quiet
  const uint32_t generation = g_zone_generation.load(std::memory_order_relaxed);
  if (s.sec != cached_sec || generation != cached_generation) {
    cached_generation = generation;
    const Civil c = LocalCivil(s.sec);
    std::snprintf(prefix, sizeof(prefix), "%04d-%02d-%02d-%02d:%02d:%02d", c.year % 10000,
                  c.month, c.day, c.hour, c.minute, c.second);
    cached_sec = s.sec;
  }
  std::memcpy(buf, prefix, 19);
  const int ms = static_cast<int>(s.micros / 1000);
  const int us = static_cast<int>(s.micros % 1000);
  buf[19] = '.';
  buf[20] = static_cast<char>('0' + ms / 100);
  buf[21] = static_cast<char>('0' + ms / 10 % 10);
  buf[22] = static_cast<char>('0' + ms % 10);
  buf[23] = '.';
  buf[24] = static_cast<char>('0' + us / 100);
  buf[25] = static_cast<char>('0' + us / 10 % 10);
  buf[26] = static_cast<char>('0' + us % 10);
  return kPlogTimeLength;
}

std::string FormatPlogTime(WallClock::time_point t) {
  char buf[kPlogTimeLength];
  return std::string(buf, FormatPlogTimeTo(t, buf));
}

std::string FormatFileStamp(WallClock::time_point t) {
  const Split s = SplitTime(t);
  const Civil c = LocalCivil(s.sec);
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d%03d", c.year % 10000,
                              c.month, c.day, c.hour, c.minute, c.second,
                              static_cast<int>(s.micros / 1000));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string FormatCTime(WallClock::time_point t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const Civil c = LocalCivil(SplitTime(t).sec);
  char buf[64];
  // asctime's layout without its trailing newline: day of month padded with a space. Fixed
  // English names, as asctime prints them whatever the locale.
  const int n = std::snprintf(buf, sizeof(buf), "%s %s %2d %02d:%02d:%02d %d", kDays[c.weekday],
                              kMonths[c.month - 1], c.day, c.hour, c.minute, c.second, c.year);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string FormatCqeTime(WallClock::time_point t) {
  const Split s = SplitTime(t);
  const Civil c = LocalCivil(s.sec);
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06d",
                              c.year % 10000, c.month, c.day, c.hour, c.minute, c.second,
                              static_cast<int>(s.micros));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

bool ParsePlogTime(const std::string& text, WallClock::time_point* out) {
  int year, mon, day, hour, min, sec, ms, us;
  int consumed = 0;
  if (text.size() != kPlogTimeLength ||
      std::sscanf(text.c_str(), "%4d-%2d-%2d-%2d:%2d:%2d.%3d.%3d%n", &year, &mon, &day, &hour,
                  &min, &sec, &ms, &us, &consumed) != 8 ||
      static_cast<size_t>(consumed) != text.size()) {
    return false;
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || min < 0 ||
      min > 59 || sec < 0 || sec > 60 || ms < 0 || us < 0) {
    return false;
  }
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;  // let the zone rules decide, as the writer used local time
  time_t secs;
  {
    std::lock_guard<std::mutex> lock(TzMutex());  // mktime takes glibc's tz lock too
    secs = mktime(&tm);
  }
  if (secs == static_cast<time_t>(-1)) return false;
  if (out != nullptr) {
    *out = WallClock::time_point(std::chrono::duration_cast<WallClock::duration>(
        std::chrono::seconds(secs) + std::chrono::microseconds(ms * 1000 + us)));
  }
  return true;
}

uint64_t NowMicros() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   WallClock::now().time_since_epoch())
                                   .count());
}

WallClock::time_point WallAt(SteadyClock::time_point t) {
  struct Offset {
    SteadyClock::time_point measured;  // when (steady); epoch: never
    WallClock::duration wall_minus_steady;
  };
  thread_local Offset last{};
  Offset& o = TlsOnce(last);
  if (o.measured == SteadyClock::time_point{} || t - o.measured > std::chrono::seconds(1) ||
      t < o.measured) {
    const WallClock::time_point wall = WallClock::now();
    o.measured = t;
    o.wall_minus_steady = wall.time_since_epoch() -
                          std::chrono::duration_cast<WallClock::duration>(t.time_since_epoch());
  }
  return WallClock::time_point(
      std::chrono::duration_cast<WallClock::duration>(t.time_since_epoch()) + o.wall_minus_steady);
}

}  // namespace vigil
