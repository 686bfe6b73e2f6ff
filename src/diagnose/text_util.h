// Small, allocation-free helpers for pulling fields out of log records. Every function takes
// string_views into the record and never reads outside them, so truncated or binary input is safe.
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::diagnose {

// Microseconds since 1970-01-01 of a *naive* (zone-less) date-time: CANN logs carry local time
// without a zone, and all comparisons happen between lines of the same job, so no zone is applied.
using Micros = int64_t;
constexpr Micros kNoTime = 0;

inline bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

// The text between "<key>[" and the next ']' (key may end in ':' like "streamID:"), or nullopt.
// `key` is matched as written; the '[' follows it directly or after one space.
std::optional<std::string_view> Field(std::string_view s, std::string_view key);
// Same, searching only after position `from`.
std::optional<std::string_view> FieldFrom(std::string_view s, std::string_view key, size_t from);
// "key=value" up to ',' / space / end (RUNTIME lines: "dev_id=0, stream_id=50").
std::optional<std::string_view> KeyValue(std::string_view s, std::string_view key);

// Calls fn(key, value) for every "key[value]" in s, in one pass; key is the run of letters,
// digits, '_' and ' ' before the '[' (trimmed), e.g. "streamId", "host ip".
template <typename Fn>
void ForEachField(std::string_view s, Fn&& fn) {
  size_t p = 0;
  while (p < s.size()) {
    size_t b = s.find('[', p);
    if (b == std::string_view::npos) return;
    size_t k = b;
    auto keyc = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ' ';
    };
    while (k > p && keyc(s[k - 1])) --k;
    while (k < b && s[k] == ' ') ++k;
    size_t e = s.find(']', b + 1);
    std::string_view value = e == std::string_view::npos ? s.substr(b + 1) : s.substr(b + 1, e - b - 1);
    fn(s.substr(k, b - k), value);
    if (e == std::string_view::npos) return;
    p = e + 1;
  }
}

std::optional<int64_t> ToInt(std::string_view s);      // decimal, optional sign, trims spaces
// Copies s without ANSI escape sequences (terminal colours): what a coloured console shows.
void StripAnsi(std::string_view s, std::string* out);
// A container runtime's JSON log line ({"log":"text\n","stream":"stderr","time":"..."}): its
// text, unescaped, without the trailing newline. False when the line is not one.
bool UnwrapJsonLog(std::string_view line, std::string* out);
// What a log line shows without the wrappers a container runtime or a terminal put around it
// (docker's JSON, colours): `line` itself when it has none, else a view of *buf.
std::string_view Unwrapped(std::string_view line, std::string* buf);
std::optional<uint64_t> ToHex(std::string_view s);     // "0x12c0c0013000" or bare hex
std::optional<int64_t> FieldInt(std::string_view s, std::string_view key);
std::string_view Trim(std::string_view s);

// All decimal numbers in s ("1,3,5" or "[1][3]") in order.
std::vector<int64_t> AllInts(std::string_view s);

// Date-time parsers; each returns kNoTime when malformed.
Micros ParsePlogStamp(std::string_view s);   // 2025-10-24-11:18:29.597.044
Micros ParseCTime(std::string_view s);       // Thu Oct 23 17:25:58 2025
Micros ParseCqeTime(std::string_view s);     // 2025-09-15 08:38:12.776654
Micros ParseFileStamp(std::string_view s);   // 20251024111652406 (plog file names)
// Any of the above.
Micros ParseAnyTime(std::string_view s);

std::string FormatTime(Micros t);            // back to the plog form; "-" for kNoTime
std::string FormatDuration(Micros d);        // "5 min 44 s", "300 s", "1.2 s"

// Printable copy for reports: control and invalid UTF-8 bytes become '?'; cut to max_len.
std::string Printable(std::string_view s, size_t max_len = 600);

}  // namespace vigil::diagnose
