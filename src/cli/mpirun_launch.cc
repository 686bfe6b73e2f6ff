#include "cli/mpirun_launch.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "cli/exit_status.h"
#include "common/time_util.h"

namespace vigil::cli {

namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0 &&
         access(path.c_str(), X_OK) == 0;
}

// What `mpirun --version` prints (stdout and stderr), read for at most a few seconds.
std::string VersionText(const std::string& mpirun) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return "";
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(mpirun.c_str(), mpirun.c_str(), "--version", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
  char buf[4096];
  while (text.size() < 65536 && SteadyClock::now() < deadline) {
    struct pollfd p = {fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  return text;
}

// The variables the ranks get: the launcher's HCCL_*, ASCEND_* and VIGIL_* ones (the log
// folder among them) and every --env, sorted, once each.
std::vector<std::string> PassedEnvNames(const std::vector<std::string>& user_env) {
  std::set<std::string> names(user_env.begin(), user_env.end());
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (name.rfind("HCCL_", 0) == 0 || name.rfind("ASCEND_", 0) == 0 ||
        name.rfind("VIGIL_", 0) == 0) {
      names.insert(name);
    }
  }
  return {names.begin(), names.end()};
}

// mpirun, for the signal handler: SIGINT/SIGTERM reach it, and it stops its ranks.
volatile sig_atomic_t g_mpirun_pid = 0;
volatile sig_atomic_t g_signal = 0;

void ForwardToMpirun(int sig) {
  g_signal = sig;
  if (g_mpirun_pid > 0) kill(g_mpirun_pid, sig);
}

}  // namespace

std::string FindProgram(const std::string& name, const std::string& path_list) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t colon = path_list.find(':', start);
    if (colon == std::string::npos) colon = path_list.size();
    // An empty entry is the current folder.
    const std::string dir =
        colon > start ? path_list.substr(start, colon - start) : std::string(".");
    start = colon + 1;
    const std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
  }
  return "";
}

MpiFlavor FlavorFromVersion(const std::string& version_text) {
  for (const char* mark : {"HYDRA", "MPICH", "Intel(R) MPI"}) {
    if (version_text.find(mark) != std::string::npos) return MpiFlavor::kHydra;
  }
  return MpiFlavor::kOpenMpi;
}

std::vector<std::string> MpirunArgv(const MpirunPlan& plan) {
  std::vector<std::string> argv = {plan.mpirun, "-n", std::to_string(plan.nranks)};
  if (plan.flavor == MpiFlavor::kOpenMpi) {
    // More ranks than cores is the usual case on one host; unbound ranks share them fairly.
    argv.insert(argv.end(), {"--oversubscribe", "--bind-to", "none"});
    if (!plan.hosts.empty()) argv.insert(argv.end(), {"--host", plan.hosts});
    for (const std::string& name : plan.env_names) argv.insert(argv.end(), {"-x", name});
  } else {
    if (!plan.hosts.empty()) argv.insert(argv.end(), {"-hosts", plan.hosts});
    if (!plan.env_names.empty()) {
      std::string list;
      for (const std::string& name : plan.env_names) list += (list.empty() ? "" : ",") + name;
      argv.insert(argv.end(), {"-envlist", list});
    }
  }
  argv.insert(argv.end(), plan.command.begin(), plan.command.end());
  return argv;
}

int RunThroughMpirun(const MpiRunRequest& r) {
  const char* path_env = getenv("PATH");
  const std::string path_list = path_env != nullptr ? path_env : "";
  std::string mpirun;
  if (!r.mpirun.empty()) {
    mpirun = FindProgram(r.mpirun, path_list);
    if (mpirun.empty() || !IsExecutableFile(mpirun)) {
      fmt::print(stderr, "vigil run: --mpirun {}: {}\n", r.mpirun,
                 mpirun.empty()                      ? "not found on PATH"
                 : access(mpirun.c_str(), F_OK) != 0 ? "no such file"
                                                     : "not an executable file");
      return 2;
    }
  } else {
    mpirun = FindProgram("mpirun", path_list);
    if (mpirun.empty()) {
      fmt::print(stderr,
                 "vigil run: {} starts through mpirun ({}), but no mpirun is on PATH: install "
                 "Open MPI or MPICH, or give --mpirun PATH\n",
                 r.command[0], r.reason);
      return 2;
    }
  }
  MpirunPlan plan;
  // Found on PATH, it runs as `mpirun`, as typed in a shell: Open MPI reads an absolute argv[0]
  // as --prefix (and /bin/mpirun, on merged-/usr systems, as the prefix "/", which it refuses).
  plan.mpirun = r.mpirun.empty() ? std::string("mpirun") : mpirun;
  plan.flavor = FlavorFromVersion(VersionText(mpirun));
  plan.nranks = r.nranks;
  plan.hosts = r.hosts;
  plan.command = r.command;
  if (plan.flavor == MpiFlavor::kOpenMpi && geteuid() == 0) {
    // Open MPI refuses root unless both variables say it is meant.
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  plan.env_names = PassedEnvNames(r.user_env);
  const std::vector<std::string> args = MpirunArgv(plan);

  fmt::print(stderr, "vigil run: {} ranks of {} start through mpirun ({}): {}\n", r.nranks,
             r.command[0], mpirun, r.reason);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    fmt::print(stderr, "vigil run: fork failed: {}\n", strerror(errno));
    return 2;
  }
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    setpgid(0, 0);  // mpirun and its ranks: one group, which --timeout stops as a whole
    execvp(argv[0], argv.data());
    fmt::print(stderr, "vigil run: cannot start {}: {}\n", argv[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also from here: no window in which a signal misses the group
  g_mpirun_pid = pid;
  struct sigaction sa = {};
  sa.sa_handler = ForwardToMpirun;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const auto start = SteadyClock::now();
  int status = 0;
  bool timed_out = false;
  bool killed = false;
  SteadyClock::time_point stopped_at{};
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      fmt::print(stderr, "vigil run: waiting for mpirun failed: {}\n", strerror(errno));
      status = 1 << 8;
      break;
    }
    const auto now = SteadyClock::now();
    if (r.timeout_s > 0 && !timed_out && now - start > std::chrono::seconds(r.timeout_s)) {
      timed_out = true;
      stopped_at = now;
      fmt::print(stderr, "vigil run: --timeout {}s reached; stopping mpirun and its ranks\n",
                 r.timeout_s);
      kill(-pid, SIGTERM);
    }
    if (timed_out && !killed && now - stopped_at > std::chrono::seconds(2)) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  g_mpirun_pid = 0;
  int exit_code = ExitCodeOf(status);
  if (exit_code != 0 || !r.quiet) {
    fmt::print(stderr, "vigil run: mpirun (pid {}) {}\n", pid, DescribeStatus(status));
  }
  if (timed_out && exit_code == 0) exit_code = 124;
  if (g_signal != 0 && exit_code == 0) exit_code = 128 + g_signal;
  fmt::print(stderr, "vigil run: logs in {}\n", r.log_dir);
  return exit_code;
}

}  // namespace vigil::cli
