#include "common/time_util.h"

#include <cstdio>
#include <cstring>
#include <ctime>

namespace vigil {
namespace {

struct Split {
  time_t sec;
  int64_t micros;  // [0, 1e6)
};

Split SplitTime(WallClock::time_point t) {
  const int64_t us =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  int64_t sec = us / 1000000;
  int64_t rem = us % 1000000;
  if (rem < 0) {  // before the epoch: keep the fraction positive
    rem += 1000000;
    sec -= 1;
  }
  return {static_cast<time_t>(sec), rem};
}

// localtime_r takes a lock and consults the zone each call; log lines in one second share it.
struct tm LocalTm(time_t sec) {
  thread_local time_t cached_sec = -1;
  thread_local struct tm cached_tm {};
  if (sec != cached_sec) {
    localtime_r(&sec, &cached_tm);
    cached_sec = sec;
  }
  return cached_tm;
}

}  // namespace

size_t FormatPlogTimeTo(WallClock::time_point t, char* buf) {
  const Split s = SplitTime(t);
  // The "YYYY-MM-DD-hh:mm:ss" part changes once a second: format it once per thread and second.
  thread_local time_t cached_sec = -1;
  thread_local char prefix[64];  // 19 used; the slack keeps -Wformat-truncation quiet
  if (s.sec != cached_sec) {
    const struct tm tm = LocalTm(s.sec);
    std::snprintf(prefix, sizeof(prefix), "%04d-%02d-%02d-%02d:%02d:%02d",
                  (tm.tm_year + 1900) % 10000, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                  tm.tm_sec);
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
  const struct tm tm = LocalTm(s.sec);
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d%03d", tm.tm_year + 1900,
                              tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                              static_cast<int>(s.micros / 1000));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string FormatCTime(WallClock::time_point t) {
  const Split s = SplitTime(t);
  const struct tm tm = LocalTm(s.sec);
  char buf[64];
  // asctime's layout without its trailing newline: day of month padded with a space.
  const size_t n = std::strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm);
  return std::string(buf, n);
}

std::string FormatCqeTime(WallClock::time_point t) {
  const Split s = SplitTime(t);
  const struct tm tm = LocalTm(s.sec);
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06d",
                              tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                              tm.tm_sec, static_cast<int>(s.micros));
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

bool ParsePlogTime(const std::string& text, WallClock::time_point* out) {
  int year, mon, day, hour, min, sec, ms, us;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d-%2d:%2d:%2d.%3d.%3d%n", &year, &mon, &day, &hour,
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
  tm.tm_isdst = -1;  // let the zone rules decide, as the writer used localtime
  const time_t secs = mktime(&tm);
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

}  // namespace vigil
