// The root-cause screen line on real jobs (processes under `vigil run`, the heartbeat tests'
// rank program): when a rank is killed, every survivor's stderr holds HCCL's EI0002 line and,
// right after it (same process, next line), Vigil's root-cause line naming the killed rank, its
// pid, LOST and class process, readable by the knowledge base's "vigil.root_cause_line" pattern.
// A rank stuck in host code is named STUCK beside the others' EI0002, and a cut data link ERROR
// CQE, class network, beside its two ends' EI0013. When no heartbeat event names a root (a rank
// late in host code, stuck detection off), the waiting rank's EI0002 stands alone. Behaviour
// only: no time is asserted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../common/job_runner.h"
#include "common/knowledge_base.h"
#include "diagnose/kb_matcher.h"

namespace fs = std::filesystem;

namespace {

using namespace vigil;
using namespace vigil::test;

constexpr const char* kEi0002 =
    "Communication_Error_Timeout(EI0002): Communication operator execution waiting times out.";
constexpr const char* kRootCause = "Vigil_Root_Cause(";
constexpr const char* kEi0013 = "Execution Error ROCE CQE(EI0013): ";

// The fields of a root-cause line as `vigil diagnose` reads them: the knowledge base's own
// pattern for the line, through the analyzer's matcher; nullopt when it does not match.
std::optional<diagnose::KbFields> Fields(const std::string& line) {
  const kb::Entry* e = kb::Get().Find("vigil.root_cause_line");
  diagnose::KbFields f;
  if (e == nullptr || !diagnose::KbMatcher::Get().Fields(*e, line, &f)) return std::nullopt;
  return f;
}

struct Job {
  int n = 2;
  std::string fault;
  int victim = -1;
  int peer = -1;  // fault cut: the other end of the link
  std::vector<std::string> env;
};

struct Outcome {
  fs::path dir;
  bool timed_out = false;
  std::string screen;          // the launcher's stderr: every rank's screen lines
  std::map<int, int> pid_of;   // rank -> pid (from DIR/ready-R)
  std::map<int, bool> result;  // rank -> it wrote its result (its op returned)
};

Outcome RunJob(const std::string& name, const Job& job) {
  Outcome o;
  o.dir = FreshJobDir("FAULT_TEST_TMP", "vigil_rootcause", name);
  const int timeout_s = 90;
  Launch l;
  l.argv = VigilRun(VIGIL_BIN, job.n, o.dir / "logs", timeout_s);
  l.argv.insert(l.argv.end(), {"-q", "--", HB_DRIVER, "--out", o.dir.string(), "--fault",
                               job.fault, "--victim", std::to_string(job.victim), "--peer",
                               std::to_string(job.peer)});
  l.env = job.env;
  l.env.push_back("ASCEND_PROCESS_LOG_PATH=" + (o.dir / "logs").string());
  l.output = o.dir / "screen.txt";
  l.with_stdout = false;
  l.watchdog_s = timeout_s + 30;
  const Finished f = RunLauncher(l);
  o.timed_out = f.timed_out;
  o.screen = f.output;
  for (int r = 0; r < job.n; ++r) {
    const std::string p = ReadFile(o.dir / ("ready-" + std::to_string(r)));
    if (!p.empty()) o.pid_of[r] = std::atoi(p.c_str());
    o.result[r] = fs::exists(o.dir / ("result-" + std::to_string(r)));
  }
  return o;
}

// The screen lines one process printed, in order.
std::vector<std::string> LinesOf(const std::string& screen, int pid) {
  const std::string prefix = "[PID: " + std::to_string(pid) + "] ";
  std::vector<std::string> out;
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

// For each of one process's lines holding `needle`: the line that follows it ("" when none).
std::vector<std::string> LinesAfter(const std::vector<std::string>& lines, const char* needle) {
  std::vector<std::string> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(needle) != std::string::npos) {
      out.push_back(i + 1 < lines.size() ? lines[i + 1] : std::string());
    }
  }
  return out;
}

const std::vector<std::string> kEnv = {"HCCL_BUFFSIZE=4", "HCCL_IF_BASE_PORT=0",
                                       "HCCL_CONNECT_TIMEOUT=60", "ASCEND_GLOBAL_LOG_LEVEL=3"};

std::vector<std::string> Env(std::initializer_list<std::string> extra) {
  std::vector<std::string> env = kEnv;
  env.insert(env.end(), extra);
  return env;
}

// Rank 2 of 4 is SIGKILLed while the others wait for it in an AllReduce (exec timeout far
// away: the errors come from the heartbeat's LOST).
TEST(RootCauseScreen, KilledRankIsNamedBesideEI0002) {
  Job job;
  job.n = 4;
  job.fault = "kill";
  job.victim = 2;
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});
  const Outcome o = RunJob("kill", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << o.screen;
  ASSERT_EQ(o.pid_of.size(), 4u) << o.screen;
  const int victim_pid = o.pid_of.at(2);
  for (int r : {0, 1, 3}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_TRUE(o.result.at(r)) << "its AllReduce never returned\n" << o.screen;
    const std::vector<std::string> lines = LinesOf(o.screen, o.pid_of.at(r));
    size_t at = lines.size();
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].find(kEi0002) != std::string::npos) at = i;
    }
    ASSERT_LT(at, lines.size()) << "no EI0002 line of its own\n" << o.screen;
    ASSERT_LT(at + 1, lines.size()) << "nothing after its EI0002 line\n" << o.screen;
    const std::string& line = lines[at + 1];
    ASSERT_NE(line.find(kRootCause), std::string::npos) << "not a root-cause line: " << line;
    const auto g = Fields(line);
    ASSERT_TRUE(g) << "the knowledge base's pattern does not read: " << line;
    EXPECT_EQ(g->kb, "hccl.heartbeat_lost") << line;
    EXPECT_EQ(g->rank, 2) << line;
    EXPECT_EQ(g->pid, victim_pid) << line;
    EXPECT_TRUE(g->exited) << line;
    EXPECT_EQ(g->status, "LOST") << line;
    EXPECT_NE(line.find(") LOST, class process: "), std::string::npos) << line;
    EXPECT_NE(g->informer_rank, 2) << line;
    EXPECT_GE(g->informer_rank, 0) << "an unknown informer: " << line;
    std::printf("rank %d: %s\n", r, line.c_str());
  }
}

// No heartbeat event: rank 1 of 2 stays in host code (stuck detection off) until rank 0's
// AllReduce has timed out. Rank 0's EI0002 names no root.
TEST(RootCauseScreen, NoRootNoLine) {
  Job job;
  job.n = 2;
  job.fault = "sleep";
  job.victim = 1;
  job.env = Env({"HCCL_EXEC_TIMEOUT=3", "HCCL_DFS_CONFIG=stuck_detection:off"});
  const Outcome o = RunJob("noroot", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << o.screen;
  ASSERT_EQ(o.pid_of.count(0), 1u) << o.screen;
  EXPECT_TRUE(o.result.at(0)) << o.screen;
  const std::vector<std::string> lines = LinesOf(o.screen, o.pid_of.at(0));
  bool ei0002 = false;
  for (const std::string& line : lines) {
    ei0002 = ei0002 || line.find(kEi0002) != std::string::npos;
    EXPECT_EQ(line.find(kRootCause), std::string::npos) << "a root with no event: " << line;
  }
  EXPECT_TRUE(ei0002) << o.screen;
}

// Rank 1 of 3 stays in host code while the others wait in the AllReduce: the heartbeat's stuck
// detection names it STUCK before their exec timeout, and each waiting rank's EI0002 says so.
TEST(RootCauseScreen, StuckRankIsNamedBesideEI0002) {
  Job job;
  job.n = 3;
  job.fault = "sleep";
  job.victim = 1;
  job.env = Env({"HCCL_EXEC_TIMEOUT=9"});  // stuck checks every 3 s
  const Outcome o = RunJob("stuck", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << o.screen;
  ASSERT_EQ(o.pid_of.size(), 3u) << o.screen;
  for (int r : {0, 2}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::vector<std::string> after = LinesAfter(LinesOf(o.screen, o.pid_of.at(r)), kEi0002);
    ASSERT_FALSE(after.empty()) << "no EI0002 line of its own\n" << o.screen;
    const auto g = Fields(after.front());
    ASSERT_TRUE(g) << "no root-cause line after its EI0002: " << after.front();
    EXPECT_EQ(g->kb, "hccl.heartbeat_stuck") << after.front();
    EXPECT_EQ(g->rank, 1) << after.front();
    EXPECT_EQ(g->pid, o.pid_of.at(1)) << after.front();
    EXPECT_FALSE(g->exited) << "a stuck process is alive: " << after.front();
    EXPECT_EQ(g->status, "STUCK") << after.front();
    EXPECT_NE(after.front().find(") STUCK, class process: "), std::string::npos) << after.front();
  }
}

// Rank 1 cuts its data link to rank 2 while both live: each end's EI0013 is followed by the
// line of the error CQE, class network, naming the two ends of the link.
TEST(RootCauseScreen, CutLinkIsNamedBesideEI0013) {
  Job job;
  job.n = 4;
  job.fault = "cut";
  job.victim = 1;
  job.peer = 2;
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});
  const Outcome o = RunJob("cut", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << o.screen;
  ASSERT_EQ(o.pid_of.size(), 4u) << o.screen;
  for (int r : {1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const std::vector<std::string> after = LinesAfter(LinesOf(o.screen, o.pid_of.at(r)), kEi0013);
    ASSERT_FALSE(after.empty()) << "no EI0013 line of its own\n" << o.screen;
    bool named = false;
    for (const std::string& line : after) {
      const auto g = Fields(line);
      named = named || (g && g->kb == "hccl.heartbeat_error_cqe" && g->status == "ERROR CQE" &&
                        line.find(") ERROR CQE, class network: ") != std::string::npos &&
                        ((g->rank == 1 && g->informer_rank == 2) || (g->rank == 2 && g->informer_rank == 1)));
    }
    EXPECT_TRUE(named) << "no EI0013 followed by the cut link's line\n" << o.screen;
  }
}

}  // namespace
