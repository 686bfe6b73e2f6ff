#include "diagnose/record.h"

#include <algorithm>

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
  size_t d0 = p;
  int64_t v = 0;
  while (p < s.size() && Digit(s[p]) && p - d0 < 12) v = v * 10 + (s[p++] - '0');
  if (p == d0 || p >= s.size() || s[p] != ',') return 0;
  *level = lv;
  *module = mod;
  *pid = v;
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
  while (p < s.size() && s[p] == ' ') ++p;
  // [file:line]
  if (p < s.size() && s[p] == '[') {
    size_t e = s.find(']', p);
    if (e != std::string_view::npos && e - p < 96 && s.substr(p, e - p).find(':') != std::string_view::npos)
      p = e + 1;
  }
  while (p < s.size() && s[p] == ' ') ++p;
  // [tid] | tid<space> | tid:N,
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

}  // namespace vigil::diagnose
