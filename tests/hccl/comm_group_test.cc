// HcclGroupStart/End/StatusGet and HcclCreateSubCommConfig, with ranks as threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "rank_threads.h"

using vigil_test::LogContains;
using vigil_test::Rank;
using vigil_test::RunRanks;

namespace {

TEST(CommGroupTest, BothRanksSendingFirstDoNotDeadlock) {
  constexpr uint64_t kCount = 1 << 16;  // past any eager window: a real rendezvous
  RunRanks(2, [&](Rank& me) {
    const uint32_t peer = 1 - me.rank;
    std::vector<int32_t> send(kCount, static_cast<int32_t>(me.rank + 10));
    std::vector<int32_t> recv(kCount, 0);
    bool in_group = true;
    ASSERT_EQ(HcclGroupStatusGet(&in_group), HCCL_SUCCESS);
    EXPECT_FALSE(in_group);
    ASSERT_EQ(HcclGroupStart(), HCCL_SUCCESS);
    ASSERT_EQ(HcclGroupStatusGet(&in_group), HCCL_SUCCESS);
    EXPECT_TRUE(in_group);
    // Both ranks send before they receive.
    ASSERT_EQ(HcclSend(send.data(), kCount, HCCL_DATA_TYPE_INT32, peer, me.comm, me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(HcclRecv(recv.data(), kCount, HCCL_DATA_TYPE_INT32, peer, me.comm, me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(HcclGroupEnd(), HCCL_SUCCESS);
    ASSERT_EQ(HcclGroupStatusGet(&in_group), HCCL_SUCCESS);
    EXPECT_FALSE(in_group);
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    EXPECT_EQ(recv.front(), static_cast<int32_t>(peer + 10));
    EXPECT_EQ(recv.back(), static_cast<int32_t>(peer + 10));
  });
}

// A gather written as one batch per rank (FlagCX's over HCCL): the root receives from every rank,
// itself included, and sends to itself; its own part is a local copy, as in HCCL.
TEST(BatchSendRecvTest, ItemsToThisRankItselfAreALocalCopy) {
  constexpr uint64_t kCount = 1000;
  constexpr uint32_t kRanks = 3;
  RunRanks(kRanks, [&](Rank& me) {
    std::vector<int32_t> mine(kCount, static_cast<int32_t>(me.rank * 100 + 7));
    std::vector<int32_t> out(kCount * kRanks, -1);
    std::vector<HcclSendRecvItem> items;
    if (me.rank == 0) {
      for (uint32_t r = 0; r < kRanks; ++r) {
        items.push_back({HCCL_RECV, out.data() + r * kCount, kCount, HCCL_DATA_TYPE_INT32, r});
      }
    }
    items.push_back({HCCL_SEND, mine.data(), kCount, HCCL_DATA_TYPE_INT32, 0});
    ASSERT_EQ(
        HcclBatchSendRecv(items.data(), static_cast<uint32_t>(items.size()), me.comm, me.stream),
        HCCL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    if (me.rank != 0) return;
    for (uint32_t r = 0; r < kRanks; ++r) {
      EXPECT_EQ(out[r * kCount], static_cast<int32_t>(r * 100 + 7)) << r;
      EXPECT_EQ(out[r * kCount + kCount - 1], static_cast<int32_t>(r * 100 + 7)) << r;
    }
  });
}

TEST(BatchSendRecvTest, ASendToItselfNeedsAMatchingReceive) {
  HcclComm comm = vigil_test::OneRankComm();
  ASSERT_NE(comm, nullptr);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::vector<int32_t> a(16, 1), b(16, 0);
  HcclSendRecvItem alone[1] = {{HCCL_SEND, a.data(), 16, HCCL_DATA_TYPE_INT32, 0}};
  EXPECT_EQ(HcclBatchSendRecv(alone, 1, comm, stream), HCCL_E_PARA);
  HcclSendRecvItem shorter[2] = {{HCCL_SEND, a.data(), 16, HCCL_DATA_TYPE_INT32, 0},
                                 {HCCL_RECV, b.data(), 8, HCCL_DATA_TYPE_INT32, 0}};
  EXPECT_EQ(HcclBatchSendRecv(shorter, 2, comm, stream), HCCL_E_PARA);
  HcclSendRecvItem pair[2] = {{HCCL_RECV, b.data(), 16, HCCL_DATA_TYPE_INT32, 0},
                              {HCCL_SEND, a.data(), 16, HCCL_DATA_TYPE_INT32, 0}};
  ASSERT_EQ(HcclBatchSendRecv(pair, 2, comm, stream), HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(b, a);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
}

TEST(CommGroupTest, OpsOfAGroupAreQueuedAtItsEnd) {
  RunRanks(3, [&](Rank& me) {
    std::vector<float> a(8, 1.0f), b(8, static_cast<float>(me.rank));
    std::vector<float> sum_a(8, 0.0f), sum_b(8, 0.0f);
    ASSERT_EQ(HcclGroupStart(), HCCL_SUCCESS);
    ASSERT_EQ(HcclGroupStart(), HCCL_SUCCESS);  // nested: the outer End queues
    ASSERT_EQ(HcclAllReduce(a.data(), sum_a.data(), 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                            me.comm, me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(HcclGroupEnd(), HCCL_SUCCESS);
    ASSERT_EQ(HcclAllReduce(b.data(), sum_b.data(), 8, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_MAX,
                            me.comm, me.stream),
              HCCL_SUCCESS);
    // Nothing is queued yet: the stream has nothing to wait for.
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    EXPECT_EQ(sum_a[0], 0.0f);
    EXPECT_EQ(sum_b[0], 0.0f);
    ASSERT_EQ(HcclGroupEnd(), HCCL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    EXPECT_EQ(sum_a[7], 3.0f);
    EXPECT_EQ(sum_b[7], 2.0f);
  });
}

TEST(CommGroupTest, AGroupOnACapturingStreamIsReplayed) {
  constexpr uint64_t kCount = 4096;
  RunRanks(2, [&](Rank& me) {
    const uint32_t peer = 1 - me.rank;
    std::vector<int32_t> send(kCount, 0), recv(kCount, -1);
    ASSERT_EQ(aclmdlRICaptureBegin(me.stream, ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL),
              ACL_SUCCESS);
    ASSERT_EQ(HcclGroupStart(), HCCL_SUCCESS);
    ASSERT_EQ(HcclSend(send.data(), kCount, HCCL_DATA_TYPE_INT32, peer, me.comm, me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(HcclRecv(recv.data(), kCount, HCCL_DATA_TYPE_INT32, peer, me.comm, me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(HcclGroupEnd(), HCCL_SUCCESS);
    aclmdlRI model = nullptr;
    ASSERT_EQ(aclmdlRICaptureEnd(me.stream, &model), ACL_SUCCESS);
    EXPECT_EQ(recv[0], -1);  // captured, not run
    for (int32_t replay = 1; replay <= 2; ++replay) {
      std::fill(send.begin(), send.end(), static_cast<int32_t>(me.rank * 100 + replay));
      ASSERT_EQ(aclmdlRIExecuteAsync(model, me.stream), ACL_SUCCESS);
      ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
      EXPECT_EQ(recv[kCount - 1], static_cast<int32_t>(peer * 100 + replay));
    }
    EXPECT_EQ(aclmdlRIDestroy(model), ACL_SUCCESS);
  });
}

TEST(CommGroupTest, EndWithoutStartIsAnError) {
  EXPECT_EQ(HcclGroupEnd(), HCCL_E_PARA);
  EXPECT_TRUE(LogContains("no group is open on this thread"));
  EXPECT_EQ(HcclGroupStatusGet(nullptr), HCCL_E_PTR);
}

TEST(SubCommTest, ACollectiveRunsOnTheSubsetOfRanks) {
  // Two sub-communicators of a 4-rank parent: {3, 1} (sub-rank 0 is parent rank 3) and {0, 2}.
  RunRanks(4, [&](Rank& me) {
    const bool odd = me.rank % 2 == 1;
    uint32_t ids[2] = {odd ? 3u : 0u, odd ? 1u : 2u};
    const uint32_t sub_rank = ids[0] == me.rank ? 0 : 1;
    HcclCommConfig config;
    HcclCommConfigInit(&config);
    HcclComm sub = nullptr;
    // The caller must be rankIds[subCommRankId].
    EXPECT_EQ(HcclCreateSubCommConfig(&me.comm, 2, ids, 7, 1 - sub_rank, &config, &sub),
              HCCL_E_PARA);
    ASSERT_EQ(HcclCreateSubCommConfig(&me.comm, 2, ids, odd ? 1 : 2, sub_rank, &config, &sub),
              HCCL_SUCCESS);
    uint32_t size = 0, rank = 9;
    ASSERT_EQ(HcclGetRankSize(sub, &size), HCCL_SUCCESS);
    ASSERT_EQ(HcclGetRankId(sub, &rank), HCCL_SUCCESS);
    EXPECT_EQ(size, 2u);
    EXPECT_EQ(rank, sub_rank);
    std::vector<int32_t> in(32, static_cast<int32_t>(me.rank)), out(32, -1);
    ASSERT_EQ(HcclAllReduce(in.data(), out.data(), 32, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, sub,
                            me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    EXPECT_EQ(out[31], odd ? 4 : 2);
    // The parent still works after its sub-communicator.
    ASSERT_EQ(HcclAllReduce(in.data(), out.data(), 32, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM,
                            me.comm, me.stream),
              HCCL_SUCCESS);
    ASSERT_EQ(aclrtSynchronizeStream(me.stream), ACL_SUCCESS);
    EXPECT_EQ(out[0], 6);
    EXPECT_EQ(HcclCommDestroy(sub), HCCL_SUCCESS);
  });
  EXPECT_TRUE(LogContains("joins sub-communicator subCommId[1] as sub-rank[0] of [2]"));
}

TEST(SubCommTest, BadArgumentsAreNamed) {
  RunRanks(2, [&](Rank& me) {
    uint32_t twice[2] = {0, 0};
    uint32_t far[2] = {0, 5};
    HcclComm sub = nullptr;
    EXPECT_EQ(HcclCreateSubCommConfig(&me.comm, 2, twice, 1, 0, nullptr, &sub), HCCL_E_PARA);
    EXPECT_EQ(HcclCreateSubCommConfig(&me.comm, 2, far, 1, 0, nullptr, &sub), HCCL_E_PARA);
    EXPECT_EQ(HcclCreateSubCommConfig(&me.comm, 3, far, 1, 0, nullptr, &sub), HCCL_E_PARA);
    EXPECT_EQ(HcclCreateSubCommConfig(nullptr, 2, far, 1, 0, nullptr, &sub), HCCL_E_PTR);
    // A sub-communicator of one rank needs no peer.
    uint32_t me_only[1] = {me.rank};
    ASSERT_EQ(HcclCreateSubCommConfig(&me.comm, 1, me_only, 9, 0, nullptr, &sub), HCCL_SUCCESS);
    uint32_t size = 0;
    EXPECT_EQ(HcclGetRankSize(sub, &size), HCCL_SUCCESS);
    EXPECT_EQ(size, 1u);
    EXPECT_EQ(HcclCommDestroy(sub), HCCL_SUCCESS);
  });
  EXPECT_TRUE(LogContains("rankIds[1]=0 is listed twice"));
}

}  // namespace

int main(int argc, char** argv) {
  vigil_test::SetUpProcess();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
