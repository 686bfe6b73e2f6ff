// acl_base.h's host-side data-type functions: element sizes and float <-> half conversion, which
// programs use to fill and check fp16 buffers of collectives.
#include <cmath>
#include <cstring>

#include "acl/acl.h"

namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value) {
  const uint32_t sign = static_cast<uint32_t>(value & 0x8000u) << 16;
  const uint32_t exp = (value >> 10) & 0x1Fu;
  const uint32_t man = value & 0x3FFu;
  if (exp == 0x1F) return FromBits(sign | 0x7F800000u | (man << 13));  // inf, NaN
  if (exp != 0) return FromBits(sign | ((exp + 112u) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in float.
  const float mag = std::ldexp(static_cast<float>(man), -24);
  return sign != 0 ? -mag : mag;
}

ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value) {
  const uint32_t u = Bits(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN (a NaN keeps a set quiet bit)
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x38800000u) {
    // Below half's smallest normal (2^-14): a subnormal in units of 2^-24, rounded to even.
    const float scaled = FromBits(abs) * 16777216.0f;  // exact: a power of two
    const float rounded = std::nearbyint(scaled);      // the default mode: to nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(rounded));
  }
  // Normal: keep 10 of the 23 mantissa bits, round to nearest even on the 13 dropped.
  uint32_t half = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;  // may carry into exp
  return static_cast<uint16_t>(sign | half);
}

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) {
  switch (dataType) {
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_BOOL:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
      return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16:
      return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32:
      return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64:
      return 8;
    case ACL_COMPLEX128:
      return 16;
    default:  // undefined, strings, and the types smaller than a byte
      return 0;
  }
}

}  // extern "C"
