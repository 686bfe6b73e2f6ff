// Stream::RunQueued: the stream's enqueuer running queued resumable tasks itself, a bounded run
// at a time (kTaskNotDone leaves a task first in the queue), and what it leaves to the worker
// and to Synchronize.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "rt_test_util.h"
#include "runtime/stream.h"

namespace vigil::rt {
namespace {

class StreamRunQueuedTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::UseTempLogDir(); }
};

// A long handoff: the worker leaves queued tasks alone while the test looks at them.
constexpr auto kLongHandoff = std::chrono::seconds(10);

// Queues fn (an aclError(std::string*) callable) as a task, resumable unless told otherwise.
template <typename F>
void Queue(Stream& stream, F fn, bool resumable = true, TaskType type = TaskType::kHccl) {
  stream.EnqueueMade(
      type, [&fn] { return fn; }, resumable);
}

TEST_F(StreamRunQueuedTest, RunsResumableTasksInOrderOnTheCallingThreadAcrossChunks) {
  Stream stream(0, kLongHandoff);
  EXPECT_TRUE(stream.RunQueued());  // nothing queued: idle
  std::vector<int> seen;
  bool all_bounded = true;
  const std::thread::id me = std::this_thread::get_id();
  bool all_here = true;
  constexpr int kTasks = 100;  // a task queue chunk holds 32
  for (int i = 0; i < kTasks; ++i) {
    Queue(stream, [&, i](std::string*) {
      seen.push_back(i);
      all_bounded = all_bounded && RunningQueued();
      all_here = all_here && std::this_thread::get_id() == me;
      return ACL_SUCCESS;
    });
  }
  EXPECT_TRUE(stream.RunQueued());
  ASSERT_EQ(seen.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(seen[i], i);
  EXPECT_TRUE(all_bounded);
  EXPECT_TRUE(all_here);
  EXPECT_FALSE(RunningQueued());
  EXPECT_EQ(stream.CompletedTaskId(), static_cast<uint32_t>(kTasks));
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
}

TEST_F(StreamRunQueuedTest, StopsBeforeATaskThatIsNotResumable) {
  Stream stream(0, kLongHandoff);
  std::vector<int> seen;
  auto task = [&seen](int i) {
    return [&seen, i](std::string*) {
      seen.push_back(i);
      return ACL_SUCCESS;
    };
  };
  Queue(stream, task(1));
  Queue(stream, task(2), /*resumable=*/false, TaskType::kKernel);
  Queue(stream, task(3));
  EXPECT_FALSE(stream.RunQueued());  // ran 1, left 2 and 3
  EXPECT_EQ(seen, std::vector<int>({1}));
  EXPECT_FALSE(stream.RunQueued());  // 2 first: nothing runs
  EXPECT_EQ(seen, std::vector<int>({1}));
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(seen, std::vector<int>({1, 2, 3}));
}

// A task that is not done yet stays first: RunQueued runs it again (bounded), and a
// Synchronize runs it unbounded (RunningQueued false) to its end, then what follows.
TEST_F(StreamRunQueuedTest, ATaskNotDoneStaysFirstUntilItEnds) {
  Stream stream(0, kLongHandoff);
  int runs = 0;
  std::vector<bool> bounded;
  std::vector<int> after;
  Queue(stream, [&](std::string*) {
    ++runs;
    bounded.push_back(RunningQueued());
    return RunningQueued() ? kTaskNotDone : ACL_SUCCESS;
  });
  Queue(stream, [&](std::string*) {
    after.push_back(runs);
    return ACL_SUCCESS;
  });
  EXPECT_FALSE(stream.RunQueued());
  EXPECT_FALSE(stream.RunQueued());
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(after.empty());
  EXPECT_EQ(stream.CompletedTaskId(), 0u);
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(bounded, std::vector<bool>({true, true, false}));
  EXPECT_EQ(after, std::vector<int>({3}));
  EXPECT_EQ(stream.CompletedTaskId(), 2u);
}

// What RunQueued left is the worker's after the handoff time, with nobody synchronizing: a task
// left unfinished never waits for an enqueue or a Synchronize that may not come.
TEST_F(StreamRunQueuedTest, TheWorkerFinishesWhatWasLeftWithoutASynchronize) {
  Stream stream(0, std::chrono::microseconds(1000));
  std::atomic<bool> on_worker{false};
  Queue(stream, [&](std::string*) {
    if (RunningQueued()) return kTaskNotDone;
    on_worker = true;
    return ACL_SUCCESS;
  });
  EXPECT_FALSE(stream.RunQueued());
  for (int i = 0; i < 10000 && stream.CompletedTaskId() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(stream.CompletedTaskId(), 1u);
  EXPECT_TRUE(on_worker.load());
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
}

// A failure is reported as a worker's would be (callbacks, Synchronize's result) and the tasks
// behind it are dropped until the Synchronize; the stream then runs tasks again.
TEST_F(StreamRunQueuedTest, AFailureDropsTheRestUntilSynchronize) {
  Stream stream(0, kLongHandoff);
  TaskFailInfo failed;
  const int cb = RegisterTaskFailCallback([&](const TaskFailInfo& info) { failed = info; });
  int ran_after = 0;
  Queue(stream, [](std::string* detail) {
    *detail = "the op failed";
    return ACL_ERROR_RT_SOCKET_CLOSE;
  });
  Queue(stream, [&](std::string*) {
    ++ran_after;
    return ACL_SUCCESS;
  });
  EXPECT_FALSE(stream.RunQueued());
  EXPECT_EQ(failed.task_id, 1u);
  EXPECT_EQ(failed.retcode, ACL_ERROR_RT_SOCKET_CLOSE);
  EXPECT_EQ(failed.detail, "the op failed");
  EXPECT_FALSE(stream.RunQueued());  // failing: nothing runs
  EXPECT_EQ(stream.Synchronize(), ACL_ERROR_RT_SOCKET_CLOSE);
  EXPECT_EQ(ran_after, 0);
  UnregisterTaskFailCallback(cb);
  Queue(stream, [&](std::string*) {
    ++ran_after;
    return ACL_SUCCESS;
  });
  EXPECT_TRUE(stream.RunQueued());
  EXPECT_EQ(ran_after, 1);
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
}

// While another thread runs the stream's tasks (a Synchronize), RunQueued runs nothing.
TEST_F(StreamRunQueuedTest, RunsNothingWhileAnotherThreadRunsTheStream) {
  Stream stream(0, kLongHandoff);
  std::atomic<bool> started{false}, release{false};
  Queue(stream, [&](std::string*) {
    started = true;
    while (!release.load()) std::this_thread::yield();
    return ACL_SUCCESS;
  });
  std::thread syncer([&] { EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS); });
  while (!started.load()) std::this_thread::yield();
  int ran = 0;
  Queue(stream, [&](std::string*) {
    ++ran;
    return ACL_SUCCESS;
  });
  EXPECT_FALSE(stream.RunQueued());
  EXPECT_EQ(ran, 0);
  release = true;
  syncer.join();
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace vigil::rt
