// Reduction kernels. Each (type, op) pair is one plain loop over __restrict pointers so that
// -O3 turns the common ones (fp32/int32 sum, max/min, bf16 sum) into SIMD code. Integer
// arithmetic is done in unsigned types: overflow wraps like HCCL's device kernels, without UB.
#include "algorithm/reduce_kernel.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#define VIGIL_X86 1
#endif

// Loops are inlined into the target clones below, so each clone gets its own SIMD code.
#define VIGIL_INLINE [[gnu::always_inline]] inline

namespace vigil::alg {
namespace {

// ReduceN's chunk: dst's chunk stays in L1 while every source passes over it.
constexpr size_t kReduceChunkBytes = 8u << 10;

// ---- scalar conversions (inline so the fp16/bf16 loops can use them) ----

inline float BitsToFloat(uint32_t u) {
  return std::bit_cast<float>(u);
}
inline uint32_t FloatToBits(float f) {
  return std::bit_cast<uint32_t>(f);
}

inline float HalfToFloatInline(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mant << 13));  // inf / NaN payload
  if (exp != 0) return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24 is exact in float.
  const float mag = static_cast<float>(mant) * 0x1p-24f;
  return sign ? -mag : mag;
}

inline uint16_t FloatToHalfInline(float f) {
  uint32_t x = FloatToBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) {  // inf or NaN
    if (x == 0x7f800000u) return sign | 0x7c00u;
    uint32_t m = (x >> 13) & 0x3ffu;  // keep the payload's top bits; never turn NaN into inf
    if (m == 0) m = 0x200u;
    return static_cast<uint16_t>(sign | 0x7c00u | m);
  }
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds (to even) past 65504
  if (x >= 0x38800000u) {                       // normal half: rebias, round to nearest even
    uint32_t r = x - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Subnormal half (or zero): adding 0.5 puts the value where float's ulp is 2^-24, so the FPU's
  // own round-to-nearest-even produces the half mantissa (0x400 = smallest normal, also right).
  const float shifted = BitsToFloat(x) + 0.5f;
  return static_cast<uint16_t>(sign | (FloatToBits(shifted) - 0x3f000000u));
}

inline float Bf16ToFloatInline(uint16_t b) {
  return BitsToFloat(static_cast<uint32_t>(b) << 16);
}

// Branch-free so the bf16 loops vectorise.
inline uint16_t FloatToBf16Inline(float f) {
  const uint32_t u = FloatToBits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t hi = u >> 16;
  const uint32_t nan = hi | ((hi & 0x7fu) == 0 ? 0x40u : 0u);  // a NaN stays a NaN
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// ---- element-wise ops ----

template <typename T>
using Wide = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

struct OpSum {
  template <typename T>
  static T Int(T a, T b) {
    return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
  }
  template <typename F>
  static F Fp(F a, F b) {
    return a + b;
  }
};
struct OpProd {
  template <typename T>
  static T Int(T a, T b) {
    return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
  }
  template <typename F>
  static F Fp(F a, F b) {
    return a * b;
  }
};
// Max/min propagate NaN (either side NaN gives NaN), as torch.maximum does.
struct OpMax {
  template <typename T>
  static T Int(T a, T b) {
    return a > b ? a : b;
  }
  template <typename F>
  static F Fp(F a, F b) {
    return (a > b || a != a) ? a : b;
  }
};
struct OpMin {
  template <typename T>
  static T Int(T a, T b) {
    return a < b ? a : b;
  }
  template <typename F>
  static F Fp(F a, F b) {
    return (a < b || a != a) ? a : b;
  }
};

template <typename Op, typename T>
VIGIL_INLINE void IntLoop(T* __restrict dst, const T* __restrict a, const T* __restrict b,
                          size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::template Int<T>(a[i], b[i]);
}
template <typename Op, typename T>
VIGIL_INLINE void IntLoopInto(T* __restrict dst, const T* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::template Int<T>(dst[i], src[i]);
}
template <typename Op, typename F>
VIGIL_INLINE void FpLoop(F* __restrict dst, const F* __restrict a, const F* __restrict b,
                         size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::template Fp<F>(a[i], b[i]);
}
template <typename Op, typename F>
VIGIL_INLINE void FpLoopInto(F* __restrict dst, const F* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Op::template Fp<F>(dst[i], src[i]);
}
template <typename Op>
VIGIL_INLINE void Bf16Loop(uint16_t* __restrict dst, const uint16_t* __restrict a,
                           const uint16_t* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    dst[i] =
        FloatToBf16Inline(Op::template Fp<float>(Bf16ToFloatInline(a[i]), Bf16ToFloatInline(b[i])));
  }
}
template <typename Op>
VIGIL_INLINE void Bf16LoopInto(uint16_t* __restrict dst, const uint16_t* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    dst[i] = FloatToBf16Inline(
        Op::template Fp<float>(Bf16ToFloatInline(dst[i]), Bf16ToFloatInline(src[i])));
  }
}
template <typename Op>
VIGIL_INLINE void HalfLoop(uint16_t* __restrict dst, const uint16_t* __restrict a,
                           const uint16_t* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    dst[i] =
        FloatToHalfInline(Op::template Fp<float>(HalfToFloatInline(a[i]), HalfToFloatInline(b[i])));
  }
}
template <typename Op>
VIGIL_INLINE void HalfLoopInto(uint16_t* __restrict dst, const uint16_t* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    dst[i] = FloatToHalfInline(
        Op::template Fp<float>(HalfToFloatInline(dst[i]), HalfToFloatInline(src[i])));
  }
}

#ifdef VIGIL_X86
// fp16 with F16C: convert blocks to float in hardware (exact, round-to-nearest-even like the
// software path; only NaN payload quieting may differ), reduce in float, convert back.
template <typename Op>
[[gnu::target("avx2,f16c")]] void HalfBlocksF16c(uint16_t* dst, const uint16_t* a,
                                                 const uint16_t* b, size_t n) {
  alignas(32) float fa[256];
  alignas(32) float fb[256];
  size_t i = 0;
  while (n - i >= 8) {
    const size_t m = std::min<size_t>(256, (n - i) & ~static_cast<size_t>(7));
    for (size_t j = 0; j < m; j += 8) {
      _mm256_store_ps(
          fa + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i + j))));
      _mm256_store_ps(
          fb + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i + j))));
    }
    for (size_t j = 0; j < m; ++j) fa[j] = Op::template Fp<float>(fa[j], fb[j]);
    for (size_t j = 0; j < m; j += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + j),
                       _mm256_cvtps_ph(_mm256_load_ps(fa + j), _MM_FROUND_TO_NEAREST_INT));
    }
    i += m;
  }
  for (; i < n; ++i) {
    dst[i] =
        FloatToHalfInline(Op::template Fp<float>(HalfToFloatInline(a[i]), HalfToFloatInline(b[i])));
  }
}

bool HaveF16c() {
  static const bool have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return have;
}
#endif

// dst = a (op) b for fp16; a may be dst (blocks are read before they are written).
template <typename Op>
void HalfDispatch(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t n) {
#ifdef VIGIL_X86
  if (HaveF16c()) return HalfBlocksF16c<Op>(dst, a, b, n);
#endif
  if (dst == a) return HalfLoopInto<Op>(dst, b, n);
  HalfLoop<Op>(dst, a, b, n);
}

// Dispatch on type for one op; two entry points so every loop has non-aliasing pointers.
template <typename Op>
VIGIL_INLINE void Dispatch2(void* dst, const void* a, const void* b, size_t n, HcclDataType type) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8:
      return IntLoop<Op>(static_cast<int8_t*>(dst), static_cast<const int8_t*>(a),
                         static_cast<const int8_t*>(b), n);
    case HCCL_DATA_TYPE_INT16:
      return IntLoop<Op>(static_cast<int16_t*>(dst), static_cast<const int16_t*>(a),
                         static_cast<const int16_t*>(b), n);
    case HCCL_DATA_TYPE_INT32:
      return IntLoop<Op>(static_cast<int32_t*>(dst), static_cast<const int32_t*>(a),
                         static_cast<const int32_t*>(b), n);
    case HCCL_DATA_TYPE_INT64:
      return IntLoop<Op>(static_cast<int64_t*>(dst), static_cast<const int64_t*>(a),
                         static_cast<const int64_t*>(b), n);
    case HCCL_DATA_TYPE_UINT8:
      return IntLoop<Op>(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(a),
                         static_cast<const uint8_t*>(b), n);
    case HCCL_DATA_TYPE_UINT16:
      return IntLoop<Op>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                         static_cast<const uint16_t*>(b), n);
    case HCCL_DATA_TYPE_UINT32:
      return IntLoop<Op>(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(a),
                         static_cast<const uint32_t*>(b), n);
    case HCCL_DATA_TYPE_UINT64:
      return IntLoop<Op>(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(a),
                         static_cast<const uint64_t*>(b), n);
    case HCCL_DATA_TYPE_FP32:
      return FpLoop<Op>(static_cast<float*>(dst), static_cast<const float*>(a),
                        static_cast<const float*>(b), n);
    case HCCL_DATA_TYPE_FP64:
      return FpLoop<Op>(static_cast<double*>(dst), static_cast<const double*>(a),
                        static_cast<const double*>(b), n);
    case HCCL_DATA_TYPE_FP16:
      return HalfDispatch<Op>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                              static_cast<const uint16_t*>(b), n);
    case HCCL_DATA_TYPE_BFP16:
      return Bf16Loop<Op>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                          static_cast<const uint16_t*>(b), n);
    default:
      return;  // unsupported types are rejected before any kernel runs
  }
}

template <typename Op>
VIGIL_INLINE void DispatchInto(void* dst, const void* src, size_t n, HcclDataType type) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8:
      return IntLoopInto<Op>(static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), n);
    case HCCL_DATA_TYPE_INT16:
      return IntLoopInto<Op>(static_cast<int16_t*>(dst), static_cast<const int16_t*>(src), n);
    case HCCL_DATA_TYPE_INT32:
      return IntLoopInto<Op>(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), n);
    case HCCL_DATA_TYPE_INT64:
      return IntLoopInto<Op>(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), n);
    case HCCL_DATA_TYPE_UINT8:
      return IntLoopInto<Op>(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), n);
    case HCCL_DATA_TYPE_UINT16:
      return IntLoopInto<Op>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n);
    case HCCL_DATA_TYPE_UINT32:
      return IntLoopInto<Op>(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), n);
    case HCCL_DATA_TYPE_UINT64:
      return IntLoopInto<Op>(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), n);
    case HCCL_DATA_TYPE_FP32:
      return FpLoopInto<Op>(static_cast<float*>(dst), static_cast<const float*>(src), n);
    case HCCL_DATA_TYPE_FP64:
      return FpLoopInto<Op>(static_cast<double*>(dst), static_cast<const double*>(src), n);
    case HCCL_DATA_TYPE_FP16:
      return HalfDispatch<Op>(static_cast<uint16_t*>(dst), static_cast<uint16_t*>(dst),
                              static_cast<const uint16_t*>(src), n);
    case HCCL_DATA_TYPE_BFP16:
      return Bf16LoopInto<Op>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n);
    default:
      return;
  }
}

// The op switches, built for AVX2 and for baseline x86-64; the loader picks one (ifunc).
// Not under ThreadSanitizer: the ifunc resolver runs during relocation, before the TSan runtime
// is up, and its instrumented entry crashes the process.
#if defined(VIGIL_X86) && !defined(__SANITIZE_THREAD__)
#define VIGIL_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define VIGIL_CLONES
#endif

VIGIL_CLONES void KernelInto(void* dst, const void* src, size_t count, HcclDataType type,
                             HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM:
      return DispatchInto<OpSum>(dst, src, count, type);
    case HCCL_REDUCE_PROD:
      return DispatchInto<OpProd>(dst, src, count, type);
    case HCCL_REDUCE_MAX:
      return DispatchInto<OpMax>(dst, src, count, type);
    case HCCL_REDUCE_MIN:
      return DispatchInto<OpMin>(dst, src, count, type);
    default:
      return;
  }
}

VIGIL_CLONES void Kernel2(void* dst, const void* a, const void* b, size_t count, HcclDataType type,
                          HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM:
      return Dispatch2<OpSum>(dst, a, b, count, type);
    case HCCL_REDUCE_PROD:
      return Dispatch2<OpProd>(dst, a, b, count, type);
    case HCCL_REDUCE_MAX:
      return Dispatch2<OpMax>(dst, a, b, count, type);
    case HCCL_REDUCE_MIN:
      return Dispatch2<OpMin>(dst, a, b, count, type);
    default:
      return;
  }
}

bool Overlaps(const void* a, const void* b, size_t bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a);
  const auto pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bytes && pb < pa + bytes;
}

size_t ElemSize(HcclDataType type) {
  switch (type) {
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8:
      return 1;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16:
      return 2;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
    case HCCL_DATA_TYPE_FP32:
      return 4;
    default:
      return 8;
  }
}

// Aliased operands (rare: a == b, dst == b): reduce through stack copies so the restrict loops
// never see aliasing pointers. Exact aliases only; partial overlaps are not a supported use.
void Bounce(void* dst, const void* a, const void* b, size_t count, HcclDataType type,
            HcclReduceOp op) {
  alignas(64) unsigned char ta[4096];
  alignas(64) unsigned char tb[4096];
  const size_t esize = ElemSize(type);
  const size_t step = sizeof(ta) / esize;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  for (size_t done = 0; done < count; done += step) {
    const size_t n = count - done < step ? count - done : step;
    std::memcpy(ta, pa + done * esize, n * esize);
    std::memcpy(tb, pb + done * esize, n * esize);
    Reduce2(d + done * esize, ta, tb, n, type, op);
  }
}

}  // namespace

float HalfToFloat(uint16_t h) {
  return HalfToFloatInline(h);
}
uint16_t FloatToHalf(float f) {
  return FloatToHalfInline(f);
}
float Bf16ToFloat(uint16_t b) {
  return Bf16ToFloatInline(b);
}
uint16_t FloatToBf16(float f) {
  return FloatToBf16Inline(f);
}

void ReduceInto(void* dst, const void* src, size_t count, HcclDataType type, HcclReduceOp op) {
  if (count == 0) return;
  const size_t bytes = count * ElemSize(type);
  if (Overlaps(dst, src, bytes)) return Bounce(dst, dst, src, count, type, op);
  KernelInto(dst, src, count, type, op);
}

void Reduce2(void* dst, const void* a, const void* b, size_t count, HcclDataType type,
             HcclReduceOp op) {
  if (count == 0) return;
  const size_t bytes = count * ElemSize(type);
  const bool da = Overlaps(dst, a, bytes);
  const bool db = Overlaps(dst, b, bytes);
  // The restrict loops need distinct arrays: the exact alias dst == a is the in-place form.
  if (dst == a && !db) return ReduceInto(dst, b, count, type, op);
  if (da || db || Overlaps(a, b, bytes)) return Bounce(dst, a, b, count, type, op);
  Kernel2(dst, a, b, count, type, op);
}

void ReduceN(void* dst, const void* const* srcs, size_t n, size_t count, HcclDataType type,
             HcclReduceOp op) {
  if (count == 0 || n < 2) return;
  const size_t es = ElemSize(type);
  const size_t step = kReduceChunkBytes / es;
  auto* d = static_cast<char*>(dst);
  for (size_t done = 0; done < count; done += step) {
    const size_t m = std::min(step, count - done);
    const size_t at = done * es;
    Reduce2(d + at, static_cast<const char*>(srcs[0]) + at, static_cast<const char*>(srcs[1]) + at,
            m, type, op);
    for (size_t k = 2; k < n; ++k)
      ReduceInto(d + at, static_cast<const char*>(srcs[k]) + at, m, type, op);
  }
}

}  // namespace vigil::alg
