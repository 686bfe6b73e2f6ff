// How `vigil run` words and passes on a child's wait status.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstring>
#include <string>

namespace vigil::cli {

inline std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  }
  return "ended";
}

// A shell's convention: the exit code, or 128 + the signal that ended the process.
inline int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace vigil::cli
