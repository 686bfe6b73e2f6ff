// The C API's protection against a destroyed communicator handle, in one process (a communicator
// of one rank): an op on it returns HCCL_E_PARA and queues nothing, also when the calling thread
// has just used the handle (LookupComm answers from a per-thread cache), and a communicator made
// afterwards never gets the destroyed one's handle.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "acl/acl.h"
#include "hccl/hccl.h"

namespace {

TEST(ApiHandleTest, OpOnADestroyedCommunicatorIsRejected) {
  char dir[] = "/tmp/vigil-api-handle-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("ASCEND_PROCESS_LOG_PATH", dir, 1);
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  float data[4] = {1, 2, 3, 4};

  HcclRootInfo root;
  ASSERT_EQ(HcclGetRootInfo(&root), HCCL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &root, 0, &comm), HCCL_SUCCESS);
  ASSERT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  // The thread's cached lookup must not answer for the destroyed handle.
  EXPECT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_E_PARA);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_E_PARA);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  HcclRootInfo root2;
  ASSERT_EQ(HcclGetRootInfo(&root2), HCCL_SUCCESS);
  HcclComm other = nullptr;
  ASSERT_EQ(HcclCommInitRootInfo(1, &root2, 0, &other), HCCL_SUCCESS);
  EXPECT_NE(other, comm);
  EXPECT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_E_PARA);
  EXPECT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, other, stream),
            HCCL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(HcclCommDestroy(other), HCCL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
