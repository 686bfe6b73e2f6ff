// Streams: FIFO order, asynchronous enqueue, task ids, failure handling, timeouts, destroy.
#include "runtime/stream.h"

#include <gtest/gtest.h>
#include <pthread.h>

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

TEST_F(StreamTest, WorkerThreadIsNamedAndBoundToDevice) {
  Stream stream(3);
  char name[32] = {};
  int32_t device = -2;
  stream.Enqueue(TaskType::kKernel, [&](std::string*) {
    pthread_getname_np(pthread_self(), name, sizeof(name));
    device = CurrentDevice();
    return ACL_SUCCESS;
  });
  ASSERT_EQ(stream.Synchronize(), ACL_SUCCESS);
  EXPECT_EQ(std::string(name), "vigil_strm" + std::to_string(stream.id()));
  EXPECT_EQ(device, 3);
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

}  // namespace
}  // namespace vigil::rt
