// Op retry over a flapping link (FAULTS.md F17), caused for real on multi-process jobs under
// `vigil run`, with every rank's results and log lines checked:
//   - the transport's cut hook (VIGIL_FAULT link_cut) mid-op over shm and TCP, retry on: every
//     op exact, "[OpRetry]" begin and "recovered by retry" lines on every rank, no ERROR CQE;
//   - the link kept down longer than HoldTime (link_cut ~MS): a clean failure on both ends of the
//     link (ERROR CQE, EI0013), nothing hangs;
//   - retry off: the cut fails the op as without retry;
//   - two network namespaces whose veth goes down for 2 s mid-op and up again (root only);
//   - vigil diagnose on a retried run names the recovery.
// Behaviour only: no timing is asserted.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/job_runner.h"

namespace fs = std::filesystem;

namespace {

using namespace vigil::test;

struct Job {
  int n = 4;
  std::string transport;                        // "" = auto
  std::vector<std::string> env;                 // NAME=VALUE for the launcher and ranks
  std::vector<std::string> prefix;              // e.g. ip netns exec NS
  int timeout_s = 90;                           // vigil run --timeout
  std::vector<std::string> args;                // more retry_driver arguments
  std::function<void(const fs::path&)> during;  // every 100 ms while the job runs
};

struct Rank {
  int pid = 0;
  bool has_result = false;
  int ops = 0, ok = 0, enqueue = -1, sync = -1, async = -1;
  long long wrong = -1;
  std::string run_log, debug_log;
};

struct Outcome {
  int exit_code = -1;
  bool timed_out = false;
  std::string launcher;
  fs::path dir;
  std::map<int, Rank> ranks;
};

Outcome RunJob(const std::string& name, const Job& job) {
  Outcome o;
  o.dir = FreshJobDir("RETRY_TEST_TMP", "vigil_retry", name);
  const fs::path logs = o.dir / "logs";
  Launch l;
  l.argv = job.prefix;
  for (std::string& a : VigilRun(VIGIL_BIN, job.n, logs, job.timeout_s)) l.argv.push_back(a);
  l.argv.push_back("-q");
  if (!job.transport.empty()) l.argv.insert(l.argv.end(), {"--transport", job.transport});
  l.argv.insert(l.argv.end(), {"--", RETRY_DRIVER, "--out", o.dir.string()});
  l.argv.insert(l.argv.end(), job.args.begin(), job.args.end());
  l.env = job.env;
  l.env.push_back("ASCEND_PROCESS_LOG_PATH=" + logs.string());
  l.output = o.dir / "launcher.txt";
  l.watchdog_s = job.timeout_s + 30;
  if (job.during) l.tick = [&] { job.during(o.dir); };
  const Finished f = RunLauncher(l);
  o.exit_code = f.exit_code;
  o.timed_out = f.timed_out;
  o.launcher = f.output;
  for (int r = 0; r < job.n; ++r) {
    const std::string res = ReadFile(o.dir / ("result-" + std::to_string(r)));
    Rank& rk = o.ranks[r];
    if (res.empty()) continue;
    rk.has_result = true;
    std::sscanf(res.c_str(),
                "RESULT rank=%*d pid=%d ops=%d ok=%d wrong=%lld enqueue=%d sync=%d async=%d",
                &rk.pid, &rk.ops, &rk.ok, &rk.wrong, &rk.enqueue, &rk.sync, &rk.async);
    rk.run_log = PlogsOf(logs, "run", rk.pid);
    rk.debug_log = PlogsOf(logs, "debug", rk.pid);
  }
  return o;
}

std::string Describe(const Outcome& o) {
  std::string s = "job folder " + o.dir.string() + ", launcher exit " +
                  std::to_string(o.exit_code) + "\n" + o.launcher.substr(0, 4000) + "\n";
  for (const auto& [r, rk] : o.ranks) {
    s += "rank " + std::to_string(r) + ": " +
         (rk.has_result ? ReadFile(o.dir / ("result-" + std::to_string(r))) : "no result\n");
  }
  return s;
}

bool Has(const std::string& log, std::initializer_list<const char*> parts) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    bool all = true;
    for (const char* p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

// The cut tests run the ring unless they say otherwise (the byte counts of the cuts assume it).
std::vector<std::string> BaseEnv(std::initializer_list<std::string> extra) {
  std::vector<std::string> env = {"HCCL_BUFFSIZE=4",       "HCCL_IF_BASE_PORT=0",
                                  "HCCL_ALGO=ring",        "HCCL_CONNECT_TIMEOUT=60",
                                  "HCCL_EXEC_TIMEOUT=120", "ASCEND_GLOBAL_LOG_LEVEL=3"};
  env.insert(env.end(), extra);
  return env;
}

// Every rank ran every op, all exact, and logged the retry and its recovery.
void ExpectRecovered(const Outcome& o, int n, int ops, int a, int b) {
  ASSERT_FALSE(o.timed_out) << Describe(o);
  ASSERT_EQ(o.ranks.size(), static_cast<size_t>(n));
  for (const auto& [r, rk] : o.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(rk.has_result) << Describe(o);
    EXPECT_EQ(rk.ops, ops) << Describe(o);
    EXPECT_EQ(rk.ok, ops) << Describe(o);
    EXPECT_EQ(rk.wrong, 0) << Describe(o);
    EXPECT_EQ(rk.sync, 0) << Describe(o);
    EXPECT_EQ(rk.async, 0) << Describe(o);
    const std::string link =
        "link rank[" + std::to_string(a) + "] <-> rank[" + std::to_string(b) + "]";
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "attempt[1/", link.c_str(),
                                 "retry from the op's start on links re-made at epoch["}))
        << rk.run_log.substr(0, 3000);
    const std::string hccl_line = "[OpRetry][Server]begin to exec retry of tag[AllReduce_";
    const std::string hccl_ends =
        "] from rank[" + std::to_string(a) + "] and rank[" + std::to_string(b) + "]";
    EXPECT_TRUE(Has(rk.run_log, {hccl_line.c_str(), hccl_ends.c_str()}));
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "links re-made at epoch[",
                                 "re-executing op tag[AllReduce_"}));
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "recovered by retry after [",
                                 "attempt(s), [", "]s lost; ", link.c_str()}))
        << rk.run_log.substr(0, 3000);
    // Recovered: no ERROR CQE was raised, nobody was named.
    EXPECT_FALSE(Has(rk.run_log, {"[HeartbeatAbnormal]", "crimer rank"}))
        << rk.run_log.substr(0, 3000);
  }
  EXPECT_EQ(o.launcher.find("(EI0013)"), std::string::npos) << o.launcher;
}

// ---- (a) the cut hook mid-op, retry on ------------------------------------------------------

void RunCutRecovered(const std::string& transport, int n, int a, int b,
                     const std::string& algo = "ring") {
  Job job;
  job.n = n;
  job.transport = transport;
  // 4 ops of 1 Mi int32 (4 MiB); the cut comes once 6 MiB moved over rank a's link to rank b,
  // after the two warm-up ops: inside the measured ops, mid-transfer.
  job.env = BaseEnv({"HCCL_OP_RETRY_ENABLE=L0:1,L1:1", "VIGIL_FAULT=link_cut:" + std::to_string(a) +
                                                           "-" + std::to_string(b) + "@14M"});
  job.env.push_back("HCCL_ALGO=" + algo);
  job.args = {"--ops", "4", "--count", std::to_string(1 << 20)};
  Outcome o = RunJob("cut" + transport + std::to_string(n) + algo, job);
  DropIfPassed drop{o.dir};
  ExpectRecovered(o, n, 4, a, b);
  // The flight recorder kept the retry: every rank's dump has the op's recovered step.
  for (const auto& [r, rk] : o.ranks) {
    std::string dumps;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(o.dir / "logs" / "run" / "flight", ec)) {
      if (f.path().filename().string().rfind("flight-" + std::to_string(rk.pid) + "_", 0) == 0) {
        dumps += ReadFile(f.path());
      }
    }
    EXPECT_NE(dumps.find("\"retries\":[{\"step\":\"begin\""), std::string::npos) << "rank " << r;
    EXPECT_NE(dumps.find("{\"step\":\"recovered\",\"attempt\":1,"), std::string::npos)
        << "rank " << r;
  }
  // (e) vigil diagnose names the recovery: the link, the attempts, the time lost.
  const std::string report = (o.dir / "diagnose.txt").string();
  const std::string cmd = std::string(VIGIL_BIN) + " diagnose --no-progress -v " +
                          (o.dir / "logs").string() + " > " + report + " 2>&1";
  (void)std::system(cmd.c_str());
  const std::string text = ReadFile(report);
  EXPECT_NE(text.find("Link flap between rank " + std::to_string(a) + " and rank " +
                      std::to_string(b) + " recovered by op retry"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("recovered after 1 attempt(s)"), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(n) + " rank(s) of communicator"), std::string::npos) << text;
  // The rank that cut its link says so.
  EXPECT_TRUE(
      Has(o.ranks.at(a).run_log, {"[Fault]cutting link local rank[", "VIGIL_FAULT link_cut"}));
}

TEST(OpRetry, CutMidOpShmRecovers) {
  RunCutRecovered("", 4, 1, 2);
}
TEST(OpRetry, CutMidOpTcpRecovers) {
  RunCutRecovered("tcp", 4, 1, 2);
}
// Retry on through HcclCommConfig's hcclRetryEnable, not the environment.
TEST(OpRetry, CutMidOpConfigRecovers) {
  Job job;
  job.n = 4;
  job.env = BaseEnv({"VIGIL_FAULT=link_cut:1-2@14M"});
  job.args = {"--ops", "4", "--count", std::to_string(1 << 20), "--config-retry", "L0:1"};
  Outcome o = RunJob("config", job);
  DropIfPassed drop{o.dir};
  ExpectRecovered(o, 4, 4, 1, 2);
  for (const auto& [r, rk] : o.ranks) {
    EXPECT_TRUE(Has(rk.run_log, {"comm config: version[", "retryEnable[L0:1,L1:0,L2:0]"}))
        << "rank " << r;
  }
}
// Under the full mesh ranks 0 and 3 do not need the cut link: the op's commit keeps them in it.
TEST(OpRetry, CutMidOpMeshRecovers) {
  RunCutRecovered("", 4, 1, 2, "fullmesh");
}

// Two ranks over TCP; rank 1 cuts the link at byte 131,591 on it (3 ops of 2 x (16 KiB + a
// 64-byte header + a commit byte), then the fourth op's data both ways): at its first byte of
// the fourth op's commit, and keeps it down for 600 ms. When that byte is rank 1's own (sent
// before the cut), rank 0 has all it waits for and returns the op while rank 1 fails in its
// commit; rank 0's next op fails on the cut link and retries, and its handshake, carrying that
// next op, may reach rank 1 before rank 1's own notice reaches rank 0. Rank 1, its attempt
// past the commit, must then complete the op, not run it again against rank 0's next one
// (EI0005). When the byte is rank 0's, both ranks retry the op. Which comes first is up to the
// scheduler: 10 runs, every op exact and both ranks recovered in each, and some run took the
// first path.
TEST(OpRetry, CutInCommitCompletesTheOp) {
  int completed = 0;
  for (int run = 0; run < 10; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    Job job;
    job.n = 2;
    job.transport = "tcp";
    job.env = BaseEnv({"HCCL_OP_RETRY_ENABLE=L0:1,L1:1",
                       "HCCL_OP_RETRY_PARAMS=MaxCnt:1,HoldTime:5000,IntervalTime:200",
                       "VIGIL_FAULT=link_cut:1-0@131591~600"});
    job.args = {"--ops", "6", "--count", "4096"};
    Outcome o = RunJob("commitcut", job);
    DropIfPassed drop{o.dir};
    ASSERT_FALSE(o.timed_out) << Describe(o);
    ASSERT_EQ(o.ranks.size(), 2u);
    for (const auto& [r, rk] : o.ranks) {
      SCOPED_TRACE("rank " + std::to_string(r));
      ASSERT_TRUE(rk.has_result) << Describe(o);
      EXPECT_EQ(rk.ops, 6) << Describe(o);
      EXPECT_EQ(rk.ok, 6) << Describe(o);
      EXPECT_EQ(rk.wrong, 0) << Describe(o);
      EXPECT_EQ(rk.sync, 0) << Describe(o);
      EXPECT_EQ(rk.async, 0) << Describe(o);
      EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "recovered by retry after ["}))
          << rk.run_log.substr(0, 3000);
    }
    const std::string& log1 = o.ranks.at(1).run_log;
    ASSERT_TRUE(Has(log1, {"[Fault]cutting link local rank[1] <-> remote rank[0]"}));
    // The cut came in the fourth op (seq 4: two warm-up ops, then the second measured one).
    ASSERT_TRUE(Has(log1, {"[OpRetry]communicator[", "index[4] seq[4] attempt[1/1] failed"}))
        << log1.substr(0, 3000);
    const char* done = "index[4] seq[4] complete on every rank before the link failed";
    if (Has(log1, {"[OpRetry]communicator[", done})) {
      ++completed;
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(completed, 0) << "no run had rank 0 return the op before rank 1's retry";
}

// ---- (c) the link stays down longer than HoldTime: a clean failure ---------------------------

// Every rank returned with an error (nothing hung); the ends of the link logged the retry's
// failure and the ERROR CQE naming each other; the screen has EI0013.
void ExpectCleanFailure(const Outcome& o, int n, int a, int b, bool retry_on) {
  ASSERT_FALSE(o.timed_out) << Describe(o);
  ASSERT_EQ(o.ranks.size(), static_cast<size_t>(n));
  for (const auto& [r, rk] : o.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(rk.has_result) << Describe(o);
    EXPECT_TRUE(rk.sync != 0 || rk.enqueue != 0) << Describe(o);
    EXPECT_NE(rk.async, 0) << Describe(o);
    EXPECT_EQ(rk.wrong, 0) << "an op completed with a wrong result\n" << Describe(o);
    if (!retry_on) {
      EXPECT_FALSE(Has(rk.run_log, {"[OpRetry]"})) << rk.run_log.substr(0, 2000);
    }
  }
  for (int r : {a, b}) {
    SCOPED_TRACE("link end rank " + std::to_string(r));
    const Rank& rk = o.ranks.at(r);
    EXPECT_TRUE(Has(rk.debug_log, {"[TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error "
                                   "status[12], time:["}))
        << rk.debug_log.substr(0, 3000);
    if (retry_on) {
      EXPECT_TRUE(Has(rk.debug_log, {"[OpRetry]communicator[",
                                     "retry failed: links not re-made "
                                     "within HoldTime[2000]ms (timeout)"}))
          << rk.debug_log.substr(0, 3000);
      EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[",
                                   "not recovered: gave up after [1] "
                                   "attempt(s)"}));
    }
  }
  EXPECT_NE(o.launcher.find("Execution Error ROCE CQE(EI0013)"), std::string::npos) << o.launcher;
  if (!retry_on) return;
  // vigil diagnose: the error CQE leads; the retry that did not recover it is named beside it.
  const std::string report = (o.dir / "diagnose.txt").string();
  const std::string cmd = std::string(VIGIL_BIN) + " diagnose --no-progress -v " +
                          (o.dir / "logs").string() + " > " + report + " 2>&1";
  (void)std::system(cmd.c_str());
  const std::string text = ReadFile(report);
  EXPECT_NE(text.find("Op retry did not recover the link between rank " + std::to_string(a) +
                      " and rank " + std::to_string(b)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("VERDICT: "), std::string::npos) << text;
  EXPECT_EQ(text.find("VERDICT: Op retry"), std::string::npos) << "a retry is not the root cause\n"
                                                               << text;
}

void RunCutHeldDown(const std::string& transport) {
  Job job;
  job.n = 4;
  job.transport = transport;
  // Down for 8 s after the cut, HoldTime 2 s.
  job.env = BaseEnv({"HCCL_OP_RETRY_ENABLE=L0:1,L1:1",
                     "HCCL_OP_RETRY_PARAMS=MaxCnt:2,HoldTime:2000,IntervalTime:500",
                     "VIGIL_FAULT=link_cut:1-2@14M~8000"});
  job.args = {"--ops", "4", "--count", std::to_string(1 << 20)};
  Outcome o = RunJob("held" + transport, job);
  DropIfPassed drop{o.dir};
  ExpectCleanFailure(o, 4, 1, 2, true);
}

TEST(OpRetry, DownPastHoldTimeFailsCleanlyShm) {
  RunCutHeldDown("");
}
TEST(OpRetry, DownPastHoldTimeFailsCleanlyTcp) {
  RunCutHeldDown("tcp");
}

// ---- (d) retry off: the cut fails the op as without retry -------------------------------------

TEST(OpRetry, RetryOffFailsAsBefore) {
  Job job;
  job.n = 4;
  job.env = BaseEnv({"VIGIL_FAULT=link_cut:1-2@14M"});
  job.args = {"--ops", "4", "--count", std::to_string(1 << 20)};
  Outcome o = RunJob("off", job);
  DropIfPassed drop{o.dir};
  ExpectCleanFailure(o, 4, 1, 2, false);
}

// ---- (b) two network namespaces, the veth down for 2 s mid-op ---------------------------------

int Sh(const std::string& cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Namespaces A and B joined by a veth pair; each rank's address on lo, routed over the veth
// (as the heartbeat tests' F4 netns case). Ranks 0, 1 in A, 2, 3 in B.
struct Netns {
  std::string nsa, nsb, va, ipa, ipb, gwa, gwb;
  bool ok = false;
  Netns() {
    const std::string id = std::to_string(getpid() % 100000);
    nsa = "vrtA" + id;
    nsb = "vrtB" + id;
    va = "vra" + id;
    const std::string vb = "vrb" + id;
    const int oct = 100 + static_cast<int>(getpid() % 100);
    ipa = "10.233." + std::to_string(oct) + ".1";
    ipb = "10.233." + std::to_string(oct) + ".2";
    gwa = "10.234." + std::to_string(oct) + ".1";
    gwb = "10.234." + std::to_string(oct) + ".2";
    if (Sh("ip netns add " + nsa) != 0) return;
    ok = Sh("ip netns add " + nsb) == 0 &&
         Sh("ip link add " + va + " type veth peer name " + vb) == 0 &&
         Sh("ip link set " + va + " netns " + nsa) == 0 &&
         Sh("ip link set " + vb + " netns " + nsb) == 0 &&
         Sh("ip -n " + nsa + " link set lo up") == 0 &&
         Sh("ip -n " + nsb + " link set lo up") == 0 &&
         Sh("ip -n " + nsa + " addr add " + ipa + "/32 dev lo") == 0 &&
         Sh("ip -n " + nsb + " addr add " + ipb + "/32 dev lo") == 0 &&
         Sh("ip -n " + nsa + " addr add " + gwa + "/30 dev " + va) == 0 &&
         Sh("ip -n " + nsb + " addr add " + gwb + "/30 dev " + vb) == 0 &&
         Sh("ip -n " + nsa + " link set " + va + " up") == 0 &&
         Sh("ip -n " + nsb + " link set " + vb + " up") == 0 &&
         Sh("ip -n " + nsa + " route add " + ipb + "/32 via " + gwb) == 0 &&
         Sh("ip -n " + nsb + " route add " + ipa + "/32 via " + gwa) == 0;
  }
  ~Netns() {
    Sh("ip netns del " + nsa);
    Sh("ip netns del " + nsb);
  }
  Job MakeJob() const {
    Job job;
    job.n = 4;
    job.prefix = {"ip", "netns", "exec", nsa};
    // A TCP send that makes no progress for 1 s breaks its link (HCCL_RDMA_TIMEOUT 5 x
    // HCCL_RDMA_RETRY_CNT 1): a 2 s outage is a link error, as RDMA's retransmissions running
    // out are.
    job.env =
        BaseEnv({"HCCL_OP_RETRY_ENABLE=L0:1,L1:1", "HCCL_RDMA_TIMEOUT=5", "HCCL_RDMA_RETRY_CNT=1",
                 "HCCL_IF_IP=" + ipa, "HB_NETNS=" + nsa + "," + nsa + "," + nsb + "," + nsb,
                 "HB_IF_IP=" + ipa + "," + ipa + "," + ipb + "," + ipb});
    return job;
  }
  void Down() const { Sh("ip -n " + nsa + " link set " + va + " down"); }
  // Up again, with the routes the kernel dropped with the link (as a real network's routing
  // converges again).
  void Up() const {
    Sh("ip -n " + nsa + " link set " + va + " up");
    Sh("ip -n " + nsa + " route replace " + ipb + "/32 via " + gwb);
    Sh("ip -n " + nsb + " route replace " + ipa + "/32 via " + gwa);
  }
};

// Every op of a loop exact across a 2 s outage: the ops in flight were retried.
TEST(OpRetryNetns, VethDownTwoSecondsRecovers) {
  Netns net;
  if (!net.ok) GTEST_SKIP() << "cannot create network namespaces here (needs root)";
  Job job = net.MakeJob();
  job.args = {"--seconds", "60", "--count", std::to_string(1 << 18)};
  int phase = 0;
  std::chrono::steady_clock::time_point at;
  job.during = [&](const fs::path& dir) {
    const auto now = std::chrono::steady_clock::now();
    if (phase == 0 && AllExist(dir, "ready", 4)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      net.Down();
      at = std::chrono::steady_clock::now();
      phase = 1;
    } else if (phase == 1 && now - at >= std::chrono::seconds(2)) {
      net.Up();
      at = now;
      phase = 2;
    } else if (phase == 2 && now - at >= std::chrono::seconds(4)) {
      std::ofstream(dir / "stop") << "stop\n";
      phase = 3;
    }
  };
  Outcome o = RunJob("netns2s", job);
  DropIfPassed drop{o.dir};
  ASSERT_EQ(phase, 3) << Describe(o);
  ASSERT_FALSE(o.timed_out) << Describe(o);
  for (const auto& [r, rk] : o.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(rk.has_result) << Describe(o);
    EXPECT_GT(rk.ops, 0);
    EXPECT_EQ(rk.ok, rk.ops) << Describe(o);
    EXPECT_EQ(rk.wrong, 0) << Describe(o);
    EXPECT_EQ(rk.sync, 0) << Describe(o);
    EXPECT_EQ(rk.async, 0) << Describe(o);
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "recovered by retry after [",
                                 "]s lost; link rank["}))
        << rk.run_log.substr(0, 3000);
    EXPECT_FALSE(Has(rk.run_log, {"[HeartbeatAbnormal]", "crimer rank"}));
  }
}

// Down for longer than HoldTime: every rank fails cleanly, nothing hangs.
TEST(OpRetryNetns, VethDownPastHoldTimeFailsCleanly) {
  Netns net;
  if (!net.ok) GTEST_SKIP() << "cannot create network namespaces here (needs root)";
  Job job = net.MakeJob();
  job.env.push_back("HCCL_OP_RETRY_PARAMS=MaxCnt:1,HoldTime:2000,IntervalTime:500");
  job.args = {"--seconds", "60", "--count", std::to_string(1 << 18)};
  int phase = 0;
  std::chrono::steady_clock::time_point at;
  job.during = [&](const fs::path& dir) {
    if (phase == 0 && AllExist(dir, "ready", 4)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      net.Down();
      at = std::chrono::steady_clock::now();
      phase = 1;
    } else if (phase == 1 && (AllExist(dir, "result", 4) ||
                              std::chrono::steady_clock::now() - at >= std::chrono::seconds(40))) {
      net.Up();
      phase = 2;
    }
  };
  Outcome o = RunJob("netnsheld", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  // All ranks reach HoldTime at about the same moment: the first to give up reports the link's
  // end to the heartbeat, whose abort (HCCL_E_REMOTE) may end another rank's op just before its
  // own deadline (or while it makes links for its next op, when its last op had completed on
  // every rank). A rank that was only receiving from across the cut when it came (its sends
  // had all fit in its sockets) sees no link error and hears of no abort (the cut carries the
  // heartbeat's messages too): it ends when the heartbeat finds the far ranks LOST. Each rank
  // fails one of these ways, and at least one by its own HoldTime.
  int by_hold_time = 0;
  for (const auto& [r, rk] : o.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(rk.has_result) << Describe(o);
    EXPECT_TRUE(rk.sync != 0 || rk.enqueue != 0) << Describe(o);
    EXPECT_EQ(rk.wrong, 0) << Describe(o);
    const bool own = Has(rk.debug_log, {"[OpRetry]communicator[",
                                         "retry failed: links not re-made within HoldTime[2000]ms (timeout)"});
    by_hold_time += own ? 1 : 0;
    auto aborted = [&rk](const char* code, const char* status) {
      return Has(rk.debug_log, {"[Heartbeat]communicator [", code, status}) ||
             Has(rk.run_log, {"[Heartbeat]communicator [", code, status});
    };
    EXPECT_TRUE(own || aborted("aborted with HCCL_E_REMOTE", "status[") ||
                aborted("aborted with HCCL_E_NETWORK", "status[LOST]"))
        << rk.debug_log.substr(0, 3000);
  }
  EXPECT_GE(by_hold_time, 1) << Describe(o);
}

}  // namespace
