// vigil/ext.h: VigilCommGetLastErrorMessage's contract on a healthy one-rank communicator and on
// bad arguments (its text on a real failure is checked by test_fault.py).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "hccl/hccl.h"
#include "vigil/ext.h"

namespace {

class VigilExt : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    HcclRootInfo root;
    ASSERT_EQ(HcclGetRootInfo(&root), HCCL_SUCCESS);
    ASSERT_EQ(HcclCommInitRootInfo(1, &root, 0, &comm_), HCCL_SUCCESS);
  }
  void TearDown() override {
    if (comm_ != nullptr) HcclCommDestroy(comm_);
  }
  HcclComm comm_ = nullptr;
};

TEST_F(VigilExt, HealthyCommunicatorHasNoMessage) {
  char buf[256];
  std::memset(buf, 'x', sizeof(buf));
  ASSERT_EQ(VigilCommGetLastErrorMessage(comm_, buf, sizeof(buf)), HCCL_SUCCESS);
  EXPECT_STREQ(buf, "");
}

TEST_F(VigilExt, BadArguments) {
  char buf[16];
  EXPECT_EQ(VigilCommGetLastErrorMessage(nullptr, buf, sizeof(buf)), HCCL_E_PARA);
  EXPECT_EQ(VigilCommGetLastErrorMessage(comm_, nullptr, sizeof(buf)), HCCL_E_PTR);
  EXPECT_EQ(VigilCommGetLastErrorMessage(comm_, buf, 0), HCCL_E_PTR);
  HcclComm gone = comm_;
  ASSERT_EQ(HcclCommDestroy(comm_), HCCL_SUCCESS);
  comm_ = nullptr;
  EXPECT_EQ(VigilCommGetLastErrorMessage(gone, buf, sizeof(buf)), HCCL_E_PARA);
}

}  // namespace

int main(int argc, char** argv) {
  // Logs of this test stay in the build tree.
  setenv("ASCEND_PROCESS_LOG_PATH", VIGIL_EXT_TEST_LOGS, 0);
  setenv("HCCL_IF_BASE_PORT", "0", 0);
  setenv("HCCL_BUFFSIZE", "1", 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
