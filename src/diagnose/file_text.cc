#include "diagnose/file_text.h"

#include <algorithm>

#include <unistd.h>

#include <cstdint>

#if defined(VIGIL_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace vigil::diagnose {

bool IsUtf16(std::string_view head, bool* big_endian) {
  if (head.size() >= 2 && head[0] == '\xFF' && head[1] == '\xFE') {
    *big_endian = false;
    return true;
  }
  if (head.size() >= 2 && head[0] == '\xFE' && head[1] == '\xFF') {
    *big_endian = true;
    return true;
  }
  // No mark: ASCII text in UTF-16 has a zero in every other byte.
  const size_t n = head.size() & ~size_t{1};
  if (n < 16) return false;
  size_t zero_odd = 0, zero_even = 0;
  for (size_t i = 0; i < n; i += 2) {
    zero_even += head[i] == '\0';
    zero_odd += head[i + 1] == '\0';
  }
  const size_t pairs = n / 2;
  if (zero_odd * 10 >= pairs * 9 && zero_even == 0) {
    *big_endian = false;
    return true;
  }
  if (zero_even * 10 >= pairs * 9 && zero_odd == 0) {
    *big_endian = true;
    return true;
  }
  return false;
}

namespace {

void Put(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

std::string Utf16ToUtf8(std::string_view bytes, bool big_endian) {
  std::string out;
  out.reserve(bytes.size() / 2 + 16);
  auto unit = [&](size_t i) -> uint32_t {
    const auto a = static_cast<unsigned char>(bytes[i]),
               b = static_cast<unsigned char>(bytes[i + 1]);
    return big_endian ? (uint32_t{a} << 8 | b) : (uint32_t{b} << 8 | a);
  };
  size_t i = 0;
  if (bytes.size() >= 2 && unit(0) == 0xFEFF) i = 2;
  for (; i + 1 < bytes.size(); i += 2) {
    uint32_t c = unit(i);
    if (c >= 0xD800 && c <= 0xDBFF && i + 3 < bytes.size()) {
      const uint32_t d = unit(i + 2);
      if (d >= 0xDC00 && d <= 0xDFFF) {
        Put(0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00), &out);
        i += 2;
        continue;
      }
    }
    Put(c >= 0xD800 && c <= 0xDFFF ? 0xFFFD : c, &out);
  }
  if (i < bytes.size()) Put(0xFFFD, &out);
  return out;
}

bool ReadUtf16Text(int fd, uint64_t size, std::string* utf8) {
  if (size > (1ull << 30)) return false;
  char head[256];
  const ssize_t n = ::pread(fd, head, sizeof head, 0);
  bool be = false;
  if (n <= 0 || !IsUtf16(std::string_view(head, static_cast<size_t>(n)), &be)) return false;
  *utf8 = Utf16ToUtf8(PreadAll(fd, size), be);
  return true;
}

bool IsCrOnly(std::string_view head) {
  if (head.find('\n') != std::string_view::npos) return false;
  const size_t first = head.find('\r');
  return first != std::string_view::npos && head.find('\r', first + 1) != std::string_view::npos;
}

std::string_view WithLfEnds(std::string_view text, std::string* buf) {
  if (!IsCrOnly(text.substr(0, 64u << 10))) return text;
  buf->assign(text);
  std::replace(buf->begin(), buf->end(), '\r', '\n');
  return *buf;
}

bool ReadCrOnlyText(int fd, uint64_t size, std::string* text) {
  if (size > (1ull << 30)) return false;
  std::string head(std::min<uint64_t>(size, 64u << 10), '\0');
  const ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  if (n <= 0 || !IsCrOnly(std::string_view(head.data(), static_cast<size_t>(n)))) return false;
  *text = PreadAll(fd, size);
  std::replace(text->begin(), text->end(), '\r', '\n');
  return true;
}

std::string PreadAll(int fd, uint64_t size) {
  std::string bytes(size, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t r = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  bytes.resize(got);
  return bytes;
}

#if defined(VIGIL_HAVE_ZLIB)
// A whole small gzip file in memory (flight-recorder dumps compressed with the plogs).
bool GunzipAll(int fd, uint64_t limit, std::string* text) {
  int dup_fd = ::dup(fd);
  gzFile gz = dup_fd < 0 ? nullptr : ::gzdopen(dup_fd, "rb");
  if (gz == nullptr) {
    if (dup_fd >= 0) ::close(dup_fd);
    return false;
  }
  char tmp[1 << 16];
  bool ok = true;
  while (true) {
    int got = ::gzread(gz, tmp, sizeof(tmp));
    if (got < 0) {
      ok = false;
      break;
    }
    if (got == 0) break;
    if (text->size() + static_cast<size_t>(got) > limit) {
      ok = false;
      break;
    }
    text->append(tmp, static_cast<size_t>(got));
  }
  ::gzclose(gz);
  return ok;
}
#endif

}  // namespace vigil::diagnose
