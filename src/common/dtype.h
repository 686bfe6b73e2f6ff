// Data types and reduce ops: sizes and the lower-case names HCCL prints in logs
// ("float32", "sum"). Shared by the API checks, the algorithms, the logs and diagnose.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "hccl/hccl_types.h"

namespace vigil {

// Bytes per element; 0 for a type the CPU cannot compute (HIF8, FP8*) or an unknown value.
size_t DataTypeSize(HcclDataType type);
// True for the types Vigil computes: int8/16/32/64, uint8/16/32/64, fp16, bf16, fp32, fp64.
bool IsSupportedDataType(HcclDataType type);
// "int8", "float16", "float32", "bfp16", ... or "unknown(N)" style for invalid values.
std::string_view DataTypeName(HcclDataType type);
std::optional<HcclDataType> ParseDataTypeName(std::string_view name);

bool IsSupportedReduceOp(HcclReduceOp op);
std::string_view ReduceOpName(HcclReduceOp op);  // "sum", "prod", "max", "min"
std::optional<HcclReduceOp> ParseReduceOpName(std::string_view name);

}  // namespace vigil
