// Small ops of a 2-rank shm communicator queued back to back (no synchronize between them, as
// hccl_test and nccl-tests time them): where they run after a peer was late once, that ranks
// queuing on two communicators in opposite orders still finish, and the start and end times
// the observers get for them. Ranks are threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../hccl/rank_threads.h"
#include "comm/op.h"
#include "comm/op_observer.h"

namespace {

// Whether the calling thread is inside an HcclAllReduce call of this test.
thread_local bool t_in_call = false;

// Counts, per rank, the ops of the watched communicator size that started inside their
// enqueuer's API call (run inline, or by a later op's enqueue) and outside one (by the
// stream's worker or a Synchronize), from op index `from` on.
class WhereOpsRun : public vigil::comm::OpObserver {
 public:
  void OnEnqueue(const vigil::comm::OpRecord&) override {}
  void OnStart(const vigil::comm::OpRecord& op, vigil::SteadyClock::time_point) override {
    if (!watching.load() || op.nranks != 2 || op.rank > 1 || op.index < from.load()) return;
    (t_in_call ? in_call[op.rank] : outside[op.rank]).fetch_add(1);
  }
  void OnFinish(const vigil::comm::OpRecord&, HcclResult, const vigil::comm::OpFailure*,
                vigil::SteadyClock::time_point) override {}

  void Reset(uint64_t first) {
    for (int r = 0; r < 2; ++r) in_call[r] = outside[r] = 0;
    from = first;
  }
  std::atomic<bool> watching{false};
  std::atomic<uint64_t> from{0};
  std::atomic<uint64_t> in_call[2];
  std::atomic<uint64_t> outside[2];
};

// The process's one observer of type T, registered on first use (observers live for the
// process).
template <typename T>
T& Registered() {
  static T* observer = [] {
    auto* o = new T;
    EXPECT_TRUE(vigil::comm::AddOpObserver(o));
    return o;
  }();
  return *observer;
}

// The start and end times rank 0's op `index` of the watched communicator size reported, and
// whether it has started.
class OpTimes : public vigil::comm::OpObserver {
 public:
  void OnEnqueue(const vigil::comm::OpRecord&) override {}
  void OnStart(const vigil::comm::OpRecord& op, vigil::SteadyClock::time_point now) override {
    if (Mine(op)) {
      start = now;
      started.store(true);
    }
  }
  void OnFinish(const vigil::comm::OpRecord& op, HcclResult result, const vigil::comm::OpFailure*,
                vigil::SteadyClock::time_point leave) override {
    if (Mine(op)) {
      end = leave;
      ok = result == HCCL_SUCCESS;
      finished.store(true);
    }
  }
  bool Mine(const vigil::comm::OpRecord& op) const {
    return watching.load() && op.nranks == 2 && op.rank == 0 && op.index == index.load();
  }
  std::atomic<bool> watching{false}, started{false}, finished{false};
  std::atomic<uint64_t> index{0};
  vigil::SteadyClock::time_point start, end;
  bool ok = false;
};

HcclResult AllReduce(float* in, float* out, HcclComm comm, aclrtStream stream) {
  t_in_call = true;
  const HcclResult rc = HcclAllReduce(in, out, 2, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                                      stream);
  t_in_call = false;
  return rc;
}

// Runs `ops` AllReduces of 2 floats on each rank back to back, rank 1 sleeping `late_ms` before
// its op `late_at` (0: never), each op into its own output or all into one; counts where rank
// 0's and 1's ops of the loop's second half ran (the WhereOpsRun observer) and checks the sums.
void RunLoop(int ops, int late_at, int late_ms, bool own_outputs) {
  WhereOpsRun& watcher = Registered<WhereOpsRun>();
  std::atomic<int> failures{0};
  vigil_test::RunRanks(2, [&](vigil_test::Rank& me) {
    std::vector<float> in(2, static_cast<float>(me.rank + 1));
    std::vector<float> out(own_outputs ? 2 * ops : 2, 0.0f);
    // One op first, synchronized: the link exists and the direct slots are known.
    if (AllReduce(in.data(), out.data(), me.comm, me.stream) != HCCL_SUCCESS ||
        aclrtSynchronizeStream(me.stream) != ACL_SUCCESS) {
      failures.fetch_add(1);
      return;
    }
    if (me.rank == 0) {
      watcher.Reset(ops / 2 + 2);  // the second half of the loop (index 1 was the op above)
      watcher.watching = true;
    }
    for (int i = 0; i < ops; ++i) {
      if (me.rank == 1 && late_ms > 0 && i == late_at) {
        std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
      }
      float* dst = own_outputs ? out.data() + 2 * i : out.data();
      if (AllReduce(in.data(), dst, me.comm, me.stream) != HCCL_SUCCESS) failures.fetch_add(1);
    }
    if (aclrtSynchronizeStream(me.stream) != ACL_SUCCESS) failures.fetch_add(1);
    for (float v : out) {
      if (v != 3.0f) {
        failures.fetch_add(1);
        break;
      }
    }
  });
  watcher.watching = false;
  EXPECT_EQ(failures.load(), 0);
  for (int r = 0; r < 2; ++r) {
    const uint64_t inside = watcher.in_call[r].load(), outside = watcher.outside[r].load();
    EXPECT_EQ(inside + outside, static_cast<uint64_t>(ops / 2)) << "rank " << r;
    // Preemptions on a loaded host leave some ops to the worker; a chain that never ends
    // leaves them all.
    EXPECT_GT(inside, outside) << "rank " << r << ": " << inside << " ops ran inside their "
                               << "calls, " << outside << " outside";
  }
}

// A peer that is late once leaves this rank's op waiting and the ops enqueued behind it queued;
// the enqueues that follow run that queue down themselves, so the later ops run inside their
// API calls again rather than all on the worker or the final Synchronize (as they did when a
// queued op made every later one queue too).
TEST(DirectChain, OpsAfterALatePeerRunInsideTheirCallsAgain) {
  RunLoop(8000, 800, 5, /*own_outputs=*/false);
}

// Every op on buffers other than the op before's: each is checked on the caller's thread and
// runs there (it used to be queued for the check, and every later op behind it).
TEST(DirectChain, OpsOnNewBuffersRunInsideTheirCalls) {
  RunLoop(8000, 0, 0, /*own_outputs=*/true);
}

// Rank 0 queues on communicator A then B, rank 1 on B then A, op after op without
// synchronizing: every op waits for a peer that is busy with the other communicator first. No
// enqueue may wait for that peer without bound (inline runs and the run-down of a queue give
// the op back to the stream), so both ranks finish, with the right sums.
TEST(DirectChain, TwoCommunicatorsQueuedInOppositeOrdersFinish) {
  constexpr int kOps = 2000;
  HcclRootInfo roots[2];
  ASSERT_EQ(HcclGetRootInfo(&roots[0]), HCCL_SUCCESS);
  ASSERT_EQ(HcclGetRootInfo(&roots[1]), HCCL_SUCCESS);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(aclrtSetDevice(static_cast<int32_t>(r)), ACL_SUCCESS);
      HcclComm comms[2] = {nullptr, nullptr};
      aclrtStream streams[2] = {nullptr, nullptr};
      for (int c = 0; c < 2; ++c) {
        ASSERT_EQ(aclrtCreateStream(&streams[c]), ACL_SUCCESS);
        ASSERT_EQ(HcclCommInitRootInfo(2, &roots[c], r, &comms[c]), HCCL_SUCCESS);
      }
      std::vector<float> in(2, static_cast<float>(r + 1));
      std::vector<float> out[2] = {std::vector<float>(2 * kOps), std::vector<float>(2 * kOps)};
      for (int i = 0; i < kOps; ++i) {
        for (int k = 0; k < 2; ++k) {
          const int c = r == 0 ? k : 1 - k;
          if (AllReduce(in.data(), out[c].data() + 2 * i, comms[c], streams[c]) !=
              HCCL_SUCCESS) {
            failures.fetch_add(1);
          }
        }
      }
      for (int c = 0; c < 2; ++c) {
        if (aclrtSynchronizeStream(streams[c]) != ACL_SUCCESS) failures.fetch_add(1);
        for (float v : out[c]) {
          if (v != 3.0f) {
            failures.fetch_add(1);
            break;
          }
        }
        EXPECT_EQ(HcclCommDestroy(comms[c]), HCCL_SUCCESS);
        EXPECT_EQ(aclrtDestroyStream(streams[c]), ACL_SUCCESS);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// An op that finds its peer's part at once ends at its start, give or take its own work; one
// that waits ends when the part comes, not at the start the fast path reports: rank 1 posts
// its part only kLate after rank 0's op started, so rank 0's op (posted inline, its rest
// queued after the inline budget, run by the Synchronize) must end that much after its start.
TEST(DirectChain, AnOpThatWaitedEndsWhenItsPeersPartCame) {
  constexpr auto kLate = std::chrono::milliseconds(100);
  OpTimes& times = Registered<OpTimes>();
  times.index = 2;
  times.watching = true;
  std::atomic<int> failures{0};
  vigil_test::RunRanks(2, [&](vigil_test::Rank& me) {
    std::vector<float> in(2, static_cast<float>(me.rank + 1));
    std::vector<float> out(2, 0.0f);
    auto op = [&] {
      if (AllReduce(in.data(), out.data(), me.comm, me.stream) != HCCL_SUCCESS ||
          aclrtSynchronizeStream(me.stream) != ACL_SUCCESS || out[0] != 3.0f) {
        failures.fetch_add(1);
      }
    };
    op();  // index 1: the link exists and the direct slots are known
    if (me.rank == 1) {
      // Bounded: a rank 0 that never starts its op fails the test below (finished unset).
      for (int i = 0; i < 30000 && !times.started.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(kLate);
    }
    op();  // index 2: rank 1 late
  });
  times.watching = false;
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(times.finished.load());
  EXPECT_TRUE(times.ok);
  EXPECT_GE(times.end - times.start, kLate);
}

}  // namespace

int main(int argc, char** argv) {
  vigil_test::SetUpProcess();
  setenv("HCCL_EXEC_TIMEOUT", "60", 1);
  // The streams' workers take queued tasks only after a second: what runs queued ops here is
  // the enqueuers (or the final Synchronize), not a worker racing them for the queue. With the
  // 500 us default a loaded host's worker may take the whole queue while the peer is away and
  // the enqueuer, finding it busy, runs ahead to the end of its loop: right, but not the case
  // looked at.
  setenv("VIGIL_STREAM_HANDOFF_US", "1000000", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
