#include "diagnose/piece_context.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "diagnose/record.h"

namespace vigil::diagnose {
namespace {

// The lines of buf that FileParser::Line would hand to the free-text reader, oldest first.
// `whole`: buf starts at a line start (else its first, cut line is left out).
std::vector<std::string_view> FreeLines(std::string_view buf, bool whole) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  if (!whole) {
    const size_t nl = buf.find('\n');
    pos = nl == std::string_view::npos ? buf.size() : nl + 1;
  }
  while (pos < buf.size()) {
    size_t nl = buf.find('\n', pos);
    if (nl == std::string_view::npos) nl = buf.size();
    std::string_view line = buf.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (IsRecordStart(line) && !line.starts_with("[PID:")) continue;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::vector<std::string_view> FreeLinesBefore(const ReadAtFn& read_at, uint64_t start, size_t count,
                                              uint64_t max_bytes, std::string* buf) {
  std::vector<std::string_view> lines;
  if (start == 0 || count == 0) return lines;
  // Windows of 64 KiB, 256 KiB, 1 MiB, ... back from start: most pieces need the first only.
  for (uint64_t span = 64u << 10;; span *= 4) {
    const uint64_t back = std::min({span, max_bytes, start});
    buf->resize(back);
    size_t got = 0;
    while (got < back) {
      const ssize_t n = read_at(buf->data() + got, back - got, start - back + got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    buf->resize(got);
    const bool whole = back == start;
    lines = FreeLines(*buf, whole);
    if (got < back || lines.size() >= count || whole || back >= max_bytes) break;
  }
  if (lines.size() > count) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(count));
  return lines;
}

}  // namespace vigil::diagnose
