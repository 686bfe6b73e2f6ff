#include "diagnose/text_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace vigil::diagnose {

std::optional<std::string_view> FieldFrom(std::string_view s, std::string_view key, size_t from) {
  while (from < s.size()) {
    size_t k = s.find(key, from);
    if (k == std::string_view::npos) return std::nullopt;
    size_t p = k + key.size();
    if (p < s.size() && s[p] == ' ') ++p;
    if (p < s.size() && s[p] == '[') {
      size_t e = s.find(']', p + 1);
      if (e == std::string_view::npos) return s.substr(p + 1);  // truncated record: take the rest
      return s.substr(p + 1, e - p - 1);
    }
    from = k + 1;
  }
  return std::nullopt;
}

std::optional<std::string_view> Field(std::string_view s, std::string_view key) {
  return FieldFrom(s, key, 0);
}

std::optional<std::string_view> KeyValue(std::string_view s, std::string_view key) {
  size_t from = 0;
  while (true) {
    size_t k = s.find(key, from);
    if (k == std::string_view::npos) return std::nullopt;
    size_t p = k + key.size();
    // Whole-key match: "stream_id=" must not match inside "report_stream_id=".
    bool left_ok = k == 0 || !(std::isalnum(static_cast<unsigned char>(s[k - 1])) || s[k - 1] == '_');
    if (left_ok && p < s.size() && s[p] == '=') {
      size_t e = p + 1;
      while (e < s.size() && s[e] != ',' && s[e] != ' ' && s[e] != '[') ++e;
      return s.substr(p + 1, e - p - 1);
    }
    from = k + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '.')) s.remove_suffix(1);
  return s;
}

std::optional<int64_t> ToInt(std::string_view s) {
  // Fast path: plain digits (field values of op Entry lines).
  if (!s.empty() && s.size() <= 18) {
    int64_t v = 0;
    size_t i = 0;
    for (; i < s.size(); ++i) {
      unsigned dgt = static_cast<unsigned>(s[i] - '0');
      if (dgt > 9) break;
      v = v * 10 + dgt;
    }
    if (i == s.size()) return v;
  }
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  bool neg = false;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return neg ? -v : v;
}

std::optional<uint64_t> ToHex(std::string_view s) {
  s = Trim(s);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return std::nullopt;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

std::optional<int64_t> FieldInt(std::string_view s, std::string_view key) {
  auto f = Field(s, key);
  if (!f) return std::nullopt;
  return ToInt(*f);
}

std::vector<int64_t> AllInts(std::string_view s) {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < s.size() && out.size() < 4096) {
    if (s[i] >= '0' && s[i] <= '9') {
      int64_t v = 0;
      size_t n = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (n++ < 18) v = v * 10 + (s[i] - '0');
        ++i;
      }
      out.push_back(v);
    } else {
      ++i;
    }
  }
  return out;
}

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

// Reads exactly n digits at s[*p]; false if any is not a digit.
bool Digits(std::string_view s, size_t* p, size_t n, int64_t* out) {
  if (*p + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*p + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *p += n;
  *out = v;
  return true;
}

bool Sep(std::string_view s, size_t* p, char c) {
  if (*p < s.size() && s[*p] == c) {
    ++*p;
    return true;
  }
  return false;
}

Micros Compose(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t se, int64_t us) {
  if (y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
    return kNoTime;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60 * 1000000 + se * 1000000 + us;
}

}  // namespace

Micros ParsePlogStamp(std::string_view s) {
  size_t p = 0;
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, ms = 0, us = 0;
  if (!Digits(s, &p, 4, &y) || !Sep(s, &p, '-') || !Digits(s, &p, 2, &mo) || !Sep(s, &p, '-') ||
      !Digits(s, &p, 2, &d) || !Sep(s, &p, '-') || !Digits(s, &p, 2, &h) || !Sep(s, &p, ':') ||
      !Digits(s, &p, 2, &mi) || !Sep(s, &p, ':') || !Digits(s, &p, 2, &se))
    return kNoTime;
  if (Sep(s, &p, '.') && Digits(s, &p, 3, &ms)) {
    if (Sep(s, &p, '.')) Digits(s, &p, 3, &us);
  }
  return Compose(y, mo, d, h, mi, se, ms * 1000 + us);
}

Micros ParseCqeTime(std::string_view s) {
  size_t p = 0;
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0, frac = 0;
  if (!Digits(s, &p, 4, &y) || !Sep(s, &p, '-') || !Digits(s, &p, 2, &mo) || !Sep(s, &p, '-') ||
      !Digits(s, &p, 2, &d) || !Sep(s, &p, ' ') || !Digits(s, &p, 2, &h) || !Sep(s, &p, ':') ||
      !Digits(s, &p, 2, &mi) || !Sep(s, &p, ':') || !Digits(s, &p, 2, &se))
    return kNoTime;
  if (Sep(s, &p, '.')) {
    int64_t scale = 100000;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9' && scale > 0) {
      frac += (s[p] - '0') * scale;
      scale /= 10;
      ++p;
    }
  }
  return Compose(y, mo, d, h, mi, se, frac);
}

Micros ParseFileStamp(std::string_view s) {
  size_t p = 0;
  int64_t y, mo, d, h, mi, se, ms = 0;
  if (!Digits(s, &p, 4, &y) || !Digits(s, &p, 2, &mo) || !Digits(s, &p, 2, &d) ||
      !Digits(s, &p, 2, &h) || !Digits(s, &p, 2, &mi) || !Digits(s, &p, 2, &se))
    return kNoTime;
  Digits(s, &p, 3, &ms);
  return Compose(y, mo, d, h, mi, se, ms * 1000);
}

Micros ParseCTime(std::string_view s) {
  // "Thu Oct 23 17:25:58 2025"; day may be space-padded ("Oct  5").
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  s = Trim(s);
  if (s.size() < 20) return kNoTime;
  size_t p = 4;
  std::string_view mon = s.substr(p, 3);
  size_t mi_idx = kMonths.find(mon);
  if (mi_idx == std::string_view::npos || mi_idx % 3 != 0) return kNoTime;
  p += 3;
  while (p < s.size() && s[p] == ' ') ++p;
  int64_t d = 0;
  while (p < s.size() && s[p] >= '0' && s[p] <= '9') d = d * 10 + (s[p++] - '0');
  if (!Sep(s, &p, ' ')) return kNoTime;
  int64_t h, mi, se, y;
  if (!Digits(s, &p, 2, &h) || !Sep(s, &p, ':') || !Digits(s, &p, 2, &mi) || !Sep(s, &p, ':') ||
      !Digits(s, &p, 2, &se) || !Sep(s, &p, ' ') || !Digits(s, &p, 4, &y))
    return kNoTime;
  return Compose(y, static_cast<int64_t>(mi_idx / 3 + 1), d, h, mi, se, 0);
}

Micros ParseAnyTime(std::string_view s) {
  s = Trim(s);
  if (Micros t = ParsePlogStamp(s)) return t;
  if (Micros t = ParseCqeTime(s)) return t;
  if (Micros t = ParseCTime(s)) return t;
  return ParseFileStamp(s);
}

std::string FormatTime(Micros t) {
  if (t == kNoTime) return "-";
  int64_t us = t % 1000000;
  int64_t secs = t / 1000000;
  if (us < 0) {
    us += 1000000;
    --secs;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u-%02lld:%02lld:%02lld.%03lld.%03lld",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60),
                static_cast<long long>(us / 1000), static_cast<long long>(us % 1000));
  return buf;
}

std::string FormatDuration(Micros dur) {
  bool neg = dur < 0;
  if (neg) dur = -dur;
  char buf[64];
  double s = static_cast<double>(dur) / 1e6;
  if (s < 10) {
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
  } else if (s < 120) {
    std::snprintf(buf, sizeof(buf), "%.0f s", s);
  } else if (s < 7200) {
    int64_t whole = dur / 1000000;
    std::snprintf(buf, sizeof(buf), "%lld min %lld s", static_cast<long long>(whole / 60),
                  static_cast<long long>(whole % 60));
  } else {
    int64_t whole = dur / 1000000;
    std::snprintf(buf, sizeof(buf), "%lld h %lld min", static_cast<long long>(whole / 3600),
                  static_cast<long long>(whole / 60 % 60));
  }
  return neg ? std::string("-") + buf : std::string(buf);
}

std::string Printable(std::string_view s, size_t max_len) {
  std::string out;
  out.reserve(std::min(s.size(), max_len) + 3);
  size_t i = 0;
  while (i < s.size() && out.size() < max_len) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c < 0x20 || c == 0x7f ? (c == '\t' ? ' ' : '?') : static_cast<char>(c));
      ++i;
      continue;
    }
    // Keep well-formed UTF-8 sequences (Chinese text), replace anything else.
    size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = n != 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  if (i < s.size()) out += "...";
  return out;
}

// ESC '[' parameters and a final byte (a colour, a cursor move); ESC and one byte otherwise.
void StripAnsi(std::string_view s, std::string* out) {
  out->clear();
  out->reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\x1b') {
      out->push_back(s[i]);
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= 0x40 && s[i] <= 0x7e)) ++i;
    } else {
      ++i;
    }
  }
}

bool UnwrapJsonLog(std::string_view line, std::string* out) {
  constexpr std::string_view kHead = "{\"log\":\"";
  if (!line.starts_with(kHead)) return false;
  out->clear();
  for (size_t i = kHead.size(); i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"') {
      while (!out->empty() && (out->back() == '\n' || out->back() == '\r')) out->pop_back();
      return true;
    }
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (++i >= line.size()) return false;
    switch (line[i]) {
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'b': case 'f': break;
      case 'u': {
        // \u00XX: the byte (escaped control characters, an ESC of a colour); others as '?'.
        if (i + 4 >= line.size()) return false;
        const std::string_view hex = line.substr(i + 1, 4);
        i += 4;
        unsigned v = 0;
        for (char h : hex) {
          v <<= 4;
          if (h >= '0' && h <= '9') v |= static_cast<unsigned>(h - '0');
          else if (h >= 'a' && h <= 'f') v |= static_cast<unsigned>(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F') v |= static_cast<unsigned>(h - 'A' + 10);
          else return false;
        }
        out->push_back(v < 0x80 ? static_cast<char>(v) : '?');
        break;
      }
      default: out->push_back(line[i]);  // \" \\ \/
    }
  }
  return false;  // no closing quote: not such a line
}

namespace {

// Text copied from a web page: HTML's character references for the characters logs print, and
// the no-break space a browser copies for a space.
bool HasHtmlText(std::string_view s) {
  return s.find("\xC2\xA0") != std::string_view::npos ||
         (s.find('&') != std::string_view::npos && s.find(';') != std::string_view::npos);
}

void DecodeHtmlText(std::string_view s, std::string* out) {
  static constexpr std::pair<std::string_view, char> kRefs[] = {
      {"&quot;", '"'}, {"&lt;", '<'},    {"&gt;", '>'},    {"&amp;", '&'},
      {"&#39;", '\''}, {"&#x27;", '\''}, {"&apos;", '\''}, {"&nbsp;", ' '}};
  out->clear();
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\xC2' && i + 1 < s.size() && s[i + 1] == '\xA0') {
      out->push_back(' ');
      i += 2;
      continue;
    }
    bool replaced = false;
    if (s[i] == '&') {
      for (const auto& [ref, c] : kRefs) {
        if (s.substr(i, ref.size()) == ref) {
          out->push_back(c);
          i += ref.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out->push_back(s[i++]);
  }
}

}  // namespace

std::string_view Unwrapped(std::string_view line, std::string* buf) {
  if (line.starts_with("{\"log\":\"") && UnwrapJsonLog(line, buf)) line = *buf;
  if (HasHtmlText(line)) {
    std::string shown;
    DecodeHtmlText(line, &shown);
    buf->swap(shown);
    line = *buf;
  }
  if (line.find('\x1b') == std::string_view::npos) return line;
  std::string shown;
  StripAnsi(line, &shown);
  buf->swap(shown);
  return *buf;
}

}  // namespace vigil::diagnose
