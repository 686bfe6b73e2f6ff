// acl_base.h's data-type functions: element sizes with CANN's enum values, and float <-> half
// conversion checked against the compiler's own _Float16 arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "acl/acl.h"

namespace {

uint16_t HalfBits(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, sizeof(u));
  return u;
}

TEST(AclDataType, SizesFollowTheEnum) {
  EXPECT_EQ(ACL_FLOAT, 0);
  EXPECT_EQ(ACL_FLOAT16, 1);
  EXPECT_EQ(ACL_BF16, 27);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX128), 16u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E4M3FN), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT4), 0u);
  EXPECT_EQ(aclDataTypeSize(ACL_DT_UNDEFINED), 0u);
}

TEST(AclDataType, EveryHalfSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = aclFloat16ToFloat(static_cast<aclFloat16>(h));
    _Float16 ref;
    const uint16_t bits = static_cast<uint16_t>(h);
    std::memcpy(&ref, &bits, sizeof(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(ref))) << h;
      EXPECT_EQ(aclFloatToFloat16(f) & 0x7C00u, 0x7C00u) << h;
      EXPECT_NE(aclFloatToFloat16(f) & 0x3FFu, 0u) << h;
      continue;
    }
    EXPECT_EQ(f, static_cast<float>(ref)) << h;
    EXPECT_EQ(aclFloatToFloat16(f), h) << h;
  }
}

TEST(AclDataType, FloatsRoundToTheNearestHalfAsTheCompilerDoes) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = any(gen);
    float f;
    std::memcpy(&f, &u, sizeof(f));
    if (std::isnan(f)) continue;
    EXPECT_EQ(aclFloatToFloat16(f), HalfBits(static_cast<_Float16>(f))) << f;
  }
  EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3C00u);
  EXPECT_EQ(aclFloatToFloat16(65504.0f), 0x7BFFu);
  EXPECT_EQ(aclFloatToFloat16(65520.0f), 0x7C00u);  // the tie rounds to even: infinity
  EXPECT_EQ(aclFloatToFloat16(-0.0f), 0x8000u);
  EXPECT_EQ(aclFloatToFloat16(1e-9f), 0x0000u);
}

}  // namespace
