// Events (record numbers completed by stream tasks) and notifies (counting flags).
#include "runtime/event.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "acl/acl_rt.h"
#include "runtime/device.h"
#include "runtime/handle_quarantine.h"
#include "runtime/stream.h"

namespace vigil::rt {

struct Event::Impl {
  mutable std::mutex mu;
  std::condition_variable cv;
  uint64_t reserved = 0;    // last record number handed out (host side)
  uint64_t completed = 0;   // highest record number completed by a stream
  uint64_t reset_mark = 0;  // `completed` when a reset last ran: records up to it are cleared
  std::chrono::steady_clock::time_point completed_at{};  // when `completed` was reached
  std::atomic<uint64_t> waiters{0};
};

Event::Event() : impl_(std::make_unique<Impl>()) {}
Event::Event(EventKind kind, uint32_t flags)
    : impl_(std::make_unique<Impl>()), kind_(kind), flags_(flags) {}
Event::~Event() = default;

bool Event::Syncs() const {
  return kind_ == EventKind::kDefault || (flags_ & ACL_EVENT_SYNC) != 0;
}

bool Event::Timestamps() const {
  return kind_ == EventKind::kDefault || (flags_ & ACL_EVENT_TIME_LINE) != 0;
}

void Event::Complete(uint64_t seq) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (seq > impl_->completed) {
      impl_->completed = seq;
      impl_->completed_at = now;
    }
  }
  impl_->cv.notify_all();
}

bool Event::WaitRecorded(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto recorded = [&] { return impl_->completed > impl_->reset_mark; };
  if (!recorded()) {
    lock.unlock();
    KickAllStreams();  // the record may be queued on a stream nobody synchronizes yet
    lock.lock();
  }
  if (timeout_ms < 0) {
    impl_->cv.wait(lock, recorded);
    return true;
  }
  return impl_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), recorded);
}

void Event::Reset() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->reset_mark = impl_->completed;
}

Event::Status Event::GetStatus() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->reserved == 0) return Status::kNeverRecorded;
  if (impl_->completed < impl_->reserved) return Status::kPending;
  if (impl_->completed <= impl_->reset_mark) return Status::kReset;
  return Status::kComplete;
}

bool Event::LastCompleteTime(std::chrono::steady_clock::time_point* at) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->reserved == 0 || impl_->completed < impl_->reserved ||
      impl_->completed <= impl_->reset_mark) {
    return false;
  }
  *at = impl_->completed_at;
  return true;
}

void Event::AddWaiter() { impl_->waiters.fetch_add(1); }
void Event::RemoveWaiter() { impl_->waiters.fetch_sub(1); }
uint64_t Event::Waiters() const { return impl_->waiters.load(); }

uint64_t Event::NextRecordSeq() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return ++impl_->reserved;
}

uint64_t Event::LastRecordSeq() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->reserved;
}

bool Event::WaitFor(uint64_t seq, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto done = [&] { return impl_->completed >= seq; };
  if (!done()) {
    // The record may sit in a stream queue waiting for a Synchronize that this wait precedes.
    lock.unlock();
    KickAllStreams();
    lock.lock();
  }
  if (timeout_ms < 0) {
    impl_->cv.wait(lock, done);
    return true;
  }
  return impl_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
}

namespace {

struct EventEntry {
  std::shared_ptr<Event> event;
  int32_t device;
};

struct EventRegistry {
  std::mutex mu;
  std::unordered_map<void*, EventEntry> events;
};

EventRegistry& Registry() {
  static EventRegistry* registry = new EventRegistry();  // leaked: used until process exit
  return *registry;
}

}  // namespace

Event* EventFromHandle(void* handle) { return EventRef(handle).get(); }

std::shared_ptr<Event> EventRef(void* handle) {
  if (handle == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(Registry().mu);
  auto it = Registry().events.find(handle);
  return it == Registry().events.end() ? nullptr : it->second.event;
}

Event* CreateEvent(EventKind kind, uint32_t flags) {
  auto event = HandleQuarantine<Event>::Make(kind, flags);
  Event* raw = event.get();
  std::lock_guard<std::mutex> lock(Registry().mu);
  Registry().events.emplace(raw, EventEntry{std::move(event), CurrentDevice()});
  return raw;
}

aclError DestroyEvent(void* handle) {
  std::lock_guard<std::mutex> lock(Registry().mu);
  // Tasks that still record or wait on the event hold their own reference.
  return Registry().events.erase(handle) == 1 ? ACL_SUCCESS : ACL_ERROR_RT_PARAM_INVALID;
}

void DestroyDeviceEvents(int32_t device) {
  std::lock_guard<std::mutex> lock(Registry().mu);
  auto& events = Registry().events;
  for (auto it = events.begin(); it != events.end();) {
    if (device < 0 || it->second.device == device) {
      it = events.erase(it);
    } else {
      ++it;
    }
  }
}

struct Notify::Impl {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t count = 0;  // records not yet consumed by a wait
};

Notify::Notify() : impl_(std::make_unique<Impl>()) {}
Notify::~Notify() = default;

void Notify::Record() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->count;
  }
  impl_->cv.notify_all();
}

bool Notify::Wait(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto ready = [&] { return impl_->count > 0; };
  if (!ready()) {
    lock.unlock();
    KickAllStreams();  // as Event::WaitFor
    lock.lock();
  }
  if (timeout_ms < 0) {
    impl_->cv.wait(lock, ready);
  } else if (!impl_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
    return false;
  }
  --impl_->count;
  return true;
}

}  // namespace vigil::rt
