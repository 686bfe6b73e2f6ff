// Streams: FIFO order, asynchronous enqueue, task ids, failure handling, timeouts, destroy.
#include "runtime/stream.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"
#include "runtime/device.h"
#include "runtime/event.h"

namespace vigil::rt {
namespace {

class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::UseTempLogDir(); }
};

TEST_F(StreamTest, RunsTasksInOrder) {
  Stream stream(0);
  std::vector<int> seen;  // only the worker touches it until Synchronize returns
  for (int i = 0; i < 1000; ++i) {
    stream.Enqueue(TaskType::kKernel, [&seen, i](std::string*) {
      seen.push_back(i);
      return ACL_SUCCESS;
    });
  }
  ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  ASSERT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(seen[i], i);
}

TEST_F(StreamTest, TaskIdsIncreaseFromOne) {
  Stream stream(0);
  EXPECT_EQ(stream.PeekNextTaskId(), 1u);
  auto noop = [](std::string*) { return ACL_SUCCESS; };
  EXPECT_EQ(stream.Enqueue(TaskType::kKernel, noop), 1u);
  EXPECT_EQ(stream.Enqueue(TaskType::kKernel, noop), 2u);
  EXPECT_EQ(stream.PeekNextTaskId(), 3u);
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(stream.CompletedTaskId(), 2u);
  EXPECT_EQ(stream.LastTaskId(), 2u);
}

TEST_F(StreamTest, StreamIdsAreUniqueAndSmall) {
  std::set<uint32_t> ids;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < 8; ++i) {
    streams.push_back(std::make_unique<Stream>(0));
    ids.insert(streams.back()->id());
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_GE(*ids.begin(), 2u);
}

TEST_F(StreamTest, EnqueueReturnsBeforeBlockingTaskRuns) {
  Stream stream(0);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> ran_after{false};
  stream.Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    ran_after = true;
    return ACL_SUCCESS;
  });
  // Both enqueues returned although the first task cannot finish yet.
  EXPECT_FALSE(ran_after.load());
  EXPECT_EQ(stream.Synchronize(50), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  release.set_value();
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_TRUE(ran_after.load());
}

// Bounded wait for a flag a stream task sets (the worker runs it when nobody synchronizes).
bool WaitForFlag(const std::atomic<bool>& flag) {
  for (int i = 0; i < 10000 && !flag.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return flag.load();
}

TEST_F(StreamTest, WorkerThreadIsNamedAndBoundToDevice) {
  Stream stream(3);
  char name[32] = {};
  int32_t device = -2;
  std::atomic<bool> ran{false};
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    pthread_getname_np(pthread_self(), name, sizeof(name));
    device = CurrentDevice();
    ran = true;
    return ACL_SUCCESS;
  });
  // Nobody synchronizes: the worker takes the task after the handoff time.
  ASSERT_TRUE(WaitForFlag(ran));
  ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(std::string(name), "vigil_strm" + std::to_string(stream.id()));
  EXPECT_EQ(device, 3);
}

// The handoff: a task nobody has taken yet runs on the thread that synchronizes (no switch to
// the worker and back), bound to the stream's device, in order; the caller's device is kept.
TEST_F(StreamTest, SynchronizeRunsQueuedTasksOnTheCallingThread) {
  Stream stream(3, std::chrono::seconds(1000));  // the worker would wait 1000 s to take them
  BindThreadDevice(1);
  std::vector<std::thread::id> threads;
  std::vector<int32_t> devices;
  for (int i = 0; i < 3; ++i) {
    stream.Enqueue(TaskType::kKernel, [&](std::string*) {
      threads.push_back(std::this_thread::get_id());
      devices.push_back(CurrentDevice());
      return ACL_SUCCESS;
    });
  }
  ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  ASSERT_EQ(threads.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(threads[i], std::this_thread::get_id());
    EXPECT_EQ(devices[i], 3);
  }
  EXPECT_EQ(CurrentDevice(), 1);
  EXPECT_EQ(stream.CompletedTaskId(), 3u);
}

// While its callers synchronize every task themselves the worker looks less and less often;
// tasks nobody synchronizes afterwards still start on it, one alone or several queued.
TEST_F(StreamTest, WorkerThatLooksLessOftenStillTakesUnsynchronizedTasks) {
  Stream stream(0, std::chrono::milliseconds(1));
  auto noop = [](std::string*) { return ACL_SUCCESS; };
  for (int tasks : {1, 2, 5}) {
    // ~40 handoff times of tasks this thread runs itself: the worker's looks find nothing.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(40);
    while (std::chrono::steady_clock::now() < until) {
      stream.Enqueue(TaskType::kKernel, noop);
      ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
    }
    std::atomic<int> ran{0};
    std::atomic<bool> on_caller{false};
    const std::thread::id caller = std::this_thread::get_id();
    for (int i = 0; i < tasks; ++i) {
      stream.Enqueue(TaskType::kKernel, [&](std::string*) {
        if (std::this_thread::get_id() == caller) on_caller = true;
        ++ran;
        return ACL_SUCCESS;
      });
    }
    for (int i = 0; i < 10000 && ran.load() < tasks; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(ran.load(), tasks);
    EXPECT_FALSE(on_caller.load());
    ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  }
}

TEST_F(StreamTest, ZeroHandoffLeavesEveryTaskToTheWorker) {
  Stream stream(0, std::chrono::microseconds(0));
  std::thread::id ran_on;
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    ran_on = std::this_thread::get_id();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// A timed Synchronize must be free to return at its timeout: the worker runs the tasks.
TEST_F(StreamTest, SynchronizeWithTimeoutLeavesTasksToTheWorker) {
  Stream stream(0, std::chrono::seconds(1000));
  std::thread::id ran_on;
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    ran_on = std::this_thread::get_id();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(stream.Synchronize(60000), ACL_SUCCESS);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// A task run by a synchronizing caller that synchronizes its own stream fails, as on the worker.
TEST_F(StreamTest, TaskThatSynchronizesItsOwnStreamFails) {
  const int errors_before = testing::CountRuntimeErrors();
  Stream stream(0, std::chrono::seconds(1000));
  aclError inner = ACL_SUCCESS;
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    inner = stream.Synchronize();
    return ACL_SUCCESS;
  });
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(inner, ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_EQ(testing::CountRuntimeErrors(), errors_before + 1);
}

// A host thread that blocks on an event a queued task of another stream records must not wait
// for that stream's handoff: the wait hands the queued tasks to their workers (with a handoff
// of 1000 s this test would hang, bounded by the watchdog below, without it).
TEST_F(StreamTest, EventWaitStartsTheStreamThatRecordsIt) {
  auto event = std::make_shared<Event>();
  Stream waiter(0, std::chrono::seconds(1000));
  Stream recorder(0, std::chrono::seconds(1000));
  const uint64_t seq = event->NextRecordSeq();
  recorder.Enqueue(TaskType::kEventRecord, [event, seq](std::string*) {
    event->Complete(seq);
    return ACL_SUCCESS;
  });
  waiter.Enqueue(TaskType::kEventWait, [event, seq](std::string*) {
    event->WaitFor(seq, -1);
    return ACL_SUCCESS;
  });
  auto sync = std::async(std::launch::async, [&] { return waiter.Synchronize(); });
  const bool finished = sync.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  EXPECT_TRUE(finished);
  if (!finished) recorder.Kick();  // unblock, so the test ends either way
  EXPECT_EQ(sync.get(), ACL_SUCCESS);
  EXPECT_EQ(recorder.Synchronize(), ACL_SUCCESS);
  // And a host wait (aclrtSynchronizeEvent's path) does the same.
  const uint64_t seq2 = event->NextRecordSeq();
  recorder.Enqueue(TaskType::kEventRecord, [event, seq2](std::string*) {
    event->Complete(seq2);
    return ACL_SUCCESS;
  });
  EXPECT_TRUE(event->WaitFor(seq2, 60000));
  EXPECT_EQ(recorder.Synchronize(), ACL_SUCCESS);
}

TEST_F(StreamTest, FailureCallsCallbackDropsQueuedTasksAndReportsOnce) {
  std::mutex mu;
  std::vector<TaskFailInfo> infos;
  int cb = RegisterTaskFailCallback([&](const TaskFailInfo& info) {
    std::lock_guard<std::mutex> lock(mu);
    infos.push_back(info);
  });
  const int errors_before = testing::CountRuntimeErrors();
  Stream stream(2);
  std::atomic<int> ran{0};
  auto count = [&](std::string*) {
    ++ran;
    return ACL_SUCCESS;
  };
  stream.Enqueue(TaskType::kKernel, count);                    // 1 runs
  uint32_t bad = stream.Enqueue(TaskType::kMemcpy, [](std::string* detail) {
    *detail = "copy into freed memory";
    return ACL_ERROR_RT_SYS_DMA;
  });                                                           // 2 fails
  stream.Enqueue(TaskType::kKernel, count);                    // 3 dropped
  stream.Enqueue(TaskType::kKernel, count);                    // 4 dropped
  EXPECT_EQ(stream.Synchronize(), ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(ran.load(), 1);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(infos.size(), 1u);
    EXPECT_EQ(infos[0].device, 2);
    EXPECT_EQ(infos[0].stream_id, stream.id());
    EXPECT_EQ(infos[0].task_id, bad);
    EXPECT_EQ(infos[0].retcode, ACL_ERROR_RT_SYS_DMA);
    EXPECT_EQ(infos[0].type, TaskType::kMemcpy);
    EXPECT_EQ(infos[0].detail, "copy into freed memory");
  }
  EXPECT_EQ(testing::CountRuntimeErrors(), errors_before + 1);
  EXPECT_NE(testing::LastRuntimeError().find("stream_id=" + std::to_string(stream.id())),
            std::string::npos);
  // The error is reported once; the stream is usable again.
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  stream.Enqueue(TaskType::kKernel, count);
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 2);
  UnregisterTaskFailCallback(cb);
}

TEST_F(StreamTest, UnregisteredCallbackIsNotCalled) {
  std::atomic<int> calls{0};
  int cb = RegisterTaskFailCallback([&](const TaskFailInfo&) { ++calls; });
  UnregisterTaskFailCallback(cb);
  Stream stream(0);
  stream.Enqueue(TaskType::kKernel, [](std::string*) { return ACL_ERROR_RT_INTERNAL_ERROR; });
  EXPECT_EQ(stream.Synchronize(), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(StreamTest, ThrowingTaskBecomesInternalError) {
  Stream stream(0);
  stream.Enqueue(TaskType::kKernel, [](std::string*) -> aclError { throw std::runtime_error("x"); });
  EXPECT_EQ(stream.Synchronize(), ACL_ERROR_RT_INTERNAL_ERROR);
}

TEST_F(StreamTest, SynchronizeTimeoutDoesNotWaitForLaterTasksOfABatch) {
  Stream stream(0);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> first_done{false};
  // Task 1 finishes, task 2 blocks; a sync right after task 1 must not wait for task 2.
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    first_done = true;
    return ACL_SUCCESS;
  });
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  stream.Enqueue(TaskType::kKernel, [gate](std::string*) {
    gate.wait();
    return ACL_SUCCESS;
  });
  EXPECT_EQ(stream.Synchronize(20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  release.set_value();
  EXPECT_EQ(stream.Synchronize(-1), ACL_SUCCESS);
}

TEST_F(StreamTest, DestroyDrainsQueuedTasks) {
  std::atomic<int> ran{0};
  {
    Stream stream(0);
    for (int i = 0; i < 100; ++i) {
      stream.Enqueue(TaskType::kKernel, [&](std::string*) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        ++ran;
        return ACL_SUCCESS;
      });
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST_F(StreamTest, RegistryValidatesHandles) {
  Stream* s = CreateStream(1);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(StreamFromHandle(s), s);
  EXPECT_EQ(s->device(), 1);
  EXPECT_EQ(StreamFromHandle(nullptr), nullptr);
  int dummy = 0;
  EXPECT_EQ(StreamFromHandle(&dummy), nullptr);
  EXPECT_EQ(DestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(StreamFromHandle(s), nullptr);
  EXPECT_EQ(DestroyStream(s), ACL_ERROR_RT_PARAM_INVALID);
}

TEST_F(StreamTest, NotifyLetsOneStreamWaitForAnother) {
  auto notify = std::make_shared<Notify>();
  Stream waiter(0);
  Stream recorder(0);
  std::atomic<int> order{0};
  int wait_saw = -1;
  waiter.Enqueue(TaskType::kNotifyWait, [&, notify](std::string* detail) {
    if (!notify->Wait(10000)) {
      *detail = "notify wait timeout";
      return ACL_ERROR_RT_REPORT_TIMEOUT;
    }
    wait_saw = order.load();
    return ACL_SUCCESS;
  });
  recorder.Enqueue(TaskType::kKernel, [&](std::string*) {
    order = 1;
    return ACL_SUCCESS;
  });
  recorder.Enqueue(TaskType::kNotifyRecord, [notify](std::string*) {
    notify->Record();
    return ACL_SUCCESS;
  });
  EXPECT_EQ(waiter.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(recorder.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(wait_saw, 1);
}

TEST_F(StreamTest, NotifyWaitTimeoutFailsTheTask) {
  auto notify = std::make_shared<Notify>();
  std::atomic<aclError> seen{ACL_SUCCESS};
  int cb = RegisterTaskFailCallback([&](const TaskFailInfo& info) { seen = info.retcode; });
  Stream stream(0);
  stream.Enqueue(TaskType::kNotifyWait, [notify](std::string* detail) {
    if (!notify->Wait(20)) {
      *detail = "notify wait timeout after 20 ms";
      return ACL_ERROR_RT_REPORT_TIMEOUT;
    }
    return ACL_SUCCESS;
  });
  EXPECT_EQ(stream.Synchronize(), ACL_ERROR_RT_REPORT_TIMEOUT);
  EXPECT_EQ(seen.load(), ACL_ERROR_RT_REPORT_TIMEOUT);
  UnregisterTaskFailCallback(cb);
}

TEST_F(StreamTest, ConcurrentEnqueueFromManyThreads) {
  Stream stream(0);
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        stream.Enqueue(TaskType::kKernel, [&](std::string*) {
          ran.fetch_add(1, std::memory_order_relaxed);
          return ACL_SUCCESS;
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 8000);
}

// Inline execution (BeginInline/EndInline): a task run by the caller takes the next id, counts
// as completed for Synchronize, and a failure is reported as a queued task's would be.
TEST_F(StreamTest, InlineTaskTakesTheNextIdAndItsFailureReachesSynchronize) {
  Stream stream(0);
  EXPECT_EQ(stream.Enqueue(TaskType::kKernel, [](std::string*) { return ACL_SUCCESS; }), 1u);
  // Something queued: no inline run until it is done.
  EXPECT_FALSE(stream.BeginInline());
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
  ASSERT_TRUE(stream.BeginInline());
  // Claimed: a second claim fails (one executor at a time).
  EXPECT_FALSE(stream.BeginInline());
  EXPECT_EQ(stream.PeekNextTaskId(), 2u);
  EXPECT_EQ(stream.EndInline(TaskType::kHccl, ACL_SUCCESS, nullptr, {}), 2u);
  EXPECT_EQ(stream.CompletedTaskId(), 2u);
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);

  TaskFailInfo seen;
  int cb = RegisterTaskFailCallback([&](const TaskFailInfo& info) { seen = info; });
  ASSERT_TRUE(stream.BeginInline());
  std::string detail = "inline op failed";
  EXPECT_EQ(stream.EndInline(TaskType::kHccl, ACL_ERROR_RT_SOCKET_CLOSE, &detail, {}), 3u);
  UnregisterTaskFailCallback(cb);
  EXPECT_EQ(seen.task_id, 3u);
  EXPECT_EQ(seen.retcode, ACL_ERROR_RT_SOCKET_CLOSE);
  EXPECT_EQ(seen.detail, "inline op failed");
  // Failed: tasks are dropped until the next Synchronize, so nothing runs inline either.
  EXPECT_FALSE(stream.BeginInline());
  EXPECT_EQ(stream.Synchronize(), ACL_ERROR_RT_SOCKET_CLOSE);
  // A cancelled claim leaves the id to the task queued instead.
  ASSERT_TRUE(stream.BeginInline());
  stream.CancelInline();
  EXPECT_EQ(stream.Enqueue(TaskType::kKernel, [](std::string*) { return ACL_SUCCESS; }), 4u);
  EXPECT_EQ(stream.Synchronize(), ACL_SUCCESS);
}

// The inline claim takes no mutex: beside another thread that queues tasks (a breach of the
// one-enqueuer contract, which must still not break the stream), no two tasks ever run at once,
// every id is given once, each thread's ids rise, every queued task runs once, and a claim
// succeeds only once what its thread queued before has run.
TEST_F(StreamTest, InlineClaimsBesideAnotherThreadsTasksRunOneAtATime) {
  // The worker takes queued tasks at once (no handoff time), so that claims keep succeeding.
  Stream stream(0, std::chrono::microseconds(0));
  constexpr int kEach = 3000;
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  std::atomic<int> ran{0};
  std::atomic<int> ran_mine{0};
  auto enter = [&] {
    if (inside.fetch_add(1) != 0) overlap.store(true);
  };
  auto task = [&](std::atomic<int>* also) {
    return [&, also](std::string*) {
      enter();
      ran.fetch_add(1);
      if (also != nullptr) also->fetch_add(1);
      inside.fetch_sub(1);
      return ACL_SUCCESS;
    };
  };
  std::vector<uint32_t> theirs;
  std::thread other([&] {
    for (int i = 0; i < kEach; ++i) {
      theirs.push_back(stream.Enqueue(TaskType::kKernel, task(nullptr)));
    }
  });
  std::vector<uint32_t> mine;
  int queued_mine = 0, inline_runs = 0;
  bool ran_before_claim = true;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < kEach && std::chrono::steady_clock::now() < give_up; ++i) {
    if (i % 3 == 0) {
      mine.push_back(stream.Enqueue(TaskType::kKernel, task(&ran_mine)));
      ++queued_mine;
      continue;
    }
    // Refused while anything is queued or running: again until the worker has run it.
    bool claimed = false;
    while (!(claimed = stream.BeginInline()) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    if (!claimed) break;
    enter();
    if (ran_mine.load() != queued_mine) ran_before_claim = false;
    inside.fetch_sub(1);
    mine.push_back(stream.EndInline(TaskType::kHccl, ACL_SUCCESS, nullptr, {}));
    ++inline_runs;
  }
  other.join();
  ASSERT_EQ(mine.size(), static_cast<size_t>(kEach)) << "claims refused for 60 s";
  ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_FALSE(overlap.load());
  EXPECT_TRUE(ran_before_claim);
  EXPECT_EQ(inline_runs, kEach - queued_mine);
  EXPECT_EQ(ran.load(), 2 * kEach - inline_runs);
  EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
  EXPECT_TRUE(std::is_sorted(theirs.begin(), theirs.end()));
  std::set<uint32_t> all(mine.begin(), mine.end());
  all.insert(theirs.begin(), theirs.end());
  EXPECT_EQ(all.size(), 2u * kEach);
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), 2u * kEach);
  EXPECT_EQ(stream.CompletedTaskId(), 2u * kEach);
}

}  // namespace
}  // namespace vigil::rt
