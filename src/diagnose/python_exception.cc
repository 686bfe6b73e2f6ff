#include "diagnose/python_exception.h"

#include <array>

namespace vigil::diagnose {
namespace {

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
bool Letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// The exception type ending at `end` (exclusive) when what follows it closes an exception line.
std::string_view TypeEndingAt(std::string_view s, size_t end, size_t suffix_len) {
  size_t start = end;
  while (start > 0 && NameChar(s[start - 1])) --start;
  if (start > 0 && s[start - 1] != ' ' && s[start - 1] != '\t') return {};
  while (start < end && !Letter(s[start])) ++start;  // "123 DataError" after junk digits
  if (start >= end || s[start] == '.') return {};
  std::string_view type = s.substr(start, end - start);
  if (type.size() == suffix_len && type == "Error") return {};
  size_t p = end;
  if (p < s.size() && s[p] == '(') {  // the cause: "RayTaskError(RayActorError)"
    size_t close = s.find(')', p);
    if (close == std::string_view::npos) return {};
    for (size_t i = p + 1; i < close; ++i)
      if (!NameChar(s[i])) return {};
    p = close + 1;
  }
  while (p < s.size() && (s[p] == '\r' || s[p] == '\n' || s[p] == ' ')) ++p;
  if (p == s.size()) return type;                               // the type alone
  if (s[p] == ':' && (p + 1 == s.size() || s[p + 1] == ' ')) return type;  // "Type: message"
  return {};
}

}  // namespace

std::string_view TracebackExceptionType(std::string_view line) {
  static constexpr std::array<std::string_view, 2> kSuffixes = {"Error", "Exception"};
  for (std::string_view suffix : kSuffixes) {
    for (size_t k = line.find(suffix); k != std::string_view::npos; k = line.find(suffix, k + 1)) {
      size_t end = k + suffix.size();
      if (end < line.size() && NameChar(line[end]) && line[end] != '.') continue;  // "ErrorCode"
      std::string_view t = TypeEndingAt(line, end, suffix.size());
      if (!t.empty()) return t;
    }
  }
  return {};
}

}  // namespace vigil::diagnose
