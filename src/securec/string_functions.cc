// strcpy_s, strncpy_s, strcat_s, strncat_s, strtok_s and their wide forms. One template per
// operation serves char and wchar_t: the reference library gives both the same contract, with
// sizes counted in elements of the character type.
#include <cstring>

#include "securec/secure_util.h"

namespace vigil::securec {
namespace {

template <typename Char>
errno_t Reset(Char* dest, errno_t code) {
  dest[0] = Char(0);
  return code;
}

// The checks every copy and append starts with; EOK when the arguments are usable.
template <typename Char>
errno_t CheckArgs(Char* dest, size_t dest_max, const Char* src) {
  if (dest_max == 0 || dest_max > kStringMax<Char>) return ERANGE;
  if (dest == nullptr) return EINVAL;
  if (src == nullptr) return Reset(dest, EINVAL_AND_RESET);
  return EOK;
}

template <typename Char>
errno_t Copy(Char* dest, size_t dest_max, const Char* src) {
  if (errno_t e = CheckArgs(dest, dest_max, src); e != EOK) return e;
  const size_t len = BoundedLength(src, dest_max);
  if (len == dest_max) return Reset(dest, ERANGE_AND_RESET);  // no room for the terminator
  if (dest == src) return EOK;
  const size_t bytes = (len + 1) * sizeof(Char);
  if (RangesOverlap(dest, src, bytes)) return Reset(dest, EOVERLAP_AND_RESET);
  memcpy(dest, src, bytes);
  return EOK;
}

template <typename Char>
errno_t CopyLimited(Char* dest, size_t dest_max, const Char* src, size_t count) {
  if (errno_t e = CheckArgs(dest, dest_max, src); e != EOK) return e;
  if (count > kStringMax<Char>) return Reset(dest, ERANGE_AND_RESET);
  if (count == 0) return Reset(dest, EOK);
  size_t len;
  if (count < dest_max) {
    len = BoundedLength(src, count);
  } else {
    // count does not bound the copy, so the whole source must fit.
    len = BoundedLength(src, dest_max);
    if (len == dest_max) return Reset(dest, ERANGE_AND_RESET);
  }
  if (dest == src) {
    // The reference's narrow form still cuts the string after len characters; its wide form
    // leaves it as it is. Both kept, so a program sees the same string it saw on CANN.
    if constexpr (sizeof(Char) == 1) dest[len] = Char(0);
    return EOK;
  }
  if (RangesOverlap(dest, src, (len + 1) * sizeof(Char))) return Reset(dest, EOVERLAP_AND_RESET);
  memcpy(dest, src, len * sizeof(Char));
  dest[len] = Char(0);
  return EOK;
}

// Appends the first src_len characters of src after the dest_len characters of dest.
template <typename Char>
errno_t AppendMeasured(Char* dest, size_t dest_max, const Char* src, size_t dest_len,
                       size_t src_len) {
  const uintptr_t d = Addr(dest);
  const uintptr_t s = Addr(src);
  // The result [dest, dest + dest_len + src_len] must not reach src, nor src's part reach dest.
  const bool overlap = (d < s && d + (dest_len + src_len) * sizeof(Char) >= s) ||
                       (s < d && s + src_len * sizeof(Char) >= d);
  if (overlap) {
    // An unterminated dest that runs into src is reported as unterminated.
    const bool unterminated = dest_len == dest_max && d + dest_len * sizeof(Char) <= s;
    return Reset(dest, unterminated ? EINVAL_AND_RESET : EOVERLAP_AND_RESET);
  }
  if (src_len + dest_len >= dest_max || dest == src) {
    return Reset(dest, dest_len == dest_max ? EINVAL_AND_RESET : ERANGE_AND_RESET);
  }
  memcpy(dest + dest_len, src, src_len * sizeof(Char));
  dest[dest_len + src_len] = Char(0);
  return EOK;
}

template <typename Char>
errno_t Append(Char* dest, size_t dest_max, const Char* src) {
  if (errno_t e = CheckArgs(dest, dest_max, src); e != EOK) return e;
  const size_t dest_len = BoundedLength(dest, dest_max);
  // Measuring src stops where it could no longer fit: src may be unterminated or huge.
  const size_t src_len = BoundedLength(src, dest_max - dest_len);
  return AppendMeasured(dest, dest_max, src, dest_len, src_len);
}

template <typename Char>
errno_t AppendLimited(Char* dest, size_t dest_max, const Char* src, size_t count) {
  if (errno_t e = CheckArgs(dest, dest_max, src); e != EOK) return e;
  if (count > kStringMax<Char>) return Reset(dest, ERANGE_AND_RESET);
  const size_t dest_len = BoundedLength(dest, dest_max);
  const size_t src_len = BoundedLength(src, count);
  return AppendMeasured(dest, dest_max, src, dest_len, src_len);
}

template <typename Char>
bool IsDelimiter(Char c, const Char* delimiters) {
  for (const Char* d = delimiters; *d != Char(0); ++d) {
    if (*d == c) return true;
  }
  return false;
}

template <typename Char>
Char* Tokenize(Char* str, const Char* delimiters, Char** context) {
  if (context == nullptr || delimiters == nullptr) return nullptr;
  if (str == nullptr) {
    if (*context == nullptr) return nullptr;
    str = *context;
  }
  while (*str != Char(0) && IsDelimiter(*str, delimiters)) ++str;
  Char* end = str;
  while (*end != Char(0) && !IsDelimiter(*end, delimiters)) ++end;
  if (*end != Char(0)) {
    *end = Char(0);
    *context = end + 1;
  } else {
    *context = end;
  }
  return end == str ? nullptr : str;
}

}  // namespace
}  // namespace vigil::securec

namespace sec = vigil::securec;

extern "C" {

errno_t strcpy_s(char* strDest, size_t destMax, const char* strSrc) {
  return sec::Copy(strDest, destMax, strSrc);
}

errno_t strncpy_s(char* strDest, size_t destMax, const char* strSrc, size_t count) {
  return sec::CopyLimited(strDest, destMax, strSrc, count);
}

errno_t strcat_s(char* strDest, size_t destMax, const char* strSrc) {
  return sec::Append(strDest, destMax, strSrc);
}

errno_t strncat_s(char* strDest, size_t destMax, const char* strSrc, size_t count) {
  return sec::AppendLimited(strDest, destMax, strSrc, count);
}

char* strtok_s(char* strToken, const char* strDelimit, char** context) {
  return sec::Tokenize(strToken, strDelimit, context);
}

errno_t wcscpy_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc) {
  return sec::Copy(strDest, destMax, strSrc);
}

errno_t wcsncpy_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc, size_t count) {
  return sec::CopyLimited(strDest, destMax, strSrc, count);
}

errno_t wcscat_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc) {
  return sec::Append(strDest, destMax, strSrc);
}

errno_t wcsncat_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc, size_t count) {
  return sec::AppendLimited(strDest, destMax, strSrc, count);
}

wchar_t* wcstok_s(wchar_t* strToken, const wchar_t* strDelimit, wchar_t** context) {
  return sec::Tokenize(strToken, strDelimit, context);
}

}  // extern "C"
