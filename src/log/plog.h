// The plog writer: CANN's log layout and line format.
//
//   $ASCEND_PROCESS_LOG_PATH/run/plog/plog-<pid>_<YYYYMMDDhhmmssmmm>.log    run log (always on)
//   $ASCEND_PROCESS_LOG_PATH/debug/plog/plog-<pid>_<YYYYMMDDhhmmssmmm>.log  debug log (by level)
//
// Line: "[ERROR] HCCL(2111667,all_reduce_test):2025-10-24-11:18:29.597.044 [file.cc:908] [tid]msg"
// Each record is written with one write(2) under a mutex, so a line is whole even if the process
// is killed right after. Files rotate by size (VIGIL_LOG_FILE_SIZE). Cheap when a level is off:
// the macros test Enabled() before formatting anything (a relaxed atomic load).
// A child of fork() writes to its own files (its own pid in the name and the lines); the writer
// holds its mutex across fork(), so never log from inside a pthread_atfork prepare handler.
// Directories are created on the first line of each channel; if the root cannot be written,
// lines are dropped (no error to the caller).
#pragma once

#include <fmt/format.h>

#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kNull = 4 };
enum class Channel { kRun, kDebug };

// Run channel: always written (HCCL_RUN_INFO / RUN_WARNING). Debug channel: written when
// level >= ASCEND_GLOBAL_LOG_LEVEL.
bool Enabled(Channel channel, Level level);
void Write(Channel channel, Level level, std::string_view module, const char* file, int line,
           std::string_view message);

// "[PID: 3480365] 2025-12-24-14:10:31.094.189 Execution_Error_SDMA(EI0012): <message>" on stderr,
// and the same text as an ERROR line in the debug log. `code` must be in the catalogue;
// args fill its template (common/error_codes.h). An unknown code prints as EI9999. `where`
// names the caller in the debug-log line's [file:line].
void ScreenError(std::string_view code, const std::vector<std::string>& args,
                 std::source_location where = std::source_location::current());

// As above, then lines of the library's own that explain it (the root cause a heartbeat event
// names), each with the same "[PID: n] <time> " prefix and no code of their own, all in one
// write(2) so that no other process's line lands between them. Each goes to the debug log too.
void ScreenError(std::string_view code, const std::vector<std::string>& args,
                 const std::vector<std::string>& after,
                 std::source_location where = std::source_location::current());

// Paths of the current files (tests, flight recorder dumps).
std::string RunLogPath();
std::string DebugLogPath();
std::string LogRoot();  // $ASCEND_PROCESS_LOG_PATH or its default

// Echoes EnvConfig once per process to the run log ("[HCCL_ENV] ... set by ... to [..]").
void EchoEnvOnce();

// Tests only: close files and re-read the env so the next line opens new files.
void ResetForTesting();

}  // namespace vigil::log

#define VIGIL_LOG_AT(channel, level, module, ...)                                            \
  do {                                                                                       \
    if (::vigil::log::Enabled(channel, level)) {                                             \
      ::vigil::log::Write(channel, level, module, __FILE_NAME__, __LINE__,                   \
                          ::fmt::format(__VA_ARGS__));                                       \
    }                                                                                        \
  } while (0)

// HCCL module lines.
#define HCCL_RUN_INFO(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kRun, ::vigil::log::Level::kInfo, "HCCL", __VA_ARGS__)
#define HCCL_RUN_WARNING(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kRun, ::vigil::log::Level::kWarning, "HCCL", __VA_ARGS__)
#define HCCL_ERROR(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kError, "HCCL", __VA_ARGS__)
#define HCCL_WARNING(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kWarning, "HCCL", __VA_ARGS__)
#define HCCL_INFO(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kInfo, "HCCL", __VA_ARGS__)
#define HCCL_DEBUG(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kDebug, "HCCL", __VA_ARGS__)

// RUNTIME module lines (the acl runtime).
#define RT_RUN_INFO(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kRun, ::vigil::log::Level::kInfo, "RUNTIME", __VA_ARGS__)
#define RT_ERROR(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kError, "RUNTIME", __VA_ARGS__)
#define RT_WARNING(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kWarning, "RUNTIME", __VA_ARGS__)
#define RT_DEBUG(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kDebug, ::vigil::log::Level::kDebug, "RUNTIME", __VA_ARGS__)
