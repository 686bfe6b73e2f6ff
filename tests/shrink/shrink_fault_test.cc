// Shrink after a lost rank (fault F18), caused for real on 4- and 8-rank jobs under `vigil run`
// (shrink_driver.cc is the rank program), and checked on every rank:
//   - every survivor finished its loop with correct sums over the communicator it was in, and
//     the shrunk communicator numbers the survivors densely in their old order (members);
//   - every survivor's run log has the shrink line "[Shrink]communicator[OLD] rankSize[N] shrunk
//     to communicator[NEW] rankSize[M] by rank[r] (new rank[k]): excluded ranks[..]", all with
//     the same NEW; and the heartbeat named the killed rank LOST;
//   - a disagreement (different lists, a survivor that never calls) is HCCL_E_PARA with EI0005
//     on every caller, and the job ends by itself (vigil run's --timeout never needed).
// The time from the kill to the first op on the shrunk communicator is printed, never asserted.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../common/job_runner.h"

namespace fs = std::filesystem;

namespace {

using namespace vigil::test;

struct Job {
  int n = 4;
  std::vector<std::string> args;  // shrink_driver arguments after --out
  std::vector<std::string> env;   // NAME=VALUE
  int timeout_s = 90;             // vigil run --timeout
  bool keep_going = false;
  std::string program = SHRINK_DRIVER;
  // Called every 100 ms while the job runs, with its folder.
  std::function<void(const fs::path&)> during;
};

struct RankOut {
  int pid = 0;
  std::string uid;
  std::string run_log, debug_log;
  std::map<std::string, std::string> result;  // key=value of DIR/result-R
  bool has_result() const { return !result.empty(); }
  std::string at(const std::string& k) const {
    auto it = result.find(k);
    return it == result.end() ? std::string() : it->second;
  }
};

struct Outcome {
  int exit_code = -1;
  bool timed_out = false;
  std::string launcher;  // vigil run's stderr and stdout (the ranks' screen errors)
  fs::path dir;
  std::string identifier;  // the first communicator's
  std::map<int, RankOut> ranks;
};

Outcome RunJob(const std::string& name, const Job& job) {
  Outcome o;
  o.dir = FreshJobDir("SHRINK_TEST_TMP", "vigil_shrink", name);
  const fs::path logs = o.dir / "logs";
  Launch l;
  l.argv = VigilRun(VIGIL_BIN, job.n, logs, job.timeout_s);
  if (job.keep_going) l.argv.push_back("--keep-going");
  l.argv.insert(l.argv.end(), {"--", job.program, "--out", o.dir.string()});
  l.argv.insert(l.argv.end(), job.args.begin(), job.args.end());
  l.env = job.env;
  l.output = o.dir / "launcher.out";
  l.watchdog_s = job.timeout_s + 30;
  if (job.during) l.tick = [&] { job.during(o.dir); };
  const Finished f = RunLauncher(l);
  o.exit_code = f.exit_code;
  o.timed_out = f.timed_out;
  o.launcher = f.output;
  // The first key line of each process is its rank in the job's first communicator.
  for (const auto& [r, key] : RankKeys(logs, /*first_per_file=*/true)) {
    o.ranks[r].uid = key.uid;
    o.ranks[r].pid = key.pid;
  }
  static const std::regex kComm(
      R"(Communicator Key Info: identifier\[([^\]]*)\], rankSize\[(\d+)\])");
  std::error_code ec;
  for (const auto& file : fs::directory_iterator(logs / "run" / "plog", ec)) {
    const std::string text = ReadFile(file.path());
    std::smatch m;
    if (std::regex_search(text, m, kComm) && std::stoi(m[2]) == job.n) {
      o.identifier = m[1];
      break;
    }
  }
  for (auto& [r, ro] : o.ranks) {
    ro.run_log = PlogsOf(logs, "run", ro.pid);
    ro.debug_log = PlogsOf(logs, "debug", ro.pid);
    std::istringstream res(ReadFile(o.dir / ("result-" + std::to_string(r))));
    std::string kv;
    while (res >> kv) {
      const size_t eq = kv.find('=');
      if (eq != std::string::npos) ro.result[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return o;
}

std::string Describe(const Outcome& o) {
  std::string s = "job folder " + o.dir.string() + ", launcher exit " +
                  std::to_string(o.exit_code) + "\n" + o.launcher;
  for (const auto& [r, ro] : o.ranks) {
    s += "rank " + std::to_string(r) + " pid " + std::to_string(ro.pid) + " result:";
    for (const auto& [k, v] : ro.result) s += " " + k + "=" + v;
    s += "\n";
  }
  return s;
}

const std::vector<std::string> kEnv = {"HCCL_BUFFSIZE=4", "HCCL_IF_BASE_PORT=0",
                                       "HCCL_CONNECT_TIMEOUT=30", "HCCL_EXEC_TIMEOUT=60",
                                       "ASCEND_GLOBAL_LOG_LEVEL=3"};

// One shrink line of a rank's run log.
struct ShrinkLine {
  std::string from, to;
  int from_size = 0, to_size = 0, rank = 0, new_rank = 0;
  std::string excluded;
};

std::vector<ShrinkLine> ShrinkLines(const RankOut& ro) {
  static const std::regex kLine(
      R"(\[Shrink\]communicator\[([^\]]+)\] rankSize\[(\d+)\] shrunk to communicator\[([^\]]+)\] rankSize\[(\d+)\] by rank\[(\d+)\] \(new rank\[(\d+)\]\): excluded ranks\[([0-9,]*)\])");
  std::vector<ShrinkLine> out;
  for (std::sregex_iterator it(ro.run_log.begin(), ro.run_log.end(), kLine), end; it != end; ++it) {
    out.push_back({(*it)[1], (*it)[3], std::stoi((*it)[2]), std::stoi((*it)[4]),
                   std::stoi((*it)[5]), std::stoi((*it)[6]), (*it)[7]});
  }
  return out;
}

bool NamesLost(const RankOut& ro, const std::string& uid) {
  return ro.run_log.find("crimer rank [" + uid + "] status[LOST]") != std::string::npos;
}

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// Kill to the first op on the shrunk communicator, the latest survivor's (printed only).
void PrintRecovery(const Outcome& o, const std::string& what, const char* victim_file) {
  const uint64_t killed = std::strtoull(ReadFile(o.dir / victim_file).c_str(), nullptr, 10);
  uint64_t last = 0;
  for (const auto& [r, ro] : o.ranks) {
    last = std::max<uint64_t>(last, std::strtoull(ro.at("first_ok_us").c_str(), nullptr, 10));
  }
  if (killed != 0 && last > killed) {
    std::printf("%s: first op on the shrunk communicator %.3f s after the kill\n", what.c_str(),
                (last - killed) / 1e6);
  }
}

// The survivors finished with correct sums on one shrunk communicator of `survivors`.
void ExpectShrunk(const Outcome& o, int n, const std::vector<int>& survivors,
                  const std::vector<int>& excluded_first, int shrinks) {
  ASSERT_FALSE(o.timed_out) << "vigil run needed its --timeout: something hung\n" << Describe(o);
  ASSERT_FALSE(o.identifier.empty()) << Describe(o);
  std::set<std::string> new_ids;
  for (int r : survivors) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(o.ranks.count(r)) << Describe(o);
    const RankOut& ro = o.ranks.at(r);
    ASSERT_TRUE(ro.has_result()) << Describe(o);
    EXPECT_EQ(ro.at("ok"), "1") << Describe(o);
    EXPECT_EQ(ro.at("bad"), "0") << "a sum was wrong\n" << Describe(o);
    EXPECT_EQ(ro.at("shrinks"), std::to_string(shrinks)) << Describe(o);
    EXPECT_EQ(ro.at("members"), Join(survivors)) << "not the survivors in their old order";
    const std::vector<ShrinkLine> lines = ShrinkLines(ro);
    ASSERT_EQ(lines.size(), static_cast<size_t>(shrinks)) << ro.run_log.size() << "\n"
                                                          << Describe(o);
    EXPECT_EQ(lines[0].from, o.identifier);
    EXPECT_EQ(lines[0].from_size, n);
    EXPECT_EQ(lines[0].to_size, n - static_cast<int>(excluded_first.size()));
    EXPECT_EQ(lines[0].rank, r);
    EXPECT_EQ(lines[0].excluded, Join(excluded_first));
    EXPECT_NE(lines[0].to, o.identifier);
    new_ids.insert(lines[0].to);
  }
  EXPECT_EQ(new_ids.size(), 1u) << "the survivors built different communicators";
}

// ---- kill one rank in a loop ----------------------------------------------------------------

void RunKill(int n, int victim) {
  Job job;
  job.n = n;
  job.env = kEnv;
  job.args = {"--mode",  "kill", "--victim",  std::to_string(victim),
              "--iters", "16",   "--kill-at", "4"};
  Outcome o = RunJob("kill" + std::to_string(n), job);
  DropIfPassed drop{o.dir};
  std::vector<int> survivors;
  for (int r = 0; r < n; ++r) {
    if (r != victim) survivors.push_back(r);
  }
  ExpectShrunk(o, n, survivors, {victim}, 1);
  for (int r : survivors) {
    EXPECT_TRUE(NamesLost(o.ranks.at(r), o.ranks.at(victim).uid)) << "rank " << r;
    // The new rank is the survivor's place among the survivors.
    const auto lines = ShrinkLines(o.ranks.at(r));
    if (!lines.empty()) {
      EXPECT_EQ(lines[0].new_rank, r < victim ? r : r - 1);
    }
  }
  PrintRecovery(o, "kill 1 of " + std::to_string(n), "victim-time");
}

TEST(Shrink, KillOneOfFourSurvivorsShrinkAndContinue) {
  RunKill(4, 2);
}
TEST(Shrink, KillOneOfEightSurvivorsShrinkAndContinue) {
  RunKill(8, 5);
}
TEST(Shrink, KillRankZeroTheNextLowestCoordinates) {
  RunKill(4, 0);
}

// ---- a second death after the first shrink --------------------------------------------------

TEST(Shrink, SecondDeathShrinksAgain) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode",  "kill2", "--victim",  "1", "--victim2",  "3",
              "--iters", "16",    "--kill-at", "3", "--kill2-at", "9"};
  Outcome o = RunJob("kill2", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 2}, {1}, 2);
  std::set<std::string> second;
  for (int r : {0, 2}) {
    const auto lines = ShrinkLines(o.ranks.at(r));
    if (lines.size() != 2) continue;
    // Rank 3 was rank 2 of the first shrunk communicator.
    EXPECT_EQ(lines[1].from, lines[0].to);
    EXPECT_EQ(lines[1].from_size, 3);
    EXPECT_EQ(lines[1].to_size, 2);
    EXPECT_EQ(lines[1].excluded, "2");
    second.insert(lines[1].to);
    EXPECT_TRUE(NamesLost(o.ranks.at(r), o.ranks.at(3).uid));
  }
  EXPECT_EQ(second.size(), 1u);
  PrintRecovery(o, "second kill", "victim-time2");
}

// ---- disagreement -----------------------------------------------------------------------------

TEST(Shrink, DifferentListsFailCleanlyOnEverySurvivor) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode", "disagree", "--victim", "3", "--iters", "8", "--kill-at", "2"};
  Outcome o = RunJob("disagree", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  for (int r : {0, 1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankOut& ro = o.ranks.at(r);
    ASSERT_TRUE(ro.has_result()) << Describe(o);
    EXPECT_EQ(ro.at("shrink_rc"), "1") << "expected HCCL_E_PARA\n" << Describe(o);
    EXPECT_EQ(ro.at("shrinks"), "0");
    EXPECT_TRUE(ShrinkLines(ro).empty());
    // The ERROR line names the views: rank 2 (the last survivor) also excluded rank 0.
    EXPECT_NE(ro.debug_log.find("the survivors did not agree on the ranks to exclude"),
              std::string::npos)
        << ro.debug_log.substr(0, 4000);
    EXPECT_NE(ro.debug_log.find("rank 2 excludes [0,3] (given)"), std::string::npos);
  }
  EXPECT_NE(o.launcher.find("Invalid_Argument(EI0005)"), std::string::npos) << o.launcher;
  EXPECT_NE(o.launcher.find("parameter excludeRanks"), std::string::npos) << o.launcher;
}

TEST(Shrink, SurvivorThatNeverCallsFailsTheOthersAtTheBound) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.env.push_back("HCCL_CONNECT_TIMEOUT=5");
  job.args = {"--mode", "silent",  "--victim", "3",         "--victim2",
              "1",      "--iters", "8",        "--kill-at", "2"};
  Outcome o = RunJob("silent", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  for (int r : {0, 2}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankOut& ro = o.ranks.at(r);
    ASSERT_TRUE(ro.has_result()) << Describe(o);
    EXPECT_EQ(ro.at("shrink_rc"), "1") << Describe(o);
    EXPECT_NE(ro.debug_log.find("ranks[1] never called VigilCommShrink"), std::string::npos)
        << Describe(o);
  }
  EXPECT_NE(o.launcher.find("Invalid_Argument(EI0005)"), std::string::npos) << o.launcher;
}

// ---- healthy shrink and ops in flight --------------------------------------------------------

TEST(Shrink, HealthyShrinkExcludesALiveRankThatCallsNothing) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode", "healthy", "--victim", "3", "--iters", "10", "--kill-at", "3"};
  Outcome o = RunJob("healthy", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 1, 2}, {3}, 1);
  EXPECT_EQ(o.exit_code, 0) << "every rank, the excluded one too, ends well\n" << Describe(o);
  for (int r : {0, 1, 2}) EXPECT_FALSE(NamesLost(o.ranks.at(r), o.ranks.at(3).uid));
}

TEST(Shrink, OpsInFlightAbortedByTheAbortFlag) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode", "inflight", "--abort", "1",         "--victim",
              "1",      "--iters",  "8",       "--kill-at", "3"};
  Outcome o = RunJob("inflight_abort", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 2, 3}, {1}, 1);
  for (int r : {0, 2, 3}) {
    EXPECT_NE(o.ranks.at(r).run_log.find("flags[VIGIL_SHRINK_ABORT], ops in flight[1]"),
              std::string::npos)
        << "rank " << r;
    EXPECT_NE(o.ranks.at(r).run_log.find("VIGIL_SHRINK_ABORT aborts its"), std::string::npos);
  }
}

TEST(Shrink, OpsInFlightWaitedForWithoutTheAbortFlag) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode", "inflight", "--abort", "0",         "--victim",
              "2",      "--iters",  "8",       "--kill-at", "3"};
  Outcome o = RunJob("inflight_wait", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 1, 3}, {2}, 1);
  for (int r : {0, 1, 3}) {
    EXPECT_NE(o.ranks.at(r).run_log.find("flags[VIGIL_SHRINK_DEFAULT], ops in flight[1]"),
              std::string::npos)
        << "rank " << r;
    EXPECT_TRUE(NamesLost(o.ranks.at(r), o.ranks.at(2).uid));
  }
}

// ---- the example, under vigil run --keep-going -----------------------------------------------

TEST(Shrink, ElasticExampleCarriesOnUnderKeepGoing) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.keep_going = true;
  job.program = ELASTIC_EXAMPLE;
  job.args = {"--iters", "8", "--kill-rank", "1", "--kill-at", "3"};
  Outcome o = RunJob("elastic", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  // The lost rank does not fail the run; the survivors finished every iteration.
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
  EXPECT_NE(o.launcher.find("--keep-going: the other 3 rank(s) go on"), std::string::npos)
      << o.launcher;
  // Iteration 2 completes with all four, or (rank 1 dying while some survivors still waited on
  // its last sends) fails on some and is redone by all three from the agreed iteration.
  EXPECT_TRUE(o.launcher.find("iteration 2: sum 30 over 4 ranks") != std::string::npos ||
              o.launcher.find("iteration 2: sum 24 over 3 ranks") != std::string::npos)
      << o.launcher;
  // From iteration 3 on, rank 1 ((1 + 1) * (it + 1)) is missing from every sum.
  EXPECT_NE(o.launcher.find("iteration 3: sum 32 over 3 ranks"), std::string::npos);
  EXPECT_NE(o.launcher.find("iteration 7: sum 64 over 3 ranks"), std::string::npos);
  for (int r : {0, 2, 3}) {
    EXPECT_NE(o.launcher.find("rank " + std::to_string(r) + ": done, 8 iterations, 1 shrink(s)"),
              std::string::npos)
        << o.launcher;
    EXPECT_EQ(ShrinkLines(o.ranks.at(r)).size(), 1u);
  }
}

// ---- vigil health after a shrink ---------------------------------------------------------------

TEST(Shrink, HealthShowsTheShrinkAndThePreviousCommunicator) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode", "kill", "--victim", "2", "--iters", "8", "--kill-at", "3", "--hold", "1"};
  std::string health;
  int health_rc = -1;
  job.during = [&](const fs::path& dir) {
    if (health_rc != -1) return;
    for (int r : {0, 1, 3}) {
      if (!fs::exists(dir / ("held-" + std::to_string(r)))) return;
    }
    const std::string cmd = std::string(VIGIL_BIN) + " health " + (dir / "logs").string() + " > " +
                            (dir / "health.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    health_rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : 99;
    health = ReadFile(dir / "health.txt");
    std::ofstream(dir / "release") << "go\n";
  };
  Outcome o = RunJob("health", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 1, 3}, {2}, 1);
  // The current communicator is healthy: the lost rank belongs to the previous one.
  EXPECT_EQ(health_rc, 0) << health;
  EXPECT_NE(health.find("Summary: 3 alive, 0 lost"), std::string::npos) << health;
  EXPECT_NE(health.find("Shrinks (1):"), std::string::npos) << health;
  EXPECT_NE(health.find("[" + o.identifier + "] 4 ranks -> ["), std::string::npos) << health;
  EXPECT_NE(health.find("3 ranks: excluded ranks [2], by ranks [0,1,3]"), std::string::npos)
      << health;
  EXPECT_NE(health.find("Previous communicators"), std::string::npos) << health;
  EXPECT_NE(health.find("[" + o.identifier + "] 4 ranks, destroyed by ranks [0,1,3] (aborted)"),
            std::string::npos)
      << health;
  std::printf("%s", health.c_str());
}

// ---- vigil diagnose on shrunk jobs ----------------------------------------------------------

// `vigil diagnose --json` on the job's logs.
nlohmann::json Diagnose(const Outcome& o) {
  const std::string cmd = std::string(VIGIL_BIN) + " diagnose --json " + (o.dir / "logs").string() +
                          " > " + (o.dir / "diagnose.json").string() + " 2>/dev/null";
  (void)std::system(cmd.c_str());
  return nlohmann::json::parse(ReadFile(o.dir / "diagnose.json"), nullptr, false);
}

// The findings of fault comm_shrunk, in report order.
std::vector<nlohmann::json> Recoveries(const nlohmann::json& d) {
  std::vector<nlohmann::json> out;
  for (const auto& f : d.value("findings", nlohmann::json::array())) {
    if (f.value("fault", "") == "comm_shrunk") out.push_back(f);
  }
  return out;
}

// The verdict's root-cause rank, as "uid".
std::string RootCauseUid(const nlohmann::json& d) {
  for (const auto& r : d["verdict"].value("ranks", nlohmann::json::array())) {
    if (r.value("role", "") == "root cause") return r.value("uid", "");
  }
  return "";
}

TEST(Shrink, DiagnoseNamesTheLostRankAndTheRecovery) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode", "kill", "--victim", "2", "--iters", "8", "--kill-at", "3"};
  Outcome o = RunJob("diagnose", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 1, 3}, {2}, 1);
  const nlohmann::json d = Diagnose(o);
  ASSERT_FALSE(d.is_discarded()) << ReadFile(o.dir / "diagnose.json");
  EXPECT_EQ(d["verdict"].value("fault", ""), "heartbeat_lost") << d.dump(1).substr(0, 3000);
  EXPECT_EQ(RootCauseUid(d), o.ranks.at(2).uid);
  const auto rec = Recoveries(d);
  ASSERT_EQ(rec.size(), 1u) << d.dump(1).substr(0, 3000);
  // Right after the verdict, with the old communicator, the sizes and who shrank.
  EXPECT_EQ(d["findings"][1].value("fault", ""), "comm_shrunk");
  const auto& facts = rec[0]["facts"];
  EXPECT_EQ(facts.value("from", ""), o.identifier);
  EXPECT_EQ(facts.value("from_size", ""), "4");
  EXPECT_EQ(facts.value("to_size", ""), "3");
  EXPECT_EQ(facts.value("excluded", ""), "2");
  EXPECT_EQ(facts.value("shrunk_by", ""), "0, 1, 3");
  EXPECT_FALSE(facts.contains("survivors_without_shrink"));
  EXPECT_NE(rec[0].value("title", "").find("shrunk from 4 to 3 ranks by every survivor"),
            std::string::npos);
  EXPECT_NE(rec[0].value("summary", "").find(o.ranks.at(2).uid + ") LOST at"), std::string::npos)
      << rec[0].value("summary", "");
  EXPECT_NE(d["verdict"].value("summary", "").find("Recovered afterwards"), std::string::npos);
  // Each survivor's flight recorder keeps the shrink (a dump is written at once).
  std::set<int> dumped;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(o.dir / "logs" / "run" / "flight", ec)) {
    const nlohmann::json dump = nlohmann::json::parse(ReadFile(f.path()), nullptr, false);
    if (dump.is_discarded()) continue;
    for (const auto& sh : dump.value("shrinks", nlohmann::json::array())) {
      if (sh.value("from", "") == o.identifier && sh.value("fromSize", 0) == 4 &&
          sh.value("toSize", 0) == 3 && sh["excluded"] == nlohmann::json::array({2})) {
        dumped.insert(sh.value("fromRank", -1));
      }
    }
  }
  EXPECT_EQ(dumped, (std::set<int>{0, 1, 3}));
}

TEST(Shrink, DiagnoseAfterTwoDeathsNamesTheFirstAndBothRecoveries) {
  Job job;
  job.n = 4;
  job.env = kEnv;
  job.args = {"--mode",  "kill2", "--victim",  "1", "--victim2",  "3",
              "--iters", "12",    "--kill-at", "3", "--kill2-at", "7"};
  Outcome o = RunJob("diagnose2", job);
  DropIfPassed drop{o.dir};
  ExpectShrunk(o, 4, {0, 2}, {1}, 2);
  const nlohmann::json d = Diagnose(o);
  ASSERT_FALSE(d.is_discarded());
  EXPECT_EQ(RootCauseUid(d), o.ranks.at(1).uid) << "the first death is the root";
  const auto rec = Recoveries(d);
  ASSERT_EQ(rec.size(), 2u) << d.dump(1).substr(0, 3000);
  std::set<std::string> shrinks;
  for (const auto& r : rec) {
    shrinks.insert(r["facts"].value("from_size", "") + "->" + r["facts"].value("to_size", "") +
                   " excluding " + r["facts"].value("excluded", ""));
  }
  EXPECT_EQ(shrinks, (std::set<std::string>{"4->3 excluding 1", "3->2 excluding 2"}));
}

}  // namespace
