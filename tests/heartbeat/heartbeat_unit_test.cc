// The heartbeat's pieces without sockets: neighbour graph, propagation at 1k/10k ranks, frames,
// and the exact log lines of the seed document.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <deque>

#include "dfx/heartbeat_event.h"
#include "dfx/heartbeat_frame.h"
#include "dfx/heartbeat_graph.h"

namespace vigil::dfx {
namespace {

uint32_t CeilLog2(uint32_t n) {
  uint32_t k = 0;
  while ((1ull << k) < n) ++k;
  return k;
}

// Eccentricity of `src` by BFS, skipping `removed`; UINT32_MAX when something is unreachable.
uint32_t Eccentricity(uint32_t n, uint32_t src, int64_t removed) {
  std::vector<uint32_t> dist(n, UINT32_MAX);
  std::deque<uint32_t> q{src};
  dist[src] = 0;
  while (!q.empty()) {
    uint32_t u = q.front();
    q.pop_front();
    for (uint32_t v : HeartbeatNeighbours(u, n)) {
      if (static_cast<int64_t>(v) == removed || dist[v] != UINT32_MAX) continue;
      dist[v] = dist[u] + 1;
      q.push_back(v);
    }
  }
  uint32_t ecc = 0;
  for (uint32_t v = 0; v < n; ++v) {
    if (static_cast<int64_t>(v) == removed) continue;
    ecc = std::max(ecc, dist[v]);
  }
  return ecc;
}

TEST(HeartbeatGraph, BoundedDegreeSymmetricNoSelf) {
  for (uint32_t n : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 9u, 16u, 31u, 100u, 257u, 1000u, 4096u, 10000u}) {
    for (uint32_t r = 0; r < n; ++r) {
      const auto nb = HeartbeatNeighbours(r, n);
      EXPECT_LE(nb.size(), 6u) << "n=" << n << " r=" << r;
      if (n >= 2) {
        EXPECT_GE(nb.size(), 1u);
      }
      for (uint32_t v : nb) {
        ASSERT_NE(v, r);
        ASSERT_LT(v, n);
        const auto back = HeartbeatNeighbours(v, n);
        EXPECT_TRUE(std::binary_search(back.begin(), back.end(), r))
            << "edge " << r << "-" << v << " is one-way at n=" << n;
      }
    }
  }
}

TEST(HeartbeatGraph, DiameterIsLogarithmic) {
  for (uint32_t n = 2; n <= 300; n += (n < 40 ? 1 : 37)) {
    uint32_t diameter = 0;
    for (uint32_t r = 0; r < n; ++r) diameter = std::max(diameter, Eccentricity(n, r, -1));
    EXPECT_LE(diameter, CeilLog2(n)) << "n=" << n;
  }
}

TEST(HeartbeatGraph, ConnectedWhenAnyOneRankDies) {
  for (uint32_t n : {3u, 4u, 5u, 8u, 13u, 32u, 64u}) {
    for (uint32_t dead = 0; dead < n; ++dead) {
      const uint32_t src = dead == 0 ? 1 : 0;
      EXPECT_NE(Eccentricity(n, src, dead), UINT32_MAX) << "n=" << n << " dead=" << dead;
    }
  }
}

TEST(HeartbeatSimulation, LostEventReachesEveryRankAtOneAndTenThousand) {
  for (uint32_t n : {1000u, 10000u}) {
    for (uint32_t crimer : {0u, n / 3, n - 1}) {
      const PropagationStats s = SimulatePropagation(n, crimer, true);
      EXPECT_EQ(s.reached, n - 1) << "n=" << n << " crimer=" << crimer;
      EXPECT_LE(s.hops, CeilLog2(n) + 1) << "n=" << n;
      EXPECT_LE(s.max_degree, 6u);
      // Each rank forwards a new event once to at most all its neighbours.
      EXPECT_LE(s.messages, static_cast<uint64_t>(n) * s.max_degree);
      std::printf("LOST  n=%u crimer=%u: discoverers %u, hops %u, messages %llu (%.2f/rank)\n", n,
                  crimer, s.discoverers, s.hops, static_cast<unsigned long long>(s.messages),
                  static_cast<double>(s.messages) / n);
    }
  }
}

TEST(HeartbeatSimulation, SelfReportedEventReachesEveryRank) {
  for (uint32_t n : {1u, 2u, 3u, 1000u, 10000u}) {
    const PropagationStats s = SimulatePropagation(n, n / 2, false);
    EXPECT_EQ(s.reached, n);
    EXPECT_LE(s.hops, CeilLog2(n) + 1) << "n=" << n;
  }
}

TEST(HeartbeatFrame, RoundTrips) {
  FrameReader reader;
  auto feed = [&](const std::vector<uint8_t>& bytes) {
    for (uint8_t b : bytes) reader.Append(&b, 1);  // byte by byte: reassembly
  };
  feed(EncodeHello({"10.1.2.3", 4567, 99}));
  BeatFrame beat;
  beat.comms.push_back({CommKey("a%b_1_0_2"), 3, 10, 9});
  feed(EncodeBeat(beat));
  feed(EncodeEvent({"10.1.2.3/1", "10.1.2.4/2", HbStatus::kStuck, 123456}));
  feed(EncodeBye());
  feed(EncodeReply("{\"x\":1}"));

  FrameType t;
  std::vector<uint8_t> body;
  bool bad = false;
  ASSERT_TRUE(reader.Next(&t, &body, &bad));
  ASSERT_EQ(t, FrameType::kHello);
  HelloFrame h;
  ASSERT_TRUE(DecodeHello(body, &h));
  EXPECT_EQ(h.host_ip, "10.1.2.3");
  EXPECT_EQ(h.port, 4567);
  EXPECT_EQ(h.pid, 99u);
  ASSERT_TRUE(reader.Next(&t, &body, &bad));
  ASSERT_EQ(t, FrameType::kBeat);
  BeatFrame b2;
  ASSERT_TRUE(DecodeBeat(body, &b2));
  ASSERT_EQ(b2.comms.size(), 1u);
  EXPECT_EQ(b2.comms[0].comm_key, CommKey("a%b_1_0_2"));
  EXPECT_EQ(b2.comms[0].rank, 3u);
  EXPECT_EQ(b2.comms[0].in, 10u);
  EXPECT_EQ(b2.comms[0].out, 9u);
  ASSERT_TRUE(reader.Next(&t, &body, &bad));
  ASSERT_EQ(t, FrameType::kEvent);
  EventFrame e;
  ASSERT_TRUE(DecodeEvent(body, &e));
  EXPECT_EQ(e.crimer, "10.1.2.3/1");
  EXPECT_EQ(e.informer, "10.1.2.4/2");
  EXPECT_EQ(e.status, HbStatus::kStuck);
  EXPECT_EQ(e.discovered_us, 123456u);
  ASSERT_TRUE(reader.Next(&t, &body, &bad));
  EXPECT_EQ(t, FrameType::kBye);
  ASSERT_TRUE(reader.Next(&t, &body, &bad));
  ASSERT_EQ(t, FrameType::kReply);
  std::string json;
  ASSERT_TRUE(DecodeReply(body, &json));
  EXPECT_EQ(json, "{\"x\":1}");
  EXPECT_FALSE(reader.Next(&t, &body, &bad));
  EXPECT_FALSE(bad);
}

std::vector<uint8_t> BodyOf(const std::vector<uint8_t>& frame) {
  FrameReader reader;
  reader.Append(frame.data(), frame.size());
  FrameType t;
  std::vector<uint8_t> body;
  bool bad = false;
  EXPECT_TRUE(reader.Next(&t, &body, &bad));
  return body;
}

TEST(HeartbeatFrame, StrangersBytesAreRejected) {
  FrameReader reader;
  const char* http = "GET / HTTP/1.1\r\n\r\n";
  reader.Append(reinterpret_cast<const uint8_t*>(http), strlen(http));
  FrameType t;
  std::vector<uint8_t> body;
  bool bad = false;
  EXPECT_FALSE(reader.Next(&t, &body, &bad));
  EXPECT_TRUE(bad);
  // A hello with the wrong magic decodes as not ours.
  std::vector<uint8_t> hello_body = BodyOf(EncodeHello({"1.2.3.4", 1, 1}));
  hello_body[0] ^= 0xff;
  HelloFrame h;
  EXPECT_FALSE(DecodeHello(hello_body, &h));
  // An event with an unknown status is not ours either.
  std::vector<uint8_t> ev_body = BodyOf(EncodeEvent({"a", "b", HbStatus::kLost, 1}));
  ev_body.at(4 + 1 + 4 + 1) = 77;
  EventFrame e;
  EXPECT_FALSE(DecodeEvent(ev_body, &e));
}

WallClock::time_point LocalTime(int y, int mon, int d, int h, int mi, int s, int us = 0) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = -1;
  return WallClock::from_time_t(std::mktime(&tm)) + std::chrono::microseconds(us);
}

// The seed's examples, byte for byte (after the plog prefix).
TEST(HeartbeatLines, MatchTheSeed) {
  HbEvent lost{"127.10.0.2/2", "127.10.0.3/3", HbStatus::kLost, WallClock::now(), 0};
  EXPECT_EQ(FormatAbnormalLine("127.10.0.1/1", lost),
            "[TaskExecStage][HeartbeatAbnormal]local rank [127.10.0.1/1]: crimer rank "
            "[127.10.0.2/2] status[LOST] by informer rank [127.10.0.3/3]");

  HbEvent loc{"127.10.0.1/1", "127.10.0.1/2", HbStatus::kLost, LocalTime(2025, 10, 23, 17, 25, 58),
              0};
  EXPECT_EQ(FormatClusterExceptionLine(loc),
            "[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], "
            "Arrival Time:[Thu Oct 23 17:25:58 2025], Discoverer:[127.10.0.1/2], "
            "ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. Process has exited, 2. "
            "Network Disconnected");

  HbEvent stuck{"127.10.0.1/1", "127.10.0.1/1", HbStatus::kStuck,
                LocalTime(2025, 10, 23, 21, 3, 19), 0};
  EXPECT_EQ(FormatClusterExceptionLine(stuck),
            "[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], "
            "Arrival Time:[Thu Oct 23 21:03:19 2025], ExceptionType:[Stuck Occurred], Possible "
            "Reason:1.Host process is stuck, 2.Device task is stuck");

  HbEvent cqe{"127.10.0.2/2", "127.10.0.1/1", HbStatus::kCqe, LocalTime(2025, 10, 23, 21, 3, 19),
              0};
  EXPECT_EQ(FormatClusterExceptionLine(cqe),
            "[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.2/2], "
            "Arrival Time:[Thu Oct 23 21:03:19 2025], ExceptionType:[Error cqe Occurred], "
            "Possible Reason:1.Network Disconnected, 2.Remote Rank Coredown");

  EXPECT_EQ(FormatCqeLine(12, LocalTime(2025, 9, 15, 8, 38, 12, 776654),
                          {"127.10.0.1", "127.10.0.1", "127.11.0.1"},
                          {"127.10.0.2", "127.10.0.2", "127.11.0.2"}),
            "[TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], "
            "time:[2025-09-15 08:38:12.776654],localInfo{server[127.10.0.1],deviceId[127.10.0.1],"
            "deviceIp[127.11.0.1]}, remoteIP{server[127.10.0.2],deviceId[127.10.0.2],"
            "deviceIp[127.11.0.2]}");
}

TEST(HeartbeatLines, KeyEventsByPriorityAndRelevance) {
  const auto now = WallClock::now();
  std::vector<HbEvent> events = {
      {"a/1", "b/2", HbStatus::kLost, now - std::chrono::seconds(5), 0},
      {"c/3", "c/3", HbStatus::kStuck, now - std::chrono::seconds(4), 0},
      {"d/4", "e/5", HbStatus::kCqe, now - std::chrono::seconds(3), 0},
      // Old and about another communicator's rank: not key.
      {"x/9", "y/8", HbStatus::kLost, now - std::chrono::hours(2), 0},
      // Old but about a member of this communicator: key.
      {"m/7", "y/8", HbStatus::kLost, now - std::chrono::hours(3), 0},
  };
  const auto key = SelectKeyEvents(events, {"m/7", "a/1"}, now - std::chrono::seconds(1));
  ASSERT_EQ(key.size(), 4u);
  EXPECT_EQ(key[0].status, HbStatus::kCqe);
  EXPECT_EQ(key[1].status, HbStatus::kStuck);
  EXPECT_EQ(key[2].crimer, "m/7");  // LOST, earlier arrival first
  EXPECT_EQ(key[3].crimer, "a/1");
}

TEST(HeartbeatLines, RankUidIsUniquePerHost) {
  EXPECT_EQ(RankUid("127.10.0.2", 2, 77, false), "127.10.0.2/2");
  EXPECT_EQ(RankUid("127.10.0.2", 2, 77, true), "127.10.0.2/2#77");
}

}  // namespace
}  // namespace vigil::dfx
