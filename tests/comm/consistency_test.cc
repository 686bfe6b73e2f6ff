// The op-consistency fingerprints: what two ranks' headers say to each other, as the transport
// hook sees them (FingerprintHeader/P2pHeader::header()->hook), without any link.
#include "comm/consistency.h"

#include <gtest/gtest.h>

#include "comm/check_ring.h"

#include "common/error_codes.h"

namespace vigil::comm {
namespace {

using transport::HeadVerdict;

alg::P2pItem Item(bool send, uint64_t count, HcclDataType type, uint32_t peer) {
  alg::P2pItem it;
  it.send = send;
  it.count = count;
  it.type = type;
  it.peer = peer;
  return it;
}

OpDesc Coll(OpType type, uint64_t count) {
  OpDesc op;
  op.type = type;
  op.count = count;
  return op;
}

OpDesc P2p(OpType type, std::vector<alg::P2pItem> items) {
  OpDesc op;
  op.type = type;
  op.items = std::move(items);
  return op;
}

// What rank `from` (header h_from) sends to `to`, handed to `to`'s hook.
HeadVerdict Deliver(P2pHeader& to, uint32_t from, P2pHeader& sender, uint32_t to_rank) {
  alg::OpHeader* h = sender.header();
  const void* head = h->mine_for(to_rank);
  alg::OpHeader* mine = to.header();
  return mine->hook.on_head(mine->hook.ctx, from, head);
}

// What collective rank `from` (header sender) sends its neighbour, handed to `to`'s hook.
HeadVerdict Deliver(FingerprintHeader& to, uint32_t from, FingerprintHeader& sender) {
  alg::OpHeader* mine = to.header();
  return mine->hook.on_head(mine->hook.ctx, from, sender.header()->mine);
}

TEST(P2pConsistency, MatchingSendAndRecvPass) {
  P2pHeader a(P2p(OpType::kSend, {Item(true, 256, HCCL_DATA_TYPE_FP32, 1)}), 2, 0, 2);
  P2pHeader b(P2p(OpType::kRecv, {Item(false, 256, HCCL_DATA_TYPE_FP32, 0)}), 2, 1, 2);
  ASSERT_NE(a.header(), nullptr);
  EXPECT_EQ(a.header()->npeers, 1u);
  EXPECT_EQ(Deliver(b, 0, a, 1), HeadVerdict::kAccept);
  EXPECT_EQ(Deliver(a, 1, b, 0), HeadVerdict::kAccept);
  EXPECT_TRUE(*a.header()->arrived_flag(0));
  EXPECT_FALSE(a.result().mismatch);
}

TEST(P2pConsistency, CountMismatchNamesBothSidesOnBothRanks) {
  P2pHeader a(P2p(OpType::kSend, {Item(true, 256, HCCL_DATA_TYPE_FP32, 1)}), 2, 0, 2);
  P2pHeader b(P2p(OpType::kRecv, {Item(false, 512, HCCL_DATA_TYPE_FP32, 0)}), 2, 1, 2);
  EXPECT_EQ(Deliver(b, 0, a, 1), HeadVerdict::kFail);
  EXPECT_EQ(Deliver(a, 1, b, 0), HeadVerdict::kFail);
  const ConsistencyResult& ra = a.result();
  ASSERT_TRUE(ra.mismatch);
  EXPECT_EQ(ra.code, HCCL_E_PARA);
  EXPECT_EQ(ra.remote_rank, 1u);
  EXPECT_EQ(ra.what.parameter, "count");
  EXPECT_EQ(ra.what.local, "256");
  EXPECT_EQ(ra.what.remote, "512");
  EXPECT_EQ(ra.local_desc, "Send count[256] dataType[float32] to rank[1] index[2]");
  EXPECT_EQ(ra.remote_desc, "Recv count[512] dataType[float32] from rank[0] index[2]");
  ASSERT_EQ(ra.hccl.size(), 1u);
  EXPECT_EQ(RenderCmdCheckFail(ra.hccl[0].parameter, ra.hccl[0].local, ra.hccl[0].remote),
            "CMD information count check fail. local[256], remote[512]");
  const ConsistencyResult& rb = b.result();
  EXPECT_EQ(rb.what.local, "512");
  EXPECT_EQ(rb.local_desc, "Recv count[512] dataType[float32] from rank[0] index[2]");
  EXPECT_EQ(rb.remote_desc, "Send count[256] dataType[float32] to rank[1] index[2]");
}

TEST(P2pConsistency, BatchDtypeMismatchInTheReverseDirection) {
  // Both ranks send to and receive from each other; rank 1 sends int32 where rank 0 expects
  // float32.
  P2pHeader a(P2p(OpType::kBatchSendRecv,
                  {Item(true, 8, HCCL_DATA_TYPE_FP32, 1), Item(false, 8, HCCL_DATA_TYPE_FP32, 1)}),
              5, 0, 2);
  P2pHeader b(P2p(OpType::kBatchSendRecv,
                  {Item(true, 8, HCCL_DATA_TYPE_INT32, 0), Item(false, 8, HCCL_DATA_TYPE_FP32, 0)}),
              5, 1, 2);
  EXPECT_EQ(Deliver(a, 1, b, 0), HeadVerdict::kFail);
  const ConsistencyResult& r = a.result();
  EXPECT_EQ(r.what.parameter, "dataType");
  EXPECT_EQ(r.what.local, "float32");
  EXPECT_EQ(r.what.remote, "int32");
  EXPECT_EQ(r.local_desc, "BatchSendRecv recv count[8] dataType[float32] from rank[1] index[5]");
  EXPECT_EQ(r.remote_desc, "BatchSendRecv send count[8] dataType[int32] to rank[0] index[5]");
  ASSERT_EQ(r.hccl.size(), 1u);
  EXPECT_EQ(r.hccl[0].local, "4");  // HcclDataType numbers, as HCCL prints them
  EXPECT_EQ(r.hccl[0].remote, "2");
}

TEST(P2pConsistency, UnmatchedSendAndLaterItemsDiffer) {
  // Both ranks send, nobody receives.
  P2pHeader a(P2p(OpType::kSend, {Item(true, 4, HCCL_DATA_TYPE_FP32, 1)}), 1, 0, 2);
  P2pHeader b(P2p(OpType::kSend, {Item(true, 4, HCCL_DATA_TYPE_FP32, 0)}), 1, 1, 2);
  EXPECT_EQ(Deliver(a, 1, b, 0), HeadVerdict::kFail);
  EXPECT_EQ(a.result().what.parameter, "items");
  EXPECT_EQ(a.result().what.local, "1 send");
  EXPECT_EQ(a.result().what.remote, "0 recv");
  EXPECT_EQ(a.result().remote_desc, "Send with no recv from rank[0] index[1]");
  // Two items each way whose second items differ: only the hash can tell.
  P2pHeader c(P2p(OpType::kBatchSendRecv,
                  {Item(true, 4, HCCL_DATA_TYPE_FP32, 1), Item(true, 4, HCCL_DATA_TYPE_FP32, 1)}),
              1, 0, 2);
  P2pHeader d(P2p(OpType::kBatchSendRecv,
                  {Item(false, 4, HCCL_DATA_TYPE_FP32, 0), Item(false, 8, HCCL_DATA_TYPE_FP32, 0)}),
              1, 1, 2);
  EXPECT_EQ(Deliver(d, 0, c, 1), HeadVerdict::kFail);
  EXPECT_EQ(d.result().what.parameter, "counts");
}

TEST(P2pConsistency, CheckOffHoldsInsteadOfFailing) {
  P2pHeader a(P2p(OpType::kSend, {Item(true, 256, HCCL_DATA_TYPE_FP32, 1)}), 2, 0, 2,
              /*report=*/false);
  P2pHeader b(P2p(OpType::kRecv, {Item(false, 512, HCCL_DATA_TYPE_FP32, 0)}), 2, 1, 2,
              /*report=*/false);
  EXPECT_EQ(Deliver(b, 0, a, 1), HeadVerdict::kHold);
  EXPECT_FALSE(b.result().mismatch);
  EXPECT_FALSE(*b.header()->arrived_flag(0));
}

// One header object serves a communicator's p2p ops one after another: after a mismatch with
// one peer, the next op (another peer, other items) starts clean, as a new object would.
TEST(P2pConsistency, ResetStartsOverForTheNextOp) {
  P2pHeader a(P2p(OpType::kSend, {Item(true, 256, HCCL_DATA_TYPE_FP32, 1)}), 2, 0, 3);
  P2pHeader b(P2p(OpType::kRecv, {Item(false, 512, HCCL_DATA_TYPE_FP32, 0)}), 2, 1, 3);
  EXPECT_EQ(Deliver(a, 1, b, 0), HeadVerdict::kFail);
  ASSERT_TRUE(a.result().mismatch);
  a.Reset(P2p(OpType::kBatchSendRecv,
              {Item(true, 8, HCCL_DATA_TYPE_INT32, 2), Item(false, 8, HCCL_DATA_TYPE_INT32, 2)}),
          3, 0, 3);
  P2pHeader c(P2p(OpType::kBatchSendRecv, {Item(false, 8, HCCL_DATA_TYPE_INT32, 0),
                                           Item(true, 8, HCCL_DATA_TYPE_INT32, 0)}),
              3, 2, 3);
  ASSERT_NE(a.header(), nullptr);
  EXPECT_EQ(a.header()->npeers, 1u);
  EXPECT_EQ(a.header()->peer(0), 2u);
  EXPECT_FALSE(a.result().mismatch);
  EXPECT_TRUE(a.result().local_desc.empty());
  EXPECT_FALSE(*a.header()->arrived_flag(0));
  // Rank 1 is no peer of this op: whatever it sends is held, never taken.
  EXPECT_EQ(Deliver(a, 1, b, 0), HeadVerdict::kHold);
  EXPECT_EQ(Deliver(a, 2, c, 0), HeadVerdict::kAccept);
  EXPECT_TRUE(*a.header()->arrived_flag(0));
  EXPECT_FALSE(a.result().mismatch);
}

TEST(P2pConsistency, NoRemotePeerNoHeader) {
  P2pHeader a(P2p(OpType::kBatchSendRecv,
                  {Item(true, 4, HCCL_DATA_TYPE_FP32, 0), Item(false, 4, HCCL_DATA_TYPE_FP32, 0)}),
              1, 0, 2);
  EXPECT_EQ(a.header(), nullptr);
}

// Four ranks: rank 1 holds rank 0's mismatching header while it waits for rank 2's; when the op
// then fails (rank 0 closed its links after rejecting rank 1's header), the header already here
// is the cause, not the close.
TEST(CollectiveConsistency, HeldMismatchIsNamedWhenTheOpFailsFirst) {
  const OpDesc ar = Coll(OpType::kAllReduce, 256);
  const OpDesc ag = Coll(OpType::kAllGather, 256);
  FingerprintHeader r0(MakeFingerprint(ar, 2, 2, 0), 0, 4);
  FingerprintHeader r1(MakeFingerprint(ag, 2, 2, 1), 1, 4);
  ASSERT_NE(r1.header(), nullptr);
  EXPECT_EQ(Deliver(r1, 0, r0), HeadVerdict::kHold);
  EXPECT_FALSE(r1.result().mismatch);
  r1.SettleAfterFailure();
  ASSERT_TRUE(r1.result().mismatch);
  EXPECT_EQ(r1.result().what.parameter, "opType");
  EXPECT_EQ(r1.result().remote_desc.rfind("AllReduce count[256]", 0), 0u)
      << r1.result().remote_desc;

  // Nothing held, or the check off: nothing to name.
  FingerprintHeader quiet(MakeFingerprint(ag, 2, 2, 1), 1, 4);
  quiet.SettleAfterFailure();
  EXPECT_FALSE(quiet.result().mismatch);
  FingerprintHeader off(MakeFingerprint(ag, 2, 2, 1), 1, 4, /*report=*/false);
  EXPECT_EQ(Deliver(off, 0, r0), HeadVerdict::kHold);
  off.SettleAfterFailure();
  EXPECT_FALSE(off.result().mismatch);
}

TEST(CollectiveConsistency, OpMismatchGivesHcclsTagCmdTypeAndOpFields) {
  const OpDesc ar = Coll(OpType::kAllReduce, 256);
  const OpDesc ag = Coll(OpType::kAllGather, 256);
  // Two ranks: each is the other's prev and next.
  FingerprintHeader r0(MakeFingerprint(ar, 2, 2, 0), 0, 2);
  FingerprintHeader r1(MakeFingerprint(ag, 2, 2, 1), 1, 2);
  ASSERT_NE(r0.header(), nullptr);
  EXPECT_EQ(Deliver(r0, 1, r1), HeadVerdict::kFail);
  const ConsistencyResult& r = r0.result();
  EXPECT_EQ(r.what.parameter, "opType");
  EXPECT_EQ(r.local_desc.rfind("AllReduce count[256] dataType[float32] reduceType[sum]", 0), 0u);
  EXPECT_EQ(r.remote_desc.rfind("AllGather count[256] dataType[float32]", 0), 0u);
  ASSERT_EQ(r.hccl.size(), 3u);
  EXPECT_EQ(r.hccl[0].parameter, "tag");
  EXPECT_EQ(r.hccl[0].local, "AllReduce");
  EXPECT_EQ(r.hccl[1].parameter, "cmdType");
  EXPECT_EQ(r.hccl[1].local, "2");
  EXPECT_EQ(r.hccl[1].remote, "6");
  EXPECT_EQ(r.hccl[2].parameter, "op");
  EXPECT_EQ(r.hccl[2].local, "0");
  EXPECT_EQ(r.hccl[2].remote, "255");
}

TEST(CollectiveConsistency, CollectiveMeetsPointToPoint) {
  const OpDesc ar = Coll(OpType::kAllReduce, 16);
  FingerprintHeader coll(MakeFingerprint(ar, 3, 3, 0), 0, 2);
  P2pHeader p2p(P2p(OpType::kSend, {Item(true, 16, HCCL_DATA_TYPE_FP32, 0)}), 3, 1, 2);
  alg::OpHeader* hc = coll.header();
  EXPECT_EQ(hc->hook.on_head(hc->hook.ctx, 1, p2p.header()->mine_for(0)), HeadVerdict::kFail);
  EXPECT_EQ(coll.result().what.parameter, "opType");
  EXPECT_EQ(coll.result().what.remote, "Send");
  EXPECT_EQ(coll.result().remote_desc, "Send count[16] dataType[float32] to rank[0] index[3]");
  alg::OpHeader* hp = p2p.header();
  EXPECT_EQ(hp->hook.on_head(hp->hook.ctx, 0, hc->mine), HeadVerdict::kFail);
  EXPECT_EQ(p2p.result().what.remote, "AllReduce");
  ASSERT_EQ(p2p.result().hccl.size(), 2u);  // tag and cmdType
  EXPECT_EQ(p2p.result().hccl[1].local, "4");
  EXPECT_EQ(p2p.result().hccl[1].remote, "2");
}

TEST(CollectiveConsistency, CheckOffHolds) {
  const OpDesc a = Coll(OpType::kAllReduce, 4);
  const OpDesc b = Coll(OpType::kAllReduce, 8);
  FingerprintHeader r0(MakeFingerprint(a, 1, 1, 0), 0, 2, /*report=*/false);
  FingerprintHeader r1(MakeFingerprint(b, 1, 1, 1), 1, 2, /*report=*/false);
  alg::OpHeader* h0 = r0.header();
  EXPECT_EQ(h0->hook.on_head(h0->hook.ctx, 1, r1.header()->mine), HeadVerdict::kHold);
  EXPECT_FALSE(r0.result().mismatch);
}

// The inter-host level's header runs over the hosts (members 0..hosts-1) and names the
// communicator's rank of the member that differs.
TEST(CollectiveConsistency, GroupMembersAreNamedByTheirRanks) {
  const OpDesc ar = Coll(OpType::kAllReduce, 256);
  const OpDesc bigger = Coll(OpType::kAllReduce, 512);
  const uint32_t members[3] = {1, 4, 7};  // local index 1 of 3 hosts x 3 ranks
  FingerprintHeader host0, host1, host2;
  host0.Reset(MakeFingerprint(ar, 2, 2, 1), 0, 3, true, members);
  host1.Reset(MakeFingerprint(bigger, 2, 2, 4), 1, 3, true, members);
  host2.Reset(MakeFingerprint(ar, 2, 2, 7), 2, 3, true, members);
  EXPECT_EQ(Deliver(host0, 2, host2), HeadVerdict::kAccept);
  EXPECT_EQ(Deliver(host0, 1, host1), HeadVerdict::kFail);
  ASSERT_TRUE(host0.result().mismatch);
  EXPECT_EQ(host0.result().remote_rank, 4u);
  EXPECT_EQ(host0.result().what.parameter, "count");
}

// Neighbours named instead of rank -+ 1.
TEST(CollectiveConsistency, NamedNeighbours) {
  const OpDesc ar = Coll(OpType::kAllReduce, 256);
  const OpDesc ag = Coll(OpType::kAllGather, 256);
  FingerprintHeader r0, r1, r2, r3;
  r0.Reset(MakeFingerprint(ar, 2, 2, 0), 0, 4, /*prev=*/2, /*next=*/1, true);
  r2.Reset(MakeFingerprint(ag, 2, 2, 2), 2, 4, /*prev=*/3, /*next=*/0, true);
  r1.Reset(MakeFingerprint(ar, 2, 2, 1), 1, 4, /*prev=*/0, /*next=*/3, true);
  ASSERT_NE(r0.header(), nullptr);
  EXPECT_EQ(r0.header()->npeers, 2u);
  EXPECT_EQ(r0.header()->peers[0], 2u);
  EXPECT_EQ(r0.header()->peers[1], 1u);
  // Rank 3 is no neighbour of rank 0 here: its header is compared, never reported.
  r3.Reset(MakeFingerprint(ag, 2, 2, 3), 3, 4, 1, 2, true);
  EXPECT_EQ(Deliver(r0, 3, r3), HeadVerdict::kHold);
  EXPECT_EQ(Deliver(r0, 1, r1), HeadVerdict::kAccept);
  EXPECT_EQ(Deliver(r0, 2, r2), HeadVerdict::kFail);
  ASSERT_TRUE(r0.result().mismatch);
  EXPECT_EQ(r0.result().remote_rank, 2u);
}

// The hosts' snake: host 0 forward, host 1 backward, ...; an edge between hosts joins one
// local index; rank -+ 1 for an odd number of hosts, one rank a host or ranks of a host that
// are not consecutive.
TEST(CheckRingTest, SnakeNeighbours) {
  auto layout = [](std::vector<std::string> ids, uint32_t rank) {
    return alg::HostLayout::FromHostIds(ids, rank);
  };
  const std::vector<std::string> two_by_two = {"a", "a", "b", "b"};
  const uint32_t want22[4][2] = {{2, 1}, {0, 3}, {3, 0}, {1, 2}};  // 0-1-3-2-0
  for (uint32_t r = 0; r < 4; ++r) {
    CheckRing c;
    c.Init(layout(two_by_two, r), r, 4);
    ASSERT_TRUE(c.snake()) << r;
    EXPECT_EQ(c.prev(), want22[r][0]) << r;
    EXPECT_EQ(c.next(), want22[r][1]) << r;
    EXPECT_TRUE(c.Folds(OpType::kAllReduce));
    EXPECT_TRUE(c.Folds(OpType::kReduceScatter));
    EXPECT_TRUE(c.Folds(OpType::kAllGather));
    EXPECT_FALSE(c.Folds(OpType::kBroadcast));
    EXPECT_FALSE(c.Folds(OpType::kReduce));
  }
  // 4 hosts x 3: 0 1 2 | 5 4 3 | 6 7 8 | 11 10 9 | back to 0.
  std::vector<std::string> four_by_three;
  for (const char* h : {"a", "b", "c", "d"}) {
    for (int j = 0; j < 3; ++j) four_by_three.push_back(h);
  }
  const std::vector<uint32_t> order = {0, 1, 2, 5, 4, 3, 6, 7, 8, 11, 10, 9};
  for (size_t q = 0; q < order.size(); ++q) {
    const uint32_t r = order[q];
    CheckRing c;
    c.Init(layout(four_by_three, r), r, 12);
    ASSERT_TRUE(c.snake()) << r;
    EXPECT_EQ(c.prev(), order[(q + order.size() - 1) % order.size()]) << r;
    EXPECT_EQ(c.next(), order[(q + 1) % order.size()]) << r;
    // Every edge between hosts joins ranks of one local index.
    EXPECT_TRUE(c.next() / 3 == r / 3 || c.next() % 3 == r % 3) << r;
  }
  CheckRing c;
  c.Init(layout({"a", "a", "b", "b", "c", "c"}, 0), 0, 6);
  EXPECT_FALSE(c.snake());
  EXPECT_FALSE(c.Folds(OpType::kAllReduce));
  EXPECT_EQ(c.prev(), 5u);  // the plain ring
  EXPECT_EQ(c.next(), 1u);
  c.Init(layout({"a", "b", "a", "b"}, 0), 0, 4);
  EXPECT_FALSE(c.snake());
  c.Init(layout({"a", "b"}, 0), 0, 2);
  EXPECT_FALSE(c.snake());
}

TEST(HcclCmdType, HcclNumbers) {
  EXPECT_EQ(HcclCmdType(OpType::kBroadcast), 1u);
  EXPECT_EQ(HcclCmdType(OpType::kAllReduce), 2u);
  EXPECT_EQ(HcclCmdType(OpType::kSend), 4u);
  EXPECT_EQ(HcclCmdType(OpType::kRecv), 5u);
  EXPECT_EQ(HcclCmdType(OpType::kAllGather), 6u);
  EXPECT_EQ(HcclCmdType(OpType::kBatchSendRecv), 13u);
  EXPECT_EQ(HcclCmdType(OpType::kReduceScatterV), 17u);
}

}  // namespace
}  // namespace vigil::comm
