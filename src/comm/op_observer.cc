#include "comm/op_observer.h"

#include <array>
#include <atomic>
#include <mutex>

#include "common/tsc_clock.h"

namespace vigil::comm {

namespace {
std::array<std::atomic<OpObserver*>, kMaxOpObservers> g_observers{};
std::atomic<size_t> g_count{0};
}  // namespace

bool AddOpObserver(OpObserver* observer) {
  static std::mutex mu;  // registrations from two threads must not take the same slot
  std::lock_guard<std::mutex> lock(mu);
  const size_t slot = g_count.load();
  if (slot >= kMaxOpObservers) return false;
  observer->slot_ = slot;
  g_observers[slot].store(observer);
  g_count.store(slot + 1);
  return true;
}

void NotifyEnqueue(const OpRecord& op) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnEnqueue(op);
}

void NotifyStart(const OpRecord& op, SteadyClock::time_point now) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnStart(op, now);
}

void NotifyFinish(const OpRecord& op, HcclResult result, const OpFailure* failure,
                  SteadyClock::time_point leave) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) {
    g_observers[i].load()->OnFinish(op, result, failure, leave);
  }
}

void NotifyFinish(const OpRecord& op, HcclResult result, const OpFailure* failure) {
  NotifyFinish(op, result, failure, TscNow());
}

void NotifyTasks(const OpRecord& op, const std::shared_ptr<alg::TaskLog>& tasks) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnTasks(op, tasks);
}

void NotifyRetry(const OpRecord& op, const RetryEvent& event) {
  for (size_t i = 0, n = g_count.load(); i < n; ++i) g_observers[i].load()->OnRetry(op, event);
}

}  // namespace vigil::comm
