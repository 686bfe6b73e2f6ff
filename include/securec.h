/*
 * securec.h: the bounds-checked C functions CANN ships as libc_sec.so ("securec"), which HCCL
 * programs include and link with -lc_sec. Vigil's libc_sec.so is its own implementation of the
 * same contract, so such programs build and behave unchanged.
 *
 * Names, signatures, error-code values and limits follow the public headers of Huawei's
 * library (openeuler-mirror/libboundscheck: include/securec.h, include/securectype.h). What each
 * function does on bad arguments follows the contracts written above each function in that
 * library's sources (checked in the copy at alibaba/MNN:
 * 3rd_party/ffrt/third_party/bounds_checking_function/src, one .c file per function).
 *
 * The contract, in short:
 *  - Every function with a destination checks its size first: destMax of 0 or above the
 *    MAX_LEN limit of securectype.h returns ERANGE (-1 for the printf family) and touches
 *    nothing.
 *  - A null dest returns EINVAL; a null source with a usable dest returns EINVAL_AND_RESET
 *    (wmemcpy_s/wmemmove_s check count > destMax before the pointers).
 *  - "_AND_RESET" codes mean dest was reset before returning: the mem* functions zero all
 *    destMax bytes (memset_s fills them with c), the string functions write '\0' at dest[0].
 *  - String results are always terminated. Output that does not fit is an error, never cut
 *    short, except where the caller asks for a cut: the count of strncpy_s/strncat_s, and
 *    snprintf_s/vsnprintf_s with count < destMax, which keep count characters and return -1.
 *  - Overlapping source and destination fail with EOVERLAP_AND_RESET (memmove_s allows it).
 *  - The printf family returns the number of characters written, or -1 on any error, with
 *    dest[0] = '\0'. A format holding %n is refused.
 *  - sscanf_s/vsscanf_s take, after each %s, %c and %[ pointer, the buffer's size in
 *    characters; input that does not fit ends the scan with dest[0] = '\0'.
 */
#ifndef VIGIL_SECUREC_H
#define VIGIL_SECUREC_H

#include <errno.h>
#include <stdarg.h>

#include "securectype.h"

/*
 * errno_t is the C11 Annex K type; <errno.h> declares it only when the C library implements
 * Annex K and the program asks for it, or on platforms that always do (_ERRNO_T_DEFINED).
 */
#if !defined(SECUREC_DEFINED_ERRNO_TYPE) && !defined(_ERRNO_T_DEFINED) && !defined(errno_t)
#if !(defined(__STDC_LIB_EXT1__) && defined(__STDC_WANT_LIB_EXT1__) && __STDC_WANT_LIB_EXT1__)
#define SECUREC_DEFINED_ERRNO_TYPE
typedef int errno_t;
#endif
#endif

/* Success. */
#ifndef EOK
#define EOK 0
#endif
/* A bad argument; dest could not be reset (it is null, or its size is unusable). */
#ifndef EINVAL
#define EINVAL 22
#endif
/* A bad argument; dest was reset. */
#ifndef EINVAL_AND_RESET
#define EINVAL_AND_RESET 150
#endif
/* destMax is 0 or above the limit, or the result does not fit; dest was not touched. */
#ifndef ERANGE
#define ERANGE 34
#endif
/* The result does not fit in destMax; dest was reset. */
#ifndef ERANGE_AND_RESET
#define ERANGE_AND_RESET 162
#endif
/* Source and destination overlap; dest was reset. */
#ifndef EOVERLAP_AND_RESET
#define EOVERLAP_AND_RESET 182
#endif

#ifndef SECUREC_API
#define SECUREC_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version string; *verNumber (when not null) gets its number. */
SECUREC_API const char* GetHwSecureCVersion(unsigned short* verNumber);

/* Sets the first count bytes of dest to (unsigned char)c. count > destMax fills all destMax
 * bytes with c and returns ERANGE_AND_RESET; destMax 0 with count 0 is EOK. */
SECUREC_API errno_t memset_s(void* dest, size_t destMax, int c, size_t count);

/* Copies count bytes; regions may overlap. */
SECUREC_API errno_t memmove_s(void* dest, size_t destMax, const void* src, size_t count);

/* Copies count bytes; overlapping regions fail with EOVERLAP_AND_RESET. */
SECUREC_API errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count);

/* Copies strSrc with its terminator; a source of destMax or more characters fails with
 * ERANGE_AND_RESET. */
SECUREC_API errno_t strcpy_s(char* strDest, size_t destMax, const char* strSrc);

/* Copies at most count characters of strSrc and terminates. count == 0 gives "" and EOK. */
SECUREC_API errno_t strncpy_s(char* strDest, size_t destMax, const char* strSrc, size_t count);

/* Appends strSrc. An unterminated strDest (no '\0' in destMax) fails with EINVAL_AND_RESET. */
SECUREC_API errno_t strcat_s(char* strDest, size_t destMax, const char* strSrc);

/* Appends at most count characters of strSrc and terminates. */
SECUREC_API errno_t strncat_s(char* strDest, size_t destMax, const char* strSrc, size_t count);

/* Formats into strDest; output that does not fit in destMax returns -1 with strDest[0] = '\0'. */
SECUREC_API int vsprintf_s(char* strDest, size_t destMax, const char* format, va_list argList)
    SECUREC_ATTRIBUTE(3, 0);

SECUREC_API int sprintf_s(char* strDest, size_t destMax, const char* format, ...)
    SECUREC_ATTRIBUTE(3, 4);

/*
 * Formats at most count characters into strDest. When count < destMax and the output is
 * longer, strDest keeps the first count characters, terminated, and the call returns -1.
 * When count >= destMax, output that does not fit in destMax is an error (strDest[0] = '\0').
 */
SECUREC_API int vsnprintf_s(char* strDest, size_t destMax, size_t count, const char* format,
                            va_list argList) SECUREC_ATTRIBUTE(4, 0);

SECUREC_API int snprintf_s(char* strDest, size_t destMax, size_t count, const char* format, ...)
    SECUREC_ATTRIBUTE(4, 5);

/* As vsnprintf_s with count = destMax - 1, except that truncation returns destMax - 1. */
SECUREC_API int vsnprintf_truncated_s(char* strDest, size_t destMax, const char* format,
                                      va_list argList) SECUREC_ATTRIBUTE(3, 0);

SECUREC_API int snprintf_truncated_s(char* strDest, size_t destMax, const char* format, ...)
    SECUREC_ATTRIBUTE(3, 4);

/* Returns the number of fields assigned, or -1 (null or empty buffer, null format or argument,
 * a bad format, or input ending before the first conversion). */
SECUREC_API int sscanf_s(const char* buffer, const char* format, ...);

SECUREC_API int vsscanf_s(const char* buffer, const char* format, va_list argList);

/* Splits strToken at characters of strDelimit; *context keeps the position between calls
 * (pass strToken = NULL to continue). Returns NULL when no token is left or on a null
 * strDelimit or context. */
SECUREC_API char* strtok_s(char* strToken, const char* strDelimit, char** context);

/* Wide-character forms: sizes and counts are in wchar_t elements. */
SECUREC_API errno_t wmemcpy_s(wchar_t* dest, size_t destMax, const wchar_t* src, size_t count);

SECUREC_API errno_t wmemmove_s(wchar_t* dest, size_t destMax, const wchar_t* src, size_t count);

SECUREC_API errno_t wcscpy_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc);

SECUREC_API errno_t wcsncpy_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc,
                              size_t count);

SECUREC_API errno_t wcscat_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc);

SECUREC_API errno_t wcsncat_s(wchar_t* strDest, size_t destMax, const wchar_t* strSrc,
                              size_t count);

SECUREC_API wchar_t* wcstok_s(wchar_t* strToken, const wchar_t* strDelimit, wchar_t** context);

#ifdef __cplusplus
}
#endif

#endif /* VIGIL_SECUREC_H */
