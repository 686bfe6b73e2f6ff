#include "common/time_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <vector>

namespace vigil {
namespace {

WallClock::time_point LocalTime(int year, int mon, int day, int hour, int min, int sec,
                                int micros) {
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;
  const time_t t = mktime(&tm);
  return WallClock::time_point(std::chrono::duration_cast<WallClock::duration>(
      std::chrono::seconds(t) + std::chrono::microseconds(micros)));
}

TEST(TimeUtil, Formats) {
  const auto t = LocalTime(2025, 10, 24, 11, 18, 29, 597044);
  EXPECT_EQ(FormatPlogTime(t), "2025-10-24-11:18:29.597.044");
  EXPECT_EQ(FormatFileStamp(t), "20251024111829597");
  EXPECT_EQ(FormatCTime(t), "Fri Oct 24 11:18:29 2025");
  EXPECT_EQ(FormatCqeTime(t), "2025-10-24 11:18:29.597044");
}

TEST(TimeUtil, PaddingOfSmallFields) {
  const auto t = LocalTime(2025, 3, 5, 1, 2, 3, 4005);
  EXPECT_EQ(FormatPlogTime(t), "2025-03-05-01:02:03.004.005");
  EXPECT_EQ(FormatFileStamp(t), "20250305010203004");
  EXPECT_EQ(FormatCTime(t), "Wed Mar  5 01:02:03 2025");  // asctime pads the day with a space
  EXPECT_EQ(FormatCqeTime(t), "2025-03-05 01:02:03.004005");
}

TEST(TimeUtil, ParseRoundTrip) {
  const auto t = LocalTime(2025, 12, 24, 14, 10, 31, 94189);
  WallClock::time_point parsed;
  ASSERT_TRUE(ParsePlogTime(FormatPlogTime(t), &parsed));
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::microseconds>(parsed - t).count(), 0);

  const auto now = WallClock::now();
  ASSERT_TRUE(ParsePlogTime(FormatPlogTime(now), &parsed));
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::microseconds>(parsed - now).count(), 0);
}

TEST(TimeUtil, ParseRejectsMalformed) {
  WallClock::time_point parsed;
  for (const char* bad : {"", "2025-10-24", "2025-10-24 11:18:29.597.044",
                          "2025-10-24-11:18:29.597", "2025-13-24-11:18:29.597.044",
                          "2025-10-24-11:18:29.597.044x", "garbage"}) {
    EXPECT_FALSE(ParsePlogTime(bad, &parsed)) << bad;
  }
}

// The formatters compute local time themselves (cached offset + calendar arithmetic); they must
// agree with localtime_r in zones with DST and odd offsets, across transitions and leap days.
TEST(TimeUtil, AgreesWithLocaltimeInManyZones) {
  const char* saved = std::getenv("TZ");
  const std::string saved_tz = saved != nullptr ? saved : "";
  for (const char* zone : {"UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu",
                           "Australia/Lord_Howe", "America/St_Johns"}) {
    setenv("TZ", zone, 1);
    ResetTimeZoneCacheForTesting();
    // 2023-12-31 .. 2025-01-02 in steps of 7h13m17s (hits both DST transitions and Feb 29),
    // plus the second around each of the 2024 EU/US transitions.
    std::vector<int64_t> instants;
    for (int64_t t = 1703980800; t < 1735776000; t += 7 * 3600 + 13 * 60 + 17) instants.push_back(t);
    for (int64_t t : {1711846799LL, 1711846800LL, 1729990799LL, 1729990800LL, 1710054000LL,
                      1710053999LL, 1730613600LL, 1730613599LL, 1709164800LL, 0LL}) {
      instants.push_back(t);
    }
    for (int64_t t : instants) {
      const time_t tt = static_cast<time_t>(t);
      struct tm tm {};
      localtime_r(&tt, &tm);
      char want[64], want_c[64];
      std::strftime(want, sizeof(want), "%Y-%m-%d-%H:%M:%S", &tm);
      std::strftime(want_c, sizeof(want_c), "%a %b %e %H:%M:%S %Y", &tm);
      const auto tp = WallClock::time_point(std::chrono::seconds(t) + std::chrono::microseconds(123456));
      EXPECT_EQ(FormatPlogTime(tp), std::string(want) + ".123.456") << zone << " " << t;
      EXPECT_EQ(FormatCTime(tp), want_c) << zone << " " << t;
    }
  }
  if (saved != nullptr) {
    setenv("TZ", saved_tz.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  ResetTimeZoneCacheForTesting();
}

TEST(TimeUtil, NowMicrosAdvances) {
  const uint64_t a = NowMicros();
  const uint64_t b = NowMicros();
  EXPECT_GE(b, a);
  EXPECT_GT(a, 1600000000ull * 1000000ull);  // after 2020: really microseconds since the epoch
}

}  // namespace
// WallAt gives the wall time of a steady moment just read: the wall clock's own reading around
// it (within the two reads and the offset's age), and later moments give later times.
TEST(TimeUtil, WallAtFollowsTheWallClock) {
  using std::chrono::milliseconds;
  for (int i = 0; i < 3; ++i) {
    const WallClock::time_point before = WallClock::now();
    const WallClock::time_point at = WallAt(SteadyClock::now());
    const WallClock::time_point after = WallClock::now();
    // The offset may be up to a second old: allow the clocks' drift over it, generously.
    EXPECT_GE(at, before - milliseconds(50));
    EXPECT_LE(at, after + milliseconds(50));
  }
  WallClock::time_point last = WallAt(SteadyClock::now());
  for (int i = 0; i < 1000; ++i) {
    const WallClock::time_point t = WallAt(SteadyClock::now());
    EXPECT_GE(t, last);
    last = t;
  }
  // A moment past the offset's second: measured again, so it reads the wall clock then.
  const SteadyClock::time_point later = SteadyClock::now() + std::chrono::seconds(2);
  const WallClock::time_point at_later = WallAt(later);
  EXPECT_LE(at_later, WallClock::now() + milliseconds(50));
  EXPECT_GE(at_later, WallClock::now() - milliseconds(50));
}

}  // namespace vigil
