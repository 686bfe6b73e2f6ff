#include "job_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace vigil::test {

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path FreshJobDir(const char* root_env, const std::string& prefix, const std::string& name) {
  const char* base = std::getenv(root_env);
  const fs::path root = base != nullptr ? fs::path(base) : fs::temp_directory_path();
  const fs::path dir = root / (prefix + "_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool AllExist(const fs::path& dir, const char* prefix, int n, int skip) {
  for (int r = 0; r < n; ++r) {
    if (r != skip && !fs::exists(dir / (std::string(prefix) + "-" + std::to_string(r)))) {
      return false;
    }
  }
  return true;
}

std::string PlogsOf(const fs::path& logs, const char* channel, int pid) {
  const std::string name = "plog-" + std::to_string(pid) + "_";
  std::string all;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(logs, ec); it != fs::end(it); ++it) {
    const fs::path& p = it->path();
    if (p.parent_path().filename() != "plog" ||
        p.parent_path().parent_path().filename() != channel) {
      continue;
    }
    if (p.filename().string().rfind(name, 0) == 0) all += ReadFile(p);
  }
  return all;
}

std::map<int, RankKey> RankKeys(const fs::path& logs, bool first_per_file) {
  static const std::regex kKey(
      R"(LocalRank Key Info: userRank\[(\d+)\], hostIp\[([^\]]*)\], devicePhyId\[(\d+)\], pid\[(\d+)\])");
  std::map<int, RankKey> out;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(logs / "run" / "plog", ec)) {
    const std::string text = ReadFile(f.path());
    for (std::sregex_iterator it(text.begin(), text.end(), kKey), end; it != end; ++it) {
      RankKey& k = out[std::stoi((*it)[1])];
      k.uid = (*it)[2].str() + "/" + (*it)[3].str();
      k.pid = std::stoi((*it)[4]);
      if (first_per_file) break;
    }
  }
  return out;
}

std::vector<std::string> VigilRun(const std::string& vigil, int n, const fs::path& logs,
                                  int timeout_s) {
  return {vigil,         "run",       "-n", std::to_string(n), "--log-dir",
          logs.string(), "--timeout", std::to_string(timeout_s)};
}

Finished RunLauncher(const Launch& launch) {
  Finished f;
  std::vector<std::string> args = launch.argv;
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (const std::string& kv : launch.env) {
      const size_t eq = kv.find('=');
      setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    const int fd = open(launch.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      if (launch.with_stdout) dup2(fd, 1);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (launch.tick) launch.tick();
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(launch.watchdog_s)) {
      kill(-pid, SIGKILL);  // the launcher itself hung: never expected
      f.timed_out = true;
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  f.output = ReadFile(launch.output);
  if (f.output.find("--timeout") != std::string::npos) f.timed_out = true;
  return f;
}

}  // namespace vigil::test
