#include "common/dtype.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(DataType, SizesAndNames) {
  struct Case {
    HcclDataType type;
    size_t size;
    const char* name;
    bool supported;
  };
  const Case cases[] = {
      {HCCL_DATA_TYPE_INT8, 1, "int8", true},       {HCCL_DATA_TYPE_INT16, 2, "int16", true},
      {HCCL_DATA_TYPE_INT32, 4, "int32", true},     {HCCL_DATA_TYPE_INT64, 8, "int64", true},
      {HCCL_DATA_TYPE_UINT8, 1, "uint8", true},     {HCCL_DATA_TYPE_UINT16, 2, "uint16", true},
      {HCCL_DATA_TYPE_UINT32, 4, "uint32", true},   {HCCL_DATA_TYPE_UINT64, 8, "uint64", true},
      {HCCL_DATA_TYPE_FP16, 2, "float16", true},    {HCCL_DATA_TYPE_FP32, 4, "float32", true},
      {HCCL_DATA_TYPE_FP64, 8, "float64", true},    {HCCL_DATA_TYPE_BFP16, 2, "bfp16", true},
      {HCCL_DATA_TYPE_INT128, 0, "int128", false},  {HCCL_DATA_TYPE_HIF8, 0, "hif8", false},
      {HCCL_DATA_TYPE_FP8E4M3, 0, "fp8e4m3", false}, {HCCL_DATA_TYPE_FP8E5M2, 0, "fp8e5m2", false},
      {HCCL_DATA_TYPE_FP8E8M0, 0, "fp8e8m0", false},
  };
  int supported = 0;
  for (const auto& c : cases) {
    EXPECT_EQ(DataTypeSize(c.type), c.size) << c.name;
    EXPECT_EQ(DataTypeName(c.type), c.name);
    EXPECT_EQ(IsSupportedDataType(c.type), c.supported) << c.name;
    ASSERT_TRUE(ParseDataTypeName(c.name).has_value()) << c.name;
    EXPECT_EQ(*ParseDataTypeName(c.name), c.type);
    supported += c.supported ? 1 : 0;
  }
  EXPECT_EQ(supported, 12);
}

TEST(DataType, UnknownValues) {
  for (int raw : {13, 18, 100, 255, -1}) {
    const auto t = static_cast<HcclDataType>(raw);
    EXPECT_EQ(DataTypeSize(t), 0u) << raw;
    EXPECT_FALSE(IsSupportedDataType(t)) << raw;
    EXPECT_EQ(DataTypeName(t), "unknown") << raw;
  }
  EXPECT_FALSE(ParseDataTypeName("float128").has_value());
  EXPECT_FALSE(ParseDataTypeName("").has_value());
  EXPECT_EQ(*ParseDataTypeName("fp32"), HCCL_DATA_TYPE_FP32);
  EXPECT_EQ(*ParseDataTypeName("bf16"), HCCL_DATA_TYPE_BFP16);
}

TEST(ReduceOp, NamesAndSupport) {
  const std::pair<HcclReduceOp, const char*> ops[] = {
      {HCCL_REDUCE_SUM, "sum"}, {HCCL_REDUCE_PROD, "prod"},
      {HCCL_REDUCE_MAX, "max"}, {HCCL_REDUCE_MIN, "min"}};
  for (const auto& [op, name] : ops) {
    EXPECT_TRUE(IsSupportedReduceOp(op));
    EXPECT_EQ(ReduceOpName(op), name);
    EXPECT_EQ(*ParseReduceOpName(name), op);
  }
  EXPECT_FALSE(IsSupportedReduceOp(HCCL_REDUCE_RESERVED));
  EXPECT_FALSE(IsSupportedReduceOp(static_cast<HcclReduceOp>(4)));
  EXPECT_EQ(ReduceOpName(HCCL_REDUCE_RESERVED), "unknown");
  EXPECT_FALSE(ParseReduceOpName("avg").has_value());
}

}  // namespace
}  // namespace vigil
