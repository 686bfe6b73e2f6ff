#include "values.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hccl/hccl_types.h"

namespace hccl_test {

namespace {

struct Named {
  const char* name;
  int value;
};

// -d names in hccl_test's order; HcclDataType has no 13, so the fp8 names map past it.
const Named kDtypes[] = {
    {"int8", HCCL_DATA_TYPE_INT8},       {"int16", HCCL_DATA_TYPE_INT16},
    {"int32", HCCL_DATA_TYPE_INT32},     {"fp16", HCCL_DATA_TYPE_FP16},
    {"fp32", HCCL_DATA_TYPE_FP32},       {"int64", HCCL_DATA_TYPE_INT64},
    {"uint64", HCCL_DATA_TYPE_UINT64},   {"uint8", HCCL_DATA_TYPE_UINT8},
    {"uint16", HCCL_DATA_TYPE_UINT16},   {"uint32", HCCL_DATA_TYPE_UINT32},
    {"fp64", HCCL_DATA_TYPE_FP64},       {"bfp16", HCCL_DATA_TYPE_BFP16},
    {"int128", HCCL_DATA_TYPE_INT128},   {"hif8", HCCL_DATA_TYPE_HIF8},
    {"fp8e4m3", HCCL_DATA_TYPE_FP8E4M3}, {"fp8e5m2", HCCL_DATA_TYPE_FP8E5M2},
    {"fp8e8m0", HCCL_DATA_TYPE_FP8E8M0},
};

const Named kReduceOps[] = {
    {"sum", HCCL_REDUCE_SUM},
    {"prod", HCCL_REDUCE_PROD},
    {"max", HCCL_REDUCE_MAX},
    {"min", HCCL_REDUCE_MIN},
};

bool IsByteSized(int dtype) {
  return dtype == HCCL_DATA_TYPE_INT8 || dtype == HCCL_DATA_TYPE_UINT8 ||
         dtype == HCCL_DATA_TYPE_HIF8 || dtype == HCCL_DATA_TYPE_FP8E4M3 ||
         dtype == HCCL_DATA_TYPE_FP8E5M2 || dtype == HCCL_DATA_TYPE_FP8E8M0;
}

// IEEE binary16 nearest to f (ties to even).
uint16_t HalfOf(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t fexp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (fexp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant != 0 ? 0x200u : 0u));
  const int exp = static_cast<int>(fexp) - 127 + 15;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half_way = 1u << (shift - 1);
    if (rest > half_way || (rest == half_way && (h & 1u) != 0)) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // a carry moves the exponent
  return static_cast<uint16_t>(sign | h);
}

// hccl_test's bfp16 element for a small non-negative integer value: the integer itself.
uint16_t Bf16PatternOf(double v) {
  return static_cast<uint16_t>(v);
}

template <typename T>
void Fill(void* dst, uint64_t n, T value) {
  T* p = static_cast<T*>(dst);
  for (uint64_t i = 0; i < n; ++i) p[i] = value;
}

// Expected value of one reduction, before conversion to the element type.
double Reduced(int op, double v, int nranks) {
  switch (op) {
    case HCCL_REDUCE_SUM:
      return v * nranks;
    case HCCL_REDUCE_PROD:
      return pow(v, nranks);
    default:
      return v;  // max, min
  }
}

template <typename T>
int CountExact(const void* got, const void* want, uint64_t n, int verbose, const char* fmt) {
  const T* g = static_cast<const T*>(got);
  const T* w = static_cast<const T*>(want);
  int wrong = 0;
  uint64_t first = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (g[i] != w[i]) {
      if (wrong == 0) first = i;
      ++wrong;
    }
  }
  if (wrong > 0 && verbose >= 2) {
    printf("result buf[%llu] is not right, ", static_cast<unsigned long long>(first));
    printf(fmt, w[first], g[first]);
  }
  return wrong;
}

int CountFloat(const void* got, const void* want, uint64_t n, int verbose) {
  const float* g = static_cast<const float*>(got);
  const float* w = static_cast<const float*>(want);
  int wrong = 0;
  uint64_t first = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const float diff = fabsf(w[i] - g[i]);
    if (diff <= 1e-6f) continue;
    // Relative error past 1e-4, or an absolute one past 1e-3 where the result is zero.
    const bool bad = fabsf(g[i]) > 0 ? fabsf(diff / g[i]) > 1e-4f : diff > 0.001f;
    if (bad) {
      if (wrong == 0) first = i;
      ++wrong;
    }
  }
  if (wrong > 0 && verbose >= 2) {
    printf("check buf[%llu] error, exp:%f, act:%f \n", static_cast<unsigned long long>(first),
           w[first], g[first]);
  }
  return wrong;
}

}  // namespace

int DtypeBytes(int dtype) {
  switch (dtype) {
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8:
    case HCCL_DATA_TYPE_HIF8:
    case HCCL_DATA_TYPE_FP8E4M3:
    case HCCL_DATA_TYPE_FP8E5M2:
    case HCCL_DATA_TYPE_FP8E8M0:
      return 1;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16:
      return 2;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP64:
      return 8;
    default:
      return 4;  // int32, uint32, fp32, and int128 as hccl_test sizes it
  }
}

const char* DtypeName(int dtype) {
  for (size_t i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i) {
    if (kDtypes[i].value == dtype) return kDtypes[i].name;
  }
  return "unknown";
}

int DtypeFromName(const char* name) {
  for (size_t i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i) {
    if (strcmp(name, kDtypes[i].name) == 0) return kDtypes[i].value;
  }
  return -1;
}

int ReduceOpFromName(const char* name) {
  for (size_t i = 0; i < sizeof(kReduceOps) / sizeof(kReduceOps[0]); ++i) {
    if (strcmp(name, kReduceOps[i].name) == 0) return kReduceOps[i].value;
  }
  return -1;
}

bool FillValue(void* dst, uint64_t n, int dtype, int v) {
  if (IsByteSized(dtype)) {
    Fill<int8_t>(dst, n, static_cast<int8_t>(v % 128));
    return true;
  }
  switch (dtype) {
    case HCCL_DATA_TYPE_FP32:
      Fill<float>(dst, n, static_cast<float>(v));
      return true;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
      Fill<int32_t>(dst, n, v);
      return true;
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
      Fill<int16_t>(dst, n, static_cast<int16_t>(v));
      return true;
    case HCCL_DATA_TYPE_FP16:
      Fill<uint16_t>(dst, n, HalfOf(static_cast<float>(v)));
      return true;
    case HCCL_DATA_TYPE_BFP16:
      Fill<uint16_t>(dst, n, Bf16PatternOf(v));
      return true;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
      Fill<int64_t>(dst, n, v);
      return true;
    case HCCL_DATA_TYPE_FP64:
      Fill<double>(dst, n, static_cast<double>(v));
      return true;
    default:
      return false;  // int128
  }
}

bool FillReduced(void* dst, uint64_t n, int dtype, int op, int v, int nranks) {
  if (dtype == HCCL_DATA_TYPE_INT8 || dtype == HCCL_DATA_TYPE_UINT8) {
    // int8 references saturate at 127 instead of wrapping.
    const int base = (op == HCCL_REDUCE_MAX || op == HCCL_REDUCE_MIN) && v > 127 ? 127 : v % 128;
    int r = static_cast<int>(Reduced(op, base, nranks));
    if (r > 127) r = 127;
    Fill<int8_t>(dst, n, static_cast<int8_t>(r % 128));
    return true;
  }
  const double r = Reduced(op, v, nranks);
  switch (dtype) {
    case HCCL_DATA_TYPE_FP32:
      Fill<float>(dst, n, static_cast<float>(r));
      return true;
    case HCCL_DATA_TYPE_INT32:
      Fill<int32_t>(dst, n, static_cast<int32_t>(r));
      return true;
    case HCCL_DATA_TYPE_INT16:
      Fill<int16_t>(dst, n, static_cast<int16_t>(r));
      return true;
    case HCCL_DATA_TYPE_FP16:
      Fill<uint16_t>(dst, n, HalfOf(static_cast<float>(r)));
      return true;
    case HCCL_DATA_TYPE_BFP16:
      Fill<uint16_t>(dst, n, Bf16PatternOf(r));
      return true;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_UINT64:
      Fill<int64_t>(dst, n, static_cast<int64_t>(r));
      return true;
    case HCCL_DATA_TYPE_FP64:
      Fill<double>(dst, n, r);
      return true;
    default:
      return false;  // uint16, uint32 and the 8-bit floats have no reference
  }
}

bool ReductionCheckOverflows(int dtype, int op, int nranks, bool per_block) {
  if (op == HCCL_REDUCE_PROD) {
    // kValue^nranks overflows the type from these rank counts on.
    switch (dtype) {
      case HCCL_DATA_TYPE_FP16:
        return nranks >= 16;
      case HCCL_DATA_TYPE_FP32:
        return nranks >= 128;
      case HCCL_DATA_TYPE_INT8:
        return nranks >= 7;
      case HCCL_DATA_TYPE_INT32:
        return nranks >= 31;
      case HCCL_DATA_TYPE_INT64:
        return nranks >= 63;
      default:
        return false;
    }
  }
  if (op != HCCL_REDUCE_SUM) return false;
  // Bits a value of the type holds exactly (the mantissa for floats); the all_reduce family
  // checks the narrow types only.
  int bits = 0;
  switch (dtype) {
    case HCCL_DATA_TYPE_INT8:
      bits = 7;
      break;
    case HCCL_DATA_TYPE_INT16:
      bits = 15;
      break;
    case HCCL_DATA_TYPE_FP16:
      bits = 10;
      break;
    case HCCL_DATA_TYPE_BFP16:
      bits = 7;
      break;
    case HCCL_DATA_TYPE_INT32:
      bits = per_block ? 31 : 0;
      break;
    case HCCL_DATA_TYPE_FP32:
      bits = per_block ? 23 : 0;
      break;
    default:
      break;
  }
  if (bits == 0) return false;
  const int64_t range = (int64_t(1) << bits) - 1;
  const int64_t limit =
      per_block ? static_cast<int64_t>(sqrt(static_cast<double>(range))) : range / 2;
  return nranks > limit;
}

bool CopyCheckOverflows(int dtype, int nranks) {
  return IsByteSized(dtype) && nranks >= 128;
}

CompareKind ReductionCompare(int dtype, bool with_uint64_fp64) {
  switch (dtype) {
    case HCCL_DATA_TYPE_FP32:
      return kFloat;
    case HCCL_DATA_TYPE_INT8:
    case HCCL_DATA_TYPE_UINT8:
      return kByte;
    case HCCL_DATA_TYPE_INT32:
      return kWord;
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_BFP16:
      return kHalf;
    case HCCL_DATA_TYPE_INT64:
      return kLong;
    case HCCL_DATA_TYPE_UINT64:
    case HCCL_DATA_TYPE_FP64:
      return with_uint64_fp64 ? kLong : kNoCompare;
    default:
      return kNoCompare;
  }
}

CompareKind CopyCompare(int dtype) {
  if (IsByteSized(dtype)) return kByte;
  switch (dtype) {
    case HCCL_DATA_TYPE_FP32:
      return kFloat;
    case HCCL_DATA_TYPE_INT32:
    case HCCL_DATA_TYPE_UINT32:
      return kWord;
    case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_INT16:
    case HCCL_DATA_TYPE_UINT16:
    case HCCL_DATA_TYPE_BFP16:
      return kHalf;
    case HCCL_DATA_TYPE_INT64:
    case HCCL_DATA_TYPE_FP64:
      return kLong;
    case HCCL_DATA_TYPE_UINT64:
      return kULong;
    default:
      return kNoCompare;
  }
}

int Compare(CompareKind kind, const void* got, const void* want, uint64_t n, int verbose) {
  int wrong = 0;
  switch (kind) {
    case kFloat:
      wrong = CountFloat(got, want, n, verbose);
      break;
    case kByte:
      wrong = CountExact<int8_t>(got, want, n, verbose, "exp: %d, act:%d \n");
      break;
    case kHalf:
      wrong = CountExact<uint16_t>(got, want, n, verbose, "exp: %u, act:%u \n");
      break;
    case kWord:
      wrong = CountExact<int32_t>(got, want, n, verbose, "exp: %d, act:%d \n");
      break;
    case kLong:
      wrong = CountExact<long long>(got, want, n, verbose, "exp: %lld, act:%lld \n");
      break;
    case kULong:
      wrong = CountExact<unsigned long long>(got, want, n, verbose, "exp: %llu, act:%llu \n");
      break;
    case kNoCompare:
      printf("no match datatype\n");
      return 1;
  }
  if (wrong > 0) printf("total err is %d\n", wrong);
  return wrong;
}

int CheckBlocksByRank(const void* buf, const uint64_t* counts, const uint64_t* displs, int nranks,
                      int dtype, int rank, int verbose) {
  const int size = DtypeBytes(dtype);
  unsigned char want[8];
  int wrong_blocks = 0;
  for (int src = 0; src < nranks; ++src) {
    if (!FillValue(want, 1, dtype, src + 1)) return 0;
    const unsigned char* block = static_cast<const unsigned char*>(buf) + displs[src] * size;
    for (uint64_t j = 0; j < counts[src]; ++j) {
      if (memcmp(block + j * size, want, size) != 0) {
        if (verbose >= 2) {
          printf("local rankId[%d]: element %llu of the block from rank %d is wrong\n", rank,
                 static_cast<unsigned long long>(j), src);
        }
        ++wrong_blocks;
        break;
      }
    }
  }
  return wrong_blocks;
}

namespace {
const unsigned char kPattern[8] = {0x5a, 0x5a, 0x5a, 0x5a, 0xa5, 0xa5, 0xa5, 0xa5};
}

void FillPattern(void* dst, uint64_t bytes) {
  unsigned char* p = static_cast<unsigned char*>(dst);
  for (uint64_t i = 0; i < bytes; ++i) p[i] = kPattern[i % sizeof(kPattern)];
}

bool CheckPattern(const void* buf, uint64_t bytes, int nranks, int rank) {
  const unsigned char* p = static_cast<const unsigned char*>(buf);
  const uint64_t block = bytes / nranks;
  // Each sender kept bytes [rank*block, (rank+1)*block) of its pattern buffer for this rank.
  const uint64_t origin = block * rank;
  bool ok = true;
  for (int src = 0; src < nranks; ++src) {
    for (uint64_t j = 0; j < block; ++j) {
      const unsigned char want = kPattern[(origin + j) % sizeof(kPattern)];
      const unsigned char got = p[src * block + j];
      if (got != want) {
        printf(
            "byte %llu of the block rank[%d] sent to rank[%d] is wrong: expected[%x], "
            "actual[%x]\n",
            static_cast<unsigned long long>(j), src, rank, want, got);
        ok = false;
        break;
      }
    }
  }
  return ok;
}

}  // namespace hccl_test
