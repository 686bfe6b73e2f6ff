#include "common/time_util.h"

#include <gtest/gtest.h>

#include <ctime>

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

TEST(TimeUtil, NowMicrosAdvances) {
  const uint64_t a = NowMicros();
  const uint64_t b = NowMicros();
  EXPECT_GE(b, a);
  EXPECT_GT(a, 1600000000ull * 1000000ull);  // after 2020: really microseconds since the epoch
}

}  // namespace
}  // namespace vigil
