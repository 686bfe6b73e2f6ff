// ToHcclResult (common/hccl_result.h): integers from outside become an HcclResult only when the
// enum can hold them.
#include <gtest/gtest.h>

#include <cstdint>

#include "common/hccl_result.h"

namespace vigil {
namespace {

TEST(HcclResultTest, ValuesTheEnumHoldsPassOthersAreInternal) {
  EXPECT_EQ(ToHcclResult(0), HCCL_SUCCESS);
  EXPECT_EQ(ToHcclResult(9), HCCL_E_TIMEOUT);
  EXPECT_EQ(ToHcclResult(24), HCCL_E_OOM);
  EXPECT_EQ(ToHcclResult(1041), HCCL_E_IN_STATUS);
  EXPECT_EQ(ToHcclResult(HCCL_E_RESERVED), HCCL_E_RESERVED);
  for (int64_t bad : {int64_t{-1}, int64_t{HCCL_E_RESERVED} + 1, int64_t{INT32_MAX},
                      int64_t{UINT32_MAX}, int64_t{INT64_MIN}}) {
    EXPECT_EQ(ToHcclResult(bad), HCCL_E_INTERNAL) << bad;
    EXPECT_EQ(ToHcclResult(bad, HCCL_E_REMOTE), HCCL_E_REMOTE) << bad;
  }
}

}  // namespace
}  // namespace vigil
