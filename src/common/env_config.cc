#include "common/env_config.h"

#include <arpa/inet.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

namespace vigil {
namespace {

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' ||
                        s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

// Strict decimal: digits only, no sign, no trailing junk, no overflow.
bool ParseU64(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// "64M", "1G", "4096", "512k": bytes with an optional binary K/M/G suffix (optionally "B").
bool ParseBytes(const std::string& text, uint64_t* out) {
  std::string t = text;
  if (!t.empty() && (t.back() == 'B' || t.back() == 'b') && t.size() >= 2 &&
      std::string_view("kKmMgG").find(t[t.size() - 2]) != std::string_view::npos) {
    t.pop_back();
  }
  uint64_t shift = 0;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: break;
    }
    if (shift != 0) t.pop_back();
  }
  uint64_t v = 0;
  if (!ParseU64(t, &v)) return false;
  if (shift != 0 && v > (std::numeric_limits<uint64_t>::max() >> shift)) return false;
  *out = v << shift;
  return true;
}

// One loader per Load() call: records echoes and errors as it goes.
class Loader {
 public:
  explicit Loader(EnvConfig* cfg) : cfg_(cfg) {}

  // Returns the trimmed value, or nullopt-like empty + false when unset.
  bool Get(const char* name, std::string* value) {
    const char* raw = std::getenv(name);
    if (raw == nullptr) return false;
    *value = Trim(raw);
    // An empty variable counts as unset, as HCCL treats it.
    return !value->empty();
  }

  template <typename T>
  void Uint(const char* name, T* field, uint64_t lo, uint64_t hi, const char* unit = "") {
    std::string v;
    bool from_env = false;
    if (Get(name, &v)) {
      uint64_t parsed = 0;
      if (ParseU64(v, &parsed) && parsed >= lo && parsed <= hi) {
        *field = static_cast<T>(parsed);
        from_env = true;
      } else {
        Fail(name, v, hi == std::numeric_limits<uint32_t>::max() ||
                              hi == std::numeric_limits<uint64_t>::max()
                          ? fmt::format("an integer >= {}", lo)
                          : fmt::format("an integer in [{}, {}]", lo, hi));
      }
    }
    Echo(name, fmt::format("{}", *field), from_env, unit);
  }

  void Int(const char* name, int* field, int lo, int hi) {
    uint32_t tmp = static_cast<uint32_t>(*field);
    Uint(name, &tmp, static_cast<uint64_t>(lo), static_cast<uint64_t>(hi));
    *field = static_cast<int>(tmp);
  }

  void Bool(const char* name, bool* field) {
    std::string v;
    bool from_env = false;
    if (Get(name, &v)) {
      if (v == "0" || v == "1") {
        *field = v == "1";
        from_env = true;
      } else {
        Fail(name, v, "0 or 1");
      }
    }
    Echo(name, *field ? "1" : "0", from_env, "");
  }

  void Bytes(const char* name, uint64_t* field, uint64_t lo) {
    std::string v;
    bool from_env = false;
    if (Get(name, &v)) {
      uint64_t parsed = 0;
      if (ParseBytes(v, &parsed) && parsed >= lo) {
        *field = parsed;
        from_env = true;
      } else {
        Fail(name, v, fmt::format("a byte count >= {} with an optional K, M or G suffix", lo));
      }
    }
    Echo(name, fmt::format("{}", *field), from_env, "");
  }

  // Free text; `check` returns an empty string when the value is fine, else the expectation.
  template <typename Check>
  void String(const char* name, std::string* field, Check check) {
    const bool from_env = Text(name, field, check, /*hidden=*/false);
    Echo(name, *field, from_env, "");
  }

  // As String, but neither the echo nor an EI0001 message shows the value.
  template <typename Check>
  void Secret(const char* name, std::string* field, Check check) {
    const bool from_env = Text(name, field, check, /*hidden=*/true);
    Echo(name, from_env ? "(set)" : "(none)", from_env, "");
  }

  void Echo(const char* name, std::string value, bool from_env, const char* unit) {
    cfg_->echoes.push_back({name, std::move(value), from_env, unit});
  }

  void Fail(const char* name, const std::string& value, std::string expected) {
    cfg_->invalid.push_back({name, value, std::move(expected)});
  }

 private:
  // String and Secret: sets *field to the variable's value when `check` accepts it and says
  // whether it did; a value `check` refuses is recorded as invalid, shown as "(hidden)" when
  // `hidden`.
  template <typename Check>
  bool Text(const char* name, std::string* field, Check check, bool hidden) {
    std::string v;
    if (!Get(name, &v)) return false;
    const std::string expected = check(v);
    if (!expected.empty()) {
      Fail(name, hidden ? "(hidden)" : v, expected);
      return false;
    }
    *field = v;
    return true;
  }

  EnvConfig* cfg_;
};

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') return home;
  struct passwd pw;
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return "/tmp";
}

std::string DefaultLogRoot() {
  if (const char* work = std::getenv("ASCEND_WORK_PATH"); work != nullptr && work[0] != '\0') {
    return std::string(work) + "/log";
  }
  return HomeDir() + "/ascend/log";
}

// HCCL_DFS_CONFIG: returns "" when every item is known and valid (and fills cfg), else the
// expectation text for EI0001.
std::string ParseDfsConfig(const std::string& v, EnvConfig* cfg) {
  const std::string expected =
      "comma-separated items connection_fault_detection_time:<0 or 20..7200>, "
      "cluster_heartbeat:<on|off>, stuck_detection:<on|off>, inconsistent_check:<on|first|off>, "
      "task_monitor_interval:<0..7200000>";
  EnvConfig tmp = *cfg;
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    if (comma == std::string::npos) comma = v.size();
    const std::string item = Trim(std::string_view(v).substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string::npos) return expected;
    const std::string key = Trim(std::string_view(item).substr(0, colon));
    const std::string val = Trim(std::string_view(item).substr(colon + 1));
    auto on_off = [&](bool* field) {
      if (val == "on") *field = true;
      else if (val == "off") *field = false;
      else return false;
      return true;
    };
    uint64_t n = 0;
    if (key == "inconsistent_check") {
      // HCCL also accepts "first" (check an op's first call only); Vigil's check is cheap
      // enough to run on every call, so it counts as on.
      if (val == "first") {
        tmp.inconsistent_check = true;
      } else if (!on_off(&tmp.inconsistent_check)) {
        return expected;
      }
    } else if (key == "cluster_heartbeat") {
      if (!on_off(&tmp.cluster_heartbeat)) return expected;
    } else if (key == "stuck_detection") {
      if (!on_off(&tmp.stuck_detection)) return expected;
    } else if (key == "connection_fault_detection_time") {
      if (!ParseU64(val, &n) || (n != 0 && (n < 20 || n > 7200))) return expected;
      tmp.connection_fault_detection_s = static_cast<uint32_t>(n);
    } else if (key == "task_monitor_interval") {
      if (!ParseU64(val, &n) || n > 7200000) return expected;
    } else {
      return expected;
    }
  }
  cfg->connection_fault_detection_s = tmp.connection_fault_detection_s;
  cfg->cluster_heartbeat = tmp.cluster_heartbeat;
  cfg->stuck_detection = tmp.stuck_detection;
  cfg->inconsistent_check = tmp.inconsistent_check;
  return "";
}

// HCCL_DETERMINISTIC's value as hcclDeterministic's number: false 0, true 1, strict 2; -1: none.
int DeterministicLevel(const std::string& v) {
  std::string lower;
  for (char ch : v) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  if (lower == "false") return 0;
  if (lower == "true") return 1;
  if (lower == "strict") return 2;
  return -1;
}

std::string CheckIp(const std::string& v) {
  unsigned char buf[sizeof(struct in6_addr)];
  if (inet_pton(AF_INET, v.c_str(), buf) == 1 || inet_pton(AF_INET6, v.c_str(), buf) == 1) {
    return "";
  }
  return "an IPv4 or IPv6 address";
}

}  // namespace

bool EnvConfig::Load(std::string* error) {
  *this = EnvConfig{};
  Loader l(this);
  constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();
  // HCCL's variables.
  l.Uint("HCCL_EXEC_TIMEOUT", &exec_timeout_s, 0, (1ull << 31) - 1, "s");
  l.Uint("HCCL_CONNECT_TIMEOUT", &connect_timeout_s, 1, 7200, "s");
  l.Uint("HCCL_BUFFSIZE", &buffsize_mb, 1, kU32Max, "M");
  l.Bool("HCCL_ENTRY_LOG_ENABLE", &entry_log);
  l.Bool("HCCL_DIAGNOSE_ENABLE", &diagnose_enable);
  l.Uint("HCCL_RDMA_QPS_PER_CONNECTION", &qps_per_connection, 1, 32);
  l.Uint("HCCL_RDMA_TIMEOUT", &rdma_timeout, 5, 20);
  l.Uint("HCCL_RDMA_RETRY_CNT", &rdma_retry_cnt, 1, 7);
  l.String("HCCL_ALGO", &algo, [](const std::string&) { return std::string(); });
  std::string deterministic_text = "false";
  l.String("HCCL_DETERMINISTIC", &deterministic_text, [](const std::string& v) {
    return DeterministicLevel(v) >= 0 ? std::string() : std::string("one of false, true, strict");
  });
  deterministic = static_cast<uint32_t>(std::max(0, DeterministicLevel(deterministic_text)));
  l.String("HCCL_IF_IP", &if_ip, CheckIp);
  l.String("HCCL_SOCKET_IFNAME", &socket_ifname, [](const std::string&) { return std::string(); });
  l.Uint("HCCL_IF_BASE_PORT", &if_base_port, 0, 65504);
  l.Bool("HCCL_WHITELIST_DISABLE", &whitelist_disable);
  l.String("HCCL_DFS_CONFIG", &dfs_config,
           [this](const std::string& v) { return ParseDfsConfig(v, this); });
  {
    std::string text = op_retry.EnableText();
    l.String("HCCL_OP_RETRY_ENABLE", &text,
             [this](const std::string& v) { return ParseOpRetryEnable(v, &op_retry); });
    text = op_retry.ParamsText();
    l.String("HCCL_OP_RETRY_PARAMS", &text,
             [this](const std::string& v) { return ParseOpRetryParams(v, &op_retry); });
  }
  // CANN log variables.
  log_path = DefaultLogRoot();
  l.String("ASCEND_PROCESS_LOG_PATH", &log_path, [](const std::string&) { return std::string(); });
  l.Int("ASCEND_GLOBAL_LOG_LEVEL", &global_log_level, 0, 4);
  l.Bool("ASCEND_SLOG_PRINT_TO_STDOUT", &slog_print_to_stdout);
  // Vigil's own.
  l.Uint("VIGIL_DEVICE_COUNT", &device_count, 1, 1024);
  l.Bytes("VIGIL_DEVICE_MEMORY", &device_memory, 0);
  l.Bytes("VIGIL_LOG_FILE_SIZE", &log_file_max_bytes, 1024);
  l.Uint("VIGIL_HEARTBEAT_LOST_TIMEOUT", &heartbeat_lost_s, 1, 3600, "s");
  l.Bool("VIGIL_HEARTBEAT", &heartbeat_enable);
  l.String("VIGIL_TRANSPORT", &transport, [](const std::string& v) {
    return v == "shm" || v == "tcp" ? std::string() : std::string("one of shm, tcp");
  });
  l.Bool("VIGIL_SHM_SINGLE_COPY", &shm_single_copy);
  l.Bytes("VIGIL_TCP_LOOPBACK_SOCKBUF", &tcp_loopback_sockbuf, 0);
  l.Bool("VIGIL_TCP_EAGER", &tcp_eager);
  l.String("VIGIL_FAULT", &fault, [](const std::string&) { return std::string(); });
  l.Secret("VIGIL_JOB_KEY", &job_key, [](const std::string& v) {
    const bool hex = v.size() == 32 && v.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
    return hex ? std::string() : std::string("32 hex digits (a 128-bit key)");
  });

  if (invalid.empty()) {
    if (error != nullptr) error->clear();
    return true;
  }
  if (error != nullptr) {
    error->clear();
    for (const auto& bad : invalid) {
      if (!error->empty()) error->append("; ");
      error->append(fmt::format("{} value [{}] is invalid: expected {}", bad.name, bad.value,
                                bad.expected));
    }
  }
  return false;
}

namespace {

struct EnvHolder {
  std::mutex mu;
  bool loaded = false;
  EnvConfig config;
  std::string error;
};

EnvHolder& Holder() {
  // Leaked: log lines may be written from other static destructors.
  static EnvHolder* holder = new EnvHolder;
  return *holder;
}

EnvHolder& LoadedHolder() {
  EnvHolder& h = Holder();
  // Read on every op (algorithm choice, entry log): after the first load, one atomic load
  // instead of std::call_once (thread-local bookkeeping and pthread_once on every call).
  static std::atomic<bool> ready{false};
  if (ready.load(std::memory_order_acquire)) return h;
  static std::once_flag once;
  std::call_once(once, [&h] {
    std::lock_guard<std::mutex> lock(h.mu);
    if (!h.loaded) {
      h.config.Load(&h.error);
      h.loaded = true;
    }
  });
  ready.store(true, std::memory_order_release);
  return h;
}

}  // namespace

namespace env_detail {

std::atomic<const EnvConfig*> g_loaded{nullptr};
std::atomic<const std::string*> g_error{nullptr};

const EnvConfig& LoadEnv() {
  EnvHolder& h = LoadedHolder();
  g_error.store(&h.error, std::memory_order_release);
  g_loaded.store(&h.config, std::memory_order_release);
  return h.config;
}

const std::string& LoadEnvError() {
  LoadEnv();
  return LoadedHolder().error;
}

}  // namespace env_detail

void ReloadEnvForTesting() {
  EnvHolder& h = LoadedHolder();
  std::lock_guard<std::mutex> lock(h.mu);
  h.config.Load(&h.error);
}

std::string FormatEnvEcho(const EnvConfig::Echo& echo) {
  if (!echo.from_env && echo.value.empty()) return echo.name + " is not set";
  return fmt::format("{} set by {} to [{}]{}", echo.name, echo.from_env ? "environment" : "default",
                     echo.value, echo.unit);
}

}  // namespace vigil
