// `vigil run`: starts N ranks of a program on this host, each with the environment an HCCL
// program needs to find its place (see include/vigil/launch.h):
//   RANK_ID, RANK_SIZE, LOCAL_RANK, DEVICE_ID   this rank, the rank count, its device
//   VIGIL_ROOT_INFO                             hex root info; the launcher serves the rendezvous
//   ASCEND_PROCESS_LOG_PATH                     one log folder per run, shared by all ranks
// It forwards SIGINT/SIGTERM to the ranks, bounds the run with --timeout, and exits with the
// first failing rank's status.
#include "cli/run_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "common/time_util.h"
#include "hccl/hccl.h"

namespace vigil::cli {

namespace {

struct RunOptions {
  uint32_t nranks = 0;
  std::string log_dir;
  std::string transport;
  uint32_t timeout_s = 0;
  std::vector<std::string> env;
  std::vector<std::string> command;
  bool quiet = false;
};

// Children of this launcher, for the signal handler (async-signal-safe reads only).
constexpr int kMaxRanks = 4096;
pid_t g_children[kMaxRanks];
std::atomic<int> g_child_count{0};
volatile sig_atomic_t g_signal = 0;

void ForwardSignal(int sig) {
  g_signal = sig;
  const int n = g_child_count.load();
  for (int i = 0; i < n; ++i) {
    if (g_children[i] > 0) kill(g_children[i], sig);
  }
}

std::string Hex(const void* data, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(n * 2, '0');
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[p[i] >> 4];
    out[2 * i + 1] = kDigits[p[i] & 15];
  }
  return out;
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  return "ended";
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int Run(const RunOptions& o) {
  if (o.nranks == 0 || o.nranks > kMaxRanks) {
    fmt::print(stderr, "vigil run: -n must be in [1, {}]\n", kMaxRanks);
    return 2;
  }
  std::string log_dir = o.log_dir;
  if (log_dir.empty()) {
    log_dir = "vigil-logs/run-" + FormatFileStamp(WallClock::now());
  }
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) {
    fmt::print(stderr, "vigil run: cannot create log folder {}: {}\n", log_dir, ec.message());
    return 2;
  }
  log_dir = std::filesystem::absolute(log_dir).string();
  setenv("ASCEND_PROCESS_LOG_PATH", log_dir.c_str(), 1);
  if (!o.transport.empty()) setenv("VIGIL_TRANSPORT", o.transport.c_str(), 1);
  for (const std::string& kv : o.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      fmt::print(stderr, "vigil run: --env expects NAME=VALUE, got '{}'\n", kv);
      return 2;
    }
    setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }

  // The launcher holds the rendezvous: every rank joins the root info made here.
  HcclRootInfo root;
  HcclResult rc = HcclGetRootInfo(&root);
  if (rc != HCCL_SUCCESS) {
    fmt::print(stderr, "vigil run: HcclGetRootInfo failed: {} (see {})\n", HcclGetErrorString(rc),
               log_dir);
    return 1;
  }
  const std::string root_hex = Hex(root.internal, sizeof(root.internal));

  struct sigaction sa = {};
  sa.sa_handler = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::vector<char*> argv;
  for (const std::string& arg : o.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);

  uint32_t device_count = 8;
  if (const char* dc = getenv("VIGIL_DEVICE_COUNT")) device_count = std::max(1, atoi(dc));

  for (uint32_t r = 0; r < o.nranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      fmt::print(stderr, "vigil run: fork failed: {}\n", strerror(errno));
      ForwardSignal(SIGKILL);
      return 1;
    }
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      setenv("RANK_ID", std::to_string(r).c_str(), 1);
      setenv("RANK_SIZE", std::to_string(o.nranks).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("DEVICE_ID", std::to_string(r % device_count).c_str(), 1);
      setenv("VIGIL_ROOT_INFO", root_hex.c_str(), 1);
      execvp(argv[0], argv.data());
      fmt::print(stderr, "vigil run: cannot start {}: {}\n", argv[0], strerror(errno));
      _exit(127);
    }
    g_children[r] = pid;
    g_child_count.store(static_cast<int>(r + 1));
  }

  const auto start = SteadyClock::now();
  std::vector<int> status(o.nranks, 0);
  std::vector<bool> done(o.nranks, false);
  uint32_t remaining = o.nranks;
  int first_failure = -1;
  bool timed_out = false;
  while (remaining > 0) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (uint32_t r = 0; r < o.nranks; ++r) {
        if (g_children[r] == pid && !done[r]) {
          done[r] = true;
          status[r] = st;
          --remaining;
          if (ExitCodeOf(st) != 0 && first_failure < 0) first_failure = static_cast<int>(r);
        }
      }
      continue;
    }
    if (pid < 0 && errno == ECHILD) break;
    if (o.timeout_s > 0 && !timed_out &&
        SteadyClock::now() - start > std::chrono::seconds(o.timeout_s)) {
      timed_out = true;
      fmt::print(stderr, "vigil run: --timeout {}s reached; killing the ranks still running\n",
                 o.timeout_s);
      for (uint32_t r = 0; r < o.nranks; ++r) {
        if (!done[r]) kill(g_children[r], SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  int exit_code = 0;
  for (uint32_t r = 0; r < o.nranks; ++r) {
    if (ExitCodeOf(status[r]) != 0 || !o.quiet) {
      fmt::print(stderr, "vigil run: rank {} (pid {}) {}\n", r, g_children[r],
                 DescribeStatus(status[r]));
    }
  }
  if (first_failure >= 0) exit_code = ExitCodeOf(status[first_failure]);
  if (timed_out && exit_code == 0) exit_code = 124;
  if (g_signal != 0 && exit_code == 0) exit_code = 128 + g_signal;
  fmt::print(stderr, "vigil run: logs in {}\n", log_dir);
  return exit_code;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Start N ranks of an HCCL program on this host");
  run->add_option("-n,--nranks", opts->nranks, "Number of ranks")->required();
  run->add_option("--log-dir", opts->log_dir,
                  "Folder for every rank's logs (default vigil-logs/run-<time>)");
  run->add_option("--transport", opts->transport, "Force a transport: shm or tcp")
      ->check(CLI::IsMember({"shm", "tcp"}));
  run->add_option("--timeout", opts->timeout_s, "Kill the ranks after this many seconds (0 = never)");
  run->add_option("--env", opts->env, "NAME=VALUE set for every rank (repeatable)");
  run->add_flag("-q,--quiet", opts->quiet, "Report only ranks that failed");
  run->add_option("command", opts->command, "PROGRAM [ARGS...] (after --)")->required();
  run->callback([opts, exit_code] { *exit_code = Run(*opts); });
}

}  // namespace vigil::cli
