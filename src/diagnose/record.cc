#include "diagnose/record.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vigil::diagnose {

const char* LevelName(Level l) {
  switch (l) {
    case Level::kDebug: return "DEBUG";
    case Level::kInfo: return "INFO";
    case Level::kWarning: return "WARNING";
    case Level::kError: return "ERROR";
    case Level::kEvent: return "EVENT";
    case Level::kScreen: return "SCREEN";
    default: return "?";
  }
}

namespace {

inline bool Upper(char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool UpperNum(char c) { return Upper(c) || (c >= '0' && c <= '9'); }
inline bool Digit(char c) { return c >= '0' && c <= '9'; }

Level LevelOf(std::string_view w) {
  if (w == "ERROR") return Level::kError;
  if (w == "INFO") return Level::kInfo;
  if (w == "WARNING" || w == "WARN") return Level::kWarning;
  if (w == "DEBUG" || w == "TRACE") return Level::kDebug;
  if (w == "EVENT") return Level::kEvent;
  return Level::kUnknown;
}

// Header scan shared by IsRecordStart and ParseRecord. Returns the position after "PID,"
// (or after "[PID: n]"), 0 when s is not a record start.
size_t ScanStart(std::string_view s, Level* level, std::string_view* module, int64_t* pid) {
  if (s.size() < 8 || s[0] != '[') return 0;
  size_t p = 1;
  if (s.compare(1, 5, "PID: ") == 0) {
    p = 6;
    int64_t v = 0;
    size_t d0 = p;
    while (p < s.size() && Digit(s[p]) && p - d0 < 12) v = v * 10 + (s[p++] - '0');
    if (p == d0 || p >= s.size() || s[p] != ']') return 0;
    *level = Level::kScreen;
    *module = {};
    *pid = v;
    return p + 1;
  }
  size_t l0 = p;
  while (p < s.size() && Upper(s[p]) && p - l0 <= 8) ++p;
  if (p - l0 < 4 || p >= s.size() || s[p] != ']') return 0;
  Level lv = LevelOf(s.substr(l0, p - l0));
  if (lv == Level::kUnknown) return 0;
  ++p;
  for (int k = 0; k < 2 && p < s.size() && s[p] == ' '; ++k) ++p;
  size_t m0 = p;
  while (p < s.size() && UpperNum(s[p]) && p - m0 <= 16) ++p;
  if (p - m0 < 2 || p >= s.size() || s[p] != '(') return 0;
  std::string_view mod = s.substr(m0, p - m0);
  ++p;
  // Device-side logs (TSCH, IMP, the device OS) have no host process: their pid is negative.
  bool negative = p < s.size() && s[p] == '-';
  if (negative) ++p;
  size_t d0 = p;
  int64_t v = 0;
  while (p < s.size() && Digit(s[p]) && p - d0 < 12) v = v * 10 + (s[p++] - '0');
  if (p == d0 || p >= s.size() || s[p] != ',') return 0;
  *level = lv;
  *module = mod;
  *pid = negative ? -v : v;
  return p + 1;
}

// Past the time stamp at s[p] (digits and - : . only, at most 27 bytes).
size_t SkipStamp(std::string_view s, size_t p) {
  size_t end = std::min(s.size(), p + 27);
  while (p < end && (Digit(s[p]) || s[p] == '-' || s[p] == ':' || s[p] == '.')) ++p;
  return p;
}

}  // namespace

bool IsRecordStart(std::string_view s) {
  Level l;
  std::string_view m;
  int64_t pid;
  return ScanStart(s, &l, &m, &pid) != 0;
}

namespace {

inline bool Letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A '[' at s[at] that starts a record: not a field bracket ("tag[") and a valid header.
inline bool StartsAt(std::string_view s, size_t at) {
  if (at > 0 && Letter(static_cast<unsigned char>(s[at - 1]))) return false;
  return IsRecordStart(s.substr(at));
}

// After "pname):" and the time stamp: [file:line], then [tid] | tid<space> | tid:N, then content.
bool ParseTail(std::string_view s, size_t p, Record* out) {
  while (p < s.size() && s[p] == ' ') ++p;
  // [file:line]: a ']' within 96 bytes with a ':' before it
  if (p < s.size() && s[p] == '[') {
    size_t end = std::min(s.size(), p + 96);
    const char* d = s.data();
    const void* close = std::memchr(d + p, ']', end - p);
    if (close != nullptr) {
      size_t e = static_cast<size_t>(static_cast<const char*>(close) - d);
      if (std::memchr(d + p, ':', e - p) != nullptr) p = e + 1;
    }
  }
  while (p < s.size() && s[p] == ' ') ++p;
  if (p < s.size() && s[p] == '[') {
    size_t q = p + 1;
    int64_t v = 0;
    while (q < s.size() && Digit(s[q]) && q - p < 12) v = v * 10 + (s[q++] - '0');
    if (q > p + 1 && q < s.size() && s[q] == ']') {
      out->tid = v;
      p = q + 1;
    }
  } else if (p < s.size() && Digit(s[p])) {
    size_t q = p;
    int64_t v = 0;
    while (q < s.size() && Digit(s[q]) && q - p < 12) v = v * 10 + (s[q++] - '0');
    if (q < s.size() && s[q] == ' ') {
      out->tid = v;
      p = q + 1;
    }
  } else if (s.compare(p, 4, "tid:") == 0) {
    size_t q = p + 4;
    int64_t v = 0;
    while (q < s.size() && Digit(s[q]) && q - p < 16) v = v * 10 + (s[q++] - '0');
    out->tid = v;
    p = q;
    if (p < s.size() && s[p] == ',') ++p;
  }
  out->content = s.substr(p);
  return true;
}

}  // namespace

size_t FindRecordStart(std::string_view s, size_t from) {
  const char* d = s.data();
  const size_t n = s.size();
  size_t p = from;
#if defined(__SSE2__)
  const __m128i open = _mm_set1_epi8('[');
  const __m128i bias = _mm_set1_epi8(static_cast<char>('A' + 128));
  const __m128i limit = _mm_set1_epi8(static_cast<char>(-128 + 26));
  while (p + 17 <= n) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + p));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + p + 1));
    // b - ('A' + 128) < -128 + 26 (signed) <=> 'A' <= b <= 'Z'
    __m128i upper = _mm_cmplt_epi8(_mm_sub_epi8(b, bias), limit);
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, open), upper)));
    while (mask != 0) {
      size_t at = p + static_cast<size_t>(__builtin_ctz(mask));
      if (StartsAt(s, at)) return at;
      mask &= mask - 1;
    }
    p += 16;
  }
#endif
  while (p < n) {
    const void* hit = std::memchr(d + p, '[', n - p);
    if (hit == nullptr) return std::string_view::npos;
    size_t at = static_cast<size_t>(static_cast<const char*>(hit) - d);
    if (at + 1 < n && d[at + 1] >= 'A' && d[at + 1] <= 'Z' && StartsAt(s, at)) return at;
    p = at + 1;
  }
  return std::string_view::npos;
}

bool ParseRecord(std::string_view s, Record* out) {
  *out = Record{};
  size_t p = ScanStart(s, &out->level, &out->module, &out->pid);
  if (p == 0) return false;
  out->whole = s;
  if (out->level == Level::kScreen) {
    while (p < s.size() && s[p] == ' ') ++p;
    out->time = ParsePlogStamp(s.substr(p, 27));
    if (out->time != kNoTime) p = SkipStamp(s, p);
    while (p < s.size() && s[p] == ' ') ++p;
    out->content = s.substr(p);
    return true;
  }
  // pname up to "):"
  size_t close = s.find("):", p);
  if (close == std::string_view::npos || close - p > 128) {
    out->content = s.substr(p);
    return true;
  }
  out->pname = s.substr(p, close - p);
  p = close + 2;
  out->time = ParsePlogStamp(s.substr(p, 27));
  if (out->time != kNoTime) p = SkipStamp(s, p);
  return ParseTail(s, p, out);
}

// The full 27-byte form "YYYY-MM-DD-HH:MM:SS.mmm.uuu" at fixed positions, the date part from the
// cache when it repeats; anything else goes through ParsePlogStamp as before.
size_t RecordParser::Stamp(std::string_view s, size_t p, Micros* t) {
  if (s.size() >= p + 27) {
    const char* c = s.data() + p;
    auto dig = [](char x) { return static_cast<unsigned>(x - '0') <= 9u; };
    bool shape = c[4] == '-' && c[7] == '-' && c[10] == '-' && c[13] == ':' && c[16] == ':' && c[19] == '.' &&
                 c[23] == '.' && dig(c[11]) && dig(c[12]) && dig(c[14]) && dig(c[15]) && dig(c[17]) && dig(c[18]) &&
                 dig(c[20]) && dig(c[21]) && dig(c[22]) && dig(c[24]) && dig(c[25]) && dig(c[26]);
    if (shape) {
      if (std::memcmp(c, date_, 11) != 0) {
        char midnight[20];
        std::memcpy(midnight, c, 11);
        std::memcpy(midnight + 11, "00:00:00", 8);
        day_ = ParsePlogStamp(std::string_view(midnight, 19));
        std::memcpy(date_, c, 11);
      }
      int h = (c[11] - '0') * 10 + (c[12] - '0');
      int mi = (c[14] - '0') * 10 + (c[15] - '0');
      int se = (c[17] - '0') * 10 + (c[18] - '0');
      if (day_ != kNoTime && h <= 23 && mi <= 59 && se <= 60) {
        int64_t us = ((c[20] - '0') * 100 + (c[21] - '0') * 10 + (c[22] - '0')) * 1000 +
                     (c[24] - '0') * 100 + (c[25] - '0') * 10 + (c[26] - '0');
        *t = day_ + ((static_cast<int64_t>(h) * 60 + mi) * 60 + se) * 1000000 + us;
        return p + 27;
      }
    }
  }
  *t = ParsePlogStamp(s.substr(p, 27));
  return *t != kNoTime ? SkipStamp(s, p) : p;
}

bool RecordParser::Parse(std::string_view s, Record* out, int slot) {
  *out = Record{};
  size_t p;
  if (slot < 0) slot = Match(s);
  if (slot >= 0) {
    // Same bytes up to "):" as a recent record: same header fields at the same offsets.
    const Header& h = hdr_[slot];
    out->level = h.level;
    out->pid = h.pid;
    out->module = s.substr(h.module_off, h.module_len);
    out->pname = s.substr(h.pname_off, h.pname_len);
    p = h.len;
  } else {
    p = ScanStart(s, &out->level, &out->module, &out->pid);
    if (p == 0) return false;
    if (out->level == Level::kScreen) return ParseRecord(s, out);
    size_t close = s.find("):", p);
    if (close == std::string_view::npos || close - p > 128) {
      out->whole = s;
      out->content = s.substr(p);
      return true;
    }
    out->pname = s.substr(p, close - p);
    p = close + 2;
    if (p <= sizeof(Header::bytes)) {  // at least 8: ScanStart needs that many
      int i = used_ < kSlots ? used_++ : next_;
      next_ = (i + 1) % kSlots;
      Header& h = hdr_[i];
      std::memcpy(h.bytes, s.data(), p);
      h.len = p;
      std::memcpy(&h.head, s.data(), 8);
      h.level = out->level;
      h.pid = out->pid;
      h.module_off = static_cast<size_t>(out->module.data() - s.data());
      h.module_len = out->module.size();
      h.pname_off = static_cast<size_t>(out->pname.data() - s.data());
      h.pname_len = out->pname.size();
      last_ = i;
    }
  }
  out->whole = s;
  p = Stamp(s, p, &out->time);
  return ParseTail(s, p, out);
}

}  // namespace vigil::diagnose
