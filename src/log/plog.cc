#include "log/plog.h"

#include <errno.h>  // program_invocation_short_name
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>

#include "common/env_config.h"
#include "common/error_codes.h"
#include "common/time_util.h"

namespace vigil::log {
namespace {

constexpr std::string_view kLevelNames[] = {"DEBUG", "INFO", "WARNING", "ERROR", "NULL"};

struct ChannelFile {
  int fd = -1;
  std::string path;
  uint64_t bytes = 0;
  bool failed = false;  // could not create the file: drop lines until the next reset
  WallClock::time_point opened{};
};

struct State {
  std::mutex mu;
  ChannelFile files[2];  // indexed by Channel
  WallClock::time_point last_stamp{};
  // Snapshot of the env taken under mu (so a reload is seen consistently).
  bool config_loaded = false;
  std::string root;
  uint64_t max_bytes = 0;
  bool to_stdout = false;
  bool env_echoed = false;
};

// -1 = not loaded yet; otherwise ASCEND_GLOBAL_LOG_LEVEL. Read on every log statement.
std::atomic<int> g_debug_level{-1};
std::atomic<int> g_pid{0};
// Bumped in every fork child: thread-local caches taken before the fork are stale there.
std::atomic<uint32_t> g_fork_generation{0};

// gettid() is a system call (microseconds on some VMs); a thread's id only changes across fork.
long CachedTid() {
  thread_local uint32_t generation = UINT32_MAX;
  thread_local long tid = 0;
  const uint32_t current = g_fork_generation.load(std::memory_order_relaxed);
  if (generation != current) {
    tid = static_cast<long>(gettid());
    generation = current;
  }
  return tid;
}

void AtForkPrepare();
void AtForkParent();
void AtForkChild();

State& GetState() {
  // Leaked on purpose: lines may be written from other static destructors.
  static State* state = [] {
    auto* s = new State;
    // Time's fork handlers first: prepare handlers run in reverse order, so ours locks the
    // state mutex before time's locks the zone mutex, the order OpenLocked takes them in.
    InitTimeZoneCache();
    g_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
    pthread_atfork(AtForkPrepare, AtForkParent, AtForkChild);
    return s;
  }();
  return *state;
}

void CloseFile(ChannelFile* f) {
  if (f->fd >= 0) close(f->fd);
  *f = ChannelFile{};
}

// Holding the mutex across fork() means the child's copy of the state is consistent.
void AtForkPrepare() { GetState().mu.lock(); }
void AtForkParent() { GetState().mu.unlock(); }
void AtForkChild() {
  State& s = GetState();
  // The child is a new process: its lines go to files named with its own pid, and it echoes
  // the env once more into its own run log. The inherited descriptors are the parent's files.
  for (auto& f : s.files) CloseFile(&f);
  s.env_echoed = false;
  g_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  s.mu.unlock();
}

void LoadConfigLocked(State& s) {
  const EnvConfig& env = Env();
  s.root = env.log_path;
  s.max_bytes = env.log_file_max_bytes;
  s.to_stdout = env.slog_print_to_stdout;
  s.config_loaded = true;
  g_debug_level.store(env.global_log_level, std::memory_order_release);
}

int LoadLevel() {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.config_loaded) LoadConfigLocked(s);
  return g_debug_level.load(std::memory_order_acquire);
}

void WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
}

bool OpenLocked(State& s, Channel channel) {
  ChannelFile& f = s.files[static_cast<int>(channel)];
  if (f.fd >= 0) return true;
  if (f.failed) return false;
  const std::string dir = s.root + (channel == Channel::kRun ? "/run/plog" : "/debug/plog");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // lazily, on the channel's first line
  // Two files of one pid must not share a name: keep stamps strictly increasing by >= 1 ms.
  WallClock::time_point now = WallClock::now();
  if (now < s.last_stamp + std::chrono::milliseconds(1)) {
    now = s.last_stamp + std::chrono::milliseconds(1);
  }
  s.last_stamp = now;
  const std::string path = fmt::format("{}/plog-{}_{}.log", dir,
                                       g_pid.load(std::memory_order_relaxed), FormatFileStamp(now));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    f.failed = true;
    return false;
  }
  f.fd = fd;
  f.path = path;
  f.bytes = 0;
  f.opened = now;
  return true;
}

std::string_view BaseName(const char* file) {
  if (file == nullptr) return "";
  std::string_view f(file);
  const size_t slash = f.rfind('/');
  return slash == std::string_view::npos ? f : f.substr(slash + 1);
}

std::string FormatLine(Level level, std::string_view module, std::string_view file, int line,
                       std::string_view message) {
  const int lvl = std::clamp(static_cast<int>(level), 0, 4);
  char stamp[kPlogTimeLength];
  FormatPlogTimeTo(WallClock::now(), stamp);
  std::string out;
  out.reserve(96 + module.size() + file.size() + message.size());
  fmt::format_to(std::back_inserter(out), "[{}] {}({},{}):{} [{}:{}] [{}]{}\n", kLevelNames[lvl],
                 module, g_pid.load(std::memory_order_relaxed), program_invocation_short_name,
                 std::string_view(stamp, sizeof(stamp)), file, line, CachedTid(), message);
  return out;
}

void WriteLine(Channel channel, const std::string& text) {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.config_loaded) LoadConfigLocked(s);
  ChannelFile& f = s.files[static_cast<int>(channel)];
  // Size rotation: a full file is closed and the next line starts a new one (new stamp).
  if (f.fd >= 0 && f.bytes > 0 && f.bytes + text.size() > s.max_bytes) CloseFile(&f);
  if (OpenLocked(s, channel)) {
    WriteAll(f.fd, text.data(), text.size());
    f.bytes += text.size();
  }
  if (s.to_stdout) WriteAll(STDOUT_FILENO, text.data(), text.size());
}

}  // namespace

bool Enabled(Channel channel, Level level) {
  if (level == Level::kNull) return false;
  if (channel == Channel::kRun) return true;
  int current = g_debug_level.load(std::memory_order_relaxed);
  if (current < 0) current = LoadLevel();
  return static_cast<int>(level) >= current;
}

void Write(Channel channel, Level level, std::string_view module, const char* file, int line,
           std::string_view message) {
  GetState();  // registers the fork handlers and the pid before the first line is formatted
  WriteLine(channel, FormatLine(level, module, BaseName(file), line, message));
}

void ScreenError(std::string_view code, const std::vector<std::string>& args,
                 std::source_location where) {
  ScreenError(code, args, {}, where);
}

void ScreenError(std::string_view code, const std::vector<std::string>& args,
                 const std::vector<std::string>& after, std::source_location where) {
  GetState();
  const ErrorCodeInfo* info = FindErrorCode(code);
  std::vector<std::string> texts;
  texts.reserve(1 + after.size());
  if (info != nullptr) {
    texts.push_back(RenderScreenError(*info, args));
  } else {
    texts.push_back(RenderScreenError(*FindErrorCode("EI9999"),
                                      {fmt::format("unknown error code [{}]", code)}));
  }
  texts.insert(texts.end(), after.begin(), after.end());
  const int pid = g_pid.load(std::memory_order_relaxed);
  const std::string stamp = FormatPlogTime(WallClock::now());
  std::string screen;
  for (const std::string& text : texts) {
    fmt::format_to(std::back_inserter(screen), "[PID: {}] {} {}\n", pid, stamp, text);
  }
  WriteAll(STDERR_FILENO, screen.data(), screen.size());
  if (Enabled(Channel::kDebug, Level::kError)) {
    for (const std::string& text : texts) {
      Write(Channel::kDebug, Level::kError, "HCCL", where.file_name(),
            static_cast<int>(where.line()), text);
    }
  }
}

std::string RunLogPath() {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.files[static_cast<int>(Channel::kRun)].path;
}

std::string DebugLogPath() {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.files[static_cast<int>(Channel::kDebug)].path;
}

std::string LogRoot() {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.config_loaded) LoadConfigLocked(s);
  return s.root;
}

void EchoEnvOnce() {
  State& s = GetState();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.env_echoed) return;
    s.env_echoed = true;
  }
  const EnvConfig& env = Env();
  for (const auto& echo : env.echoes) {
    Write(Channel::kRun, Level::kInfo, "HCCL", __FILE_NAME__, __LINE__,
          "[HCCL_ENV] " + FormatEnvEcho(echo));
  }
  if (Enabled(Channel::kDebug, Level::kError)) {
    for (const auto& bad : env.invalid) {
      Write(Channel::kDebug, Level::kError, "HCCL", __FILE_NAME__, __LINE__,
            fmt::format("[InitGroupStage][EnvConfig]parse {} failed: {} value [{}] is invalid: "
                        "expected {}",
                        bad.name, bad.name, bad.value, bad.expected));
    }
  }
}

void ResetForTesting() {
  ReloadEnvForTesting();
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& f : s.files) CloseFile(&f);
  s.env_echoed = false;
  LoadConfigLocked(s);
}

}  // namespace vigil::log
