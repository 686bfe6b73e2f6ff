// Handles (aclrtStream, aclrtEvent) are object addresses. A destroyed object's storage is held
// back for the next kQuarantine destructions before it is freed, so a new object does not get
// the address of one just destroyed and a stale handle keeps failing validation instead of
// silently aliasing the new object.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

namespace vigil::rt {

template <typename T>
class HandleQuarantine {
 public:
  static constexpr size_t kQuarantine = 256;

  template <typename... Args>
  static std::shared_ptr<T> Make(Args&&... args) {
    void* storage = ::operator new(sizeof(T), std::align_val_t(alignof(T)));
    T* obj = nullptr;
    try {
      obj = new (storage) T(std::forward<Args>(args)...);
    } catch (...) {
      ::operator delete(storage, std::align_val_t(alignof(T)));
      throw;
    }
    return std::shared_ptr<T>(obj, [](T* p) {
      p->~T();
      Retire(p);
    });
  }

 private:
  static void Retire(void* storage) {
    static std::mutex* mu = new std::mutex();               // leaked: used until exit
    static std::deque<void*>* held = new std::deque<void*>();
    void* to_free = nullptr;
    {
      std::lock_guard<std::mutex> lock(*mu);
      held->push_back(storage);
      if (held->size() > kQuarantine) {
        to_free = held->front();
        held->pop_front();
      }
    }
    if (to_free != nullptr) ::operator delete(to_free, std::align_val_t(alignof(T)));
  }
};

}  // namespace vigil::rt
