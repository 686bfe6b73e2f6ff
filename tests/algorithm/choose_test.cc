// Algorithm names, automatic choice, HCCL_ALGO parsing, and the peers each algorithm needs.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "algorithm/collective.h"
#include "common/env_config.h"

namespace vigil::alg {
namespace {

class HcclAlgoEnv : public ::testing::Test {
 protected:
  void Set(const char* value) {
    setenv("HCCL_ALGO", value, 1);
    ReloadEnvForTesting();
  }
  void TearDown() override {
    unsetenv("HCCL_ALGO");
    ReloadEnvForTesting();
  }
};

TEST(AlgoNames, HcclSpellings) {
  EXPECT_STREQ(AlgoName(Algo::kRing), "ring");
  EXPECT_STREQ(AlgoName(Algo::kMesh), "fullmesh");
  EXPECT_STREQ(AlgoName(Algo::kHalvingDoubling), "H-D");
  EXPECT_STREQ(AlgoName(Algo::kPairwise), "pairwise");
  EXPECT_STREQ(AlgoName(Algo::kStar), "star");
  Algo a;
  ASSERT_TRUE(ParseAlgoName("fullmesh", &a));
  EXPECT_EQ(a, Algo::kMesh);
  ASSERT_TRUE(ParseAlgoName("H-D_R", &a));
  EXPECT_EQ(a, Algo::kHalvingDoubling);
  ASSERT_TRUE(ParseAlgoName(" RING ", &a));
  EXPECT_EQ(a, Algo::kRing);
  ASSERT_TRUE(ParseAlgoName("NHR", &a));
  EXPECT_EQ(a, Algo::kHalvingDoubling);
  EXPECT_FALSE(ParseAlgoName("bogus", &a));
}

TEST_F(HcclAlgoEnv, AutomaticChoice) {
  Set("");
  EXPECT_EQ(ChooseAllReduce(1, 1 << 20), Algo::kRing);
  EXPECT_EQ(ChooseAllReduce(8, 256), Algo::kMesh);  // one round
  EXPECT_EQ(ChooseAllReduce(8, 1024), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseAllReduce(16, 1024), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20), Algo::kMesh);
  EXPECT_EQ(ChooseAllReduce(16, 8 << 20), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseAllReduce(12, 8 << 20), Algo::kRing);
  EXPECT_EQ(ChooseAllReduce(16, 64 << 20), Algo::kRing);
  EXPECT_EQ(ChooseAllGather(4, 1 << 20), Algo::kMesh);
  EXPECT_EQ(ChooseAllGather(16, 1 << 20), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseAllGather(12, 1 << 20), Algo::kRing);
  EXPECT_EQ(ChooseReduceScatter(4, 1 << 20), Algo::kMesh);
  EXPECT_EQ(ChooseReduceScatter(16, 1 << 20), Algo::kRing);
  EXPECT_EQ(ChooseBroadcast(8, 1024), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseBroadcast(8, 1 << 20), Algo::kRing);
}

TEST_F(HcclAlgoEnv, PlainAndLevelForms) {
  Set("ring");
  EXPECT_EQ(ChooseAllReduce(4, 1024), Algo::kRing);
  EXPECT_EQ(ChooseAllGather(4, 1024), Algo::kRing);
  Set("level0:fullmesh");
  EXPECT_EQ(ChooseAllReduce(8, 1024), Algo::kMesh);
  Set("level0:NA;level1:H-D_R");
  EXPECT_EQ(ChooseAllReduce(4, 64 << 20), Algo::kHalvingDoubling);
  // H-D allgather needs a power-of-two rank count; reduce-scatter has none: ring.
  EXPECT_EQ(ChooseAllGather(4, 1024), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseAllGather(6, 1024), Algo::kRing);
  EXPECT_EQ(ChooseReduceScatter(4, 1024), Algo::kRing);
}

TEST_F(HcclAlgoEnv, PerOpForms) {
  Set("allreduce=level0:ring/allgather=level0:NA;level1:fullmesh");
  EXPECT_EQ(ChooseAllReduce(4, 1024), Algo::kRing);
  EXPECT_EQ(ChooseAllGather(12, 64 << 20), Algo::kMesh);
  EXPECT_EQ(ChooseReduceScatter(16, 1 << 20), Algo::kRing);  // not named: automatic
  EXPECT_EQ(ChooseReduceScatter(4, 1 << 20), Algo::kMesh);
  Set("AllReduce=level0:star");
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20), Algo::kStar);
}

// A communicator's hcclAlgo (HcclCommConfig) decides for its ops; HCCL_ALGO for the others.
TEST_F(HcclAlgoEnv, ACommunicatorsOwnValueWinsOverTheEnvironment) {
  Set("ring");
  const std::string mine = "level0:fullmesh";
  const std::string unset;
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20, &mine), Algo::kMesh);
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20, &unset), Algo::kRing);
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20), Algo::kRing);
  EXPECT_EQ(ChooseAllGather(4, 1 << 20, &mine), Algo::kMesh);
  const std::string tree = "broadcast=level0:H-D_R/reduce=level0:H-D_R";
  EXPECT_EQ(ChooseBroadcast(4, 64 << 20, &tree), Algo::kHalvingDoubling);
  EXPECT_EQ(ChooseBroadcast(4, 64 << 20), Algo::kRing);
  EXPECT_EQ(ChooseReduce(4, 64 << 20, &tree), Algo::kHalvingDoubling);
  EXPECT_EQ(AlgoSpec(&mine), mine);
  EXPECT_EQ(AlgoSpec(&unset), "ring");
  EXPECT_EQ(AlgoSpec(nullptr), "ring");
}

TEST_F(HcclAlgoEnv, UnknownValuesMeanAutomatic) {
  Set("level0:warp-drive");
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20), Algo::kMesh);
  Set("pairwise");  // not an allreduce algorithm
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20), Algo::kMesh);
  Set(";;//");
  EXPECT_EQ(ChooseAllReduce(4, 8 << 20), Algo::kMesh);
}

TEST(PeersFor, RingHdAndBarrier) {
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kRing, 0, 5), (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kRing, 0, 2), (std::vector<uint32_t>{1}));
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kMesh, 2, 4), (std::vector<uint32_t>{0, 1, 3}));
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kRing, 0, 1), (std::vector<uint32_t>{}));
  // 6 ranks: q = 4, extra = 2; ranks 0,2 fold into 1,3; virtual 0..3 = ranks 1,3,4,5.
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kHalvingDoubling, 0, 6), (std::vector<uint32_t>{1}));
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kHalvingDoubling, 1, 6),
            (std::vector<uint32_t>{0, 3, 4}));
  EXPECT_EQ(PeersFor(CollOp::kAllReduce, Algo::kHalvingDoubling, 5, 6),
            (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(PeersFor(CollOp::kBarrier, Algo::kAuto, 0, 8), (std::vector<uint32_t>{1, 2, 4, 6, 7}));
  EXPECT_EQ(PeersFor(CollOp::kAlltoAllV, Algo::kPairwise, 1, 3), (std::vector<uint32_t>{0, 2}));
}

}  // namespace
}  // namespace vigil::alg
