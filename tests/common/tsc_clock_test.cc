#include "common/tsc_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace vigil {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// Every TscNow read between two SteadyClock reads lies between them, give or take the
// conversion's error (well under a microsecond; the slack is far wider, for a loaded machine's
// sake it covers nothing else: a preempted read only widens the bracket).
constexpr auto kSlack = microseconds(50);

// Calls TscNow back to back for `run` (past the first rate and several re-anchorings), checks
// each read against its bracket; returns how many reads were made.
long CheckAgainstSteady(SteadyClock::duration run) {
  const auto until = SteadyClock::now() + run;
  long reads = 0;
  for (;;) {
    const auto before = SteadyClock::now();
    const auto t = TscNow();
    const auto after = SteadyClock::now();
    ++reads;
    EXPECT_GE(t, before - kSlack) << "read " << reads;
    EXPECT_LE(t, after + kSlack) << "read " << reads;
    if (::testing::Test::HasFailure() || after >= until) break;
  }
  return reads;
}

TEST(TscClock, FollowsSteadyClock) {
  // Whichever clock it reads here (the counter where the kernel keeps time with it).
  std::printf("counter in use: %s\n", TscClockUsable() ? "yes" : "no");
  EXPECT_GT(CheckAgainstSteady(milliseconds(300)), 0);
}

TEST(TscClock, EveryThreadFollowsIt) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([] { CheckAgainstSteady(milliseconds(200)); });
  }
  for (auto& t : threads) t.join();
}

TEST(TscClock, RareReadsStayRight) {
  // A thread that reads it seldom: its anchors are far apart, each read may re-anchor.
  for (int i = 0; i < 4; ++i) {
    const auto before = SteadyClock::now();
    const auto t = TscNow();
    const auto after = SteadyClock::now();
    EXPECT_GE(t, before - kSlack);
    EXPECT_LE(t, after + kSlack);
    std::this_thread::sleep_for(milliseconds(60));
  }
}

TEST(TscClock, ANewThreadUsesTheProcesssRateAtOnce) {
  if (!TscClockUsable()) GTEST_SKIP() << "the kernel does not keep time with the counter here";
  // The process has a rate once its reads span a millisecond or more.
  const auto until = SteadyClock::now() + milliseconds(3);
  while (SteadyClock::now() < until) TscNow();
  TscNow();
  ASSERT_TRUE(TscThreadConverts());
  // A thread that never read the clock converts from its first read on (a tight anchor: a
  // preempted read is not one, so a few are allowed), long before 50 ms of its own reads.
  bool converts = false;
  std::thread([&] {
    for (int i = 0; i < 100 && !converts; ++i) {
      const auto before = SteadyClock::now();
      const auto t = TscNow();
      const auto after = SteadyClock::now();
      EXPECT_GE(t, before - kSlack);
      EXPECT_LE(t, after + kSlack);
      converts = TscThreadConverts();
    }
  }).join();
  EXPECT_TRUE(converts);
}

}  // namespace
}  // namespace vigil
