// libc_sec.so against the securec contract (include/securec.h): each function's result and
// what it leaves in the destination, on success and on every documented error.
#include "securec.h"

#include <gtest/gtest.h>

#include <cstdarg>
#include <cwchar>
#include <string>
#include <type_traits>

extern "C" int VigilSecurecFromC(char* out, size_t size, const char* prefix, int n);

namespace {

constexpr size_t kTooBig = SECUREC_STRING_MAX_LEN + 1;
const char* const kNullStr = nullptr;

int CallVsprintf(char* dest, size_t destMax, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int rc = vsprintf_s(dest, destMax, format, args);
  va_end(args);
  return rc;
}

int CallVsnprintf(char* dest, size_t destMax, size_t count, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int rc = vsnprintf_s(dest, destMax, count, format, args);
  va_end(args);
  return rc;
}

int CallVsscanf(const char* buffer, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int rc = vsscanf_s(buffer, format, args);
  va_end(args);
  return rc;
}

TEST(SecurecConstants, ValuesAndTypes) {
  static_assert(std::is_same_v<errno_t, int>);
  EXPECT_EQ(EOK, 0);
  EXPECT_EQ(EINVAL, 22);
  EXPECT_EQ(ERANGE, 34);
  EXPECT_EQ(EINVAL_AND_RESET, 150);
  EXPECT_EQ(ERANGE_AND_RESET, 162);
  EXPECT_EQ(EOVERLAP_AND_RESET, 182);
  EXPECT_EQ(SECUREC_MEM_MAX_LEN, 0x7fffffffUL);
  EXPECT_EQ(SECUREC_STRING_MAX_LEN, 0x7fffffffUL);
  EXPECT_EQ(SECUREC_WCHAR_STRING_MAX_LEN, 0x7fffffffUL / sizeof(wchar_t));
  unsigned short number = 0;
  EXPECT_NE(GetHwSecureCVersion(&number), nullptr);
  EXPECT_EQ(number, 0x50b);
  EXPECT_NE(GetHwSecureCVersion(nullptr), nullptr);
}

TEST(SecurecC, HeaderWorksFromC) {
  char out[8];
  EXPECT_EQ(VigilSecurecFromC(out, sizeof(out), "rank", 3), 6);
  EXPECT_STREQ(out, "rank-3");
  EXPECT_EQ(VigilSecurecFromC(out, sizeof(out), "rank", 1234), -1);
  EXPECT_STREQ(out, "rank-12");
}

TEST(MemsetS, FillsCount) {
  char buf[8] = "abcdefg";
  EXPECT_EQ(memset_s(buf, 6, 'x', 4), EOK);
  EXPECT_STREQ(buf, "xxxxefg");
  EXPECT_EQ(memset_s(buf, sizeof(buf), 0, 0), EOK);
  EXPECT_STREQ(buf, "xxxxefg");
  EXPECT_EQ(memset_s(buf, 0, 'y', 0), EOK);  // empty buffer, nothing to set
  EXPECT_STREQ(buf, "xxxxefg");
}

TEST(MemsetS, Errors) {
  char buf[8] = "abcdefg";
  EXPECT_EQ(memset_s(buf, 0, 'y', 1), ERANGE);
  EXPECT_EQ(memset_s(buf, SECUREC_MEM_MAX_LEN + 1, 'y', 1), ERANGE);
  EXPECT_STREQ(buf, "abcdefg");
  EXPECT_EQ(memset_s(nullptr, 4, 'y', 1), EINVAL);
  EXPECT_EQ(memset_s(buf, 3, 'z', 5), ERANGE_AND_RESET);  // destMax bytes set to c
  EXPECT_STREQ(buf, "zzzdefg");
}

TEST(MemcpyS, Copies) {
  char buf[8] = "abcdefg";
  EXPECT_EQ(memcpy_s(buf, sizeof(buf), "XYZ", 3), EOK);
  EXPECT_STREQ(buf, "XYZdefg");
  EXPECT_EQ(memcpy_s(buf, sizeof(buf), "123", 0), EOK);
  EXPECT_STREQ(buf, "XYZdefg");
  EXPECT_EQ(memcpy_s(buf, sizeof(buf), buf, 4), EOK);  // same buffer: nothing to do
  EXPECT_STREQ(buf, "XYZdefg");
  EXPECT_EQ(memcpy_s(buf + 3, 3, buf, 3), EOK);  // adjacent, not overlapping
  EXPECT_STREQ(buf, "XYZXYZg");
}

TEST(MemcpyS, Errors) {
  char buf[8] = "abcdefg";
  EXPECT_EQ(memcpy_s(buf, 0, "x", 1), ERANGE);
  EXPECT_EQ(memcpy_s(buf, SECUREC_MEM_MAX_LEN + 1, "x", 1), ERANGE);
  EXPECT_STREQ(buf, "abcdefg");
  EXPECT_EQ(memcpy_s(nullptr, 4, "x", 1), EINVAL);
  EXPECT_EQ(memcpy_s(buf, 4, nullptr, 1), EINVAL_AND_RESET);  // first destMax bytes zeroed
  EXPECT_EQ(std::string(buf, 7), std::string("\0\0\0\0efg", 7));
  memcpy(buf, "abcdefg", 8);
  EXPECT_EQ(memcpy_s(buf, 3, "12345", 5), ERANGE_AND_RESET);
  EXPECT_EQ(std::string(buf, 7), std::string("\0\0\0defg", 7));
  memcpy(buf, "abcdefg", 8);
  EXPECT_EQ(memcpy_s(buf + 2, 4, buf, 4), EOVERLAP_AND_RESET);
  EXPECT_EQ(std::string(buf, 7), std::string("ab\0\0\0\0g", 7));
  memcpy(buf, "abcdefg", 8);
  EXPECT_EQ(memcpy_s(buf, 4, buf + 1, 4), EOVERLAP_AND_RESET);
  EXPECT_EQ(std::string(buf, 7), std::string("\0\0\0\0efg", 7));
}

TEST(MemmoveS, MovesOverlapping) {
  char buf[8] = "abcdefg";
  EXPECT_EQ(memmove_s(buf + 2, 5, buf, 4), EOK);
  EXPECT_STREQ(buf, "ababcdg");
  EXPECT_EQ(memmove_s(buf, 7, buf + 3, 4), EOK);
  EXPECT_STREQ(buf, "bcdgcdg");
  EXPECT_EQ(memmove_s(buf, 7, buf, 7), EOK);
  EXPECT_EQ(memmove_s(buf, 7, "zz", 0), EOK);
  EXPECT_STREQ(buf, "bcdgcdg");
}

TEST(MemmoveS, Errors) {
  char buf[8] = "abcdefg";
  EXPECT_EQ(memmove_s(buf, 0, "x", 1), ERANGE);
  EXPECT_EQ(memmove_s(buf, SECUREC_MEM_MAX_LEN + 1, "x", 1), ERANGE);
  EXPECT_STREQ(buf, "abcdefg");
  EXPECT_EQ(memmove_s(nullptr, 4, "x", 1), EINVAL);
  EXPECT_EQ(memmove_s(buf, 2, nullptr, 1), EINVAL_AND_RESET);
  EXPECT_EQ(std::string(buf, 7), std::string("\0\0cdefg", 7));
  EXPECT_EQ(memmove_s(buf + 2, 2, "123", 3), ERANGE_AND_RESET);
  EXPECT_EQ(std::string(buf, 7), std::string("\0\0\0\0efg", 7));
}

TEST(WmemS, CopyAndMove) {
  wchar_t buf[6] = L"abcde";
  EXPECT_EQ(wmemcpy_s(buf, 6, L"XY", 2), EOK);
  EXPECT_STREQ(buf, L"XYcde");
  EXPECT_EQ(wmemmove_s(buf + 1, 5, buf, 3), EOK);
  EXPECT_STREQ(buf, L"XXYce");
  EXPECT_EQ(wmemcpy_s(buf, 0, L"x", 1), ERANGE);
  EXPECT_EQ(wmemcpy_s(buf, SECUREC_WCHAR_MEM_MAX_LEN + 1, L"x", 1), ERANGE);
  EXPECT_EQ(wmemmove_s(buf, 0, L"x", 1), ERANGE);
  EXPECT_STREQ(buf, L"XXYce");
  // count > destMax is checked before the pointers: a null dest gets ERANGE here.
  EXPECT_EQ(wmemcpy_s(nullptr, 2, L"abc", 3), ERANGE);
  EXPECT_EQ(wmemmove_s(nullptr, 2, L"abc", 3), ERANGE);
  EXPECT_EQ(wmemcpy_s(nullptr, 2, L"ab", 2), EINVAL);
  EXPECT_EQ(wmemcpy_s(buf, 2, L"abc", 3), ERANGE_AND_RESET);
  EXPECT_EQ(buf[0], L'\0');
  EXPECT_EQ(buf[1], L'\0');
  EXPECT_EQ(buf[2], L'Y');
  wmemcpy(buf, L"abcde", 6);
  EXPECT_EQ(wmemmove_s(buf, 2, L"abc", 3), ERANGE_AND_RESET);
  EXPECT_EQ(buf[1], L'\0');
  wmemcpy(buf, L"abcde", 6);
  EXPECT_EQ(wmemcpy_s(buf, 2, nullptr, 1), EINVAL_AND_RESET);
  EXPECT_EQ(buf[0], L'\0');
  wmemcpy(buf, L"abcde", 6);
  EXPECT_EQ(wmemcpy_s(buf + 1, 3, buf, 3), EOVERLAP_AND_RESET);
  EXPECT_EQ(std::wstring(buf, 5), std::wstring(L"a\0\0\0e", 5));
}

TEST(StrcpyS, Copies) {
  char buf[6] = "zzzzz";
  EXPECT_EQ(strcpy_s(buf, sizeof(buf), "abc"), EOK);
  EXPECT_STREQ(buf, "abc");
  EXPECT_EQ(strcpy_s(buf, sizeof(buf), "12345"), EOK);  // exact fit
  EXPECT_STREQ(buf, "12345");
  EXPECT_EQ(strcpy_s(buf, sizeof(buf), buf), EOK);
  EXPECT_STREQ(buf, "12345");
}

TEST(StrcpyS, Errors) {
  char buf[6] = "zzzzz";
  EXPECT_EQ(strcpy_s(buf, 0, "a"), ERANGE);
  EXPECT_EQ(strcpy_s(buf, kTooBig, "a"), ERANGE);
  EXPECT_STREQ(buf, "zzzzz");
  EXPECT_EQ(strcpy_s(nullptr, 6, "a"), EINVAL);
  EXPECT_EQ(strcpy_s(buf, 6, kNullStr), EINVAL_AND_RESET);
  EXPECT_EQ(std::string(buf, 5), std::string("\0zzzz", 5));
  memcpy(buf, "zzzzz", 6);
  EXPECT_EQ(strcpy_s(buf, sizeof(buf), "123456"), ERANGE_AND_RESET);  // no room for '\0'
  EXPECT_EQ(std::string(buf, 5), std::string("\0zzzz", 5));
  char big[8] = "abc";
  EXPECT_EQ(strcpy_s(big + 1, 7, big), EOVERLAP_AND_RESET);
  EXPECT_EQ(big[1], '\0');
  EXPECT_EQ(big[0], 'a');
}

TEST(StrncpyS, CopiesAtMostCount) {
  char buf[6] = "zzzzz";
  EXPECT_EQ(strncpy_s(buf, sizeof(buf), "abcdef", 3), EOK);
  EXPECT_STREQ(buf, "abc");
  EXPECT_EQ(strncpy_s(buf, sizeof(buf), "xy", 10), EOK);  // count beyond the source
  EXPECT_STREQ(buf, "xy");
  EXPECT_EQ(strncpy_s(buf, sizeof(buf), "12345", 5), EOK);
  EXPECT_STREQ(buf, "12345");
  EXPECT_EQ(strncpy_s(buf, sizeof(buf), "abc", 0), EOK);  // empty result
  EXPECT_STREQ(buf, "");
  memcpy(buf, "hello", 6);
  EXPECT_EQ(strncpy_s(buf, sizeof(buf), buf, 3), EOK);  // same buffer: cut after count
  EXPECT_STREQ(buf, "hel");
}

TEST(StrncpyS, Errors) {
  char buf[6] = "zzzzz";
  EXPECT_EQ(strncpy_s(buf, 0, "a", 1), ERANGE);
  EXPECT_EQ(strncpy_s(buf, kTooBig, "a", 1), ERANGE);
  EXPECT_STREQ(buf, "zzzzz");
  EXPECT_EQ(strncpy_s(nullptr, 6, "a", 1), EINVAL);
  EXPECT_EQ(strncpy_s(buf, 6, kNullStr, 1), EINVAL_AND_RESET);
  EXPECT_EQ(buf[0], '\0');
  memcpy(buf, "zzzzz", 6);
  EXPECT_EQ(strncpy_s(buf, 6, "a", kTooBig), ERANGE_AND_RESET);
  EXPECT_EQ(std::string(buf, 5), std::string("\0zzzz", 5));
  memcpy(buf, "zzzzz", 6);
  EXPECT_EQ(strncpy_s(buf, 6, "abcdefgh", 6), ERANGE_AND_RESET);
  EXPECT_EQ(std::string(buf, 5), std::string("\0zzzz", 5));
  char big[10] = "abcdef";
  EXPECT_EQ(strncpy_s(big + 2, 8, big, 4), EOVERLAP_AND_RESET);
  EXPECT_EQ(big[2], '\0');
}

TEST(StrcatS, Appends) {
  char buf[8] = "ab";
  EXPECT_EQ(strcat_s(buf, sizeof(buf), "cd"), EOK);
  EXPECT_STREQ(buf, "abcd");
  EXPECT_EQ(strcat_s(buf, sizeof(buf), "efg"), EOK);  // exact fit
  EXPECT_STREQ(buf, "abcdefg");
  EXPECT_EQ(strcat_s(buf, sizeof(buf), ""), EOK);
  EXPECT_STREQ(buf, "abcdefg");
}

TEST(StrcatS, Errors) {
  char buf[8] = "ab";
  EXPECT_EQ(strcat_s(buf, 0, "c"), ERANGE);
  EXPECT_EQ(strcat_s(buf, kTooBig, "c"), ERANGE);
  EXPECT_STREQ(buf, "ab");
  EXPECT_EQ(strcat_s(nullptr, 8, "c"), EINVAL);
  EXPECT_EQ(strcat_s(buf, 8, kNullStr), EINVAL_AND_RESET);
  EXPECT_EQ(std::string(buf, 2), std::string("\0b", 2));
  memcpy(buf, "ab", 3);
  EXPECT_EQ(strcat_s(buf, sizeof(buf), "cdefgh"), ERANGE_AND_RESET);  // 8 chars + '\0'
  EXPECT_EQ(std::string(buf, 3), std::string("\0b\0", 3));
  char unterminated[4] = {'w', 'x', 'y', 'z'};
  EXPECT_EQ(strcat_s(unterminated, sizeof(unterminated), "a"), EINVAL_AND_RESET);
  EXPECT_EQ(unterminated[0], '\0');
  EXPECT_EQ(unterminated[3], 'z');
  char big[16] = "abcdef";
  EXPECT_EQ(strcat_s(big, sizeof(big), big + 2), EOVERLAP_AND_RESET);
  EXPECT_EQ(big[0], '\0');
  memcpy(big, "abc", 4);
  EXPECT_EQ(strcat_s(big, sizeof(big), big), ERANGE_AND_RESET);  // dest == src
  EXPECT_EQ(big[0], '\0');
}

TEST(StrncatS, AppendsAtMostCount) {
  char buf[8] = "ab";
  EXPECT_EQ(strncat_s(buf, sizeof(buf), "cdefgh", 2), EOK);
  EXPECT_STREQ(buf, "abcd");
  EXPECT_EQ(strncat_s(buf, sizeof(buf), "xy", 10), EOK);
  EXPECT_STREQ(buf, "abcdxy");
  EXPECT_EQ(strncat_s(buf, sizeof(buf), "123", 0), EOK);
  EXPECT_STREQ(buf, "abcdxy");
  EXPECT_EQ(strncat_s(buf, sizeof(buf), "123", 1), EOK);
  EXPECT_STREQ(buf, "abcdxy1");
}

TEST(StrncatS, Errors) {
  char buf[8] = "ab";
  EXPECT_EQ(strncat_s(buf, 0, "c", 1), ERANGE);
  EXPECT_EQ(strncat_s(buf, kTooBig, "c", 1), ERANGE);
  EXPECT_STREQ(buf, "ab");
  EXPECT_EQ(strncat_s(nullptr, 8, "c", 1), EINVAL);
  EXPECT_EQ(strncat_s(buf, 8, kNullStr, 1), EINVAL_AND_RESET);
  EXPECT_EQ(buf[0], '\0');
  memcpy(buf, "ab", 3);
  EXPECT_EQ(strncat_s(buf, 8, "c", kTooBig), ERANGE_AND_RESET);
  EXPECT_EQ(std::string(buf, 2), std::string("\0b", 2));
  memcpy(buf, "abcd", 5);
  EXPECT_EQ(strncat_s(buf, sizeof(buf), "efghij", 4), ERANGE_AND_RESET);
  EXPECT_EQ(std::string(buf, 4), std::string("\0bcd", 4));
  char unterminated[3] = {'x', 'y', 'z'};
  EXPECT_EQ(strncat_s(unterminated, sizeof(unterminated), "a", 1), EINVAL_AND_RESET);
  EXPECT_EQ(unterminated[0], '\0');
  char big[16] = "abcdef";
  EXPECT_EQ(strncat_s(big, sizeof(big), big + 1, 2), EOVERLAP_AND_RESET);
  EXPECT_EQ(big[0], '\0');
}

TEST(StrtokS, SplitsTokens) {
  char text[] = ",,rank0, rank1,,rank2,";
  char* context = nullptr;
  char* token = strtok_s(text, ", ", &context);
  ASSERT_NE(token, nullptr);
  EXPECT_STREQ(token, "rank0");
  EXPECT_STREQ(strtok_s(nullptr, ", ", &context), "rank1");
  EXPECT_STREQ(strtok_s(nullptr, ",", &context), "rank2");
  EXPECT_EQ(strtok_s(nullptr, ",", &context), nullptr);
  EXPECT_EQ(strtok_s(nullptr, ",", &context), nullptr);
  char only[] = ";;;";
  EXPECT_EQ(strtok_s(only, ";", &context), nullptr);
  char whole[] = "abc";
  EXPECT_STREQ(strtok_s(whole, "", &context), "abc");
  EXPECT_EQ(strtok_s(nullptr, "", &context), nullptr);
}

TEST(StrtokS, Errors) {
  char text[] = "a b";
  char* context = nullptr;
  EXPECT_EQ(strtok_s(text, nullptr, &context), nullptr);
  EXPECT_EQ(strtok_s(text, " ", nullptr), nullptr);
  EXPECT_EQ(strtok_s(nullptr, " ", &context), nullptr);  // nothing to continue
  EXPECT_STREQ(text, "a b");
}

TEST(SprintfS, Formats) {
  char buf[8] = "zzzzzzz";
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), "%s=%d", "n", 42), 4);
  EXPECT_STREQ(buf, "n=42");
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), "%07d", 5), 7);  // exact fit
  EXPECT_STREQ(buf, "0000005");
  EXPECT_EQ(CallVsprintf(buf, sizeof(buf), "%x/%c", 255, 'q'), 4);
  EXPECT_STREQ(buf, "ff/q");
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), "%%"), 1);
  EXPECT_STREQ(buf, "%");
}

TEST(SprintfS, Errors) {
  char buf[8] = "zzzzzzz";
  EXPECT_EQ(sprintf_s(buf, 0, "x"), -1);
  EXPECT_EQ(sprintf_s(buf, kTooBig, "x"), -1);
  EXPECT_STREQ(buf, "zzzzzzz");
  EXPECT_EQ(sprintf_s(nullptr, 8, "x"), -1);
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), nullptr), -1);
  EXPECT_EQ(std::string(buf, 7), std::string("\0zzzzzz", 7));
  memcpy(buf, "zzzzzzz", 8);
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), "%s", "12345678"), -1);  // too long: an error
  EXPECT_EQ(buf[0], '\0');
  memcpy(buf, "zzzzzzz", 8);
  EXPECT_EQ(CallVsprintf(buf, 4, "%d", 12345), -1);
  EXPECT_EQ(buf[0], '\0');
  int count = 0;
  memcpy(buf, "zzzzzzz", 8);
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), "ab%n", &count), -1);  // %n is refused
  EXPECT_EQ(buf[0], '\0');
  EXPECT_EQ(count, 0);
  EXPECT_EQ(sprintf_s(buf, sizeof(buf), "%-3.1ln", &count), -1);
  EXPECT_EQ(count, 0);
}

TEST(SnprintfS, CountBelowDestMaxTruncates) {
  char buf[16] = "zzzzzzzzzzzzzzz";
  EXPECT_EQ(snprintf_s(buf, sizeof(buf), 5, "%s", "hello world"), -1);
  EXPECT_STREQ(buf, "hello");  // cut at count, terminated
  EXPECT_EQ(buf[6], 'z');
  EXPECT_EQ(snprintf_s(buf, sizeof(buf), 5, "%s", "hello"), 5);  // fits count exactly
  EXPECT_STREQ(buf, "hello");
  EXPECT_EQ(snprintf_s(buf, sizeof(buf), 0, "%s", "abc"), -1);
  EXPECT_STREQ(buf, "");
  EXPECT_EQ(snprintf_s(buf, sizeof(buf), 0, "%s", ""), 0);
  EXPECT_EQ(CallVsnprintf(buf, sizeof(buf), 3, "%d", 123456), -1);
  EXPECT_STREQ(buf, "123");
  EXPECT_EQ(CallVsnprintf(buf, sizeof(buf), sizeof(buf) - 1, "%s-%d", "rank", 7), 6);
  EXPECT_STREQ(buf, "rank-7");
}

TEST(SnprintfS, CountFromDestMaxIsAnError) {
  char buf[8] = "zzzzzzz";
  EXPECT_EQ(snprintf_s(buf, sizeof(buf), sizeof(buf), "%s", "1234567"), 7);
  EXPECT_STREQ(buf, "1234567");
  EXPECT_EQ(snprintf_s(buf, sizeof(buf), sizeof(buf), "%s", "12345678"), -1);
  EXPECT_EQ(buf[0], '\0');
  EXPECT_EQ(CallVsnprintf(buf, 4, 100, "%s", "abcd"), -1);
  EXPECT_EQ(buf[0], '\0');
}

TEST(SnprintfS, Errors) {
  char buf[8] = "zzzzzzz";
  EXPECT_EQ(snprintf_s(buf, 0, 1, "x"), -1);
  EXPECT_EQ(snprintf_s(buf, kTooBig, 1, "x"), -1);
  EXPECT_STREQ(buf, "zzzzzzz");
  EXPECT_EQ(snprintf_s(nullptr, 8, 1, "x"), -1);
  EXPECT_EQ(snprintf_s(buf, 8, 7, nullptr), -1);
  EXPECT_EQ(buf[0], '\0');
  memcpy(buf, "zzzzzzz", 8);
  EXPECT_EQ(snprintf_s(buf, 8, SECUREC_STRING_MAX_LEN, "x"), -1);  // count over the limit
  EXPECT_EQ(std::string(buf, 7), std::string("\0zzzzzz", 7));
  int count = 0;
  EXPECT_EQ(snprintf_s(buf, 8, 7, "%n", &count), -1);
  EXPECT_EQ(count, 0);
}

TEST(SnprintfTruncatedS, ReturnsDestMaxMinusOne) {
  char buf[6] = "zzzzz";
  EXPECT_EQ(snprintf_truncated_s(buf, sizeof(buf), "%s", "abcdefgh"), 5);
  EXPECT_STREQ(buf, "abcde");
  EXPECT_EQ(snprintf_truncated_s(buf, sizeof(buf), "%d", 42), 2);
  EXPECT_STREQ(buf, "42");
  EXPECT_EQ(snprintf_truncated_s(buf, 0, "%d", 42), -1);
  EXPECT_EQ(snprintf_truncated_s(buf, sizeof(buf), nullptr), -1);
  EXPECT_EQ(buf[0], '\0');
}

TEST(SscanfS, NumbersAndStrings) {
  int rank = 0;
  char name[8] = "zzzzzzz";
  EXPECT_EQ(sscanf_s("  42 node1 rest", "%d %s", &rank, name, sizeof(name)), 2);
  EXPECT_EQ(rank, 42);
  EXPECT_STREQ(name, "node1");
  unsigned hex = 0;
  long long big = 0;
  double ratio = 0;
  EXPECT_EQ(sscanf_s("0x1f:-9000000000:2.5", "%x:%lld:%lf", &hex, &big, &ratio), 3);
  EXPECT_EQ(hex, 0x1fu);
  EXPECT_EQ(big, -9000000000LL);
  EXPECT_DOUBLE_EQ(ratio, 2.5);
  char letters[3] = {'z', 'z', 'z'};
  EXPECT_EQ(sscanf_s("abc", "%2c", letters, sizeof(letters)), 1);  // %c: no terminator
  EXPECT_EQ(std::string(letters, 3), "abz");
  char ip[16] = {};
  int port = 0;
  EXPECT_EQ(CallVsscanf("10.0.0.1:6000", "%15[0-9.]:%d", ip, sizeof(ip), &port), 2);
  EXPECT_STREQ(ip, "10.0.0.1");
  EXPECT_EQ(port, 6000);
  char field[8] = {};
  int used = 0;
  EXPECT_EQ(sscanf_s("k=v,x", "%*[^=]=%[^,]%n", field, sizeof(field), &used), 1);
  EXPECT_STREQ(field, "v");
  EXPECT_EQ(used, 3);
  int pct = 0;
  EXPECT_EQ(sscanf_s("50%", "%d%%", &pct), 1);
  EXPECT_EQ(pct, 50);
  short width = 0;
  EXPECT_EQ(sscanf_s("123456", "%3hd", &width), 1);
  EXPECT_EQ(width, 123);
  wchar_t wide[4] = {};
  EXPECT_EQ(sscanf_s("ab", "%ls", wide, 4u), 1);  // an unsigned size is read correctly too
  EXPECT_STREQ(wide, L"ab");
}

TEST(SscanfS, BufferTooSmallEndsTheScan) {
  char name[4] = "zzz";
  int after = -1;
  EXPECT_EQ(sscanf_s("abcdef 7", "%s %d", name, sizeof(name), &after), 0);
  EXPECT_EQ(name[0], '\0');  // emptied, not cut
  EXPECT_EQ(after, -1);
  int first = 0;
  memcpy(name, "zzz", 4);
  EXPECT_EQ(sscanf_s("5 abcd", "%d %s", &first, name, sizeof(name)), 1);
  EXPECT_EQ(first, 5);
  EXPECT_EQ(name[0], '\0');
  char fits[4] = "zzz";
  EXPECT_EQ(sscanf_s("abc", "%s", fits, sizeof(fits)), 1);
  EXPECT_STREQ(fits, "abc");
  char two[2] = {'z', 'z'};
  EXPECT_EQ(sscanf_s("abc", "%3c", two, sizeof(two)), 0);
  EXPECT_EQ(two[0], '\0');
}

TEST(SscanfS, Errors) {
  int n = 7;
  char buf[4] = "zzz";
  EXPECT_EQ(sscanf_s(nullptr, "%d", &n), -1);
  EXPECT_EQ(sscanf_s("1", nullptr), -1);
  EXPECT_EQ(n, 7);
  EXPECT_EQ(sscanf_s("", "%s", buf, sizeof(buf)), -1);  // empty input clears the first buffer
  EXPECT_EQ(buf[0], '\0');
  EXPECT_EQ(sscanf_s("", "%d", &n), -1);
  EXPECT_EQ(sscanf_s("   ", "%d", &n), -1);  // input ends before the first conversion
  EXPECT_EQ(n, 7);
  EXPECT_EQ(sscanf_s("abc", "%d", &n), 0);  // a matching failure is no error
  EXPECT_EQ(n, 7);
  // A null target with input left is an error even after fields were assigned.
  EXPECT_EQ(sscanf_s("1 2", "%d %d", &n, static_cast<int*>(nullptr)), -1);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(sscanf_s("1 2", "%d", static_cast<int*>(nullptr)), -1);
  memcpy(buf, "zzz", 4);
  EXPECT_EQ(sscanf_s("abc", "%s", buf, static_cast<size_t>(0)), 0);  // zero size: untouched
  EXPECT_STREQ(buf, "zzz");
  EXPECT_EQ(sscanf_s("abc", "%s", static_cast<char*>(nullptr), sizeof(buf)), -1);
  EXPECT_EQ(sscanf_s("abc", "%[abc", buf, sizeof(buf)), 0);  // unclosed set
  EXPECT_EQ(buf[0], '\0');
  EXPECT_EQ(sscanf_s("12 x", "%d %", &n), -1);  // cut-off specification
  EXPECT_EQ(n, 12);
  EXPECT_EQ(sscanf_s("1", "%0d", &n), 0);
}

TEST(WcsFunctions, CopyAndAppend) {
  wchar_t buf[6] = L"zzzzz";
  EXPECT_EQ(wcscpy_s(buf, 6, L"abc"), EOK);
  EXPECT_STREQ(buf, L"abc");
  EXPECT_EQ(wcscat_s(buf, 6, L"de"), EOK);
  EXPECT_STREQ(buf, L"abcde");
  EXPECT_EQ(wcsncpy_s(buf, 6, L"xyzzy", 2), EOK);
  EXPECT_STREQ(buf, L"xy");
  EXPECT_EQ(wcsncat_s(buf, 6, L"123", 2), EOK);
  EXPECT_STREQ(buf, L"xy12");
  EXPECT_EQ(wcsncpy_s(buf, 6, buf, 2), EOK);  // same buffer: left as it is
  EXPECT_STREQ(buf, L"xy12");
  EXPECT_EQ(wcsncpy_s(buf, 6, L"abc", 0), EOK);
  EXPECT_STREQ(buf, L"");
}

TEST(WcsFunctions, Errors) {
  wchar_t buf[4] = L"zzz";
  const wchar_t* null_src = nullptr;
  EXPECT_EQ(wcscpy_s(buf, 0, L"a"), ERANGE);
  EXPECT_EQ(wcscpy_s(buf, SECUREC_WCHAR_STRING_MAX_LEN + 1, L"a"), ERANGE);
  EXPECT_EQ(wcsncpy_s(buf, 0, L"a", 1), ERANGE);
  EXPECT_EQ(wcscat_s(buf, 0, L"a"), ERANGE);
  EXPECT_EQ(wcsncat_s(buf, 0, L"a", 1), ERANGE);
  EXPECT_STREQ(buf, L"zzz");
  EXPECT_EQ(wcscpy_s(nullptr, 4, L"a"), EINVAL);
  EXPECT_EQ(wcscat_s(nullptr, 4, L"a"), EINVAL);
  EXPECT_EQ(wcscpy_s(buf, 4, null_src), EINVAL_AND_RESET);
  EXPECT_EQ(buf[0], L'\0');
  wmemcpy(buf, L"zzz", 4);
  EXPECT_EQ(wcscpy_s(buf, 4, L"abcd"), ERANGE_AND_RESET);
  EXPECT_EQ(std::wstring(buf, 3), std::wstring(L"\0zz", 3));
  wmemcpy(buf, L"zzz", 4);
  EXPECT_EQ(wcsncpy_s(buf, 4, L"abcd", 4), ERANGE_AND_RESET);
  EXPECT_EQ(buf[0], L'\0');
  EXPECT_EQ(wcsncpy_s(buf, 4, L"a", SECUREC_WCHAR_STRING_MAX_LEN + 1), ERANGE_AND_RESET);
  wmemcpy(buf, L"ab", 3);
  EXPECT_EQ(wcscat_s(buf, 4, L"cd"), ERANGE_AND_RESET);
  EXPECT_EQ(buf[0], L'\0');
  wmemcpy(buf, L"ab", 3);
  EXPECT_EQ(wcsncat_s(buf, 4, L"cde", 2), ERANGE_AND_RESET);
  EXPECT_EQ(buf[0], L'\0');
  wchar_t full[2] = {L'x', L'y'};
  EXPECT_EQ(wcscat_s(full, 2, L"a"), EINVAL_AND_RESET);
  EXPECT_EQ(full[0], L'\0');
  wchar_t big[8] = L"abcdef";
  EXPECT_EQ(wcscpy_s(big + 1, 7, big), EOVERLAP_AND_RESET);
  EXPECT_EQ(big[1], L'\0');
  wmemcpy(big, L"abcdef", 7);
  EXPECT_EQ(wcsncat_s(big, 8, big + 1, 1), EOVERLAP_AND_RESET);
  EXPECT_EQ(big[0], L'\0');
}

TEST(WcstokS, SplitsTokens) {
  wchar_t text[] = L" a  bc ";
  wchar_t* context = nullptr;
  EXPECT_STREQ(wcstok_s(text, L" ", &context), L"a");
  EXPECT_STREQ(wcstok_s(nullptr, L" ", &context), L"bc");
  EXPECT_EQ(wcstok_s(nullptr, L" ", &context), nullptr);
  EXPECT_EQ(wcstok_s(text, nullptr, &context), nullptr);
  EXPECT_EQ(wcstok_s(text, L" ", nullptr), nullptr);
}

}  // namespace
