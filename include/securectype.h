/*
 * securectype.h: the limits and types of the bounds-checked C library (libc_sec.so) that CANN
 * installs beside HCCL. Included by securec.h; programs normally include securec.h only.
 *
 * The C headers securec.h has always brought in (stdio.h, string.h, stdlib.h, stddef.h) are
 * included here as well, so programs that lean on them keep compiling.
 */
#ifndef VIGIL_SECURECTYPE_H
#define VIGIL_SECURECTYPE_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Largest buffer, in bytes, the string and formatting functions accept (destMax, count).
 * A larger value is taken as a corrupted size: the call fails with ERANGE (or -1) instead.
 * The library is built with these values; redefining them in a program changes nothing in it.
 */
#ifndef SECUREC_STRING_MAX_LEN
#define SECUREC_STRING_MAX_LEN 0x7fffffffUL
#endif
/* Largest buffer, in bytes, of memset_s, memcpy_s and memmove_s. */
#ifndef SECUREC_MEM_MAX_LEN
#define SECUREC_MEM_MAX_LEN 0x7fffffffUL
#endif
/* The same limits counted in wide characters, for the wcs* and wmem* functions. */
#define SECUREC_WCHAR_STRING_MAX_LEN (SECUREC_STRING_MAX_LEN / sizeof(wchar_t))
#define SECUREC_WCHAR_MEM_MAX_LEN (SECUREC_MEM_MAX_LEN / sizeof(wchar_t))

#if SECUREC_STRING_MAX_LEN > 0x7fffffffUL
#error "SECUREC_STRING_MAX_LEN may not exceed 2 GiB"
#endif

#if defined(__LP64__) || defined(_LP64) || (defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 8)
#define SECUREC_ON_64BITS
#endif

/*
 * The printf-like functions carry no format attribute by default, as in CANN's library: turning
 * it on can make -Werror builds of existing programs fail. Define
 * SECUREC_SUPPORT_FORMAT_WARNING=1 to get -Wformat checks of their arguments.
 */
#ifndef SECUREC_SUPPORT_FORMAT_WARNING
#define SECUREC_SUPPORT_FORMAT_WARNING 0
#endif
#if SECUREC_SUPPORT_FORMAT_WARNING
#define SECUREC_ATTRIBUTE(x, y) __attribute__((format(printf, (x), (y))))
#else
#define SECUREC_ATTRIBUTE(x, y)
#endif

#endif /* VIGIL_SECURECTYPE_H */
