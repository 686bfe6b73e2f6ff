// Events (record numbers completed by stream tasks) and notifies (counting flags).
#include "runtime/event.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"
#include "runtime/handle_quarantine.h"
#include "runtime/stream.h"

namespace vigil::rt {

struct Event::Impl {
  mutable std::mutex mu;
  std::condition_variable cv;
  uint64_t reserved = 0;   // last record number handed out (host side)
  uint64_t completed = 0;  // highest record number completed by a stream
};

Event::Event() : impl_(std::make_unique<Impl>()) {}
Event::~Event() = default;

void Event::Complete(uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->completed = std::max(impl_->completed, seq);
  }
  impl_->cv.notify_all();
}

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

Event* CreateEvent() {
  auto event = HandleQuarantine<Event>::Make();
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
