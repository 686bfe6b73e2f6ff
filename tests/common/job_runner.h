// Running a multi-process job under `vigil run` from a gtest, for the tests that cause faults
// for real (heartbeat, retry, shrink, root cause): a fresh folder per job, the launcher started
// in its own process group with its output in a file, a callback every 100 ms while it runs
// (to stop a rank, cut a link, ask for health), a watchdog, and the ranks' plog files read back.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace vigil::test {

namespace fs = std::filesystem;

// The whole text of a file ("" when it cannot be read).
std::string ReadFile(const fs::path& p);

// A new, empty folder ROOT/PREFIX_NAME_PID for one job. ROOT is the environment variable
// `root_env` (ctest points it into the build tree) or else the system's temp folder.
fs::path FreshJobDir(const char* root_env, const std::string& prefix, const std::string& name);

// Whether DIR/PREFIX-R exists for every rank R < n but `skip` (the files the rank programs
// write as they reach a point).
bool AllExist(const fs::path& dir, const char* prefix, int n, int skip = -1);

// The plog files of process `pid` on `channel` ("run" or "debug") under `logs`, concatenated:
// LOGS/CHANNEL/plog/plog-PID_*, and the same below LOGS (where `vigil run --hosts` puts each
// host's logs).
std::string PlogsOf(const fs::path& logs, const char* channel, int pid);

// A rank as its "LocalRank Key Info" line names it: "hostIp/devicePhyId", and its pid.
struct RankKey {
  std::string uid;
  int pid = 0;
};
// rank -> key from the key lines in LOGS/run/plog: every line of every file, or only the first of
// each file (a process's rank in its first communicator) when `first_per_file`.
std::map<int, RankKey> RankKeys(const fs::path& logs, bool first_per_file);

// The start of every job's command: VIGIL run -n N --log-dir LOGS --timeout T.
std::vector<std::string> VigilRun(const std::string& vigil, int n, const fs::path& logs,
                                  int timeout_s);

struct Launch {
  std::vector<std::string> argv;   // the command; argv[0] is looked up on PATH
  std::vector<std::string> env;    // NAME=VALUE, set in this order in the child
  fs::path output;                 // gets the command's stderr (and stdout, when with_stdout)
  bool with_stdout = true;
  int watchdog_s = 120;            // then the whole process group is killed
  std::function<void()> tick;      // called every 100 ms while the command runs
};

struct Finished {
  int exit_code = -1;
  bool timed_out = false;  // the watchdog fired, or vigil run said its --timeout ran out
  std::string output;      // the text of Launch::output
};

// Runs the command to its end (at most watchdog_s seconds).
Finished RunLauncher(const Launch& launch);

// Removes a job's folder when the test passed (kept for inspection when it failed).
struct DropIfPassed {
  fs::path dir;
  ~DropIfPassed() {
    if (!::testing::Test::HasFailure()) fs::remove_all(dir);
  }
};

}  // namespace vigil::test
