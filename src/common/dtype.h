// Data types and reduce ops: sizes and the lower-case names HCCL prints in logs
// ("float32", "sum"). Shared by the API checks, the algorithms, the logs and diagnose.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "hccl/hccl_types.h"

namespace vigil {

// Bytes per element; 0 for a type the CPU cannot compute (INT128, HIF8, FP8*) or an unknown
// value. Inline, as the two checks below: every op asks, and a call into the library (and a
// table scan) cost ~20 instructions each. dtype.cc checks it against the names' table.
constexpr size_t DataTypeSize(HcclDataType type) {
  // By enum value: the types Vigil computes are INT8 (0) to BFP16 (11).
  constexpr unsigned char kSizes[] = {1, 2, 4, 2, 4, 8, 8, 1, 2, 4, 8, 2};
  const auto i = static_cast<size_t>(static_cast<unsigned>(type));
  return i < sizeof(kSizes) ? kSizes[i] : 0;
}
// True for the types Vigil computes: int8/16/32/64, uint8/16/32/64, fp16, bf16, fp32, fp64.
constexpr bool IsSupportedDataType(HcclDataType type) {
  return DataTypeSize(type) != 0;
}
// "int8", "float16", "float32", "bfp16", ... or "unknown(N)" style for invalid values.
std::string_view DataTypeName(HcclDataType type);
std::optional<HcclDataType> ParseDataTypeName(std::string_view name);

// sum, prod, max, min.
constexpr bool IsSupportedReduceOp(HcclReduceOp op) {
  return static_cast<unsigned>(op) <= static_cast<unsigned>(HCCL_REDUCE_MIN);
}
std::string_view ReduceOpName(HcclReduceOp op);  // "sum", "prod", "max", "min"
std::optional<HcclReduceOp> ParseReduceOpName(std::string_view name);

}  // namespace vigil
