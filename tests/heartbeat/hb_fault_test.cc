// Faults F1-F4 caused for real on 4- and 8-rank jobs (processes under `vigil run`), and the
// heartbeat's answers checked in every rank's logs and results:
//   - every surviving rank's run log has "[HeartbeatAbnormal]local rank [me]: crimer rank [X]
//     status[..] by informer rank [..]" naming the faulty rank, and names no other;
//   - its debug log has "Cluster Exception Location[IP/ID]:[X]";
//   - its AllReduce returned an error (aclrtSynchronizeStream / HcclGetCommAsyncError);
//   - the job ended by itself (vigil run's --timeout was not needed) and every process exited.
// Behaviour only: the times are printed (F1 time to error) but never asserted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../common/job_runner.h"

namespace fs = std::filesystem;

namespace {

using namespace vigil::test;

struct Job {
  int n = 4;
  std::string fault = "none";
  int victim = -1;
  int peer = -1;
  std::string transport;            // "" = auto
  std::vector<std::string> env;     // NAME=VALUE for the launcher and ranks
  std::vector<std::string> prefix;  // e.g. ip netns exec NS
  int timeout_s = 60;               // vigil run --timeout
  std::vector<std::string> args;    // more hb_driver arguments
  // Called every 100 ms while the job runs, with its folder; may act once (cut the network).
  std::function<void(const fs::path&)> during;
};

struct RankInfo {
  std::string uid;
  int pid = 0;
  std::string run_log;
  std::string debug_log;
  bool has_result = false;
  int enqueue = 0, sync = 0, async = 0;
  uint64_t done_us = 0;
};

struct Outcome {
  int exit_code = -1;
  bool timed_out = false;
  std::string launcher_stderr;
  fs::path dir;
  std::map<int, RankInfo> ranks;
};

Outcome RunJob(const std::string& name, const Job& job) {
  Outcome o;
  o.dir = FreshJobDir("HB_TEST_TMP", "vigil_hb", name);
  const fs::path logs = o.dir / "logs";
  Launch l;
  l.argv = job.prefix;
  for (std::string& a : VigilRun(VIGIL_BIN, job.n, logs, job.timeout_s)) l.argv.push_back(a);
  l.argv.push_back("-q");
  if (!job.transport.empty()) l.argv.insert(l.argv.end(), {"--transport", job.transport});
  l.argv.insert(l.argv.end(),
                {"--", HB_DRIVER, "--out", o.dir.string(), "--fault", job.fault, "--victim",
                 std::to_string(job.victim), "--peer", std::to_string(job.peer)});
  l.argv.insert(l.argv.end(), job.args.begin(), job.args.end());
  l.env = job.env;
  l.env.push_back("ASCEND_PROCESS_LOG_PATH=" + logs.string());
  l.output = o.dir / "launcher.stderr";
  l.watchdog_s = job.timeout_s + 30;
  bool continued = false;
  l.tick = [&] {
    // F2: wake the stopped rank once the others have their results (nothing left behind).
    if (job.fault == "stop" && !continued && AllExist(o.dir, "result", job.n, job.victim)) {
      const std::string vp = ReadFile(o.dir / "victim-pid");
      if (!vp.empty()) {
        kill(std::atoi(vp.c_str()), SIGCONT);
        continued = true;
      }
    }
    if (job.during) job.during(o.dir);
  };
  const Finished f = RunLauncher(l);
  if (job.fault == "stop" && !continued) {  // never leave a stopped process behind
    const std::string vp = ReadFile(o.dir / "victim-pid");
    if (!vp.empty()) {
      kill(std::atoi(vp.c_str()), SIGCONT);
      kill(std::atoi(vp.c_str()), SIGKILL);
    }
  }
  o.exit_code = f.exit_code;
  o.timed_out = f.timed_out;
  o.launcher_stderr = f.output;
  for (const auto& [r, key] : RankKeys(logs, /*first_per_file=*/false)) {
    o.ranks[r].uid = key.uid;
    o.ranks[r].pid = key.pid;
  }
  for (auto& [r, ri] : o.ranks) {
    ri.run_log = PlogsOf(logs, "run", ri.pid);
    ri.debug_log = PlogsOf(logs, "debug", ri.pid);
    const std::string res = ReadFile(o.dir / ("result-" + std::to_string(r)));
    if (!res.empty()) {
      ri.has_result = true;
      std::sscanf(res.c_str(), "rank=%*d enqueue=%d sync=%d async=%d", &ri.enqueue, &ri.sync,
                  &ri.async);
      const size_t at = res.find("done_us=");
      if (at != std::string::npos) ri.done_us = std::strtoull(res.c_str() + at + 8, nullptr, 10);
    }
  }
  return o;
}

// Crimers named in this rank's HeartbeatAbnormal lines (as "uid status").
std::set<std::string> Crimers(const RankInfo& ri) {
  static const std::regex kLine(
      R"(\[TaskExecStage\]\[HeartbeatAbnormal\]local rank \[([^\]]+)\]: crimer rank \[([^\]]+)\] status\[([A-Z ]+)\] by informer rank \[([^\]]+)\])");
  std::set<std::string> out;
  for (std::sregex_iterator it(ri.run_log.begin(), ri.run_log.end(), kLine), end; it != end; ++it) {
    if ((*it)[1].str() == ri.uid) out.insert((*it)[2].str() + " " + (*it)[3].str());
  }
  return out;
}

bool NamesCrimer(const RankInfo& ri, const std::string& uid,
                 const std::set<std::string>& statuses) {
  for (const std::string& c : Crimers(ri)) {
    const size_t sp = c.find(' ');
    if (c.substr(0, sp) == uid && statuses.count(c.substr(sp + 1)) != 0) return true;
  }
  return false;
}

bool LocatesCrimer(const RankInfo& ri, const std::string& uid) {
  return ri.debug_log.find("[TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[" +
                           uid + "]") != std::string::npos;
}

std::string Describe(const Outcome& o) {
  std::string s = "job folder " + o.dir.string() + ", launcher exit " +
                  std::to_string(o.exit_code) + "\n" + o.launcher_stderr;
  for (const auto& [r, ri] : o.ranks) {
    s += "rank " + std::to_string(r) + " uid " + ri.uid + " pid " + std::to_string(ri.pid) +
         " result " +
         (ri.has_result ? "sync=" + std::to_string(ri.sync) + " async=" + std::to_string(ri.async)
                        : std::string("none")) +
         " crimers:";
    for (const std::string& c : Crimers(ri)) s += " [" + c + "]";
    s += "\n";
  }
  return s;
}

const std::vector<std::string> kBaseEnv = {"HCCL_BUFFSIZE=4", "HCCL_IF_BASE_PORT=0",
                                           "HCCL_CONNECT_TIMEOUT=60", "ASCEND_GLOBAL_LOG_LEVEL=3"};

std::vector<std::string> Env(std::initializer_list<std::string> extra) {
  std::vector<std::string> env = kBaseEnv;
  env.insert(env.end(), extra);
  return env;
}

// The checks every fault test makes for a single crimer.
void ExpectAttributed(const Outcome& o, int n, int crimer, const std::set<std::string>& statuses,
                      bool crimer_survives) {
  ASSERT_FALSE(o.timed_out) << "vigil run needed its --timeout: something hung\n" << Describe(o);
  ASSERT_EQ(o.ranks.size(), static_cast<size_t>(n)) << Describe(o);
  const std::string uid = o.ranks.at(crimer).uid;
  for (const auto& [r, ri] : o.ranks) {
    if (r == crimer && !crimer_survives) continue;
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_TRUE(NamesCrimer(ri, uid, statuses)) << Describe(o);
    for (const std::string& c : Crimers(ri)) {
      EXPECT_EQ(c.substr(0, c.find(' ')), uid) << "a healthy rank was named: " << c;
    }
    EXPECT_TRUE(LocatesCrimer(ri, uid)) << Describe(o);
    ASSERT_TRUE(ri.has_result) << Describe(o);
    EXPECT_TRUE(ri.sync != 0 || ri.async != 0)
        << "the collective returned success while rank " << crimer << " was faulty\n"
        << Describe(o);
    EXPECT_NE(ri.async, 0) << "HcclGetCommAsyncError reported no error";
  }
}

// ---- F1: SIGKILL -------------------------------------------------------------------------

void RunKill(int n, int victim) {
  Job job;
  job.n = n;
  job.fault = "kill";
  job.victim = victim;
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});  // errors must come from the heartbeat, not this
  Outcome o = RunJob("kill" + std::to_string(n), job);
  DropIfPassed drop{o.dir};
  ExpectAttributed(o, n, victim, {"LOST"}, false);
  // Every survivor's run log names the killed rank LOST — also the ranks whose data link to it
  // broke first: its process is gone, so that is no link fault (no ERROR CQE, no EI0013).
  const std::string uid = o.ranks.at(victim).uid;
  for (const auto& [r, ri] : o.ranks) {
    if (r != victim) {
      EXPECT_TRUE(NamesCrimer(ri, uid, {"LOST"})) << "rank " << r << "\n" << Describe(o);
      EXPECT_FALSE(NamesCrimer(ri, uid, {"ERROR CQE"})) << "rank " << r << "\n" << Describe(o);
    }
  }
  EXPECT_EQ(o.launcher_stderr.find("(EI0013)"), std::string::npos) << o.launcher_stderr;
  // Measurement, not an assertion: kill to each survivor's error.
  const uint64_t killed = std::strtoull(ReadFile(o.dir / "victim-time").c_str(), nullptr, 10);
  for (const auto& [r, ri] : o.ranks) {
    if (r != victim && killed != 0 && ri.done_us >= killed) {
      std::printf("F1 n=%d rank %d: error %.3f s after the kill\n", n, r,
                  (ri.done_us - killed) / 1e6);
    }
  }
}

TEST(HeartbeatFault, F1KillFourRanks) {
  RunKill(4, 2);
}
TEST(HeartbeatFault, F1KillEightRanks) {
  RunKill(8, 5);
}

// F1 inside a transfer: the four ranks loop 16 MiB AllReduces over shm (full mesh, both halves
// single copy: peers read blocks in place from each other's buffers) and the victim is killed
// wherever it is, mid-read of its peers' memory or with its own buffer being read. Every
// survivor fails the op fast and names it LOST, not as a link fault.
TEST(HeartbeatFault, F1KillMidTransferFourRanks) {
  Job job;
  job.n = 4;
  job.fault = "killmid";
  job.victim = 1;
  job.transport = "shm";
  job.args = {"--count", std::to_string(4u << 20)};
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});  // errors must come from the link or heartbeat
  Outcome o = RunJob("killmid4", job);
  DropIfPassed drop{o.dir};
  ExpectAttributed(o, 4, 1, {"LOST"}, false);
  const std::string uid = o.ranks.at(1).uid;
  for (const auto& [r, ri] : o.ranks) {
    if (r != 1) {
      EXPECT_FALSE(NamesCrimer(ri, uid, {"ERROR CQE"})) << "rank " << r << "\n" << Describe(o);
    }
  }
  EXPECT_EQ(o.launcher_stderr.find("(EI0013)"), std::string::npos) << o.launcher_stderr;
}

// F1 on the direct exchange (communicator_direct.cc): two ranks on shm loop 64-byte
// collectives, which go through the link's direct slots on the caller's thread, and the victim
// is killed wherever it is (every op that goes direct, root 0 and the victim rank 1); then the
// victim of a 2-rank job never enters its small AllReduce. The survivor fails fast and names it
// LOST either way.
TEST(HeartbeatFault, F1KillDirectExchangeTwoRanks) {
  const std::pair<const char*, const char*> runs[] = {
      {"killmid", "allreduce"}, {"kill", "allreduce"},     {"killmid", "broadcast"},
      {"killmid", "allgather"}, {"killmid", "reducescatter"}, {"killmid", "reduce"},
      {"killmid", "alltoall"}};
  for (const auto& [fault, op] : runs) {
    SCOPED_TRACE(std::string(fault) + " " + op);
    Job job;
    job.n = 2;
    job.fault = fault;
    job.victim = 1;
    job.transport = "shm";
    job.args = {"--count", "16", "--op", op};
    job.env = Env({"HCCL_EXEC_TIMEOUT=120"});  // errors must come from the link or heartbeat
    Outcome o = RunJob(std::string(fault) + "direct2-" + op, job);
    DropIfPassed drop{o.dir};
    ExpectAttributed(o, 2, 1, {"LOST"}, false);
    EXPECT_TRUE(NamesCrimer(o.ranks.at(0), o.ranks.at(1).uid, {"LOST"})) << Describe(o);
    EXPECT_EQ(o.launcher_stderr.find("(EI0013)"), std::string::npos) << o.launcher_stderr;
  }
}

// A rank dies while the others are between ops: HcclGetCommAsyncError reports the loss without
// any op having to fail first (HCCL_E_NETWORK: a LOST member), and every survivor names it.
TEST(HeartbeatFault, F1KillBetweenOpsSetsAsyncError) {
  Job job;
  job.n = 3;
  job.fault = "idlekill";
  job.victim = 1;
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});
  Outcome o = RunJob("idlekill3", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  const std::string uid = o.ranks.at(1).uid;
  for (int r : {0, 2}) {
    const RankInfo& ri = o.ranks.at(r);
    ASSERT_TRUE(ri.has_result) << Describe(o);
    EXPECT_EQ(ri.async, 19 /* HCCL_E_NETWORK */) << "rank " << r << "\n" << Describe(o);
    EXPECT_TRUE(NamesCrimer(ri, uid, {"LOST"})) << "rank " << r << "\n" << Describe(o);
  }
}

// ---- F2: SIGSTOP -------------------------------------------------------------------------

void RunStop(int n, int victim) {
  Job job;
  job.n = n;
  job.fault = "stop";
  job.victim = victim;
  job.env = Env({"HCCL_EXEC_TIMEOUT=120", "VIGIL_HEARTBEAT_LOST_TIMEOUT=3"});
  Outcome o = RunJob("stop" + std::to_string(n), job);
  DropIfPassed drop{o.dir};
  ExpectAttributed(o, n, victim, {"LOST"}, false);
}

TEST(HeartbeatFault, F2StopFourRanks) {
  RunStop(4, 1);
}
TEST(HeartbeatFault, F2StopEightRanks) {
  RunStop(8, 6);
}

// ---- F3: a rank stuck in host code -------------------------------------------------------

void RunSleep(int n, int victim) {
  Job job;
  job.n = n;
  job.fault = "sleep";
  job.victim = victim;
  // Stuck checks every 3 s; the others' AllReduce times out at 9 s with STUCK already known.
  job.env = Env({"HCCL_EXEC_TIMEOUT=9"});
  Outcome o = RunJob("sleep" + std::to_string(n), job);
  DropIfPassed drop{o.dir};
  ExpectAttributed(o, n, victim, {"STUCK"}, true);
  for (const auto& [r, ri] : o.ranks) {
    EXPECT_NE(ri.debug_log.find("ExceptionType:[Stuck Occurred], Possible Reason:1.Host process "
                                "is stuck, 2.Device task is stuck"),
              std::string::npos)
        << "rank " << r;
  }
}

TEST(HeartbeatFault, F3StuckFourRanks) {
  RunSleep(4, 3);
}
TEST(HeartbeatFault, F3StuckEightRanks) {
  RunSleep(8, 2);
}

// ---- F4: data link cut by a fault-injection hook -------------------------------------------

void RunCut(int n, int victim, int peer, const std::string& transport) {
  Job job;
  job.n = n;
  job.fault = "cut";
  job.victim = victim;
  job.peer = peer;
  job.transport = transport;
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});
  Outcome o = RunJob("cut" + std::to_string(n) + transport, job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  ASSERT_EQ(o.ranks.size(), static_cast<size_t>(n)) << Describe(o);
  const std::string a = o.ranks.at(victim).uid, b = o.ranks.at(peer).uid;
  for (const auto& [r, ri] : o.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r));
    // The ends of the cut link report each other; at least one of the two reports reaches every
    // rank before the jobs ends (the second may still be in flight when a process exits).
    EXPECT_TRUE(NamesCrimer(ri, a, {"ERROR CQE"}) || NamesCrimer(ri, b, {"ERROR CQE"}))
        << Describe(o);
    for (const std::string& c : Crimers(ri)) {
      const std::string who = c.substr(0, c.find(' '));
      EXPECT_TRUE(who == a || who == b) << "a rank off the cut link was named: " << c;
    }
    // The two ends fail on the CQE itself, so their report locates it; a rank off the link may
    // fail first on a neighbour closing its links, before any event reached it.
    if (r == victim || r == peer) {
      EXPECT_TRUE(LocatesCrimer(ri, a) || LocatesCrimer(ri, b)) << Describe(o);
    }
    ASSERT_TRUE(ri.has_result) << Describe(o);
    EXPECT_TRUE(ri.sync != 0 || ri.async != 0) << Describe(o);
  }
  // The two ends print the ROCE CQE line and the EI0013 screen error.
  for (int r : {victim, peer}) {
    EXPECT_NE(o.ranks.at(r).debug_log.find("[TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe "
                                           "error status[12], time:["),
              std::string::npos)
        << "rank " << r;
  }
  EXPECT_NE(o.launcher_stderr.find("Execution Error ROCE CQE(EI0013)"), std::string::npos);
}

TEST(HeartbeatFault, F4LinkCutFourRanks) {
  RunCut(4, 1, 2, "");
}
TEST(HeartbeatFault, F4LinkCutEightRanksTcp) {
  RunCut(8, 3, 6, "tcp");
}

// ---- F4: two network namespaces joined by veth, link set down ----------------------------

int Sh(const std::string& cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(HeartbeatFault, F4NetnsVethDownFourRanks) {
  const std::string id = std::to_string(getpid() % 100000);
  const std::string nsa = "vhbA" + id, nsb = "vhbB" + id;
  const std::string va = "vha" + id, vb = "vhb" + id;
  const int oct = 100 + static_cast<int>(getpid() % 100);
  const std::string net = "10.231." + std::to_string(oct) + ".";
  if (Sh("ip netns add " + nsa) != 0) {
    GTEST_SKIP() << "cannot create network namespaces here (needs root and CAP_SYS_ADMIN); the "
                    "netns veth test is skipped";
  }
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      Sh("ip netns del " + a);
      Sh("ip netns del " + b);
    }
  } cleanup{nsa, nsb};
  ASSERT_EQ(Sh("ip netns add " + nsb), 0);
  ASSERT_EQ(Sh("ip link add " + va + " type veth peer name " + vb), 0);
  ASSERT_EQ(Sh("ip link set " + va + " netns " + nsa), 0);
  ASSERT_EQ(Sh("ip link set " + vb + " netns " + nsb), 0);
  // Each namespace's rank address sits on lo, so cutting the veth cuts only the other side.
  const std::string ipa = net + "1", ipb = net + "2";
  for (const auto& [ns, dev, ip, via] :
       {std::tuple{nsa, va, ipa, std::string("10.232.") + std::to_string(oct) + ".1"},
        std::tuple{nsb, vb, ipb, std::string("10.232.") + std::to_string(oct) + ".2"}}) {
    ASSERT_EQ(Sh("ip -n " + ns + " link set lo up"), 0);
    ASSERT_EQ(Sh("ip -n " + ns + " addr add " + ip + "/32 dev lo"), 0);
    ASSERT_EQ(Sh("ip -n " + ns + " addr add " + via + "/30 dev " + dev), 0);
    ASSERT_EQ(Sh("ip -n " + ns + " link set " + dev + " up"), 0);
  }
  const std::string gwa = "10.232." + std::to_string(oct) + ".1";
  const std::string gwb = "10.232." + std::to_string(oct) + ".2";
  ASSERT_EQ(Sh("ip -n " + nsa + " route add " + ipb + "/32 via " + gwb), 0);
  ASSERT_EQ(Sh("ip -n " + nsb + " route add " + ipa + "/32 via " + gwa), 0);

  Job job;
  job.n = 4;
  job.fault = "loop";
  job.transport = "tcp";
  job.prefix = {"ip", "netns", "exec", nsa};
  job.env = Env({"HCCL_EXEC_TIMEOUT=120", "VIGIL_HEARTBEAT_LOST_TIMEOUT=3", "HCCL_IF_IP=" + ipa,
                 "HB_NETNS=" + nsa + "," + nsa + "," + nsb + "," + nsb,
                 "HB_IF_IP=" + ipa + "," + ipa + "," + ipb + "," + ipb});
  bool cut = false;
  job.during = [&](const fs::path& dir) {
    if (!cut && AllExist(dir, "ready", 4, -1)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      Sh("ip -n " + nsa + " link set " + va + " down");
      cut = true;
    }
  };
  Outcome o = RunJob("netns", job);
  DropIfPassed drop{o.dir};
  ASSERT_TRUE(cut) << Describe(o);
  ASSERT_FALSE(o.timed_out) << Describe(o);
  ASSERT_EQ(o.ranks.size(), 4u) << Describe(o);
  const std::set<std::string> side_a = {o.ranks.at(0).uid, o.ranks.at(1).uid};
  const std::set<std::string> side_b = {o.ranks.at(2).uid, o.ranks.at(3).uid};
  for (const auto& [r, ri] : o.ranks) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& other = r < 2 ? side_b : side_a;
    bool named = false;
    for (const std::string& c : Crimers(ri)) {
      const std::string who = c.substr(0, c.find(' '));
      EXPECT_TRUE(other.count(who) != 0) << "a rank on this side of the cut was named: " << c;
      named = named || other.count(who) != 0;
    }
    EXPECT_TRUE(named) << Describe(o);
    bool located = false;
    for (const std::string& u : other) located = located || LocatesCrimer(ri, u);
    EXPECT_TRUE(located) << Describe(o);
    ASSERT_TRUE(ri.has_result) << Describe(o);
    EXPECT_TRUE(ri.sync != 0 || ri.async != 0) << Describe(o);
  }
}

// ---- no fault: no event; vigil health on a live job ----------------------------------------

TEST(HeartbeatHealthy, NoEventsAndHealthView) {
  Job job;
  job.n = 4;
  job.fault = "hold";
  job.env = Env({"HCCL_EXEC_TIMEOUT=120"});
  std::string health_out;
  int health_rc = -1;
  bool asked = false;
  job.during = [&](const fs::path& dir) {
    if (asked || !AllExist(dir, "ready", 4, -1)) return;
    asked = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // links up, beats exchanged
    const std::string cmd = std::string(VIGIL_BIN) + " health " + (dir / "logs").string() + " > " +
                            (dir / "health.txt").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    health_rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    health_out = ReadFile(dir / "health.txt");
    std::ofstream(dir / "release") << "go\n";
  };
  Outcome o = RunJob("healthy", job);
  DropIfPassed drop{o.dir};
  ASSERT_FALSE(o.timed_out) << Describe(o);
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
  for (const auto& [r, ri] : o.ranks) {
    EXPECT_TRUE(Crimers(ri).empty()) << "false alarm on rank " << r << "\n" << Describe(o);
    EXPECT_TRUE(ri.has_result && ri.sync == 0 && ri.async == 0) << Describe(o);
    EXPECT_NE(ri.run_log.find("[Heartbeat]maintenance link to ["), std::string::npos);
  }
  EXPECT_EQ(health_rc, 0) << health_out;
  EXPECT_NE(health_out.find("Summary: 4 alive, 0 lost, 0 stuck, 0 error cqe, 0 unreachable"),
            std::string::npos)
      << health_out;
  for (const auto& [r, ri] : o.ranks) EXPECT_NE(health_out.find(ri.uid), std::string::npos);
  std::printf("%s", health_out.c_str());
}

}  // namespace
