// The hierarchical algorithms over in-process links (tests/algorithm's harness: threads as
// ranks, bounded pipes), on many host layouts: contiguous and interleaved hosts, one rank per
// host, three and four hosts; odd counts, tiny scratch (many pieces), in place and out of place,
// several dtypes and reduce ops. Plus the layout, the choice (HCCL_ALGO levels) and the peers.
// Needs no root: the netns scenarios (netns_hosts.sh) cover the real transports.
#include "algorithm/hierarchical.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <set>
#include <string>

#include "coll_test_util.h"
#include "common/dtype.h"
#include "common/env_config.h"
#include "inproc_link.h"

namespace vigil::alg::test {
namespace {

constexpr size_t kPipe = 64u << 10;

// A layout: host_of[r] names rank r's host.
struct Layout {
  const char* name;
  std::vector<std::string> host_of;
};

std::vector<Layout> Layouts() {
  return {
      {"2x2", {"a", "a", "b", "b"}},
      {"2x3", {"a", "a", "a", "b", "b", "b"}},
      {"3x2", {"a", "a", "b", "b", "c", "c"}},
      {"2x1", {"a", "b"}},
      {"3x1", {"a", "b", "c"}},
      {"4x2_interleaved", {"a", "b", "c", "d", "a", "b", "c", "d"}},
      {"2x2_scrambled", {"b", "a", "a", "b"}},
  };
}

struct Case {
  CollOp op = CollOp::kAllReduce;
  HierPlan plan;
  uint64_t count = 0;
  HcclDataType type = HCCL_DATA_TYPE_FP32;
  HcclReduceOp red = HCCL_REDUCE_SUM;
  bool inplace = false;
  size_t scratch = 1000;
  uint32_t root = 0;
  std::string Str(const Layout& l) const {
    return std::string(l.name) + " " + HierAlgType(plan) + " count=" + std::to_string(count) + " " +
           std::string(DataTypeName(type)) + " " + std::string(ReduceOpName(red)) +
           (inplace ? " inplace" : "") + " scratch=" + std::to_string(scratch) +
           " root=" + std::to_string(root);
  }
};

// Runs c on layout l and checks every rank's output against the reference.
void RunCase(const Layout& l, const Case& c) {
  const uint32_t p = static_cast<uint32_t>(l.host_of.size());
  const size_t es = DataTypeSize(c.type);
  World w(p, kPipe);
  // Inputs: AllReduce/Reduce/Broadcast count elements, ReduceScatter p*count, AllGather count.
  const uint64_t in_count = c.op == CollOp::kReduceScatter ? c.count * p : c.count;
  std::vector<Bytes> in(p), out(p);
  for (uint32_t r = 0; r < p; ++r) in[r] = MakeInput(c.type, c.red, 7, r, in_count);
  std::vector<HcclResult> rc(p, HCCL_E_INTERNAL);
  std::vector<AlgResult> res(p);
  RunRanks(p, [&](uint32_t r) {
    const HostLayout layout = HostLayout::FromHostIds(l.host_of, r);
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Scratch s{scratch.data(), scratch.size()};
    Bytes send = in[r];
    switch (c.op) {
      case CollOp::kAllReduce: {
        Bytes recv(c.count * es, 0x5a);
        char* dst = c.inplace ? send.data() : recv.data();
        rc[r] =
            HierAllReduce(c.plan, layout, g, send.data(), dst, c.count, c.type, c.red, s, &res[r]);
        out[r].assign(dst, dst + c.count * es);
        break;
      }
      case CollOp::kReduceScatter: {
        Bytes recv(c.count * es, 0x5a);
        char* dst = c.inplace ? send.data() + r * c.count * es : recv.data();
        rc[r] = HierReduceScatter(c.plan, layout, g, send.data(), dst, c.count, c.type, c.red, s,
                                  &res[r]);
        out[r].assign(dst, dst + c.count * es);
        break;
      }
      case CollOp::kAllGather: {
        Bytes recv(c.count * p * es, 0x5a);
        const char* src = send.data();
        if (c.inplace) {
          std::copy(send.begin(), send.end(), recv.begin() + r * c.count * es);
          src = recv.data() + r * c.count * es;
        }
        rc[r] = HierAllGather(c.plan, layout, g, src, recv.data(), c.count, c.type, s, &res[r]);
        out[r] = recv;
        break;
      }
      case CollOp::kBroadcast: {
        Bytes buf = r == c.root ? in[r] : Bytes(c.count * es, 0x5a);
        rc[r] = HierBroadcast(c.plan, layout, g, buf.data(), c.count, c.type, c.root, s, &res[r]);
        out[r] = buf;
        break;
      }
      case CollOp::kReduce: {
        Bytes recv(c.count * es, 0x5a);
        rc[r] = HierReduce(c.plan, layout, g, send.data(), recv.data(), c.count, c.type, c.red,
                           c.root, s, &res[r]);
        out[r] = recv;
        break;
      }
      default:
        break;
    }
  });
  for (uint32_t r = 0; r < p; ++r) {
    ASSERT_EQ(rc[r], HCCL_SUCCESS) << c.Str(l) << " rank " << r << ": " << res[r].progress.reason;
  }
  const Bytes reduced =
      c.op == CollOp::kAllGather || c.op == CollOp::kBroadcast ? Bytes() : Fold(in, c.type, c.red);
  for (uint32_t r = 0; r < p; ++r) {
    Bytes want;
    switch (c.op) {
      case CollOp::kAllReduce:
        want = reduced;
        break;
      case CollOp::kReduceScatter:
        want.assign(reduced.begin() + r * c.count * es, reduced.begin() + (r + 1) * c.count * es);
        break;
      case CollOp::kAllGather:
        for (uint32_t j = 0; j < p; ++j) want.insert(want.end(), in[j].begin(), in[j].end());
        break;
      case CollOp::kBroadcast:
        want = in[c.root];
        break;
      case CollOp::kReduce:
        if (r != c.root) continue;
        want = reduced;
        break;
      default:
        break;
    }
    ASSERT_EQ(FirstDiff(out[r], want, es), -1) << c.Str(l) << " rank " << r;
  }
}

struct TypeOp {
  HcclDataType type;
  HcclReduceOp red;
};
constexpr TypeOp kTypeOps[] = {{HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM},
                               {HCCL_DATA_TYPE_INT8, HCCL_REDUCE_PROD},
                               {HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_MAX},
                               {HCCL_DATA_TYPE_UINT64, HCCL_REDUCE_MIN}};

std::vector<uint64_t> Counts(uint32_t p) {
  return {0, 1, p - 1u, 5u * p + 3, 3001};
}

class Hierarchical : public ::testing::TestWithParam<Layout> {};

TEST_P(Hierarchical, AllReduceEveryLevel1) {
  const Layout& l = GetParam();
  const uint32_t p = static_cast<uint32_t>(l.host_of.size());
  for (Algo level1 : {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling}) {
    for (uint64_t count : Counts(p)) {
      for (bool inplace : {false, true}) {
        for (const TypeOp& to : kTypeOps) {
          Case c;
          c.op = CollOp::kAllReduce;
          c.plan.level1 = level1;
          c.count = count;
          c.type = to.type;
          c.red = to.red;
          c.inplace = inplace;
          RunCase(l, c);
        }
      }
    }
  }
  Case big;  // many pieces through a larger scratch
  big.count = 70001;
  big.scratch = 64u << 10;
  big.plan.level1 = Algo::kHalvingDoubling;
  RunCase(l, big);
}

TEST_P(Hierarchical, ReduceScatterAndAllGather) {
  const Layout& l = GetParam();
  const uint32_t p = static_cast<uint32_t>(l.host_of.size());
  for (uint64_t count : Counts(p)) {
    for (bool inplace : {false, true}) {
      for (Algo level1 : {Algo::kRing, Algo::kMesh}) {
        Case c;
        c.op = CollOp::kReduceScatter;
        c.plan.level1 = level1;
        c.count = count;
        c.inplace = inplace;
        c.type = HCCL_DATA_TYPE_INT32;
        c.red = HCCL_REDUCE_SUM;
        RunCase(l, c);
        c.type = HCCL_DATA_TYPE_FP16;
        c.red = HCCL_REDUCE_MIN;
        RunCase(l, c);
      }
      Case g;
      g.op = CollOp::kAllGather;
      g.count = count;
      g.inplace = inplace;
      g.type = HCCL_DATA_TYPE_INT16;
      RunCase(l, g);
    }
  }
}

TEST_P(Hierarchical, BroadcastAndReduceFromEveryRoot) {
  const Layout& l = GetParam();
  const uint32_t p = static_cast<uint32_t>(l.host_of.size());
  for (uint32_t root = 0; root < p; ++root) {
    for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{3001}, uint64_t{70001}}) {
      Case c;
      c.op = CollOp::kBroadcast;
      c.count = count;
      c.root = root;
      c.type = HCCL_DATA_TYPE_UINT8;
      RunCase(l, c);
      c.op = CollOp::kReduce;
      c.type = HCCL_DATA_TYPE_FP64;
      c.red = HCCL_REDUCE_SUM;
      RunCase(l, c);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, Hierarchical, ::testing::ValuesIn(Layouts()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- layout, choice, peers ----

TEST(HostLayout, GroupsByHostInFirstRankOrder) {
  const std::vector<std::string> ids = {"y", "x", "x", "y", "z", "z"};
  const HostLayout l = HostLayout::FromHostIds(ids, 3);
  ASSERT_EQ(l.host_count(), 3u);
  EXPECT_EQ(l.hosts[0], (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(l.hosts[1], (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(l.hosts[2], (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(l.host, 0u);
  EXPECT_EQ(l.local, 1u);
  EXPECT_TRUE(l.Hierarchical());
  EXPECT_FALSE(HostLayout::FromHostIds({"a", "a", "b"}, 0).Hierarchical());  // unequal
  EXPECT_FALSE(HostLayout::FromHostIds({"a", "a"}, 0).Hierarchical());       // one host
}

TEST(HostLayout, PeersAreSymmetric) {
  for (const Layout& l : Layouts()) {
    const uint32_t p = static_cast<uint32_t>(l.host_of.size());
    std::set<std::pair<uint32_t, uint32_t>> edges;
    for (uint32_t r = 0; r < p; ++r) {
      for (uint32_t q : HierPeers(HostLayout::FromHostIds(l.host_of, r), r, p)) {
        ASSERT_NE(q, r);
        edges.insert({r, q});
      }
    }
    for (const auto& [a, b] : edges)
      EXPECT_TRUE(edges.count({b, a})) << l.name << " " << a << "-" << b;
    // Ring neighbours are always there (the op-consistency check uses them).
    for (uint32_t r = 0; r < p && p > 1; ++r) EXPECT_TRUE(edges.count({r, (r + 1) % p})) << l.name;
  }
}

class HierChoice : public ::testing::Test {
 protected:
  void Set(const char* value) {
    if (value) {
      setenv("HCCL_ALGO", value, 1);
    } else {
      unsetenv("HCCL_ALGO");
    }
    ReloadEnvForTesting();
  }
  void TearDown() override { Set(nullptr); }
  const HostLayout two_by_two_ = HostLayout::FromHostIds({"a", "a", "b", "b"}, 0);
  const HostLayout three_by_two_ = HostLayout::FromHostIds({"a", "a", "b", "b", "c", "c"}, 0);
};

TEST_F(HierChoice, Automatic) {
  Set(nullptr);
  HierPlan plan;
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 16u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-H-D-null");  // two hosts: a power of two
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, three_by_two_, 16u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-ring-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, three_by_two_, 4096, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-H-D-null");  // small blocks
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, three_by_two_, 1024, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-fullmesh-null");  // 512 B blocks: one round between hosts
  const HostLayout four_by_one = HostLayout::FromHostIds({"a", "b", "c", "d"}, 0);
  // A tiny AllReduce over at most 8 ranks runs flat (one round of the one-shot mesh).
  EXPECT_FALSE(ChooseHierarchical(CollOp::kAllReduce, four_by_one, 8, &plan));
  EXPECT_FALSE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 512, &plan));
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 516, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-fullmesh-null");
  const HostLayout three_by_three =
      HostLayout::FromHostIds({"a", "a", "a", "b", "b", "b", "c", "c", "c"}, 0);
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, three_by_three, 8, &plan));  // 9 ranks
  EXPECT_EQ(HierAlgType(plan), "ring-fullmesh-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, four_by_one, 4096, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-H-D-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kReduceScatter, two_by_two_, 1u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-fullmesh-null");
  // Three or more hosts: the mesh for blocks up to 64 KiB, else the ring (no incast).
  ASSERT_TRUE(ChooseHierarchical(CollOp::kReduceScatter, four_by_one, 256u << 10, &plan));
  EXPECT_EQ(plan.level1, Algo::kMesh);
  ASSERT_TRUE(ChooseHierarchical(CollOp::kReduceScatter, four_by_one, 1u << 20, &plan));
  EXPECT_EQ(plan.level1, Algo::kRing);
  ASSERT_TRUE(ChooseHierarchical(CollOp::kReduceScatter, three_by_two_, 6u << 16, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-fullmesh-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kReduceScatter, three_by_two_, 6u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-ring-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllGather, two_by_two_, 1u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-ring-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kBroadcast, two_by_two_, 1024, &plan));
  EXPECT_EQ(HierAlgType(plan), "HD-H-D-null");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kBroadcast, two_by_two_, 1u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-ring-null");
  EXPECT_FALSE(ChooseHierarchical(CollOp::kAlltoAllV, two_by_two_, 1024, &plan));
  EXPECT_FALSE(ChooseHierarchical(CollOp::kAllReduce, HostLayout::FromHostIds({"a", "a", "b"}, 0),
                                  1024, &plan));
}

TEST_F(HierChoice, HcclAlgoLevels) {
  HierPlan plan;
  Set("level0:NA;level1:ring");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 1024, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-ring-null");
  Set("allreduce=level0:ring;level1:fullmesh/allgather=level0:NA;level1:ring");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 1024, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-fullmesh-null");
  Set("level0:NA;level1:NHR");
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, three_by_two_, 16u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-H-D-null");
  Set("level1:pairwise");  // not an AllReduce level: automatic
  ASSERT_TRUE(ChooseHierarchical(CollOp::kAllReduce, three_by_two_, 16u << 20, &plan));
  EXPECT_EQ(HierAlgType(plan), "ring-ring-null");
  // A bare name forces that flat algorithm over all ranks.
  Set("ring");
  EXPECT_FALSE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 1024, &plan));
  Set("allreduce=fullmesh");
  EXPECT_FALSE(ChooseHierarchical(CollOp::kAllReduce, two_by_two_, 1024, &plan));
  EXPECT_TRUE(ChooseHierarchical(CollOp::kAllGather, two_by_two_, 1024, &plan));
}

}  // namespace
}  // namespace vigil::alg::test
