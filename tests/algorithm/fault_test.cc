// Failure paths: a broken link, a deadline that passes, an abort flag, and device-memory faults
// (freed CCL buffer, freed or too small user buffer) come back as the right code with
// AlgResult filled, and never hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "algorithm/collective.h"
#include "coll_test_util.h"
#include "inproc_link.h"
#include "runtime/device_memory.h"

namespace vigil::alg::test {
namespace {

TEST(Fault, BrokenLinkReturnsRemote) {
  for (Algo algo : {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling, Algo::kStar}) {
    World w(2, 4096);
    w.Break(0, 1);
    std::vector<HcclResult> rc(2);
    std::vector<AlgResult> res(2);
    RunRanks(2, [&](uint32_t r) {
      Group g = MakeGroup(w, r, 20000);
      std::vector<float> send(100000, 1.0f), recv(100000), scratch(1024);
      rc[r] = AllReduce(algo, g, send.data(), recv.data(), send.size(), HCCL_DATA_TYPE_FP32,
                        HCCL_REDUCE_SUM, Scratch{scratch.data(), scratch.size() * 4}, &res[r]);
    });
    for (uint32_t r = 0; r < 2; ++r) {
      EXPECT_EQ(rc[r], HCCL_E_REMOTE) << AlgoName(algo) << " rank " << r;
      EXPECT_EQ(res[r].code, HCCL_E_REMOTE);
      EXPECT_EQ(res[r].progress.code, HCCL_E_REMOTE);
      EXPECT_NE(res[r].progress.link, nullptr);
      EXPECT_FALSE(res[r].copy.faulted);
    }
  }
}

// A link breaking in the middle of a large op on 4 ranks: its receiving end (rank 2, which
// always waits on it again) sees HCCL_E_REMOTE; the sending end sees it only if it still has
// data for the link when the break lands (otherwise it waits on rank 0 like the others, and in
// the library the heartbeat's CQE broadcast aborts it); the others give up at their deadline;
// nobody hangs.
TEST(Fault, LinkBreaksMidOp) {
  World w(4, 4096);
  std::vector<HcclResult> rc(4);
  std::atomic<bool> started{false};
  std::thread breaker([&] {
    while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    w.Break(1, 2);
  });
  RunRanks(4, [&](uint32_t r) {
    Group g = MakeGroup(w, r, 1000);
    std::vector<int32_t> send(2000000, 1), recv(send.size()), scratch(256);
    AlgResult res;
    started.store(true);
    // Barrier-like loop so the break surely lands while the ranks are still working.
    HcclResult hr = HCCL_SUCCESS;
    for (int i = 0; i < 1000 && hr == HCCL_SUCCESS; ++i) {
      hr = AllReduce(Algo::kRing, g, send.data(), recv.data(), send.size(), HCCL_DATA_TYPE_INT32,
                     HCCL_REDUCE_SUM, Scratch{scratch.data(), scratch.size() * 4}, &res);
    }
    rc[r] = hr;
  });
  breaker.join();
  EXPECT_EQ(rc[2], HCCL_E_REMOTE);
  for (uint32_t r : {0u, 1u, 3u}) {
    EXPECT_TRUE(rc[r] == HCCL_E_TIMEOUT || rc[r] == HCCL_E_REMOTE) << rc[r];
  }
}

TEST(Fault, DeadlineInThePastTimesOut) {
  World w(2, 4096);
  // Only rank 0 runs: nothing will ever arrive, and the deadline has already passed.
  Group g = MakeGroup(w, 0, -1000);
  std::vector<float> send(1000, 1.0f), recv(1000), scratch(256);
  AlgResult res;
  EXPECT_EQ(AllReduce(Algo::kRing, g, send.data(), recv.data(), send.size(), HCCL_DATA_TYPE_FP32,
                      HCCL_REDUCE_SUM, Scratch{scratch.data(), 1024}, &res),
            HCCL_E_TIMEOUT);
  EXPECT_EQ(res.progress.code, HCCL_E_TIMEOUT);
  EXPECT_TRUE(res.progress.timed_out);
  AlgResult res2;
  EXPECT_EQ(Barrier(g, &res2), HCCL_E_TIMEOUT);
  Group g2 = MakeGroup(w, 0, -1000);
  std::vector<P2pItem> items = {{false, recv.data(), 10, HCCL_DATA_TYPE_FP32, 1}};
  EXPECT_EQ(SendRecv(g2, items, Scratch{}, &res2), HCCL_E_TIMEOUT);
}

TEST(Fault, AbortFlagStopsTheOp) {
  World w(2, 4096);
  std::atomic<int> abort_code{0};
  Group g = MakeGroup(w, 0, 60000);
  g.wait.abort = &abort_code;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    abort_code.store(HCCL_E_SUSPENDING);
  });
  std::vector<float> buf(1000, 1.0f);
  AlgResult res;
  EXPECT_EQ(Broadcast(g, buf.data(), buf.size(), HCCL_DATA_TYPE_FP32, 1, Scratch{}, &res),
            HCCL_E_SUSPENDING);
  t.join();
}

TEST(Fault, MissingLinkIsAnInternalError) {
  World w(3, 4096);
  Group g = MakeGroup(w, 0, 1000);
  g.links[1] = nullptr;
  std::vector<float> send(10, 1.0f), recv(10), scratch(64);
  AlgResult res;
  EXPECT_EQ(AllReduce(Algo::kMesh, g, send.data(), recv.data(), 10, HCCL_DATA_TYPE_FP32,
                      HCCL_REDUCE_SUM, Scratch{scratch.data(), 256}, &res),
            HCCL_E_INTERNAL);
}

TEST(Fault, FreedScratchFailsWithCopyFault) {
  auto& dm = rt::DeviceMemory::Instance();
  void* ccl = nullptr;
  ASSERT_EQ(dm.Alloc(0, 1 << 16, &ccl, "CCL input buffer"), ACL_SUCCESS);
  ASSERT_EQ(dm.Free(ccl), ACL_SUCCESS);
  World w(2, 4096);
  std::vector<HcclResult> rc(2);
  std::vector<AlgResult> res(2);
  RunRanks(2, [&](uint32_t r) {
    Group g = MakeGroup(w, r, 500);
    std::vector<float> send(1000, 1.0f), recv(1000), scratch(1 << 14);
    // Rank 0's CCL buffer was freed (comm destroyed before the op ran); rank 1's is fine.
    Scratch s = r == 0 ? Scratch{ccl, 1 << 16} : Scratch{scratch.data(), 1 << 16};
    rc[r] = AllReduce(Algo::kRing, g, send.data(), recv.data(), send.size(), HCCL_DATA_TYPE_FP32,
                      HCCL_REDUCE_SUM, s, &res[r]);
  });
  EXPECT_EQ(rc[0], HCCL_E_RUNTIME);
  EXPECT_TRUE(res[0].copy.faulted);
  EXPECT_EQ(res[0].copy.check.state, rt::AddrState::kFreed);
  EXPECT_EQ(res[0].copy_dst, ccl);
  EXPECT_EQ(rc[1], HCCL_E_TIMEOUT);  // its peer never showed up
}

TEST(Fault, UserBufferFreedOrTooSmall) {
  auto& dm = rt::DeviceMemory::Instance();
  void* small = nullptr;
  ASSERT_EQ(dm.Alloc(0, 256, &small), ACL_SUCCESS);
  World w(1, 4096);
  Group g = MakeGroup(w, 0, 1000);
  std::vector<float> send(1000, 1.0f), scratch(64);
  AlgResult res;
  // 1000 floats into a 256-byte allocation: overflow on the destination.
  EXPECT_EQ(AllReduce(Algo::kRing, g, send.data(), small, 1000, HCCL_DATA_TYPE_FP32,
                      HCCL_REDUCE_SUM, Scratch{scratch.data(), 256}, &res),
            HCCL_E_RUNTIME);
  EXPECT_TRUE(res.copy.faulted);
  EXPECT_TRUE(res.copy.on_dst);
  EXPECT_EQ(res.copy.check.state, rt::AddrState::kOverflow);
  EXPECT_EQ(res.copy_dst, small);
  EXPECT_EQ(res.copy_bytes, 4000u);
  ASSERT_EQ(dm.Free(small), ACL_SUCCESS);
  // Freed source.
  AlgResult res2;
  std::vector<float> recv(64);
  EXPECT_EQ(AllGather(Algo::kRing, g, small, recv.data(), 64, HCCL_DATA_TYPE_FP32,
                      Scratch{scratch.data(), 256}, &res2),
            HCCL_E_RUNTIME);
  EXPECT_TRUE(res2.copy.faulted);
  EXPECT_FALSE(res2.copy.on_dst);
  EXPECT_EQ(res2.copy.check.state, rt::AddrState::kFreed);
  EXPECT_EQ(res2.copy_src, small);
}

TEST(Fault, BadArguments) {
  World w(2, 4096);
  Group g = MakeGroup(w, 0, 1000);
  float x = 0;
  AlgResult res;
  EXPECT_EQ(
      AllReduce(Algo::kRing, g, &x, &x, 1, HCCL_DATA_TYPE_HIF8, HCCL_REDUCE_SUM, Scratch{}, &res),
      HCCL_E_NOT_SUPPORT);
  EXPECT_EQ(AllReduce(Algo::kRing, g, &x, &x, 1, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_RESERVED,
                      Scratch{}, &res),
            HCCL_E_NOT_SUPPORT);
  EXPECT_EQ(Broadcast(g, &x, 1, HCCL_DATA_TYPE_FP32, 2, Scratch{}, &res), HCCL_E_PARA);
  Group bad = g;
  bad.rank = 5;
  EXPECT_EQ(Barrier(bad, &res), HCCL_E_PARA);
}

}  // namespace
}  // namespace vigil::alg::test
