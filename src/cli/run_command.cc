// `vigil run`: starts N ranks of a program on this host, each with the environment an HCCL
// program needs to find its place (see include/vigil/launch.h):
//   RANK_ID, RANK_SIZE, LOCAL_RANK, DEVICE_ID   this rank, the rank count, its device
//   VIGIL_ROOT_INFO                             hex root info; the launcher serves the rendezvous
//   VIGIL_JOB_KEY                               the run's job key (cli/job_key_file.h), new per
//                                               run unless already set; also in the root info
//   ASCEND_PROCESS_LOG_PATH                     one log folder per run, shared by all ranks
// It forwards SIGINT/SIGTERM to the ranks, bounds the run with --timeout, and exits with the
// first failing rank's status. With --keep-going (elastic jobs whose survivors shrink their
// communicators, VigilCommShrink) a rank that fails never stops the others, and a rank killed by
// a signal is reported as lost but does not fail the run: it exits with the first non-zero exit
// code of a rank that ended on its own, 0 when there is none and some rank finished.
//
// Multi-host (--hosts H1:N1,H2:N2): ranks are numbered host by host (H1 gets 0..N1-1), and each
// is started through a launcher prefix, by default `ssh {host}` (`--launcher "ip netns exec
// {host}"` for network namespaces); `{host}` is replaced by the host name, or the name is
// appended when the template has no `{host}`. The rank's command becomes
//   PREFIX env RANK_ID=.. RANK_SIZE=.. LOCAL_RANK=<index on its host> DEVICE_ID=.. VIGIL_HOST=H
//       VIGIL_ROOT_INFO=.. ASCEND_PROCESS_LOG_PATH=<log dir>/<host> <HCCL_*, ASCEND_*, VIGIL_*
//       of the launcher's environment and every --env> PROGRAM ARGS
// (shell-quoted when the prefix is ssh, whose remote side runs it through a shell). The ranks
// must reach the launcher's rendezvous address: --root-ip picks it (else HCCL_IF_IP, else the
// automatic choice). When a rank fails the others get --kill-grace seconds (default 10 in this
// mode) to end on their own, then SIGTERM and, 2 s later, SIGKILL: a failed job never hangs.
// Signals reach the launcher prefix's whole process group; through ssh a remote rank sees its
// connection close, and is hung up only with a terminal (`--launcher "ssh -tt {host}"`).
//
// MPI programs (their ELF file needs libmpi*, or --mpi / --mpirun is given) learn their rank
// from MPI and make their own root info: the ranks start through mpirun instead (see
// cli/mpirun_launch.h), with the same log folder, --env, --timeout and exit status.
#include "cli/run_command.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cli/elf_needed.h"
#include "cli/exit_status.h"
#include "cli/job_key_file.h"
#include "cli/mpirun_launch.h"
#include "common/time_util.h"
#include "hccl/hccl.h"

namespace vigil::cli {

namespace {

struct RunOptions {
  uint32_t nranks = 0;
  std::string hosts;      // "H1:N1,H2:N2"; empty = every rank on this host
  std::string launcher;   // per-host command prefix template
  std::string root_ip;    // the launcher's rendezvous address
  int kill_grace_s = -1;  // after a rank fails; -1 = never (local), 10 (--hosts)
  bool keep_going = false;  // a rank's failure stops no other; signal deaths do not fail the run
  std::string log_dir;
  std::string transport;
  uint32_t timeout_s = 0;
  std::vector<std::string> env;
  std::vector<std::string> command;
  bool quiet = false;
  bool mpi = false;    // start through mpirun whatever the program links
  std::string mpirun;  // the mpirun to use (implies mpi)
};

// Children of this launcher, for the signal handler (async-signal-safe reads only); a negative
// entry is a process group (--hosts: the launcher prefix and what it started).
constexpr int kMaxRanks = 4096;
pid_t g_children[kMaxRanks];
std::atomic<int> g_child_count{0};
volatile sig_atomic_t g_signal = 0;

void ForwardSignal(int sig) {
  g_signal = sig;
  const int n = g_child_count.load();
  for (int i = 0; i < n; ++i) {
    if (g_children[i] != 0) kill(g_children[i], sig);
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

// One rank to start: where, and the argv of the local child process.
struct RankSpec {
  std::string host;    // "" = this host, no launcher
  uint32_t local = 0;  // index among the ranks of its host
  std::vector<std::string> argv;
};

// "H1:N1,H2:N2" (a host without ":N" gets one rank; the last ':' splits, so IPv6 works with a
// count). False with *error on junk.
bool ParseHosts(const std::string& text, std::vector<std::pair<std::string, uint32_t>>* out,
                std::string* error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    std::string host = item;
    uint32_t n = 1;
    const size_t colon = item.rfind(':');
    if (colon != std::string::npos) {
      host = item.substr(0, colon);
      const std::string count = item.substr(colon + 1);
      if (count.empty() || count.size() > 6 ||
          count.find_first_not_of("0123456789") != std::string::npos || std::stoul(count) == 0) {
        *error = fmt::format("--hosts entry '{}': the rank count must be a positive number", item);
        return false;
      }
      n = static_cast<uint32_t>(std::stoul(count));
    }
    if (host.empty()) {
      *error = fmt::format("--hosts entry '{}' names no host", item);
      return false;
    }
    out->emplace_back(host, n);
  }
  if (out->empty()) {
    *error = "--hosts names no host";
    return false;
  }
  return true;
}

// Shell-like split of the launcher template: whitespace separates, quotes group.
std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (char ch : text) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        cur += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      have = true;
    } else if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (have) words.push_back(cur);
      cur.clear();
      have = false;
    } else {
      cur += ch;
      have = true;
    }
  }
  if (have) words.push_back(cur);
  return words;
}

std::string ShellQuote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=/.,:@%") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char ch : word) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

// A host name as a folder name.
std::string FolderName(const std::string& host) {
  std::string out = host;
  for (char& ch : out) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) {
      ch = '_';
    }
  }
  return out;
}

// The launcher's variables every remote rank should see (ssh starts with a clean environment).
bool PassedThrough(const std::string& name) {
  if (name == "ASCEND_PROCESS_LOG_PATH" || name == "VIGIL_ROOT_INFO" || name == "VIGIL_HOST") {
    return false;
  }
  return name.rfind("HCCL_", 0) == 0 || name.rfind("ASCEND_", 0) == 0 ||
         name.rfind("VIGIL_", 0) == 0;
}

int Run(const RunOptions& o) {
  std::vector<std::pair<std::string, uint32_t>> hosts;
  uint32_t nranks = o.nranks;
  if (!o.hosts.empty()) {
    std::string error;
    if (!ParseHosts(o.hosts, &hosts, &error)) {
      fmt::print(stderr, "vigil run: {}\n", error);
      return 2;
    }
    uint64_t total = 0;
    for (const auto& h : hosts) total += h.second;
    if (o.nranks != 0 && o.nranks != total) {
      fmt::print(stderr, "vigil run: -n {} differs from the {} ranks of --hosts {}\n", o.nranks,
                 total, o.hosts);
      return 2;
    }
    nranks = static_cast<uint32_t>(std::min<uint64_t>(total, kMaxRanks + 1));
  } else if (!o.launcher.empty()) {
    fmt::print(stderr, "vigil run: --launcher needs --hosts\n");
    return 2;
  }
  if (nranks == 0 || nranks > kMaxRanks) {
    fmt::print(stderr, "vigil run: the rank count (-n or --hosts) must be in [1, {}]\n", kMaxRanks);
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
  std::vector<std::pair<std::string, std::string>> user_env;
  for (const std::string& kv : o.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      fmt::print(stderr, "vigil run: --env expects NAME=VALUE, got '{}'\n", kv);
      return 2;
    }
    user_env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }

  // One job key per run: every rank's connections prove it (bootstrap/auth.h). The ranks inherit
  // it (mpirun: -x VIGIL_JOB_KEY); the root info made below carries it too.
  std::string key_error;
  if (!EnsureJobKeyInEnvironment(&key_error) || !WriteJobKeyFile(log_dir, &key_error)) {
    fmt::print(stderr, "vigil run: job key: {}\n", key_error);
    return 1;
  }

  // An MPI program finds its rank and root info through MPI: mpirun starts it.
  std::string mpi_reason = o.mpi ? "--mpi" : (o.mpirun.empty() ? "" : "--mpirun");
  if (mpi_reason.empty()) {
    const char* path = getenv("PATH");
    const std::string lib = MpiLibraryOf(FindProgram(o.command[0], path != nullptr ? path : ""));
    if (!lib.empty()) mpi_reason = "it links " + lib;
  }
  if (!mpi_reason.empty()) {
    if (!o.launcher.empty()) {
      fmt::print(stderr, "vigil run: --launcher does not apply when mpirun starts the ranks ({})\n",
                 mpi_reason);
      return 2;
    }
    MpiRunRequest request;
    request.reason = mpi_reason;
    request.mpirun = o.mpirun;
    request.nranks = nranks;
    request.hosts = o.hosts;
    for (const auto& kv : user_env) request.user_env.push_back(kv.first);
    request.command = o.command;
    request.timeout_s = o.timeout_s;
    request.log_dir = log_dir;
    request.quiet = o.quiet;
    return RunThroughMpirun(request);
  }

  // The launcher holds the rendezvous: every rank joins the root info made here. --root-ip
  // applies to the launcher alone; the ranks keep the HCCL_IF_IP they had.
  const char* if_ip_env = getenv("HCCL_IF_IP");
  const bool had_if_ip = if_ip_env != nullptr;
  const std::string rank_if_ip = had_if_ip ? if_ip_env : "";
  if (!o.root_ip.empty()) setenv("HCCL_IF_IP", o.root_ip.c_str(), 1);
  HcclRootInfo root;
  HcclResult rc = HcclGetRootInfo(&root);
  if (!o.root_ip.empty()) {
    if (had_if_ip) {
      setenv("HCCL_IF_IP", rank_if_ip.c_str(), 1);
    } else {
      unsetenv("HCCL_IF_IP");
    }
  }
  if (rc != HCCL_SUCCESS) {
    fmt::print(stderr, "vigil run: HcclGetRootInfo failed: {} (see {})\n", HcclGetErrorString(rc),
               log_dir);
    return 1;
  }
  const std::string root_hex = Hex(root.internal, sizeof(root.internal));

  uint32_t device_count = 8;
  if (const char* dc = getenv("VIGIL_DEVICE_COUNT")) device_count = std::max(1, atoi(dc));

  // What each rank runs.
  std::vector<RankSpec> specs;
  if (hosts.empty()) {
    for (uint32_t r = 0; r < nranks; ++r) specs.push_back({"", r, o.command});
  } else {
    const std::vector<std::string> tmpl =
        SplitWords(o.launcher.empty() ? std::string("ssh {host}") : o.launcher);
    if (tmpl.empty()) {
      fmt::print(stderr, "vigil run: --launcher is empty\n");
      return 2;
    }
    const bool via_shell = std::filesystem::path(tmpl[0]).filename() == "ssh";
    // The environment every rank gets besides its own variables.
    std::vector<std::string> common;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const size_t eq = kv.find('=');
      if (eq != std::string::npos && PassedThrough(kv.substr(0, eq))) common.push_back(kv);
    }
    for (const auto& [k, v] : user_env) {
      if (!PassedThrough(k)) common.push_back(k + "=" + v);
    }
    uint32_t r = 0;
    for (const auto& [host, count] : hosts) {
      for (uint32_t l = 0; l < count; ++l, ++r) {
        RankSpec spec{host, l, {}};
        bool placed = false;
        for (const std::string& w : tmpl) {
          placed = placed || w.find("{host}") != std::string::npos;
          spec.argv.push_back(ReplaceAll(w, "{host}", host));
        }
        if (!placed) spec.argv.push_back(host);
        std::vector<std::string> cmd = {"env"};
        cmd.push_back("RANK_ID=" + std::to_string(r));
        cmd.push_back("RANK_SIZE=" + std::to_string(nranks));
        cmd.push_back("LOCAL_RANK=" + std::to_string(l));
        cmd.push_back("DEVICE_ID=" + std::to_string(l % device_count));
        cmd.push_back("VIGIL_HOST=" + host);
        cmd.push_back("VIGIL_ROOT_INFO=" + root_hex);
        cmd.push_back("ASCEND_PROCESS_LOG_PATH=" + log_dir + "/" + FolderName(host));
        cmd.insert(cmd.end(), common.begin(), common.end());
        cmd.insert(cmd.end(), o.command.begin(), o.command.end());
        for (const std::string& w : cmd) spec.argv.push_back(via_shell ? ShellQuote(w) : w);
        specs.push_back(std::move(spec));
      }
    }
  }
  const int kill_grace_s = o.keep_going           ? -1
                           : o.kill_grace_s >= 0 ? o.kill_grace_s
                           : (hosts.empty() ? -1 : 10);

  struct sigaction sa = {};
  sa.sa_handler = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  for (uint32_t r = 0; r < nranks; ++r) {
    std::vector<char*> argv;
    for (const std::string& arg : specs[r].argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      fmt::print(stderr, "vigil run: fork failed: {}\n", strerror(errno));
      ForwardSignal(SIGKILL);
      return 1;
    }
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      // Its own process group, so a kill reaches whatever the launcher prefix started.
      if (!hosts.empty()) setpgid(0, 0);
      setenv("RANK_ID", std::to_string(r).c_str(), 1);
      setenv("RANK_SIZE", std::to_string(nranks).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(specs[r].local).c_str(), 1);
      setenv("DEVICE_ID", std::to_string(specs[r].local % device_count).c_str(), 1);
      setenv("VIGIL_ROOT_INFO", root_hex.c_str(), 1);
      execvp(argv[0], argv.data());
      fmt::print(stderr, "vigil run: cannot start {}: {}\n", argv[0], strerror(errno));
      _exit(127);
    }
    g_children[r] = hosts.empty() ? pid : -pid;  // negative: the child's process group
    g_child_count.store(static_cast<int>(r + 1));
  }
  auto pid_of = [](uint32_t r) { return g_children[r] < 0 ? -g_children[r] : g_children[r]; };

  const auto start = SteadyClock::now();
  std::vector<int> status(nranks, 0);
  std::vector<bool> done(nranks, false);
  uint32_t remaining = nranks;
  int first_failure = -1;
  bool timed_out = false;
  SteadyClock::time_point failed_at{};
  int kill_stage = 0;  // after a failure: 1 = SIGTERM sent, 2 = SIGKILL sent
  auto signal_rest = [&](int sig) {
    for (uint32_t r = 0; r < nranks; ++r) {
      if (!done[r]) kill(g_children[r], sig);
    }
  };
  while (remaining > 0) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (uint32_t r = 0; r < nranks; ++r) {
        if (pid_of(r) == pid && !done[r]) {
          done[r] = true;
          status[r] = st;
          --remaining;
          if (o.keep_going && WIFSIGNALED(st)) {
            fmt::print(stderr, "vigil run: rank {} (pid {}) {}; --keep-going: the other {} rank(s) "
                       "go on\n", r, pid_of(r), DescribeStatus(st), remaining);
          }
          if (ExitCodeOf(st) != 0 && first_failure < 0) {
            first_failure = static_cast<int>(r);
            failed_at = SteadyClock::now();
          }
        }
      }
      continue;
    }
    if (pid < 0 && errno == ECHILD) break;
    const auto now = SteadyClock::now();
    if (o.timeout_s > 0 && !timed_out && now - start > std::chrono::seconds(o.timeout_s)) {
      timed_out = true;
      fmt::print(stderr, "vigil run: --timeout {}s reached; killing the ranks still running\n",
                 o.timeout_s);
      signal_rest(SIGKILL);
    }
    if (first_failure >= 0 && kill_grace_s >= 0 && !timed_out) {
      if (kill_stage == 0 && now - failed_at >= std::chrono::seconds(kill_grace_s)) {
        fmt::print(stderr,
                   "vigil run: rank {} failed {}s ago; stopping the {} ranks still "
                   "running\n",
                   first_failure, kill_grace_s, remaining);
        signal_rest(SIGTERM);
        kill_stage = 1;
      } else if (kill_stage == 1 &&
                 now - failed_at >= std::chrono::seconds(kill_grace_s) + std::chrono::seconds(2)) {
        signal_rest(SIGKILL);
        kill_stage = 2;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  int exit_code = 0;
  for (uint32_t r = 0; r < nranks; ++r) {
    if (ExitCodeOf(status[r]) != 0 || !o.quiet) {
      fmt::print(stderr, "vigil run: rank {}{} (pid {}) {}\n", r,
                 specs[r].host.empty() ? "" : " on " + specs[r].host, pid_of(r),
                 DescribeStatus(status[r]));
    }
  }
  if (first_failure >= 0) exit_code = ExitCodeOf(status[first_failure]);
  if (o.keep_going && first_failure >= 0) {
    // Ranks lost to a signal are what the job carried on through; a rank that exited with an
    // error of its own still fails the run, and so does losing every rank.
    int own = 0;
    bool finished = false;
    for (uint32_t r = 0; r < nranks; ++r) {
      const int code = WIFEXITED(status[r]) ? WEXITSTATUS(status[r]) : -1;
      if (code > 0 && own == 0) own = code;
      finished = finished || code == 0;
    }
    exit_code = own != 0 ? own : finished ? 0 : exit_code;
  }
  if (timed_out && exit_code == 0) exit_code = 124;
  if (g_signal != 0 && exit_code == 0) exit_code = 128 + g_signal;
  fmt::print(stderr, "vigil run: logs in {}\n", log_dir);
  return exit_code;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Start N ranks of an HCCL program on this host");
  run->add_option("-n,--nranks", opts->nranks, "Number of ranks (with --hosts: their sum)");
  run->add_option("--hosts", opts->hosts,
                  "H1:N1,H2:N2: N1 ranks on host H1 (ranks 0..N1-1), then N2 on H2, ...");
  run->add_option("--launcher", opts->launcher,
                  "Command prefix that starts a rank on a host, {host} = its name (default "
                  "\"ssh {host}\"; e.g. \"ip netns exec {host}\")");
  run->add_option("--root-ip", opts->root_ip,
                  "Address the launcher's rendezvous listens on; the ranks must reach it "
                  "(default: HCCL_IF_IP, else automatic)");
  run->add_option("--kill-grace", opts->kill_grace_s,
                  "After a rank fails, seconds before the others are stopped (default: never; "
                  "10 with --hosts)");
  run->add_flag("--keep-going", opts->keep_going,
                "A rank that fails does not stop the others (overrides --kill-grace), and ranks "
                "killed by a signal do not fail the run (elastic jobs that shrink)");
  run->add_option("--log-dir", opts->log_dir,
                  "Folder for every rank's logs (default vigil-logs/run-<time>)");
  run->add_option("--transport", opts->transport, "Force a transport: shm or tcp")
      ->check(CLI::IsMember({"shm", "tcp"}));
  run->add_option("--timeout", opts->timeout_s,
                  "Kill the ranks after this many seconds (0 = never)");
  // One value per --env, so "--env A=b -- PROGRAM" leaves PROGRAM to the command.
  run->add_option("--env", opts->env, "NAME=VALUE set for every rank (repeatable)")
      ->allow_extra_args(false);
  run->add_flag("-q,--quiet", opts->quiet, "Report only ranks that failed");
  run->add_flag("--mpi", opts->mpi,
                "Start the ranks through mpirun (the default for programs that link libmpi)");
  run->add_option("--mpirun", opts->mpirun,
                  "The mpirun to start them with (default: mpirun on PATH); implies --mpi");
  run->add_option("command", opts->command,
                  "PROGRAM [ARGS...]: every word from PROGRAM on is the program's")
      ->required();
  run->callback([opts, exit_code] { *exit_code = Run(*opts); });
}

}  // namespace vigil::cli
