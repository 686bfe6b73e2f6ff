#include "comm/op_observer.h"

#include <array>
#include <atomic>

namespace vigil::comm {

namespace {
constexpr size_t kMaxObservers = 8;
std::array<std::atomic<OpObserver*>, kMaxObservers> g_observers{};
std::atomic<size_t> g_count{0};
}  // namespace

void AddOpObserver(OpObserver* observer) {
  const size_t slot = g_count.load();
  if (slot >= kMaxObservers) return;
  g_observers[slot].store(observer);
  g_count.store(slot + 1);
}

void NotifyEnqueue(const OpRecord& op) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnEnqueue(op);
}

void NotifyStart(const OpRecord& op) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnStart(op);
}

void NotifyFinish(const OpRecord& op, HcclResult result, const OpFailure* failure) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) {
    g_observers[i].load()->OnFinish(op, result, failure);
  }
}

void NotifyTasks(const OpRecord& op, const std::shared_ptr<alg::TaskLog>& tasks) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnTasks(op, tasks);
}

}  // namespace vigil::comm
