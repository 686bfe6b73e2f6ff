// A stream's queued tasks (runtime/stream.cc): a list of fixed chunks, recycled. A task is
// built in its slot and never moves (a vector of tasks moved every queued task each time it
// grew, and an HCCL op's task is a few hundred bytes); an executor takes the whole list at
// once and gives the chunks back, or an enqueuer that runs tasks itself (Stream::RunQueued)
// takes them one at a time from the front.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/stream.h"
#include "runtime/task_fn.h"

namespace vigil::rt {

struct QueuedTask {
  uint32_t id = 0;
  TaskType type = TaskType::kKernel;
  // The task may end a run unfinished (kTaskNotDone) when an enqueuer runs it (RunQueued).
  bool resumable = false;
  TaskFn fn;
};

class TaskQueue {
 public:
  struct Chunk {
    static constexpr size_t kTasks = 32;
    QueuedTask tasks[kTasks];
    size_t begin = 0;  // tasks before it were taken from the front
    size_t used = 0;
    Chunk* next = nullptr;
  };
  static constexpr size_t kMaxSpare = 16;  // chunks kept for reuse beyond this are freed

  TaskQueue() = default;
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;
  ~TaskQueue() {
    Free(head_);
    Free(spare_);
  }

  bool empty() const { return head_ == nullptr; }
  // The next slot, not yet queued: Commit() queues it.
  QueuedTask& Next() {
    if (tail_ == nullptr || tail_->used == Chunk::kTasks) {
      Chunk* c = spare_;
      if (c != nullptr) {
        spare_ = c->next;
        --spares_;
      } else {
        c = new Chunk;  // not new Chunk(): that would zero its 12 KB first
      }
      c->next = nullptr;
      (tail_ != nullptr ? tail_->next : head_) = c;
      tail_ = c;
    }
    return tail_->tasks[tail_->used];
  }
  void Commit() { ++tail_->used; }
  // Every queued chunk, for an executor to run (from each chunk's `begin`) and then Recycle.
  Chunk* TakeAll() {
    Chunk* all = head_;
    // A chunk Next() added for a slot not committed (its fill threw) stays queued, empty.
    head_ = tail_ = nullptr;
    return all;
  }
  // The first queued task, or nullptr.
  QueuedTask* Front() {
    while (head_ != nullptr && head_->begin == head_->used) {
      if (head_ == tail_ && head_->used < Chunk::kTasks) return nullptr;  // the slot Next() fills
      DropHead();
    }
    return head_ != nullptr ? &head_->tasks[head_->begin] : nullptr;
  }
  // Takes the first task (Front(), run and cleared by the caller) off the queue.
  void PopFront() {
    if (++head_->begin == head_->used) DropHead();  // the last one: empty() again
  }
  void Recycle(Chunk* list) {
    while (list != nullptr) {
      Chunk* next = list->next;
      Spare(list);
      list = next;
    }
  }

 private:
  void DropHead() {
    Chunk* c = head_;
    head_ = c->next;
    if (head_ == nullptr) tail_ = nullptr;
    Spare(c);
  }
  void Spare(Chunk* c) {
    if (spares_ < kMaxSpare) {
      c->begin = c->used = 0;
      c->next = spare_;
      spare_ = c;
      ++spares_;
    } else {
      delete c;
    }
  }
  static void Free(Chunk* c) {
    while (c != nullptr) {
      Chunk* next = c->next;
      delete c;
      c = next;
    }
  }
  Chunk* head_ = nullptr;
  Chunk* tail_ = nullptr;
  Chunk* spare_ = nullptr;
  size_t spares_ = 0;
};

}  // namespace vigil::rt
