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

std::string LineNextTo(const ReadAtFn& read_at, uint64_t at, bool before, size_t max_len) {
  std::string buf(max_len + 2, '\0');
  const uint64_t from = before ? (at > buf.size() ? at - buf.size() : 0) : at;
  const size_t want = before ? static_cast<size_t>(at - from) : buf.size();
  ssize_t n = -1;
  do {
    n = read_at(buf.data(), want, from);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return {};
  std::string_view v(buf.data(), static_cast<size_t>(n));
  if (before) {
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    const size_t nl = v.rfind('\n');
    if (nl == std::string_view::npos && from > 0) return {};  // longer than the window
    if (nl != std::string_view::npos) v.remove_prefix(nl + 1);
  } else {
    const size_t nl = v.find('\n');
    if (nl == std::string_view::npos && static_cast<size_t>(n) == want) return {};
    if (nl != std::string_view::npos) v = v.substr(0, nl);
  }
  return std::string(v);
}

}  // namespace vigil::diagnose
