// `vigil diagnose` on Vigil's own logs of every fault of FAULTS.md (F1-F16): each test causes
// one fault for real with the fault tests' programs (tests/heartbeat/hb_driver for F1-F4,
// tests/faults/fault_driver for F5-F16) under `vigil run`, into a fresh log root, then runs
// `vigil diagnose ROOT --json` on the logs alone (the screen output is kept outside the root)
// and checks the verdict: the fault class, the root-cause rank(s) by pid, the error code and
// the facts the catalogue row asks for. Timeouts are shortened by env; every wait is bounded
// (vigil run --timeout, and a kill of the whole process group past a deadline).
#include <fcntl.h>
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
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv with extra env, stdout/stderr to files; polls every 100 ms (calling `during`), and
// kills the process group after `deadline_s`. Returns the exit code (-1 when killed).
int Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const fs::path& out,
          const fs::path& err, int deadline_s, const std::function<void()>& during = {}) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (const std::string& kv : env) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) unsetenv(kv.c_str());
      else setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o >= 0) dup2(o, 1);
    if (e >= 0) dup2(e, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  bool killed = false;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (during) during();
    if (!killed && std::chrono::steady_clock::now() - start > std::chrono::seconds(deadline_s)) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (killed) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Env every scenario starts from: the fault tests' short timeouts, no inherited fault knobs.
const std::vector<std::string> kBaseEnv = {
    "HCCL_IF_BASE_PORT=0",      "HCCL_BUFFSIZE=1",         "HCCL_CONNECT_TIMEOUT=20",
    "HCCL_EXEC_TIMEOUT=60",     "HCCL_DFS_CONFIG",         "VIGIL_DEVICE_MEMORY",
    "HCCL_RDMA_QPS_PER_CONNECTION", "VIGIL_TRANSPORT",     "VIGIL_FAULT",
    "HCCL_ENTRY_LOG_ENABLE",    "VIGIL_HEARTBEAT_LOST_TIMEOUT"};

struct Scenario {
  std::string name;
  int n = 2;
  std::string program;              // FAULT_DRIVER or HB_DRIVER
  std::vector<std::string> args;    // the program's arguments
  std::vector<std::string> env;     // on top of kBaseEnv
  int timeout_s = 45;               // vigil run --timeout
  bool stop_victim = false;         // F2: SIGCONT the stopped rank once the others are done
  bool direct = false;              // run the program once, not under vigil run (F14)
};

struct Outcome {
  fs::path dir, logs;
  int run_rc = -1;
  std::map<int, int> pid;           // rank -> pid
  json report;                      // vigil diagnose --json
  std::string text;                 // vigil diagnose (text)
  std::string Describe() const {
    return "job folder " + dir.string() + ", vigil run exit " + std::to_string(run_rc) + "\nscreen:\n" +
           ReadFile(dir / "screen.err").substr(0, 3000) + "\ndiagnose:\n" + text;
  }
};

fs::path WorkDir(const std::string& name) {
  const char* base = std::getenv("DIAG_E2E_TMP");
  fs::path root = base != nullptr ? fs::path(base) : fs::temp_directory_path();
  fs::path dir = root / ("vigil_diag_e2e_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tmp");
  return dir;
}

void Diagnose(Outcome* o) {
  const int rc = Spawn({VIGIL_BIN, "diagnose", o->logs.string(), "--json", "--no-progress"}, {},
                       o->dir / "diagnose.json", o->dir / "diagnose.err", 60);
  ASSERT_EQ(rc, 0) << ReadFile(o->dir / "diagnose.err");
  o->report = json::parse(ReadFile(o->dir / "diagnose.json"), nullptr, false);
  ASSERT_FALSE(o->report.is_discarded()) << "diagnose --json is not JSON";
  Spawn({VIGIL_BIN, "diagnose", o->logs.string(), "--no-progress", "-v"}, {}, o->dir / "diagnose.txt",
        o->dir / "diagnose.err", 60);
  o->text = ReadFile(o->dir / "diagnose.txt");
}

Outcome RunScenario(const Scenario& s) {
  Outcome o;
  o.dir = WorkDir(s.name);
  o.logs = o.dir / "logs";
  std::vector<std::string> env = kBaseEnv;
  env.insert(env.end(), s.env.begin(), s.env.end());
  env.push_back("ASCEND_PROCESS_LOG_PATH=" + o.logs.string());
  std::vector<std::string> argv;
  if (!s.direct) {
    argv = {VIGIL_BIN, "run", "-n", std::to_string(s.n), "--log-dir", o.logs.string(), "--timeout",
            std::to_string(s.timeout_s), "--"};
  }
  argv.push_back(s.program);
  if (s.program == FAULT_DRIVER) argv.insert(argv.end(), {"--tmp", (o.dir / "tmp").string()});
  else argv.insert(argv.end(), {"--out", o.dir.string()});
  argv.insert(argv.end(), s.args.begin(), s.args.end());
  bool continued = false;
  auto during = [&]() {
    if (!s.stop_victim || continued) return;
    int results = 0;
    for (int r = 0; r < s.n; ++r) results += fs::exists(o.dir / ("result-" + std::to_string(r))) ? 1 : 0;
    if (results >= s.n - 1 && fs::exists(o.dir / "victim-pid")) {
      kill(std::atoi(ReadFile(o.dir / "victim-pid").c_str()), SIGCONT);
      continued = true;
    }
  };
  o.run_rc = Spawn(argv, env, o.dir / "screen.out", o.dir / "screen.err", s.timeout_s + 30, during);
  if (s.stop_victim && !continued && fs::exists(o.dir / "victim-pid")) {  // never leave it stopped
    const int vp = std::atoi(ReadFile(o.dir / "victim-pid").c_str());
    kill(vp, SIGCONT);
    kill(vp, SIGKILL);
  }
  // rank -> pid: fault_driver prints "RESULT rank=R pid=P", hb_driver writes ready-R with its pid.
  std::istringstream out(ReadFile(o.dir / "screen.out"));
  for (std::string line; std::getline(out, line);) {
    int r = -1, p = -1;
    if (std::sscanf(line.c_str(), "RESULT rank=%d pid=%d", &r, &p) == 2) o.pid[r] = p;
  }
  for (int r = 0; r < s.n; ++r) {
    const fs::path ready = o.dir / ("ready-" + std::to_string(r));
    if (fs::exists(ready)) o.pid[r] = std::atoi(ReadFile(ready).c_str());
  }
  Diagnose(&o);
  return o;
}

// Removes a job's folder when the test passed (kept for inspection when it failed).
struct DropIfPassed {
  fs::path dir;
  ~DropIfPassed() {
    if (!::testing::Test::HasFailure() && !dir.empty()) fs::remove_all(dir);
  }
};

std::string Fact(const json& f, const std::string& key) {
  if (!f.contains("facts") || !f["facts"].contains(key) || !f["facts"][key].is_string()) return {};
  return f["facts"][key].get<std::string>();
}

// pids of the verdict's ranks with one of `roles` (empty: any role).
std::set<int> PidsOf(const json& f, const std::set<std::string>& roles = {}) {
  std::set<int> out;
  for (const json& r : f["ranks"])
    if ((roles.empty() || roles.count(r["role"].get<std::string>()) != 0) && r["pid"].is_number())
      out.insert(r["pid"].get<int>());
  return out;
}

// The checks every scenario makes: a verdict of one of `faults` (fault class -> its error code),
// naming exactly the ranks `culprit_ranks` (by pid) in the roles given (empty: any role);
// nullopt when the scenario checks the ranks itself.
const json& ExpectVerdict(const Outcome& o, const std::map<std::string, std::string>& faults,
                          const std::optional<std::set<int>>& culprit_ranks, const std::set<std::string>& roles) {
  // Returned when there is no verdict: the callers' field checks then fail instead of throwing.
  static const json kNull = {{"fault", ""}, {"title", ""}, {"advice", ""}, {"code", ""}, {"confidence", ""},
                             {"ranks", json::array()}, {"facts", json::object()}};
  EXPECT_TRUE(o.report.contains("verdict") && o.report["verdict"].is_object()) << o.Describe();
  if (!o.report.contains("verdict") || !o.report["verdict"].is_object()) return kNull;
  const json& v = o.report["verdict"];
  EXPECT_EQ(o.report["schema"], "vigil.diagnose/1");
  const std::string fault = v["fault"].get<std::string>();
  EXPECT_TRUE(faults.count(fault) != 0) << "verdict " << fault << "\n" << o.Describe();
  if (faults.count(fault) != 0) {
    EXPECT_EQ(v["code"].get<std::string>(), faults.at(fault)) << o.Describe();
  }
  if (culprit_ranks) {
    std::set<int> want;
    for (int r : *culprit_ranks) {
      EXPECT_TRUE(o.pid.count(r) != 0) << "no pid for rank " << r << "\n" << o.Describe();
      if (o.pid.count(r) != 0) want.insert(o.pid.at(r));
    }
    EXPECT_EQ(PidsOf(v, roles), want) << o.Describe();
  }
  // Vigil's own logs are clean text: every line was read and nothing was left unread.
  EXPECT_EQ(o.report["input"]["binary_lines"], 0);
  EXPECT_TRUE(o.report["input"]["not_read"].empty()) << o.report["input"].dump();
  // The text report shows the same verdict.
  EXPECT_NE(o.text.find(v["title"].get<std::string>()), std::string::npos) << o.text;
  return v;
}

const std::set<std::string> kRootCause = {"root cause"};

Scenario Hb(const std::string& name, int n, std::vector<std::string> args, std::vector<std::string> env) {
  Scenario s;
  s.name = name;
  s.n = n;
  s.program = HB_DRIVER;
  s.args = std::move(args);
  s.env = {"HCCL_BUFFSIZE=4", "HCCL_CONNECT_TIMEOUT=60", "ASCEND_GLOBAL_LOG_LEVEL=3"};
  s.env.insert(s.env.end(), env.begin(), env.end());
  s.timeout_s = 60;
  return s;
}

Scenario Fd(const std::string& name, int n, std::vector<std::string> args, std::vector<std::string> env = {}) {
  Scenario s;
  s.name = name;
  s.n = n;
  s.program = FAULT_DRIVER;
  s.args = std::move(args);
  s.env = std::move(env);
  return s;
}

// ---- F1-F4: the heartbeat's faults -------------------------------------------------------------

TEST(DiagnoseE2E, F1KilledRankIsLost) {
  Outcome o = RunScenario(Hb("f1", 4, {"--fault", "kill", "--victim", "2"}, {"HCCL_EXEC_TIMEOUT=120"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"heartbeat_lost", ""}}, std::set<int>{2}, kRootCause);
  EXPECT_EQ(Fact(v, "status"), "LOST") << o.Describe();
  EXPECT_FALSE(Fact(v, "arrival_time").empty());
  EXPECT_TRUE(v["time"].is_string());
  // The survivors' error CQEs point at the killed rank and say it exited first.
  for (const json& f : o.report["findings"]) {
    if (f["fault"] != "error_cqe" || f["ranks"].size() < 2) continue;
    EXPECT_EQ(f["ranks"][1]["pid"], o.pid.at(2)) << f.dump();
    EXPECT_EQ(Fact(f, "peer_exited_first"), "true") << f.dump();
  }
}

TEST(DiagnoseE2E, F2StoppedRankIsLost) {
  Scenario s = Hb("f2", 4, {"--fault", "stop", "--victim", "1"},
                  {"HCCL_EXEC_TIMEOUT=120", "VIGIL_HEARTBEAT_LOST_TIMEOUT=3"});
  s.stop_victim = true;
  Outcome o = RunScenario(s);
  DropIfPassed drop{o.dir};
  ExpectVerdict(o, {{"heartbeat_lost", ""}, {"process_stuck", ""}}, std::set<int>{1}, kRootCause);
}

TEST(DiagnoseE2E, F3StuckRankDidNotEnterTheOp) {
  // The stuck rank enters the op only after the others gave up (HCCL_EXEC_TIMEOUT 4 s, STUCK
  // checks every 4/3 s): the heartbeat's STUCK and the entry times name it.
  Outcome o = RunScenario(Hb("f3", 4, {"--fault", "sleep", "--victim", "3"}, {"HCCL_EXEC_TIMEOUT=4"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"late_rank", "EI0002"}, {"process_stuck", ""}}, std::set<int>{3}, {});
  if (v.is_object() && v["fault"] == "late_rank") {
    EXPECT_EQ(Fact(v, "heartbeat").rfind("STUCK", 0), 0u) << v.dump();
    EXPECT_FALSE(Fact(v, "index").empty());
  }
  bool stuck = false;
  for (const json& f : o.report["findings"]) stuck = stuck || f["fault"] == "process_stuck";
  EXPECT_TRUE(stuck) << o.Describe();
}

TEST(DiagnoseE2E, F4CutLinkNamesBothEnds) {
  Outcome o = RunScenario(Hb("f4", 4, {"--fault", "cut", "--victim", "1", "--peer", "2"}, {"HCCL_EXEC_TIMEOUT=120"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"error_cqe", "EI0013"}}, std::set<int>{1, 2}, {});
  EXPECT_EQ(Fact(v, "status"), "ERROR CQE");
  // Both ends stay alive and keep logging: the network, not a peer exit, is blamed.
  EXPECT_NE(v["advice"].get<std::string>().find("network"), std::string::npos) << v.dump();
  // The same logs as an HTML page: written, self-contained.
  const int rc = Spawn({VIGIL_BIN, "diagnose", o.logs.string(), "--no-progress", "--html",
                        (o.dir / "report.html").string()},
                       {}, o.dir / "html.out", o.dir / "html.err", 60);
  EXPECT_EQ(rc, 0);
  const std::string html = ReadFile(o.dir / "report.html");
  EXPECT_NE(html.find("<html"), std::string::npos);
  EXPECT_NE(html.find(v["title"].get<std::string>().substr(0, 20)), std::string::npos);
}

// ---- F5-F16: the fault tests' faults ------------------------------------------------------------

TEST(DiagnoseE2E, F5OpMismatchFromTheConsistencyCheck) {
  Outcome o = RunScenario(Fd("f5", 4, {"--mode", "mismatch", "--what", "op", "--odd", "1"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"op_mismatch", "EI0005"}}, std::set<int>{1}, kRootCause);
  EXPECT_EQ(Fact(v, "index"), "2");
  EXPECT_NE(v["title"].get<std::string>().find("AllGather"), std::string::npos) << v.dump();
  EXPECT_NE(v["title"].get<std::string>().find("AllReduce"), std::string::npos) << v.dump();
}

TEST(DiagnoseE2E, F5OpMismatchWithTheCheckOffFromEntryLines) {
  // As HCCL without the check: rank 1 times out (EI0002) in AllGather; HCCL_ENTRY_LOG_ENABLE=1,
  // as the seed advises, lets diagnose compare the calls.
  Outcome o = RunScenario(Fd("f5off", 4, {"--mode", "mismatch", "--what", "op", "--odd", "1", "--hold-ms", "3000"},
                     {"HCCL_DFS_CONFIG=cluster_heartbeat:on,inconsistent_check:off", "HCCL_EXEC_TIMEOUT=2",
                      "HCCL_ENTRY_LOG_ENABLE=1"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"op_mismatch", "EI0005"}}, std::set<int>{1}, kRootCause);
  EXPECT_EQ(Fact(v, "index"), "2");
  EXPECT_EQ(Fact(v, "field"), "op");
}

TEST(DiagnoseE2E, F6CountMismatch) {
  Outcome o = RunScenario(Fd("f6c", 3, {"--mode", "mismatch", "--what", "count", "--odd", "1"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"count_mismatch", "EI0005"}}, std::set<int>{1}, kRootCause);
  EXPECT_NE(v["title"].get<std::string>().find("512"), std::string::npos) << v.dump();
}

TEST(DiagnoseE2E, F6DtypeMismatch) {
  Outcome o = RunScenario(Fd("f6d", 3, {"--mode", "mismatch", "--what", "dtype", "--odd", "2"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"dtype_mismatch", "EI0005"}}, std::set<int>{2}, kRootCause);
  EXPECT_NE(v["title"].get<std::string>().find("int32"), std::string::npos) << v.dump();
}

TEST(DiagnoseE2E, F7LateRankAgainstTheTimeout) {
  Outcome o = RunScenario(Fd("f7", 2, {"--mode", "late", "--odd", "1", "--delay-ms", "3500"}, {"HCCL_EXEC_TIMEOUT=2"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"late_rank", "EI0002"}}, std::set<int>{1}, {"late"});
  EXPECT_EQ(Fact(v, "exec_timeout_seconds"), "2");
  EXPECT_EQ(Fact(v, "exec_timeout_source"), "log");
  EXPECT_GT(std::atof(Fact(v, "gap_seconds").c_str()), 2.0);
}

TEST(DiagnoseE2E, F8TwoStreamsOnOneComm) {
  Outcome o = RunScenario(Fd("f8", 2, {"--mode", "two_streams", "--odd", "1", "--delay-ms", "700"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"multi_stream", ""}}, std::nullopt, {});
  EXPECT_EQ(Fact(v, "streams"), "2 and 3");
  EXPECT_NE(Fact(v, "tags").find("AllReduce_"), std::string::npos) << v.dump();
  // Both ranks enqueue on two streams, but only a rank whose two ops really overlapped logs it:
  // rank 0 always (its first op waits 700 ms for rank 1), rank 1 only when its second op starts
  // before its first one ends (a race). Every rank whose logs hold the line is named by a finding
  // of its own, and no other.
  std::set<int> logged;
  for (const auto& e : fs::recursive_directory_iterator(o.logs)) {
    if (!e.is_regular_file() || ReadFile(e.path()).find("used from two streams at once") == std::string::npos)
      continue;
    const std::string name = e.path().filename().string();  // plog-<pid>_<time>.log
    if (name.rfind("plog-", 0) == 0) logged.insert(std::atoi(name.c_str() + 5));
  }
  ASSERT_EQ(logged.count(o.pid.at(0)), 1u) << o.Describe();
  std::set<int> pids;
  for (const json& f : o.report["findings"])
    if (f["fault"] == "multi_stream") pids.merge(PidsOf(f, kRootCause));
  EXPECT_EQ(pids, logged) << o.Describe();
}

TEST(DiagnoseE2E, F9DestroyBeforeSync) {
  Outcome o = RunScenario(Fd("f9", 2, {"--mode", "destroy_before_sync", "--delay-ms", "1000"}));
  DropIfPassed drop{o.dir};
  ExpectVerdict(o, {{"destroy_before_sync", "EI0012"}}, std::set<int>{0}, kRootCause);
}

TEST(DiagnoseE2E, F10SmallBuffer) {
  Outcome o = RunScenario(Fd("f10", 2, {"--mode", "small_buffer", "--odd", "1"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"buffer_too_small", "EI0012"}}, std::set<int>{1}, kRootCause);
  EXPECT_EQ(v["confidence"], "high");
}

TEST(DiagnoseE2E, F11QpMemory) {
  Outcome o = RunScenario(Fd("f11", 2, {"--mode", "init"},
                     {"HCCL_RDMA_QPS_PER_CONNECTION=32", "VIGIL_DEVICE_MEMORY=8M", "VIGIL_TRANSPORT=tcp",
                      "HCCL_CONNECT_TIMEOUT=2"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"qp_memory", "EI0011"}}, std::set<int>{0}, kRootCause);
  EXPECT_NE(v["advice"].get<std::string>().find("QPS_PER_CONNECTION"), std::string::npos) << v.dump();
}

TEST(DiagnoseE2E, F12BufferOom) {
  Outcome o = RunScenario(Fd("f12", 2, {"--mode", "init"}, {"HCCL_BUFFSIZE=64", "VIGIL_DEVICE_MEMORY=32M"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"buffer_oom", "EI9001"}}, std::nullopt, {});
  EXPECT_NE(v["advice"].get<std::string>().find("HCCL_BUFFSIZE"), std::string::npos) << v.dump();
  // Both ranks ran out; each is named by one finding, none as EI0011.
  std::set<int> pids;
  for (const json& f : o.report["findings"]) {
    EXPECT_NE(f["fault"], "qp_memory");
    if (f["fault"] == "buffer_oom") pids.merge(PidsOf(f, kRootCause));
  }
  EXPECT_EQ(pids, (std::set<int>{o.pid.at(0), o.pid.at(1)}));
}

TEST(DiagnoseE2E, F13MissingRank) {
  Outcome o = RunScenario(Fd("f13", 3, {"--mode", "missing_rank", "--odd", "2"}, {"HCCL_CONNECT_TIMEOUT=2"}));
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"link_timeout", "EI0006"}}, std::nullopt, {});
  EXPECT_EQ(Fact(v, "missing_ranks"), "2");
  ASSERT_EQ(v["ranks"].size(), 1u);
  EXPECT_EQ(v["ranks"][0]["rank"], 2);
  EXPECT_EQ(v["ranks"][0]["role"], "missing");
}

TEST(DiagnoseE2E, F14PortInUse) {
  Scenario s = Fd("f14", 1, {"--mode", "port_in_use"});
  s.direct = true;
  Outcome o = RunScenario(s);
  DropIfPassed drop{o.dir};
  const json& v = ExpectVerdict(o, {{"port_in_use", "EI0019"}}, std::set<int>{0}, kRootCause);
  int base = -1;
  std::istringstream out(ReadFile(o.dir / "screen.out"));
  for (std::string line; std::getline(out, line);) std::sscanf(line.c_str(), "HELD base=%d", &base);
  ASSERT_GT(base, 0);
  EXPECT_EQ(Fact(v, "port"), std::to_string(base));
}

TEST(DiagnoseE2E, F15BuffsizeMismatch) {
  Outcome o = RunScenario(Fd("f15", 2, {"--mode", "init", "--odd", "1", "--odd-env", "HCCL_BUFFSIZE=2"}));
  DropIfPassed drop{o.dir};
  // Two ranks, two values: no majority, both are named.
  const json& v = ExpectVerdict(o, {{"param_mismatch", "EI0005"}}, std::set<int>{0, 1}, kRootCause);
  EXPECT_EQ(Fact(v, "parameter"), "buffsize");
  EXPECT_EQ(Fact(v, "ccl_op"), "CommInit");
}

TEST(DiagnoseE2E, F16BadArgumentsBlameNoRank) {
  // Bad arguments are refused with an ERROR line each; the job goes on. Nothing in the logs is
  // a rank-level fault, and diagnose must not invent one.
  Outcome o = RunScenario(Fd("f16", 3, {"--mode", "bad_args"}, {}));
  DropIfPassed drop{o.dir};
  EXPECT_GT(o.report["input"]["records"].get<int>(), 0);
  for (const json& f : o.report["findings"])
    EXPECT_LT(f["score"].get<int>(), 60) << f.dump() << "\n" << o.Describe();
}

}  // namespace
