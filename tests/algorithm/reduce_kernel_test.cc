// Reduction kernels against a scalar reference, and the fp16/bf16 conversions exhaustively.
#include "algorithm/reduce_kernel.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace vigil::alg {
namespace {

bool IsHalfNan(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}
bool IsBf16Nan(uint16_t b) {
  return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

TEST(HalfConversion, EveryHalfRoundTripsExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
    if (IsHalfNan(static_cast<uint16_t>(h))) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
    }
  }
}

TEST(HalfConversion, KnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // halfway to 65536 rounds to even: inf
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // half of the smallest subnormal: even
  EXPECT_EQ(FloatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp -> 2 (even)
  EXPECT_TRUE(IsHalfNan(FloatToHalf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(IsHalfNan(FloatToHalf(std::bit_cast<float>(0x7f800001u))));  // payload in low bits
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
}

// Every midpoint between two adjacent finite halves rounds to the even one, and a float just
// either side of it rounds to the nearer one.
TEST(HalfConversion, RoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const float lo = HalfToFloat(static_cast<uint16_t>(h));
    const float hi = HalfToFloat(static_cast<uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact in float
    const uint16_t even = (h % 2 == 0) ? h : h + 1;
    ASSERT_EQ(FloatToHalf(mid), even) << std::hex << h;
    ASSERT_EQ(FloatToHalf(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(FloatToHalf(std::nextafter(mid, 1e9f)), h + 1) << std::hex << h;
    ASSERT_EQ(FloatToHalf(-mid), even | 0x8000) << std::hex << h;
  }
}

TEST(Bf16Conversion, EveryBf16RoundTripsExactly) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(b));
    EXPECT_EQ(FloatToBf16(f), b) << std::hex << b;
    if (IsBf16Nan(static_cast<uint16_t>(b))) {
      EXPECT_TRUE(std::isnan(f));
    }
  }
}

TEST(Bf16Conversion, RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even below
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, even above
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x3f807fffu)), 0x3f80);
  EXPECT_EQ(FloatToBf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float -> inf
  EXPECT_TRUE(IsBf16Nan(FloatToBf16(std::bit_cast<float>(0x7f800001u))));
  EXPECT_TRUE(IsBf16Nan(FloatToBf16(std::bit_cast<float>(0xffc00000u))));
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t u = rng();
    const float f = std::bit_cast<float>(u);
    if (std::isnan(f)) continue;
    const uint16_t b = FloatToBf16(f);
    // The result is one of the two neighbours and no farther than the other one.
    const uint16_t t = static_cast<uint16_t>(u >> 16);
    ASSERT_TRUE(b == t || b == static_cast<uint16_t>(t + 1)) << std::hex << u;
    if (std::isinf(Bf16ToFloat(b))) continue;  // rounded past the largest finite value
    const double d = std::abs(static_cast<double>(Bf16ToFloat(b)) - f);
    const uint16_t other = b == t ? static_cast<uint16_t>(t + 1) : t;
    if (!std::isinf(Bf16ToFloat(other)) && !std::isnan(Bf16ToFloat(other))) {
      ASSERT_LE(d, std::abs(static_cast<double>(Bf16ToFloat(other)) - f)) << std::hex << u;
    }
  }
}

// Scalar reference of one element, in the type's own arithmetic (wrapping for integers).
template <typename T>
T RefInt(T a, T b, HcclReduceOp op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case HCCL_REDUCE_SUM:
      return static_cast<T>(static_cast<uint64_t>(static_cast<U>(a)) + static_cast<U>(b));
    case HCCL_REDUCE_PROD:
      return static_cast<T>(static_cast<uint64_t>(static_cast<U>(a)) * static_cast<U>(b));
    case HCCL_REDUCE_MAX:
      return std::max(a, b);
    default:
      return std::min(a, b);
  }
}

template <typename F>
F RefFp(F a, F b, HcclReduceOp op) {
  if (op == HCCL_REDUCE_SUM) return a + b;
  if (op == HCCL_REDUCE_PROD) return a * b;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  return op == HCCL_REDUCE_MAX ? std::max(a, b) : std::min(a, b);
}

const HcclReduceOp kOps[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};

template <typename T>
void CheckIntType(HcclDataType type) {
  std::mt19937_64 rng(static_cast<uint64_t>(type) * 977);
  for (size_t n : {0u, 1u, 7u, 64u, 1001u}) {
    std::vector<T> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = static_cast<T>(rng());
      b[i] = static_cast<T>(rng());
    }
    // Extremes so overflow wraps.
    if (n >= 4) {
      a[0] = std::numeric_limits<T>::max();
      b[0] = std::numeric_limits<T>::max();
      a[1] = std::numeric_limits<T>::min();
      b[1] = static_cast<T>(-1);
    }
    for (HcclReduceOp op : kOps) {
      std::vector<T> d(n), into = a;
      Reduce2(d.data(), a.data(), b.data(), n, type, op);
      ReduceInto(into.data(), b.data(), n, type, op);
      for (size_t i = 0; i < n; ++i) {
        const T want = RefInt<T>(a[i], b[i], op);
        ASSERT_EQ(d[i], want) << "type " << type << " op " << op << " i " << i;
        ASSERT_EQ(into[i], want) << "type " << type << " op " << op << " i " << i;
      }
    }
  }
}

TEST(ReduceKernel, IntegersWrap) {
  CheckIntType<int8_t>(HCCL_DATA_TYPE_INT8);
  CheckIntType<int16_t>(HCCL_DATA_TYPE_INT16);
  CheckIntType<int32_t>(HCCL_DATA_TYPE_INT32);
  CheckIntType<int64_t>(HCCL_DATA_TYPE_INT64);
  CheckIntType<uint8_t>(HCCL_DATA_TYPE_UINT8);
  CheckIntType<uint16_t>(HCCL_DATA_TYPE_UINT16);
  CheckIntType<uint32_t>(HCCL_DATA_TYPE_UINT32);
  CheckIntType<uint64_t>(HCCL_DATA_TYPE_UINT64);
}

template <typename F>
void CheckFpType(HcclDataType type) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<F> dist(-1000, 1000);
  for (size_t n : {1u, 3u, 64u, 1000u}) {
    std::vector<F> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
    }
    a[0] = std::numeric_limits<F>::quiet_NaN();
    for (HcclReduceOp op : kOps) {
      std::vector<F> d(n), into = a;
      Reduce2(d.data(), a.data(), b.data(), n, type, op);
      ReduceInto(into.data(), b.data(), n, type, op);
      for (size_t i = 0; i < n; ++i) {
        const F want = RefFp<F>(a[i], b[i], op);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(d[i]) && std::isnan(into[i])) << "op " << op << " i " << i;
        } else {
          ASSERT_EQ(d[i], want) << "op " << op << " i " << i;
          ASSERT_EQ(into[i], want) << "op " << op << " i " << i;
        }
      }
    }
  }
}

TEST(ReduceKernel, Float32AndFloat64) {
  CheckFpType<float>(HCCL_DATA_TYPE_FP32);
  CheckFpType<double>(HCCL_DATA_TYPE_FP64);
}

// fp16/bf16: the result is the float result rounded once.
void CheckHalfLike(HcclDataType type, float (*to_f)(uint16_t), uint16_t (*from_f)(float)) {
  std::mt19937 rng(5);
  const size_t n = 4099;
  std::vector<uint16_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<uint16_t>(rng());
    b[i] = static_cast<uint16_t>(rng());
  }
  for (HcclReduceOp op : kOps) {
    std::vector<uint16_t> d(n), into = a;
    Reduce2(d.data(), a.data(), b.data(), n, type, op);
    ReduceInto(into.data(), b.data(), n, type, op);
    for (size_t i = 0; i < n; ++i) {
      const float want = RefFp<float>(to_f(a[i]), to_f(b[i]), op);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(to_f(d[i])) && std::isnan(to_f(into[i]))) << i;
      } else {
        ASSERT_EQ(d[i], from_f(want)) << "op " << op << " i " << i;
        ASSERT_EQ(into[i], from_f(want)) << "op " << op << " i " << i;
      }
    }
  }
}

TEST(ReduceKernel, Float16AndBf16) {
  CheckHalfLike(HCCL_DATA_TYPE_FP16, HalfToFloat, FloatToHalf);
  CheckHalfLike(HCCL_DATA_TYPE_BFP16, Bf16ToFloat, FloatToBf16);
  // 1 + 2^-11 in fp16 is a tie between 1 and 1+2^-10: rounds to even (1).
  uint16_t x = FloatToHalf(1.0f), y = FloatToHalf(std::ldexp(1.0f, -11));
  ReduceInto(&x, &y, 1, HCCL_DATA_TYPE_FP16, HCCL_REDUCE_SUM);
  EXPECT_EQ(x, 0x3c00);
}

TEST(ReduceKernel, AliasedOperands) {
  std::vector<int32_t> a = {1, 2, 3, -4};
  Reduce2(a.data(), a.data(), a.data(), a.size(), HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM);
  EXPECT_EQ(a, (std::vector<int32_t>{2, 4, 6, -8}));
  ReduceInto(a.data(), a.data(), a.size(), HCCL_DATA_TYPE_INT32, HCCL_REDUCE_PROD);
  EXPECT_EQ(a, (std::vector<int32_t>{4, 16, 36, 64}));
  std::vector<float> b(10000, 1.5f), c(10000, 2.0f);
  Reduce2(c.data(), b.data(), c.data(), c.size(), HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM);
  for (float v : c) ASSERT_EQ(v, 3.5f);
}

// Bitwise equal, except that two NaNs of a floating type are equal whatever their payloads: a
// NaN's payload depends on which operand the compiler's vector code puts first (the in-place
// loop and the two-source loop are vectorised separately; under ThreadSanitizer, without the
// AVX2 clones, they differ), and nothing reads it.
bool SameResult(HcclDataType t, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                size_t count) {
  if (std::memcmp(a.data(), b.data(), a.size()) == 0) return true;
  auto nan_at = [t](const uint8_t* p) {
    uint16_t h;
    uint32_t f;
    uint64_t d;
    switch (t) {
      case HCCL_DATA_TYPE_FP16:
        std::memcpy(&h, p, 2);
        return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
      case HCCL_DATA_TYPE_BFP16:
        std::memcpy(&h, p, 2);
        return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
      case HCCL_DATA_TYPE_FP32:
        std::memcpy(&f, p, 4);
        return (f & 0x7fffffffu) > 0x7f800000u;
      case HCCL_DATA_TYPE_FP64:
        std::memcpy(&d, p, 8);
        return (d & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
      default:
        return false;
    }
  };
  const size_t es = a.size() / count;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* x = a.data() + i * es;
    const uint8_t* y = b.data() + i * es;
    if (std::memcmp(x, y, es) != 0 && !(nan_at(x) && nan_at(y))) return false;
  }
  return true;
}

// ReduceN folds its sources left to right in cache-sized chunks: bitwise what Reduce2 and then
// ReduceInto per source give (NaN payloads aside), for every type and op, across chunk edges and
// in place.
TEST(ReduceKernel, ReduceNIsStepwiseFold) {
  const HcclDataType types[] = {HCCL_DATA_TYPE_INT8,   HCCL_DATA_TYPE_INT16,  HCCL_DATA_TYPE_INT32,
                                HCCL_DATA_TYPE_INT64,  HCCL_DATA_TYPE_UINT8,  HCCL_DATA_TYPE_UINT16,
                                HCCL_DATA_TYPE_UINT32, HCCL_DATA_TYPE_UINT64, HCCL_DATA_TYPE_FP16,
                                HCCL_DATA_TYPE_BFP16,  HCCL_DATA_TYPE_FP32,   HCCL_DATA_TYPE_FP64};
  const HcclReduceOp ops[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};
  std::mt19937_64 rng(42);
  for (HcclDataType t : types) {
    const size_t es =
        t == HCCL_DATA_TYPE_INT8 || t == HCCL_DATA_TYPE_UINT8 ? 1
        : t == HCCL_DATA_TYPE_INT16 || t == HCCL_DATA_TYPE_UINT16 || t == HCCL_DATA_TYPE_FP16 ||
                t == HCCL_DATA_TYPE_BFP16
            ? 2
        : t == HCCL_DATA_TYPE_INT32 || t == HCCL_DATA_TYPE_UINT32 || t == HCCL_DATA_TYPE_FP32 ? 4
                                                                                              : 8;
    for (HcclReduceOp op : ops) {
      for (size_t n : {2u, 3u, 4u, 8u}) {
        for (size_t count : {size_t{1}, size_t{4095}, size_t{20011}}) {
          std::vector<std::vector<uint8_t>> src(n, std::vector<uint8_t>(count * es));
          for (auto& v : src) {
            for (auto& b : v) b = static_cast<uint8_t>(rng());
          }
          std::vector<uint8_t> want(count * es);
          Reduce2(want.data(), src[0].data(), src[1].data(), count, t, op);
          for (size_t k = 2; k < n; ++k) ReduceInto(want.data(), src[k].data(), count, t, op);
          std::vector<const void*> ptrs;
          for (auto& v : src) ptrs.push_back(v.data());
          std::vector<uint8_t> got(count * es, 0xa5);
          ReduceN(got.data(), ptrs.data(), n, count, t, op);
          ASSERT_TRUE(SameResult(t, got, want, count))
              << "type " << t << " op " << op << " n " << n << " count " << count;
          ReduceN(src[0].data(), ptrs.data(), n, count, t, op);  // in place: dst is srcs[0]
          ASSERT_TRUE(SameResult(t, src[0], want, count))
              << "in place: type " << t << " op " << op << " n " << n << " count " << count;
        }
      }
    }
  }
}

}  // namespace
}  // namespace vigil::alg
