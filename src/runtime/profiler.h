// The host-side trace behind the profiling API (acl/acl_prof.h): while a device is started,
// every task its streams run is kept with the moments it started and finished, and the layers
// above may name a task (an HCCL op: its type, count, data type). Stop hands a device's spans
// over. Costs one relaxed load per task while nothing is started.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "acl/acl_base.h"
#include "runtime/stream.h"

namespace vigil::rt::prof {

using Clock = std::chrono::steady_clock;

struct Span {
  int32_t device = -1;
  uint32_t stream_id = 0;
  uint32_t task_id = 0;
  TaskType type = TaskType::kKernel;
  aclError rc = ACL_SUCCESS;
  Clock::time_point start, end;
};

// What the layer that queued a task says it is.
struct Label {
  std::string name;                                       // "AllReduce"
  std::vector<std::pair<std::string, std::string>> args;  // ("count", "1024"), ...
};

struct Collected {
  int32_t device = -1;
  Clock::time_point started;                           // Start's moment
  std::chrono::system_clock::time_point started_wall;  // the same moment, wall clock
  std::vector<Span> spans;                             // in the order they finished
  std::unordered_map<uint64_t, Label> labels;          // by LabelKey(stream_id, task_id)
  uint64_t dropped = 0;                                // spans past kMaxSpans, not kept
};

// Spans kept per device and session; more are counted, not kept.
inline constexpr size_t kMaxSpans = size_t{1} << 20;

inline uint64_t LabelKey(uint32_t stream_id, uint32_t task_id) {
  return (static_cast<uint64_t>(stream_id) << 32) | task_id;
}

namespace detail {
extern std::atomic<uint32_t> g_started;  // devices started
}
// Whether any device is started (the streams time their tasks then).
inline bool Active() {
  return detail::g_started.load(std::memory_order_relaxed) != 0;
}

// Starts keeping the devices' spans; false (nothing started) when one of them is already.
bool Start(const std::vector<int32_t>& devices);
// Whether `device` is started now.
bool Started(int32_t device);
// Stops the devices and returns what each kept (devices not started give nothing).
std::vector<Collected> Stop(const std::vector<int32_t>& devices);

// From a stream as a task finishes; kept when its device is started.
void Record(const Span& span);
// Names a task; kept when `device` is started.
void LabelTask(int32_t device, uint32_t stream_id, uint32_t task_id, Label label);

}  // namespace vigil::rt::prof
