// What a copy of a log does to its lines before they are read: a line-number gutter in front of
// each (cat -n, an editor, grep -n), and a terminal's hard wrap that cut a line inside
// parentheses ("... trying to connect to (172.17.0.2" / ", 44737).").
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace vigil::diagnose {

// A line-number gutter ("11: " before line 11's copy, counting up by one a line) is not a task
// label: it goes. One per file, fed every physical line in order.
class Gutter {
 public:
  std::string_view Strip(std::string_view line, uint64_t line_no) {
    size_t i = 0;
    int64_t n = 0;
    while (i < line.size() && i < 9 && line[i] >= '0' && line[i] <= '9')
      n = n * 10 + (line[i++] - '0');
    if (i == 0 || line.substr(i, 2) != ": ") {
      prev_ = -1;
      return line;
    }
    const bool follows = prev_ >= 0 && n == prev_ + 1 && line_no == line_ + 1;
    lines_ += follows ? 1 : 0;
    prev_ = n;
    line_ = line_no;
    return follows ? line.substr(i + 2) : line;
  }
  // Lines whose number followed the line before's.
  uint64_t lines() const { return lines_; }

 private:
  int64_t prev_ = -1;  // the number before the last line, -1: none
  uint64_t line_ = 0;  // that line's number
  uint64_t lines_ = 0;
};

// Lines longer than this are never joined (a piece of a file read in parallel looks this far
// back and ahead for the line next to it).
inline constexpr size_t kMaxWrapLine = 64u << 10;

// A line a terminal may have wrapped: long, with a parenthesis opened after its last closing one.
inline bool WrapOpens(std::string_view line) {
  if (line.size() < 40 || line.size() > kMaxWrapLine) return false;
  const void* open = memrchr(line.data(), '(', line.size());
  if (open == nullptr) return false;
  const void* close = memrchr(line.data(), ')', line.size());
  return close == nullptr || close < open;
}

// The rest of such a line: it closes a parenthesis before it opens one and starts the way no new
// line does (not a prefix, a record or an indented traceback line).
inline bool WrapContinues(std::string_view next) {
  if (next.empty() || next.size() > kMaxWrapLine || next[0] == '[' || next[0] == '(' ||
      next[0] == ' ' || next[0] == '\t')
    return false;
  const size_t close = next.find(')');
  if (close == std::string_view::npos) return false;
  const size_t open = next.find('(');
  return open == std::string_view::npos || close < open;
}

}  // namespace vigil::diagnose
