#include "log/plog.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "common/error_codes.h"
#include "common/time_util.h"

namespace vigil::log {
namespace {

namespace fs = std::filesystem;

const std::regex kLineRe(
    R"(^\[(DEBUG|INFO|WARNING|ERROR)\] ([A-Z]+)\((\d+),([^)]*)\):)"
    R"((\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}\.\d{3}\.\d{3}) \[([^:\]]+):(\d+)\] \[(\d+)\](.*)$)");
const std::regex kFileRe(R"(^plog-(\d+)_(\d{17})\.log$)");

struct Line {
  std::string level, module, procname, time, file, message;
  long pid = 0, line = 0, tid = 0;
};

bool ParseLine(const std::string& text, Line* out) {
  std::smatch m;
  if (!std::regex_match(text, m, kLineRe)) return false;
  out->level = m[1];
  out->module = m[2];
  out->pid = std::stol(m[3]);
  out->procname = m[4];
  out->time = m[5];
  out->file = m[6];
  out->line = std::stol(m[7]);
  out->tid = std::stol(m[8]);
  out->message = m[9];
  return true;
}

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Log files of one channel, oldest first (the stamps sort as text).
std::vector<std::string> LogFiles(const std::string& root, const char* channel,
                                  long pid = 0) {
  std::vector<std::string> files;
  const fs::path dir = fs::path(root) / channel / "plog";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename();
    std::smatch m;
    if (!std::regex_match(name, m, kFileRe)) {
      ADD_FAILURE() << "unexpected file " << name;
      continue;
    }
    if (pid == 0 || std::stol(m[1]) == pid) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> AllLines(const std::vector<std::string>& files) {
  std::vector<std::string> all;
  for (const auto& f : files) {
    auto lines = ReadLines(f);
    all.insert(all.end(), lines.begin(), lines.end());
  }
  return all;
}

// Runs fn with fd redirected to a temporary file; returns what was written to it.
template <typename Fn>
std::string CaptureFd(int fd, Fn fn) {
  fflush(nullptr);
  char path[] = "/tmp/vigil_capture.XXXXXX";
  const int tmp = mkstemp(path);
  const int saved = dup(fd);
  dup2(tmp, fd);
  fn();
  fflush(nullptr);
  dup2(saved, fd);
  close(saved);
  close(tmp);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  unlink(path);
  return text;
}

// waitpid with a bound: a child that hangs (e.g. a fork deadlock) fails the test instead.
int WaitChild(pid_t pid, std::chrono::steady_clock::time_point deadline =
                             std::chrono::steady_clock::now() + std::chrono::seconds(20)) {
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  ADD_FAILURE() << "child " << pid << " did not finish";
  return -1;
}

class PlogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vigil_log_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    setenv("ASCEND_PROCESS_LOG_PATH", root_.c_str(), 1);
    for (const char* v : {"ASCEND_GLOBAL_LOG_LEVEL", "VIGIL_LOG_FILE_SIZE",
                          "ASCEND_SLOG_PRINT_TO_STDOUT", "HCCL_BUFFSIZE"}) {
      unsetenv(v);
    }
    ResetForTesting();
  }
  void TearDown() override {
    unsetenv("ASCEND_PROCESS_LOG_PATH");
    ResetForTesting();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Reset(const char* name, const char* value) {
    setenv(name, value, 1);
    ResetForTesting();
  }

  std::string root_;
};

TEST_F(PlogTest, GoldenLineEveryField) {
  Reset("ASCEND_GLOBAL_LOG_LEVEL", "0");
  const auto before = WallClock::now();
  const int line = __LINE__ + 1;
  HCCL_ERROR("[TaskExecStage][Timeout][Host]Task run failed, value[{}]", 42);
  const auto after = WallClock::now();

  EXPECT_EQ(LogRoot(), root_);
  const auto files = LogFiles(root_, "debug");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(DebugLogPath(), files[0]);
  std::smatch m;
  const std::string name = fs::path(files[0]).filename();
  ASSERT_TRUE(std::regex_match(name, m, kFileRe));
  EXPECT_EQ(std::stol(m[1]), getpid());

  const auto lines = ReadLines(files[0]);
  ASSERT_EQ(lines.size(), 1u);
  Line l;
  ASSERT_TRUE(ParseLine(lines[0], &l)) << lines[0];
  EXPECT_EQ(l.level, "ERROR");
  EXPECT_EQ(l.module, "HCCL");
  EXPECT_EQ(l.pid, getpid());
  EXPECT_EQ(l.procname, program_invocation_short_name);
  EXPECT_EQ(l.file, "plog_test.cc");
  EXPECT_EQ(l.line, line);
  EXPECT_EQ(l.tid, gettid());
  EXPECT_EQ(l.message, "[TaskExecStage][Timeout][Host]Task run failed, value[42]");
  WallClock::time_point t;
  ASSERT_TRUE(ParsePlogTime(l.time, &t));
  // The stamp is the write time, to the microsecond.
  EXPECT_GE(t, std::chrono::time_point_cast<std::chrono::microseconds>(before));
  EXPECT_LE(t, after);
  EXPECT_TRUE(LogFiles(root_, "run").empty());
}

TEST_F(PlogTest, LevelNamesAndModules) {
  Reset("ASCEND_GLOBAL_LOG_LEVEL", "0");
  HCCL_DEBUG("d");
  HCCL_INFO("i");
  HCCL_WARNING("w");
  HCCL_ERROR("e");
  RT_ERROR("rt e");
  RT_WARNING("rt w");
  RT_DEBUG("rt d");
  HCCL_RUN_INFO("run i");
  HCCL_RUN_WARNING("run w");
  RT_RUN_INFO("rt run i");
  const std::vector<std::pair<std::string, std::string>> want_debug = {
      {"DEBUG HCCL", "d"},    {"INFO HCCL", "i"},        {"WARNING HCCL", "w"},
      {"ERROR HCCL", "e"},    {"ERROR RUNTIME", "rt e"}, {"WARNING RUNTIME", "rt w"},
      {"DEBUG RUNTIME", "rt d"}};
  const std::vector<std::pair<std::string, std::string>> want_run = {
      {"INFO HCCL", "run i"}, {"WARNING HCCL", "run w"}, {"INFO RUNTIME", "rt run i"}};
  auto check = [](const std::vector<std::string>& lines,
                  const std::vector<std::pair<std::string, std::string>>& want) {
    ASSERT_EQ(lines.size(), want.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      Line l;
      ASSERT_TRUE(ParseLine(lines[i], &l)) << lines[i];
      EXPECT_EQ(l.level + " " + l.module, want[i].first);
      EXPECT_EQ(l.message, want[i].second);
    }
  };
  check(AllLines(LogFiles(root_, "debug")), want_debug);
  check(AllLines(LogFiles(root_, "run")), want_run);
}

TEST_F(PlogTest, LevelFiltering) {
  // Default level 3: only ERROR reaches the debug log; the run log is always written.
  EXPECT_TRUE(Enabled(Channel::kDebug, Level::kError));
  EXPECT_FALSE(Enabled(Channel::kDebug, Level::kWarning));
  EXPECT_FALSE(Enabled(Channel::kDebug, Level::kDebug));
  EXPECT_TRUE(Enabled(Channel::kRun, Level::kInfo));
  HCCL_INFO("hidden");
  HCCL_WARNING("hidden");
  HCCL_ERROR("shown");
  HCCL_RUN_INFO("run shown");
  auto debug = AllLines(LogFiles(root_, "debug"));
  ASSERT_EQ(debug.size(), 1u);
  EXPECT_NE(debug[0].find("shown"), std::string::npos);
  EXPECT_EQ(AllLines(LogFiles(root_, "run")).size(), 1u);

  Reset("ASCEND_GLOBAL_LOG_LEVEL", "1");
  EXPECT_TRUE(Enabled(Channel::kDebug, Level::kInfo));
  EXPECT_FALSE(Enabled(Channel::kDebug, Level::kDebug));
  HCCL_DEBUG("hidden");
  HCCL_INFO("info shown");
  EXPECT_EQ(AllLines(LogFiles(root_, "debug")).size(), 2u);

  // 4 = null: the debug log is off entirely, the run log still written.
  Reset("ASCEND_GLOBAL_LOG_LEVEL", "4");
  EXPECT_FALSE(Enabled(Channel::kDebug, Level::kError));
  EXPECT_TRUE(Enabled(Channel::kRun, Level::kInfo));
  HCCL_ERROR("hidden");
  HCCL_RUN_INFO("run shown");
  EXPECT_EQ(AllLines(LogFiles(root_, "debug")).size(), 2u);
  EXPECT_EQ(AllLines(LogFiles(root_, "run")).size(), 2u);
  EXPECT_FALSE(Enabled(Channel::kRun, Level::kNull));
}

TEST_F(PlogTest, DisabledStatementDoesNotEvaluateArguments) {
  int evaluated = 0;
  auto count = [&evaluated] { return ++evaluated; };
  HCCL_DEBUG("{}", count());
  HCCL_INFO("{}", count());
  EXPECT_EQ(evaluated, 0);
  HCCL_ERROR("{}", count());
  EXPECT_EQ(evaluated, 1);
}

TEST_F(PlogTest, DirectoriesCreatedLazilyPerChannel) {
  EXPECT_FALSE(fs::exists(fs::path(root_) / "run"));
  EXPECT_FALSE(fs::exists(fs::path(root_) / "debug"));
  EXPECT_EQ(RunLogPath(), "");
  HCCL_ERROR("first");
  EXPECT_TRUE(fs::exists(fs::path(root_) / "debug" / "plog"));
  EXPECT_FALSE(fs::exists(fs::path(root_) / "run"));
  HCCL_RUN_INFO("first run");
  EXPECT_TRUE(fs::exists(fs::path(root_) / "run" / "plog"));
  EXPECT_NE(RunLogPath(), "");
}

TEST_F(PlogTest, NestedMissingRootIsCreated) {
  const std::string nested = root_ + "/a/b/c";
  Reset("ASCEND_PROCESS_LOG_PATH", nested.c_str());
  HCCL_RUN_INFO("deep");
  EXPECT_EQ(AllLines(LogFiles(nested, "run")).size(), 1u);
}

TEST_F(PlogTest, SizeRotation) {
  Reset("VIGIL_LOG_FILE_SIZE", "4K");
  const int kLines = 300;
  for (int i = 0; i < kLines; ++i) HCCL_RUN_INFO("seq[{:05}] {}", i, std::string(60, 'x'));
  const auto files = LogFiles(root_, "run");
  ASSERT_GT(files.size(), 5u);
  EXPECT_EQ(RunLogPath(), files.back());
  std::set<std::string> stamps;
  for (const auto& f : files) {
    EXPECT_LE(fs::file_size(f), 4096u) << f;
    stamps.insert(fs::path(f).filename());
  }
  EXPECT_EQ(stamps.size(), files.size());
  const auto lines = AllLines(files);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kLines));
  for (int i = 0; i < kLines; ++i) {
    Line l;
    ASSERT_TRUE(ParseLine(lines[i], &l)) << lines[i];
    EXPECT_EQ(l.message.substr(0, 10), fmt::format("seq[{:05}]", i));
  }
}

TEST_F(PlogTest, ConcurrentWritersProduceWholeLines) {
  Reset("VIGIL_LOG_FILE_SIZE", "64K");  // rotate while threads race
  const int kThreads = 8;
  const int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kPerThread; ++i) {
        HCCL_ERROR("thread[{}] seq[{}] {}", t, i, std::string(static_cast<size_t>(i % 50), 'p'));
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto files = LogFiles(root_, "debug");
  EXPECT_GT(files.size(), 1u);
  const auto lines = AllLines(files);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread));
  const std::regex msg_re(R"(^thread\[(\d+)\] seq\[(\d+)\] p*$)");
  std::vector<int> next(kThreads, 0);
  std::set<long> tids;
  for (const auto& text : lines) {
    Line l;
    ASSERT_TRUE(ParseLine(text, &l)) << text;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l.message, m, msg_re)) << l.message;
    const int t = std::stoi(m[1]);
    // Each thread's lines appear whole and in its own order.
    EXPECT_EQ(std::stoi(m[2]), next[t]++);
    tids.insert(l.tid);
  }
  EXPECT_EQ(tids.size(), static_cast<size_t>(kThreads));
}

TEST_F(PlogTest, ForkChildWritesItsOwnFile) {
  HCCL_RUN_INFO("parent before fork");
  const std::string parent_file = RunLogPath();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HCCL_RUN_INFO("child line");
    const bool own = RunLogPath().find("plog-" + std::to_string(getpid()) + "_") !=
                     std::string::npos;
    _exit(own ? 0 : 3);
  }
  const int status = WaitChild(child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  HCCL_RUN_INFO("parent after fork");
  EXPECT_EQ(RunLogPath(), parent_file);

  const auto child_lines = AllLines(LogFiles(root_, "run", child));
  ASSERT_EQ(child_lines.size(), 1u);
  Line l;
  ASSERT_TRUE(ParseLine(child_lines[0], &l));
  EXPECT_EQ(l.pid, child);
  EXPECT_EQ(l.tid, child);
  EXPECT_EQ(l.message, "child line");

  const auto parent_lines = AllLines(LogFiles(root_, "run", getpid()));
  ASSERT_EQ(parent_lines.size(), 2u);
  EXPECT_NE(parent_lines[1].find("parent after fork"), std::string::npos);
}

TEST_F(PlogTest, ForkWhileOtherThreadsLog) {
  // Children forked at random points of two busy writers must never inherit a held lock
  // (ours, or glibc's time-zone lock: the reason time_util avoids localtime_r).
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&stop] {
      while (!stop.load()) HCCL_ERROR("busy writer");
    });
  }
  std::vector<pid_t> children;
  for (int i = 0; i < 20; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      HCCL_ERROR("child {}", i);
      _exit(0);
    }
    children.push_back(child);
  }
  stop = true;
  for (auto& w : writers) w.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (size_t i = 0; i < children.size(); ++i) {
    const int status = WaitChild(children[i], deadline);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << i;
    const auto lines = AllLines(LogFiles(root_, "debug", children[i]));
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find(fmt::format("child {}", i)), std::string::npos);
  }
  for (const auto& text : AllLines(LogFiles(root_, "debug", getpid()))) {
    Line l;
    ASSERT_TRUE(ParseLine(text, &l)) << text;
    EXPECT_EQ(l.message, "busy writer");
  }
}

TEST_F(PlogTest, LineSurvivesSigkill) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    HCCL_ERROR("last words");
    raise(SIGKILL);
    _exit(1);
  }
  const int status = WaitChild(child);
  EXPECT_TRUE(WIFSIGNALED(status));
  const auto lines = AllLines(LogFiles(root_, "debug", child));
  ASSERT_EQ(lines.size(), 1u);
  Line l;
  ASSERT_TRUE(ParseLine(lines[0], &l));
  EXPECT_EQ(l.message, "last words");
}

TEST_F(PlogTest, ScreenErrorOnStderrAndDebugLog) {
  const std::vector<std::string> args = {"size: [0.25MB, 3MB], Affected by QP depth configuration."};
  int line = 0;
  const std::string err = CaptureFd(STDERR_FILENO, [&] {
    line = __LINE__ + 1;
    ScreenError("EI0011", args);
  });
  const std::string text = RenderScreenError(*FindErrorCode("EI0011"), args);
  std::smatch m;
  const std::regex screen_re(
      R"(^\[PID: (\d+)\] (\d{4}-\d{2}-\d{2}-\d{2}:\d{2}:\d{2}\.\d{3}\.\d{3}) ([^\n]*)\n$)");
  ASSERT_TRUE(std::regex_match(err, m, screen_re)) << err;
  EXPECT_EQ(std::stol(m[1]), getpid());
  WallClock::time_point t;
  EXPECT_TRUE(ParsePlogTime(m[2], &t));
  EXPECT_EQ(m[3].str(), text);
  EXPECT_EQ(m[3].str().rfind("Resource_Error_Insufficient_Device_Memory(EI0011): Failed to "
                             "allocate [size: [0.25MB, 3MB]",
                             0),
            0u);

  const auto lines = AllLines(LogFiles(root_, "debug"));
  ASSERT_EQ(lines.size(), 1u);
  Line l;
  ASSERT_TRUE(ParseLine(lines[0], &l));
  EXPECT_EQ(l.level, "ERROR");
  EXPECT_EQ(l.message, text);
  EXPECT_EQ(l.file, "plog_test.cc");  // the caller, not plog.cc
  EXPECT_EQ(l.line, line);
}

TEST_F(PlogTest, ScreenErrorUnknownCodeIsInnerError) {
  const std::string err = CaptureFd(STDERR_FILENO, [] { ScreenError("EI4242", {}); });
  EXPECT_NE(err.find("(EI9999): "), std::string::npos) << err;
  EXPECT_NE(err.find("EI4242"), std::string::npos) << err;
}

TEST_F(PlogTest, EchoEnvOnce) {
  Reset("HCCL_BUFFSIZE", "300");
  EchoEnvOnce();
  EchoEnvOnce();
  const auto lines = AllLines(LogFiles(root_, "run"));
  int buffsize = 0, exec_timeout = 0, env_lines = 0;
  for (const auto& text : lines) {
    Line l;
    ASSERT_TRUE(ParseLine(text, &l)) << text;
    EXPECT_EQ(l.level, "INFO");
    EXPECT_EQ(l.module, "HCCL");
    if (l.message.rfind("[HCCL_ENV] ", 0) == 0) ++env_lines;
    if (l.message == "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [300]M") ++buffsize;
    if (l.message == "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s") ++exec_timeout;
  }
  EXPECT_EQ(buffsize, 1);
  EXPECT_EQ(exec_timeout, 1);
  EXPECT_EQ(env_lines, static_cast<int>(lines.size()));
  EXPECT_GT(env_lines, 15);
  EXPECT_TRUE(LogFiles(root_, "debug").empty());  // no error line when the env is valid
}

TEST_F(PlogTest, EchoEnvReportsBadValue) {
  Reset("HCCL_BUFFSIZE", "lots");
  EchoEnvOnce();
  const auto debug = AllLines(LogFiles(root_, "debug"));
  ASSERT_EQ(debug.size(), 1u);
  Line l;
  ASSERT_TRUE(ParseLine(debug[0], &l));
  EXPECT_EQ(l.level, "ERROR");
  EXPECT_EQ(l.message.rfind("[InitGroupStage][EnvConfig]", 0), 0u) << l.message;
  EXPECT_NE(l.message.find("HCCL_BUFFSIZE value [lots] is invalid"), std::string::npos);
  bool echoed_default = false;
  for (const auto& text : AllLines(LogFiles(root_, "run"))) {
    echoed_default |= text.find("[HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M") !=
                      std::string::npos;
  }
  EXPECT_TRUE(echoed_default);
}

TEST_F(PlogTest, PrintToStdout) {
  Reset("ASCEND_SLOG_PRINT_TO_STDOUT", "1");
  const std::string out = CaptureFd(STDOUT_FILENO, [] { HCCL_RUN_INFO("on the screen too"); });
  Line l;
  ASSERT_FALSE(out.empty());
  ASSERT_EQ(out.back(), '\n');
  ASSERT_TRUE(ParseLine(out.substr(0, out.size() - 1), &l)) << out;
  EXPECT_EQ(l.message, "on the screen too");
  EXPECT_EQ(AllLines(LogFiles(root_, "run")).size(), 1u);
}

TEST_F(PlogTest, UnwritableRootDropsLinesQuietly) {
  Reset("ASCEND_PROCESS_LOG_PATH", "/proc/vigil_cannot_exist");
  HCCL_ERROR("nowhere");
  HCCL_RUN_INFO("nowhere");
  EXPECT_EQ(DebugLogPath(), "");
  EXPECT_EQ(RunLogPath(), "");
}

}  // namespace
}  // namespace vigil::log
