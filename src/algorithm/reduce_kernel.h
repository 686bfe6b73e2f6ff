// Reduction kernels: dst[i] = dst[i] (op) src[i] for every dtype Vigil computes. fp16 and bf16
// are widened to float, reduced and rounded back (round to nearest even). Written so the
// compiler vectorises the common fp32/int32 sum paths.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hccl/hccl_types.h"

namespace vigil::alg {

void ReduceInto(void* dst, const void* src, size_t count, HcclDataType type, HcclReduceOp op);
// dst[i] = a[i] (op) b[i]; dst may alias a or b.
void Reduce2(void* dst, const void* a, const void* b, size_t count, HcclDataType type,
             HcclReduceOp op);

// dst[i] = srcs[0][i] (op) srcs[1][i] (op) ... (op) srcs[n-1][i], folded left to right, so the
// result is bitwise that of Reduce2 then ReduceInto per source. Works through cache-sized
// chunks: each source is read once and dst stays in L1 between the passes. n >= 2; dst may be
// srcs[0], no other source may overlap dst.
void ReduceN(void* dst, const void* const* srcs, size_t n, size_t count, HcclDataType type,
             HcclReduceOp op);

// Scalar conversions used by kernels and tests.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bf16ToFloat(uint16_t b);
uint16_t FloatToBf16(float f);

}  // namespace vigil::alg
