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

// Position of the first record start in s at or after `from` (a '[' not preceded by a letter,
// field brackets such as "tag[" are), or npos. One vectorized pass over the bytes: a record start
// is '[' followed by an upper-case letter, which is rare outside record headers.
size_t FindRecordStart(std::string_view s, size_t from);

// Parses one record (s starts at a record start). False if the header is not valid.
bool ParseRecord(std::string_view s, Record* out);

// ParseRecord with memory: consecutive records of one file almost always share their header
// ("[INFO] HCCL(2111666,python):") and date, so the parser keeps the last header and the day of
// the last stamp and only compares bytes when they repeat. Same results as ParseRecord.
class RecordParser {
 public:
  // `slot`: what HeaderSlot(s) returned, when the caller already asked (saves a compare).
  bool Parse(std::string_view s, Record* out, int slot = -1);
  // The cache slot of a recent header that s starts with (then s[0] is a record start), or -1.
  int HeaderSlot(std::string_view s) { return Match(s); }

 private:
  // The first len bytes of a recent plog record, up to and including "):". Debug logs interleave
  // a few modules (HCCL, RUNTIME, GE, ...) and levels, so several are kept.
  struct Header {
    char bytes[128];
    size_t len = 0;
    uint64_t head = 0;  // bytes[0..8) as a number: a cheap first test
    Level level = Level::kUnknown;
    int64_t pid = -1;
    size_t module_off = 0, module_len = 0, pname_off = 0, pname_len = 0;
  };
  static constexpr int kSlots = 8;
  Header hdr_[kSlots];
  int used_ = 0, last_ = 0, next_ = 0;
  // Date cache: "YYYY-MM-DD-" of the last stamp and its midnight in Micros.
  char date_[11] = {};
  Micros day_ = kNoTime;

  int Match(std::string_view s) {
    if (s.size() < 8) return -1;
    uint64_t head;
    std::memcpy(&head, s.data(), 8);
    for (int k = 0, i = last_; k < used_; ++k, i = i + 1 == used_ ? 0 : i + 1) {
      const Header& h = hdr_[i];
      if (h.head == head && s.size() >= h.len && std::memcmp(s.data(), h.bytes, h.len) == 0) {
        last_ = i;
        return i;
      }
    }
    return -1;
  }
  size_t Stamp(std::string_view s, size_t p, Micros* t);
};

// Calls fn(record_text) for every record in a physical line (prefix text before the first record
// start is passed to on_prefix, so a caller can count continuation/junk text). Never reads outside
// `line`.
// `starts_at_0`: the caller already knows line[0] starts a record.
template <typename Fn, typename PrefixFn>
void SplitRecords(std::string_view line, Fn&& fn, PrefixFn&& on_prefix, bool starts_at_0 = false) {
  size_t start = starts_at_0 ? 0 : FindRecordStart(line, 0);
  if (start == std::string_view::npos) {
    if (!line.empty()) on_prefix(line);
    return;
  }
  if (start > 0) on_prefix(line.substr(0, start));
  while (true) {
    size_t next = FindRecordStart(line, start + 1);
    if (next == std::string_view::npos) {
      fn(line.substr(start));
      return;
    }
    fn(line.substr(start, next - start));
    start = next;
  }
}

}  // namespace vigil::diagnose
