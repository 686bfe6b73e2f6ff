// Peer access, streams with a configuration, two-dimensional copies and operator timeouts: the
// acl calls HCCL programs make around their collectives.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"

namespace vigil::rt {
namespace {

class AclPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::UseTempLogDir();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(aclrtResetDeviceForce(0), ACL_SUCCESS); }
};

TEST_F(AclPeerTest, DistinctDevicesReachEachOther) {
  int32_t can = -1;
  ASSERT_EQ(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_SUCCESS);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(aclrtDeviceCanAccessPeer(&can, 0, 1000), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(aclrtDeviceCanAccessPeer(nullptr, 0, 1), ACL_ERROR_INVALID_PARAM);

  EXPECT_EQ(aclrtDeviceEnablePeerAccess(1, 1), ACL_ERROR_INVALID_PARAM);  // flags are reserved
  EXPECT_EQ(aclrtDeviceEnablePeerAccess(0, 0), ACL_ERROR_INVALID_PARAM);  // itself
  EXPECT_EQ(aclrtDeviceDisablePeerAccess(1), ACL_ERROR_INVALID_PARAM);    // never enabled
  ASSERT_EQ(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtDeviceDisablePeerAccess(1), ACL_SUCCESS);
  EXPECT_EQ(aclrtDeviceDisablePeerAccess(1), ACL_ERROR_INVALID_PARAM);
}

TEST_F(AclPeerTest, AConfiguredStreamRunsWork) {
  aclrtStream stream = nullptr;
  EXPECT_EQ(aclrtCreateStreamWithConfig(&stream, 8, 0), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtCreateStreamWithConfig(&stream, 0, 0x10), ACL_ERROR_INVALID_PARAM);
  ASSERT_EQ(aclrtCreateStreamWithConfig(&stream, 3, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC),
            ACL_SUCCESS);
  std::vector<int> src(32, 4), dst(32, 0);
  ASSERT_EQ(aclrtMemcpyAsync(dst.data(), dst.size() * sizeof(int), src.data(),
                             src.size() * sizeof(int), ACL_MEMCPY_HOST_TO_HOST, stream),
            ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStreamForce(stream), ACL_ERROR_RT_PARAM_INVALID);  // gone
  EXPECT_EQ(aclrtSetOpWaitTimeout(30), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetOpExecuteTimeOut(30), ACL_SUCCESS);
}

TEST_F(AclPeerTest, ATwoDimensionalCopyMovesRowsBetweenPitches) {
  // A 3 x 4 block out of a 3 x 6 matrix into a 3 x 5 one.
  std::vector<char> src(3 * 6), dst(3 * 5, 0);
  std::iota(src.begin(), src.end(), 1);
  ASSERT_EQ(aclrtMemcpy2d(dst.data(), 5, src.data(), 6, 4, 3, ACL_MEMCPY_HOST_TO_HOST),
            ACL_SUCCESS);
  for (int row = 0; row < 3; ++row) {
    for (int col = 0; col < 5; ++col) {
      EXPECT_EQ(dst[row * 5 + col], col < 4 ? src[row * 6 + col] : 0) << row << "," << col;
    }
  }
  EXPECT_EQ(aclrtMemcpy2d(dst.data(), 3, src.data(), 6, 4, 3, ACL_MEMCPY_HOST_TO_HOST),
            ACL_ERROR_INVALID_PARAM);  // wider than the destination's rows
  EXPECT_EQ(aclrtMemcpy2d(dst.data(), 5, src.data(), 6, 0, 3, ACL_MEMCPY_HOST_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::vector<char> again(3 * 5, 0);
  ASSERT_EQ(
      aclrtMemcpy2dAsync(again.data(), 5, src.data(), 6, 4, 3, ACL_MEMCPY_HOST_TO_HOST, stream),
      ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(again, dst);
  // A row that runs past a device allocation faults like a plain copy.
  void* dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<char> big(4096, 1);
  EXPECT_NE(aclrtMemcpy2d(dev, 2048, big.data(), 2048, 2048, 2, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

}  // namespace
}  // namespace vigil::rt
