// Test data for the collective tests: per-rank inputs whose reduction is exact in any order
// (small integers / powers of two for floating types, wrapping arithmetic for integers), and
// the reference result folded with the kernels in rank order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "algorithm/reduce_kernel.h"
#include "common/dtype.h"
#include "hccl/hccl_types.h"

namespace vigil::alg::test {

using Bytes = std::vector<char>;

inline uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

inline bool IsFloatType(HcclDataType t) {
  return t == HCCL_DATA_TYPE_FP16 || t == HCCL_DATA_TYPE_BFP16 || t == HCCL_DATA_TYPE_FP32 ||
         t == HCCL_DATA_TYPE_FP64;
}

// Element i of rank r's input (seed varies the pattern per call site).
inline void PutValue(char* dst, HcclDataType t, HcclReduceOp op, uint64_t seed, uint64_t r,
                     uint64_t i) {
  const uint64_t h = Mix(seed * 0x9e3779b97f4a7c15ull + r * 0x100000001b3ull + i);
  if (!IsFloatType(t)) {
    std::memcpy(dst, &h, DataTypeSize(t));  // full range: sums and products wrap
    return;
  }
  double v;
  if (op == HCCL_REDUCE_PROD) {
    static const double kPow[] = {1, -1, 2, -2, 0.5, -0.5, 1, 1};
    v = kPow[h % 8];  // products of <= 8 stay exact powers of two
  } else {
    v = static_cast<double>(static_cast<int64_t>(h % 33) - 16);  // sums of <= 8 stay exact
  }
  switch (t) {
    case HCCL_DATA_TYPE_FP16: {
      uint16_t x = FloatToHalf(static_cast<float>(v));
      std::memcpy(dst, &x, 2);
      break;
    }
    case HCCL_DATA_TYPE_BFP16: {
      uint16_t x = FloatToBf16(static_cast<float>(v));
      std::memcpy(dst, &x, 2);
      break;
    }
    case HCCL_DATA_TYPE_FP32: {
      float x = static_cast<float>(v);
      std::memcpy(dst, &x, 4);
      break;
    }
    default:
      std::memcpy(dst, &v, 8);
      break;
  }
}

inline Bytes MakeInput(HcclDataType t, HcclReduceOp op, uint64_t seed, uint32_t rank,
                       uint64_t count) {
  const size_t es = DataTypeSize(t);
  Bytes b(count * es);
  for (uint64_t i = 0; i < count; ++i) PutValue(b.data() + i * es, t, op, seed, rank, i);
  return b;
}

// inputs[0] (op) inputs[1] (op) ... element-wise.
inline Bytes Fold(const std::vector<Bytes>& inputs, HcclDataType t, HcclReduceOp op) {
  Bytes out = inputs[0];
  const size_t n = out.size() / DataTypeSize(t);
  for (size_t r = 1; r < inputs.size(); ++r) ReduceInto(out.data(), inputs[r].data(), n, t, op);
  return out;
}

// Index of the first differing element, or -1.
inline int64_t FirstDiff(const Bytes& a, const Bytes& b, size_t es) {
  if (a.size() != b.size()) return -2;
  for (size_t i = 0; i < a.size(); i += es) {
    if (std::memcmp(a.data() + i, b.data() + i, es) != 0) return static_cast<int64_t>(i / es);
  }
  return -1;
}

constexpr HcclDataType kAllTypes[] = {
    HCCL_DATA_TYPE_INT8,  HCCL_DATA_TYPE_INT16,  HCCL_DATA_TYPE_INT32,  HCCL_DATA_TYPE_INT64,
    HCCL_DATA_TYPE_UINT8, HCCL_DATA_TYPE_UINT16, HCCL_DATA_TYPE_UINT32, HCCL_DATA_TYPE_UINT64,
    HCCL_DATA_TYPE_FP16,  HCCL_DATA_TYPE_BFP16,  HCCL_DATA_TYPE_FP32,   HCCL_DATA_TYPE_FP64};
constexpr HcclReduceOp kAllOps[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX,
                                    HCCL_REDUCE_MIN};

}  // namespace vigil::alg::test
