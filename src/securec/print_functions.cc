// sprintf_s, snprintf_s and their va_list and "truncated" forms, over the C library's
// vsnprintf: the formatting is glibc's, the size checks and error results are securec's.
#include <cstdarg>
#include <cstdio>

#include "securec/secure_util.h"

namespace vigil::securec {
namespace {

constexpr int kTruncated = -2;

// %n writes through a pointer argument: the one conversion that stores into memory the
// caller did not size. The reference library refuses formats holding it, and so do we.
bool HasCountConversion(const char* format) {
  for (const char* p = format; *p != '\0'; ++p) {
    if (*p != '%') continue;
    ++p;
    if (*p == '%') continue;
    // Flags, argument position, width, precision and length modifiers.
    while (*p != '\0' && strchr("0123456789 +-#'.*$hlLqjztIwZ", *p) != nullptr) ++p;
    if (*p == 'n') return true;
    if (*p == '\0') break;
  }
  return false;
}

// Formats into a buffer of `size` (> 0) characters. Returns the length written, kTruncated
// when the output did not fit (the buffer then holds its first size - 1 characters), or -1.
int FormatInto(char* dest, size_t size, const char* format, va_list args) {
  if (HasCountConversion(format)) {
    dest[0] = '\0';
    return -1;
  }
  const int written = vsnprintf(dest, size, format, args);
  if (written < 0) {
    dest[0] = '\0';
    return -1;
  }
  if (static_cast<size_t>(written) >= size) return kTruncated;
  return written;
}

// The argument checks of the printf family: false (dest reset when it can be) on a bad one.
bool ArgsUsable(char* dest, size_t dest_max, const char* format) {
  const bool size_ok = dest_max > 0 && dest_max <= SECUREC_STRING_MAX_LEN;
  if (dest != nullptr && format != nullptr && size_ok) return true;
  if (dest != nullptr && size_ok) dest[0] = '\0';
  return false;
}

}  // namespace
}  // namespace vigil::securec

namespace sec = vigil::securec;

extern "C" {

int vsprintf_s(char* strDest, size_t destMax, const char* format, va_list argList) {
  if (!sec::ArgsUsable(strDest, destMax, format)) return -1;
  const int written = sec::FormatInto(strDest, destMax, format, argList);
  if (written < 0) {
    strDest[0] = '\0';  // too long for destMax is an error here, not a truncation
    return -1;
  }
  return written;
}

int sprintf_s(char* strDest, size_t destMax, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int written = vsprintf_s(strDest, destMax, format, args);
  va_end(args);
  return written;
}

int vsnprintf_s(char* strDest, size_t destMax, size_t count, const char* format, va_list argList) {
  // count leaves room for the terminator, hence one below the string limit.
  if (count > SECUREC_STRING_MAX_LEN - 1) {
    if (strDest != nullptr && destMax > 0 && destMax <= SECUREC_STRING_MAX_LEN) {
      strDest[0] = '\0';
    }
    return -1;
  }
  if (!sec::ArgsUsable(strDest, destMax, format)) return -1;
  int written;
  if (count < destMax) {
    // The caller asked for at most count characters: cutting there is the expected outcome,
    // reported as -1 with the cut string kept.
    written = sec::FormatInto(strDest, count + 1, format, argList);
    if (written == sec::kTruncated) return -1;
  } else {
    written = sec::FormatInto(strDest, destMax, format, argList);
  }
  if (written < 0) {
    strDest[0] = '\0';
    return -1;
  }
  return written;
}

int snprintf_s(char* strDest, size_t destMax, size_t count, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int written = vsnprintf_s(strDest, destMax, count, format, args);
  va_end(args);
  return written;
}

int vsnprintf_truncated_s(char* strDest, size_t destMax, const char* format, va_list argList) {
  if (!sec::ArgsUsable(strDest, destMax, format)) return -1;
  const int written = sec::FormatInto(strDest, destMax, format, argList);
  if (written == sec::kTruncated) return static_cast<int>(destMax - 1);
  if (written < 0) {
    strDest[0] = '\0';
    return -1;
  }
  return written;
}

int snprintf_truncated_s(char* strDest, size_t destMax, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int written = vsnprintf_truncated_s(strDest, destMax, format, args);
  va_end(args);
  return written;
}

}  // extern "C"
