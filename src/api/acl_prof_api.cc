// The profiling calls of acl/acl_prof.h over runtime/profiler.h: CANN's call order and codes,
// and the host-side trace each aclprofStop writes as a Chrome trace (one event per stream task,
// pid = device, tid = stream), with a WARNING that device-side data is not collected.
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "acl/acl_prof.h"
#include "api/acl_api_util.h"
#include "runtime/profiler.h"

struct aclprofConfig {
  std::vector<int32_t> devices;
  int metrics = ACL_AICORE_NONE;
  uint64_t switches = 0;
};

namespace {

namespace prof = vigil::rt::prof;
using vigil::api::RawEnum;

// Switches that name the stream task trace Vigil records, and those a CPU device has no data
// for (each named in the WARNING when asked for).
constexpr uint64_t kTraceSwitches =
    ACL_PROF_TASK_TIME | ACL_PROF_TASK_TIME_L0 | ACL_PROF_HCCL_TRACE | ACL_PROF_RUNTIME_API;
constexpr struct {
  uint64_t bit;
  const char* name;
} kSwitches[] = {
    {ACL_PROF_ACL_API, "ACL_PROF_ACL_API"},
    {ACL_PROF_TASK_TIME, "ACL_PROF_TASK_TIME"},
    {ACL_PROF_AICORE_METRICS, "ACL_PROF_AICORE_METRICS"},
    {ACL_PROF_AICPU, "ACL_PROF_AICPU"},
    {ACL_PROF_L2CACHE, "ACL_PROF_L2CACHE"},
    {ACL_PROF_HCCL_TRACE, "ACL_PROF_HCCL_TRACE"},
    {ACL_PROF_TRAINING_TRACE, "ACL_PROF_TRAINING_TRACE"},
    {ACL_PROF_MSPROFTX, "ACL_PROF_MSPROFTX"},
    {ACL_PROF_RUNTIME_API, "ACL_PROF_RUNTIME_API"},
    {ACL_PROF_TASK_TIME_L0, "ACL_PROF_TASK_TIME_L0"},
    {ACL_PROF_TASK_MEMORY, "ACL_PROF_TASK_MEMORY"},
    {ACL_PROF_OP_ATTR, "ACL_PROF_OP_ATTR"},
};
constexpr uint64_t KnownSwitches() {
  uint64_t all = 0;
  for (const auto& s : kSwitches) all |= s.bit;
  return all;
}

std::string SwitchNames(uint64_t bits) {
  std::string out;
  for (const auto& s : kSwitches) {
    if ((bits & s.bit) != 0) out += (out.empty() ? "" : "|") + std::string(s.name);
  }
  return out.empty() ? "none" : out;
}

struct State {
  std::mutex mu;
  bool inited = false;
  std::string path;                        // the result directory
  std::set<const aclprofConfig*> configs;  // made by aclprofCreateConfig, not destroyed
  std::set<int32_t> started;               // devices between aclprofStart and aclprofStop
  uint64_t traces = 0;                     // traces written by this process
};

State& St() {
  static State* s = new State();  // leaked: a program may profile until exit
  return *s;
}

#define PROF_WARNING(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kRun, ::vigil::log::Level::kWarning, "PROFILING", __VA_ARGS__)
#define PROF_INFO(...) \
  VIGIL_LOG_AT(::vigil::log::Channel::kRun, ::vigil::log::Level::kInfo, "PROFILING", __VA_ARGS__)

const char* TaskName(vigil::rt::TaskType type) {
  return vigil::rt::TaskTypeName(type);
}

int64_t WallUs(const prof::Collected& c, prof::Clock::time_point t) {
  const auto wall = c.started_wall +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(t - c.started);
  return std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count();
}

// Writes the devices' spans as one Chrome trace; its path, or "" (and *error) when it failed.
std::string WriteTrace(const std::string& dir, uint64_t seq, uint64_t switches,
                       const std::vector<prof::Collected>& devices, std::string* error) {
  nlohmann::json events = nlohmann::json::array();
  uint64_t dropped = 0;
  for (const prof::Collected& c : devices) {
    dropped += c.dropped;
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", c.device},
                      {"args", {{"name", fmt::format("device {} (Vigil CPU device)", c.device)}}}});
    std::set<uint32_t> streams;
    for (const prof::Span& s : c.spans) {
      if (streams.insert(s.stream_id).second) {
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", c.device},
                          {"tid", s.stream_id},
                          {"args", {{"name", fmt::format("stream {}", s.stream_id)}}}});
      }
      nlohmann::json args = {{"task_id", s.task_id}, {"task_type", TaskName(s.type)}};
      if (s.rc != ACL_SUCCESS) args["retcode"] = s.rc;
      std::string name = TaskName(s.type);
      auto label = c.labels.find(prof::LabelKey(s.stream_id, s.task_id));
      if (label != c.labels.end()) {
        name = label->second.name;
        for (const auto& [k, v] : label->second.args) args[k] = v;
      }
      const int64_t ts = WallUs(c, s.start);
      const int64_t end = WallUs(c, s.end);
      events.push_back({{"name", name},
                        {"cat", s.type == vigil::rt::TaskType::kHccl ? "hccl" : "task"},
                        {"ph", "X"},
                        {"ts", ts},
                        {"dur", std::max<int64_t>(end - ts, 0)},
                        {"pid", c.device},
                        {"tid", s.stream_id},
                        {"args", std::move(args)}});
    }
  }
  nlohmann::json trace = {{"traceEvents", std::move(events)},
                          {"displayTimeUnit", "ms"},
                          {"otherData",
                           {{"producer", "Vigil aclprofStop: host-side stream task trace"},
                            {"pid", getpid()},
                            {"dataTypeConfig", SwitchNames(switches)},
                            {"device_side_data", "not collected (CPU devices)"},
                            {"spans_dropped", dropped}}}};
  const std::string file =
      (std::filesystem::path(dir) / fmt::format("vigil_trace_{}_{}.json", getpid(), seq)).string();
  std::ofstream out(file, std::ios::trunc);
  out << trace.dump() << '\n';
  out.close();
  if (!out) {
    *error = fmt::format("cannot write {}: {}", file, std::strerror(errno));
    return "";
  }
  return file;
}

// Stops the devices and writes their trace (under St().mu).
aclError StopDevices(const char* api, const std::vector<int32_t>& devices, uint64_t switches) {
  std::vector<prof::Collected> collected = prof::Stop(devices);
  for (int32_t d : devices) St().started.erase(d);
  std::string error;
  const std::string file = WriteTrace(St().path, ++St().traces, switches, collected, &error);
  if (file.empty()) {
    VIGIL_RT_FAIL("{} failed: the host-side trace could not be written: {}.", api, error);
    return ACL_ERROR_WRITE_FILE;
  }
  size_t spans = 0;
  for (const auto& c : collected) spans += c.spans.size();
  PROF_INFO("{}: host-side stream task trace of {} task(s) on device(s) {} written to {}", api,
            spans, fmt::join(devices, ","), file);
  return ACL_SUCCESS;
}

const aclprofConfig* KnownConfig(const char* api, const aclprofConfig* config, aclError* rc) {
  if (config == nullptr) {
    VIGIL_RT_FAIL("{} failed: param profilerConfig must not be null.", api);
    *rc = ACL_ERROR_INVALID_PARAM;
    return nullptr;
  }
  if (St().configs.count(config) == 0) {
    VIGIL_RT_FAIL(
        "{} failed: param profilerConfig[{}] was not made by aclprofCreateConfig (or "
        "was destroyed).",
        api, fmt::ptr(config));
    *rc = ACL_ERROR_INVALID_PARAM;
    return nullptr;
  }
  return config;
}

// ACL_ERROR_PROF_NOT_RUN, logged, before aclprofInit (or after aclprofFinalize). Call with
// St().mu held.
aclError CheckInited(const char* api) {
  if (St().inited) return ACL_SUCCESS;
  VIGIL_RT_FAIL("{} failed: profiling is not initialized (call aclprofInit first).", api);
  return ACL_ERROR_PROF_NOT_RUN;
}

// aclprofStart and aclprofStop: profiling initialized and `given` a live config of
// aclprofCreateConfig, set in *config; else the error, logged. Call with St().mu held.
aclError CheckStartStop(const char* api, const aclprofConfig* given,
                        const aclprofConfig** config) {
  if (aclError rc = CheckInited(api); rc != ACL_SUCCESS) return rc;
  aclError rc = ACL_SUCCESS;
  *config = KnownConfig(api, given, &rc);
  return rc;
}

}  // namespace

extern "C" {

MSVP_PROF_API aclError aclprofInit(const char* profilerResultPath, size_t length) {
  constexpr const char* kApi = "aclprofInit";
  CHECK_NOT_NULL(kApi, profilerResultPath);
  if (length == 0 || length > 4096 || strnlen(profilerResultPath, length + 1) != length) {
    VIGIL_RT_FAIL(
        "{} failed: param length[{}] must be the length of profilerResultPath (1 to "
        "4096).",
        kApi, length);
    return ACL_ERROR_INVALID_PARAM;
  }
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::lock_guard<std::mutex> lock(St().mu);
    if (St().inited) {
      VIGIL_RT_FAIL("{} failed: profiling is initialized already (aclprofFinalize first).", kApi);
      return ACL_ERROR_REPEAT_INITIALIZE;
    }
    std::error_code ec;
    const std::filesystem::path dir =
        std::filesystem::absolute(std::string(profilerResultPath, length), ec);
    if (!ec) std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) {
      VIGIL_RT_FAIL(
          "{} failed: param profilerResultPath[{}] is not a directory that can be "
          "created: {}.",
          kApi, profilerResultPath, ec ? ec.message() : "not a directory");
      return ACL_ERROR_INVALID_FILE;
    }
    St().inited = true;
    St().path = dir.string();
    PROF_INFO("{}: profiling result path [{}]", kApi, St().path);
    return ACL_SUCCESS;
  });
}

MSVP_PROF_API aclprofConfig* aclprofCreateConfig(uint32_t* deviceIdList, uint32_t deviceNums,
                                                 aclprofAicoreMetrics aicoreMetrics,
                                                 const aclprofAicoreEvents* aicoreEvents,
                                                 uint64_t dataTypeConfig) {
  constexpr const char* kApi = "aclprofCreateConfig";
  const int metrics = RawEnum(aicoreMetrics);
  std::string why;
  if (deviceIdList == nullptr || deviceNums == 0) {
    why = "deviceIdList must name at least one device";
  } else if (aicoreEvents != nullptr) {
    why = "param aicoreEvents must be null";
  } else if ((metrics < ACL_AICORE_ARITHMETIC_UTILIZATION || metrics > ACL_AICORE_MEMORY_ACCESS) &&
             metrics != ACL_AICORE_NONE) {
    why = fmt::format("param aicoreMetrics[{}] is not a valid aclprofAicoreMetrics", metrics);
  } else if ((dataTypeConfig & ~KnownSwitches()) != 0) {
    why = fmt::format("param dataTypeConfig[{:#x}] has unknown bits {:#x}", dataTypeConfig,
                      dataTypeConfig & ~KnownSwitches());
  }
  std::set<int32_t> seen;
  for (uint32_t i = 0; why.empty() && i < deviceNums; ++i) {
    const auto d = static_cast<int32_t>(deviceIdList[i]);
    if (!vigil::rt::IsValidDevice(d)) {
      why = fmt::format("deviceIdList[{}] = {} is not a valid device (count {})", i,
                        deviceIdList[i], vigil::rt::DeviceCount());
    } else if (!seen.insert(d).second) {
      why = fmt::format("device {} is listed twice", d);
    }
  }
  if (!why.empty()) {
    VIGIL_RT_FAIL("{} failed: {}.", kApi, why);
    return nullptr;
  }
  auto* config =
      new aclprofConfig{std::vector<int32_t>(seen.begin(), seen.end()), metrics, dataTypeConfig};
  std::lock_guard<std::mutex> lock(St().mu);
  St().configs.insert(config);
  return config;
}

MSVP_PROF_API aclError aclprofDestroyConfig(const aclprofConfig* profilerConfig) {
  std::lock_guard<std::mutex> lock(St().mu);
  aclError rc = ACL_SUCCESS;
  if (KnownConfig("aclprofDestroyConfig", profilerConfig, &rc) == nullptr) return rc;
  St().configs.erase(profilerConfig);
  delete profilerConfig;
  return ACL_SUCCESS;
}

MSVP_PROF_API aclError aclprofStart(const aclprofConfig* profilerConfig) {
  constexpr const char* kApi = "aclprofStart";
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::lock_guard<std::mutex> lock(St().mu);
    const aclprofConfig* config = nullptr;
    if (aclError rc = CheckStartStop(kApi, profilerConfig, &config); rc != ACL_SUCCESS) {
      return rc;
    }
    for (int32_t d : config->devices) {
      if (St().started.count(d) != 0) {
        VIGIL_RT_FAIL("{} failed: device {} is being profiled already (aclprofStop first).", kApi,
                      d);
        return ACL_ERROR_PROF_ALREADY_RUN;
      }
    }
    if (!prof::Start(config->devices)) {
      VIGIL_RT_FAIL("{} failed: a device of the config is being profiled already.", kApi);
      return ACL_ERROR_PROF_ALREADY_RUN;
    }
    St().started.insert(config->devices.begin(), config->devices.end());
    const uint64_t uncollected = config->switches & ~kTraceSwitches;
    PROF_WARNING(
        "{}: device-side profiling data is not collected on Vigil's CPU devices (no AI Core, AI "
        "CPU, L2 cache or device memory counters; asked for: {}, aicoreMetrics {}); a host-side "
        "trace of the stream tasks of device(s) {} is recorded instead and written to {} by "
        "aclprofStop",
        kApi, SwitchNames(uncollected), config->metrics, fmt::join(config->devices, ","),
        St().path);
    return ACL_SUCCESS;
  });
}

MSVP_PROF_API aclError aclprofStop(const aclprofConfig* profilerConfig) {
  constexpr const char* kApi = "aclprofStop";
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::lock_guard<std::mutex> lock(St().mu);
    const aclprofConfig* config = nullptr;
    if (aclError rc = CheckStartStop(kApi, profilerConfig, &config); rc != ACL_SUCCESS) {
      return rc;
    }
    for (int32_t d : config->devices) {
      if (St().started.count(d) == 0) {
        VIGIL_RT_FAIL("{} failed: device {} is not being profiled (aclprofStart first).", kApi, d);
        return ACL_ERROR_PROF_NOT_RUN;
      }
    }
    return StopDevices(kApi, config->devices, config->switches);
  });
}

MSVP_PROF_API aclError aclprofFinalize(void) {
  constexpr const char* kApi = "aclprofFinalize";
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::lock_guard<std::mutex> lock(St().mu);
    aclError rc = CheckInited(kApi);
    if (rc != ACL_SUCCESS) return rc;
    if (!St().started.empty()) {
      // Devices never stopped: their trace is written as aclprofStop would have.
      const std::vector<int32_t> left(St().started.begin(), St().started.end());
      rc = StopDevices(kApi, left, kTraceSwitches);
    }
    St().inited = false;
    return rc;
  });
}

}  // extern "C"
