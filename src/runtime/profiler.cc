// The host-side trace: per started device, the spans of the tasks its streams ran and the names
// the layers above gave them, under one mutex (taken only while something is started).
#include "runtime/profiler.h"

#include <map>
#include <mutex>

namespace vigil::rt::prof {
namespace detail {
std::atomic<uint32_t> g_started{0};
}

namespace {

struct Sessions {
  std::mutex mu;
  std::map<int32_t, Collected> by_device;
};

Sessions& S() {
  static Sessions* s = new Sessions();  // leaked: stream workers may record at exit
  return *s;
}

}  // namespace

bool Start(const std::vector<int32_t>& devices) {
  std::lock_guard<std::mutex> lock(S().mu);
  for (int32_t d : devices) {
    if (S().by_device.count(d) != 0) return false;
  }
  const auto now = Clock::now();
  const auto wall = std::chrono::system_clock::now();
  for (int32_t d : devices) {
    Collected& c = S().by_device[d];
    c.device = d;
    c.started = now;
    c.started_wall = wall;
    detail::g_started.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

bool Started(int32_t device) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().by_device.count(device) != 0;
}

std::vector<Collected> Stop(const std::vector<int32_t>& devices) {
  std::vector<Collected> out;
  std::lock_guard<std::mutex> lock(S().mu);
  for (int32_t d : devices) {
    auto it = S().by_device.find(d);
    if (it == S().by_device.end()) continue;
    out.push_back(std::move(it->second));
    S().by_device.erase(it);
    detail::g_started.fetch_sub(1, std::memory_order_relaxed);
  }
  return out;
}

void Record(const Span& span) {
  std::lock_guard<std::mutex> lock(S().mu);
  auto it = S().by_device.find(span.device);
  if (it == S().by_device.end()) return;
  if (it->second.spans.size() >= kMaxSpans) {
    ++it->second.dropped;
    return;
  }
  it->second.spans.push_back(span);
}

void LabelTask(int32_t device, uint32_t stream_id, uint32_t task_id, Label label) {
  std::lock_guard<std::mutex> lock(S().mu);
  auto it = S().by_device.find(device);
  if (it == S().by_device.end() || it->second.labels.size() >= kMaxSpans) return;
  it->second.labels[LabelKey(stream_id, task_id)] = std::move(label);
}

}  // namespace vigil::rt::prof
