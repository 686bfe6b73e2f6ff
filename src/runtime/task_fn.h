// The function a stream task runs: aclError(std::string* detail), returning ACL_SUCCESS or the
// failure code (it may set *detail to a one-line reason). Move-only, and the callable lives
// inside the TaskFn itself when it fits in kInlineBytes: an HCCL op's task (the op, its record
// and the communicator) is queued without a heap allocation, where std::function kept only 16
// bytes in place and allocated (and freed on the stream worker) for every op. Larger callables
// go to the heap.
#pragma once

#include <cstddef>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "acl/acl_base.h"

namespace vigil::rt {

class TaskFn {
 public:
  // Fits an HCCL op's task (its op, record and communicator: 224 bytes, asserted where it is
  // made, comm/communicator.cc) and no more: a stream queues tasks in chunks of whole TaskFns,
  // and an enqueuer running ahead of the stream touches new chunk memory for every task.
  static constexpr size_t kInlineBytes = 224;

  // Whether F is kept in place (no allocation).
  template <typename F>
  static constexpr bool Fits() {
    return sizeof(F) <= kInlineBytes && alignof(F) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
  }

  TaskFn() = default;
  TaskFn(std::nullptr_t) {}  // NOLINT: as std::function
  template <typename F, typename Fn = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Fn, TaskFn> &&
                                        !std::is_same_v<Fn, std::nullptr_t> &&
                                        std::is_invocable_r_v<aclError, Fn&, std::string*>>>
  TaskFn(F&& f) {  // NOLINT: implicit, as std::function
    Construct(std::forward<F>(f));
  }
  TaskFn(TaskFn&& other) noexcept { Take(other); }
  TaskFn& operator=(TaskFn&& other) noexcept {
    if (this != &other) {
      Reset();
      Take(other);
    }
    return *this;
  }
  TaskFn& operator=(std::nullptr_t) {
    Reset();
    return *this;
  }
  TaskFn(const TaskFn&) = delete;
  TaskFn& operator=(const TaskFn&) = delete;
  ~TaskFn() { Reset(); }

  // Replaces the function by f, built in place (no TaskFn in between to move from).
  template <typename F>
  void Emplace(F&& f) {
    if constexpr (std::is_same_v<std::decay_t<F>, TaskFn>) {
      *this = std::move(f);
    } else {
      Reset();
      Construct(std::forward<F>(f));
    }
  }

  // Replaces the function by the one make() returns, built in place from that return value (no
  // move of the callable at all).
  template <typename Make>
  void EmplaceMade(Make&& make) {
    using Fn = std::invoke_result_t<Make&>;
    Reset();
    if constexpr (Fits<Fn>()) {
      new (buf_) Fn(make());
      ops_ = &kInline<Fn>;
    } else {
      *reinterpret_cast<Fn**>(buf_) = new Fn(make());
      ops_ = &kHeap<Fn>;
    }
  }

  explicit operator bool() const { return ops_ != nullptr; }
  aclError operator()(std::string* detail) { return ops_->invoke(buf_, detail); }

 private:
  struct Ops {
    aclError (*invoke)(void* self, std::string* detail);
    void (*relocate)(void* from, void* to);  // move-constructs at `to`, destroys `from`
    void (*destroy)(void* self);
  };

  template <typename Fn>
  static constexpr Ops kInline = {
      [](void* self, std::string* detail) -> aclError { return (*static_cast<Fn*>(self))(detail); },
      [](void* from, void* to) {
        new (to) Fn(std::move(*static_cast<Fn*>(from)));
        static_cast<Fn*>(from)->~Fn();
      },
      [](void* self) { static_cast<Fn*>(self)->~Fn(); }};

  template <typename Fn>
  static constexpr Ops kHeap = {
      [](void* self, std::string* detail) -> aclError {
        return (**static_cast<Fn**>(self))(detail);
      },
      [](void* from, void* to) { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
      [](void* self) { delete *static_cast<Fn**>(self); }};

  template <typename F>
  void Construct(F&& f) {
    using Fn = std::decay_t<F>;
    if constexpr (Fits<Fn>()) {
      new (buf_) Fn(std::forward<F>(f));
      ops_ = &kInline<Fn>;
    } else {
      *reinterpret_cast<Fn**>(buf_) = new Fn(std::forward<F>(f));
      ops_ = &kHeap<Fn>;
    }
  }

  void Take(TaskFn& other) noexcept {
    if (other.ops_ == nullptr) return;
    other.ops_->relocate(other.buf_, buf_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }
  void Reset() {
    if (ops_ == nullptr) return;
    const Ops* ops = ops_;
    ops_ = nullptr;
    ops->destroy(buf_);
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char buf_[kInlineBytes];
};

}  // namespace vigil::rt
