// memset_s, memcpy_s, memmove_s and their wide forms: the checks of include/securec.h in the
// order the reference library applies them (size first, then pointers, then count, then
// overlap), since that order decides which code a call with several faults gets.
#include <cstring>

#include "securec/secure_util.h"

using vigil::securec::FillBytes;
using vigil::securec::RangesOverlap;

namespace {

// The checks memcpy_s and memmove_s share, in the reference's order: the size, the pointers,
// then the count (a usable dest is reset on the last two).
errno_t CheckByteCopy(void* dest, size_t destMax, const void* src, size_t count) {
  if (destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return ERANGE;
  if (dest == nullptr || src == nullptr) {
    if (dest == nullptr) return EINVAL;
    FillBytes(dest, 0, destMax);
    return EINVAL_AND_RESET;
  }
  if (count > destMax) {
    FillBytes(dest, 0, destMax);
    return ERANGE_AND_RESET;
  }
  return EOK;
}

}  // namespace

extern "C" {

errno_t memset_s(void* dest, size_t destMax, int c, size_t count) {
  // A zero-sized buffer with a zero count is a valid no-op here, unlike in the copy functions.
  if (dest != nullptr && destMax <= SECUREC_MEM_MAX_LEN && count <= destMax) {
    FillBytes(dest, c, count);
    return EOK;
  }
  if (destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return ERANGE;
  if (dest == nullptr) return EINVAL;
  FillBytes(dest, c, destMax);  // count > destMax: the whole buffer, then the error
  return ERANGE_AND_RESET;
}

errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (const errno_t rc = CheckByteCopy(dest, destMax, src, count); rc != EOK) return rc;
  if (dest == src || count == 0) return EOK;
  if (RangesOverlap(dest, src, count)) {
    FillBytes(dest, 0, destMax);
    return EOVERLAP_AND_RESET;
  }
  memcpy(dest, src, count);
  return EOK;
}

errno_t memmove_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (const errno_t rc = CheckByteCopy(dest, destMax, src, count); rc != EOK) return rc;
  if (dest != src && count > 0) memmove(dest, src, count);
  return EOK;
}

// The wide forms check destMax and count in elements first (a null dest with count > destMax
// is then ERANGE, not EINVAL), and leave the rest to the byte functions.
errno_t wmemcpy_s(wchar_t* dest, size_t destMax, const wchar_t* src, size_t count) {
  if (destMax == 0 || destMax > SECUREC_WCHAR_MEM_MAX_LEN) return ERANGE;
  if (count > destMax) {
    if (dest == nullptr) return ERANGE;
    FillBytes(dest, 0, destMax * sizeof(wchar_t));
    return ERANGE_AND_RESET;
  }
  return memcpy_s(dest, destMax * sizeof(wchar_t), src, count * sizeof(wchar_t));
}

errno_t wmemmove_s(wchar_t* dest, size_t destMax, const wchar_t* src, size_t count) {
  if (destMax == 0 || destMax > SECUREC_WCHAR_MEM_MAX_LEN) return ERANGE;
  if (count > destMax) {
    if (dest == nullptr) return ERANGE;
    FillBytes(dest, 0, destMax * sizeof(wchar_t));
    return ERANGE_AND_RESET;
  }
  return memmove_s(dest, destMax * sizeof(wchar_t), src, count * sizeof(wchar_t));
}

// CANN's programs print this in their logs; the number is the API level whose contract this
// library follows, so code that compares it sees a library it knows.
const char* GetHwSecureCVersion(unsigned short* verNumber) {
  if (verNumber != nullptr) *verNumber = 0x50b;
  return "Vigil libc_sec (securec API V100R001C01SPC011)";
}

}  // extern "C"
