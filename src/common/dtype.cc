#include "common/dtype.h"

#include <array>

namespace vigil {
namespace {

struct TypeEntry {
  HcclDataType type;
  std::string_view name;
  size_t size;       // 0 = not computable on the CPU
  bool supported;
};

// Names as HCCL prints them in its logs (GetDataTypeEnumStr).
constexpr std::array<TypeEntry, 17> kTypes = {{
    {HCCL_DATA_TYPE_INT8, "int8", 1, true},
    {HCCL_DATA_TYPE_INT16, "int16", 2, true},
    {HCCL_DATA_TYPE_INT32, "int32", 4, true},
    {HCCL_DATA_TYPE_FP16, "float16", 2, true},
    {HCCL_DATA_TYPE_FP32, "float32", 4, true},
    {HCCL_DATA_TYPE_INT64, "int64", 8, true},
    {HCCL_DATA_TYPE_UINT64, "uint64", 8, true},
    {HCCL_DATA_TYPE_UINT8, "uint8", 1, true},
    {HCCL_DATA_TYPE_UINT16, "uint16", 2, true},
    {HCCL_DATA_TYPE_UINT32, "uint32", 4, true},
    {HCCL_DATA_TYPE_FP64, "float64", 8, true},
    {HCCL_DATA_TYPE_BFP16, "bfp16", 2, true},
    // Known to HCCL but not computed by Vigil: size 0 so byte counts never silently use them.
    {HCCL_DATA_TYPE_INT128, "int128", 0, false},
    {HCCL_DATA_TYPE_HIF8, "hif8", 0, false},
    {HCCL_DATA_TYPE_FP8E4M3, "fp8e4m3", 0, false},
    {HCCL_DATA_TYPE_FP8E5M2, "fp8e5m2", 0, false},
    {HCCL_DATA_TYPE_FP8E8M0, "fp8e8m0", 0, false},
}};

// The inline DataTypeSize/IsSupportedDataType (dtype.h) agree with the table.
constexpr bool InlineSizesMatch() {
  for (const auto& e : kTypes) {
    if (DataTypeSize(e.type) != e.size || IsSupportedDataType(e.type) != e.supported) return false;
  }
  return DataTypeSize(static_cast<HcclDataType>(13)) == 0 &&
         DataTypeSize(HCCL_DATA_TYPE_RESERVED) == 0;
}
static_assert(InlineSizesMatch());

const TypeEntry* FindType(HcclDataType type) {
  // The table is in enum order (a lookup per op and buffer: the scan cost ~50 instructions).
  const auto i = static_cast<size_t>(type);
  if (i < kTypes.size() && kTypes[i].type == type) return &kTypes[i];
  for (const auto& e : kTypes) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

struct OpEntry {
  HcclReduceOp op;
  std::string_view name;
};
constexpr std::array<OpEntry, 4> kOps = {{
    {HCCL_REDUCE_SUM, "sum"},
    {HCCL_REDUCE_PROD, "prod"},
    {HCCL_REDUCE_MAX, "max"},
    {HCCL_REDUCE_MIN, "min"},
}};
// The inline IsSupportedReduceOp (dtype.h) accepts exactly these.
static_assert(HCCL_REDUCE_SUM == 0 && HCCL_REDUCE_PROD == 1 && HCCL_REDUCE_MAX == 2 &&
              HCCL_REDUCE_MIN == 3);

}  // namespace

std::string_view DataTypeName(HcclDataType type) {
  const TypeEntry* e = FindType(type);
  // HCCL prints unknown enum values as "unknown"; the number goes in the caller's own text.
  return e == nullptr ? std::string_view("unknown") : e->name;
}

std::optional<HcclDataType> ParseDataTypeName(std::string_view name) {
  for (const auto& e : kTypes) {
    if (e.name == name) return e.type;
  }
  // Common aliases accepted by the CLI and diagnose.
  if (name == "fp16") return HCCL_DATA_TYPE_FP16;
  if (name == "fp32") return HCCL_DATA_TYPE_FP32;
  if (name == "fp64") return HCCL_DATA_TYPE_FP64;
  if (name == "bf16" || name == "bfloat16") return HCCL_DATA_TYPE_BFP16;
  return std::nullopt;
}

std::string_view ReduceOpName(HcclReduceOp op) {
  for (const auto& e : kOps) {
    if (e.op == op) return e.name;
  }
  return "unknown";
}

std::optional<HcclReduceOp> ParseReduceOpName(std::string_view name) {
  for (const auto& e : kOps) {
    if (e.name == name) return e.op;
  }
  return std::nullopt;
}

}  // namespace vigil
