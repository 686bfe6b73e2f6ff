// The shrink agreement (dfx/agreement.h) in one process: each rank a thread, every message sent
// for real through this process's heartbeat listener, as between processes. Bounded: the
// agreement's own bounds are shortened (timeout 1-5 s).
#include "dfx/agreement.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/job_key.h"
#include "bootstrap/root_info.h"
#include "dfx/heartbeat.h"

namespace vigil::dfx {
namespace {

// Root infos on kernel-chosen ports (set before the environment is first read).
const bool g_env = [] {
  setenv("HCCL_IF_BASE_PORT", "0", 1);
  return true;
}();

std::string Listener() {
  (void)g_env;
  Heartbeat::Instance().EnsureListener("127.0.0.1");
  return Heartbeat::Instance().listen_address();
}

// The key of the job these rounds belong to: the process joined it, so its listener accepts it.
const auth::JobKey& TestKey() {
  static const auth::JobKey key = [] {
    auth::JobKey k;
    std::string err;
    EXPECT_TRUE(auth::GenerateJobKey(&k, &err)) << err;
    auth::AdoptJobKey(k);
    return k;
  }();
  return key;
}

std::string UniqueId(const char* name) {
  static std::atomic<int> n{0};
  return std::string("agreement_test_") + name + "_" + std::to_string(getpid()) + "_" +
         std::to_string(n++);
}

struct Caller {
  uint32_t rank = 0;
  std::set<uint32_t> exclude;
  bool from_view = false;
  std::function<std::set<uint32_t>()> lost = [] { return std::set<uint32_t>(); };
};

// Runs the callers as threads of one round of `size` ranks; their outcomes by rank.
std::map<uint32_t, AgreementOutcome> RunRound(const std::string& id, uint32_t size,
                                              const std::vector<Caller>& callers,
                                              std::chrono::milliseconds timeout) {
  const std::string ep = Listener();
  EXPECT_FALSE(ep.empty()) << "the heartbeat's listener did not start";
  (void)TestKey();
  std::map<uint32_t, AgreementOutcome> out;
  std::vector<AgreementOutcome> results(callers.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < callers.size(); ++i) {
    threads.emplace_back([&, i] {
      AgreementInput in;
      in.identifier = id;
      in.rank = callers[i].rank;
      in.size = size;
      in.endpoints.assign(size, ep);
      in.from_view = callers[i].from_view;
      in.exclude = callers[i].exclude;
      in.lost = callers[i].lost;
      in.timeout = timeout;
      in.key = TestKey();
      results[i] = Agree(in);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < callers.size(); ++i) out[callers[i].rank] = results[i];
  return out;
}

TEST(Agreement, SurvivorsAgreeAndShareOneRootInfo) {
  auto out =
      RunRound(UniqueId("agree"), 4, {{0, {3}}, {1, {3}}, {2, {3}}}, std::chrono::seconds(5));
  std::string root;
  for (const auto& [rank, o] : out) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_TRUE(o.ok) << o.error;
    EXPECT_EQ(o.excluded, (std::set<uint32_t>{3}));
    EXPECT_EQ(o.coordinator, 0u);
    EXPECT_EQ(o.coordinated, rank == 0);
    const std::string bytes(reinterpret_cast<const char*>(&o.root), sizeof(o.root));
    if (root.empty()) root = bytes;
    EXPECT_EQ(bytes, root) << "every survivor gets the coordinator's root info";
    bootstrap::RootInfo decoded;
    std::string error;
    EXPECT_EQ(bootstrap::DecodeRootInfo(o.root, &decoded, &error), HCCL_SUCCESS) << error;
  }
}

TEST(Agreement, DifferentGivenSetsFailOnEveryCallerNamingTheViews) {
  const auto start = std::chrono::steady_clock::now();
  auto out =
      RunRound(UniqueId("differ"), 4, {{0, {3}}, {1, {3}}, {2, {0, 3}}}, std::chrono::seconds(5));
  for (const auto& [rank, o] : out) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_FALSE(o.ok);
    EXPECT_NE(o.error.find("exclude sets differ"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("rank 2 excludes [0,3] (given)"), std::string::npos) << o.error;
  }
  // Given sets that differ fail at once, not at the bound (a generous margin: not a timing test
  // of the protocol, only that it did not wait out its timeout).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Agreement, ARankThatNeverCallsFailsTheOthersAtTheBound) {
  auto out = RunRound(UniqueId("silent"), 3, {{0, {}}, {1, {}}}, std::chrono::seconds(1));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("ranks[2] never called VigilCommShrink"), std::string::npos)
      << out[0].error;
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("rank[0] reports"), std::string::npos) << out[1].error;
}

TEST(Agreement, AHeartbeatViewStillLearningOfTheLossCatchesUp) {
  const auto start = std::chrono::steady_clock::now();
  Caller late{1, {}, true, [start] {
                // This rank hears of rank 2's loss 400 ms after it called.
                return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(400)
                           ? std::set<uint32_t>{2}
                           : std::set<uint32_t>();
              }};
  Caller early{0, {}, true, [] { return std::set<uint32_t>{2}; }};
  auto out = RunRound(UniqueId("view"), 3, {early, late}, std::chrono::seconds(5));
  for (const auto& [rank, o] : out) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_TRUE(o.ok) << o.error;
    EXPECT_EQ(o.excluded, (std::set<uint32_t>{2}));
  }
}

TEST(Agreement, AGivenRankLostMeanwhileFailsTheRound) {
  // Rank 1 is not in the set, and the heartbeat says it is lost: call again excluding it.
  auto out =
      RunRound(UniqueId("lostmeanwhile"), 3,
               {{0, {2}, false, [] { return std::set<uint32_t>{1}; }}}, std::chrono::seconds(5));
  EXPECT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("rank[1], not in excludeRanks[2], was lost"), std::string::npos)
      << out[0].error;
}

TEST(Agreement, ARankInItsOwnSetFailsAtOnce) {
  auto out = RunRound(UniqueId("self"), 3, {{1, {1}}}, std::chrono::seconds(5));
  EXPECT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("an excluded rank does not call"), std::string::npos);
}

// A rank that does not know the job key cannot send the survivors a proposal or a decision.
TEST(Agreement, MessagesOfAnotherKeyDoNotArrive) {
  const std::string ep = Listener();
  (void)TestKey();
  auth::JobKey other;
  std::string err;
  ASSERT_TRUE(auth::GenerateJobKey(&other, &err));
  const std::string id = UniqueId("other_key");
  AgreementOutcome stranger;
  std::thread t([&] {
    AgreementInput in;
    in.identifier = id;
    in.rank = 1;
    in.size = 2;
    in.endpoints.assign(2, ep);
    in.timeout = std::chrono::seconds(2);
    in.lost = [] { return std::set<uint32_t>(); };
    in.key = other;
    stranger = Agree(in);
  });
  AgreementInput in;
  in.identifier = id;
  in.rank = 0;
  in.size = 2;
  in.endpoints.assign(2, ep);
  in.timeout = std::chrono::seconds(2);
  in.lost = [] { return std::set<uint32_t>(); };
  in.key = TestKey();
  const AgreementOutcome mine = Agree(in);
  t.join();
  EXPECT_FALSE(mine.ok);  // rank 1's proposal never came
  EXPECT_FALSE(stranger.ok);
}

TEST(Agreement, AStrangersBytesAreDropped) {
  std::vector<uint8_t> junk(64);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 37);
  DeliverAgreementFrame(junk);
  DeliverAgreementFrame({});
  // The mailbox is unharmed: a round still agrees.
  auto out = RunRound(UniqueId("after_junk"), 2, {{0, {}}, {1, {}}}, std::chrono::seconds(5));
  EXPECT_TRUE(out[0].ok && out[1].ok) << out[0].error << out[1].error;
}

}  // namespace
}  // namespace vigil::dfx
