// One log record: the CANN plog form
//   [LEVEL] MODULE(PID,PNAME):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file:line] [tid]content
// (spaces around the brackets are optional in real logs; RUNTIME writes "[file:line]tid content",
// HCCP "tid:N,content"), or a screen line "[PID: n] YYYY-MM-DD-HH:MM:SS.mmm.uuu Title(EIxxxx): msg".
// Real files glue several records on one physical line, so a line is split at every record start.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "diagnose/text_util.h"

namespace vigil::diagnose {

enum class Level : uint8_t { kUnknown, kDebug, kInfo, kWarning, kError, kEvent, kScreen };

const char* LevelName(Level l);

struct Record {
  Level level = Level::kUnknown;
  std::string_view module;    // "HCCL", "RUNTIME", "ROCE", ... empty for screen lines
  int64_t pid = -1;
  std::string_view pname;
  Micros time = kNoTime;
  int64_t tid = -1;
  std::string_view content;   // after [file:line] [tid]
  std::string_view whole;     // the full record text
};

// Length of a record start at s[0] ("[ERROR] HCCL(12," or "[PID: 12]"), or 0 if none.
bool IsRecordStart(std::string_view s);

// Parses one record (s starts at a record start). False if the header is not valid.
bool ParseRecord(std::string_view s, Record* out);

// Calls fn(record_text) for every record in a physical line (prefix text before the first record
// start is passed to on_prefix, so a caller can count continuation/junk text). Never reads outside
// `line`.
template <typename Fn, typename PrefixFn>
void SplitRecords(std::string_view line, Fn&& fn, PrefixFn&& on_prefix) {
  size_t start = std::string_view::npos;
  size_t pos = 0;
  while (pos < line.size()) {
    const void* hit = std::memchr(line.data() + pos, '[', line.size() - pos);
    if (hit == nullptr) break;
    size_t at = static_cast<size_t>(static_cast<const char*>(hit) - line.data());
    // Field brackets follow a letter ("tag["); record starts follow nothing, a space or
    // punctuation. Testing that first skips most brackets cheaply.
    unsigned char before = at == 0 ? ' ' : static_cast<unsigned char>(line[at - 1]);
    bool may_start = !((before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z'));
    if (may_start && IsRecordStart(line.substr(at))) {
      if (start == std::string_view::npos) {
        if (at > 0) on_prefix(line.substr(0, at));
      } else {
        fn(line.substr(start, at - start));
      }
      start = at;
    }
    pos = at + 1;
  }
  if (start == std::string_view::npos) {
    if (!line.empty()) on_prefix(line);
  } else {
    fn(line.substr(start));
  }
}

}  // namespace vigil::diagnose
