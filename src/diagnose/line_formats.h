// The line formats of data/formats/line_formats.json: what launchers and loggers put in front of
// a line (prefixes) and the layouts of a coded error line. Loaded once from the embedded data;
// the regexes are RE2 (linear time, safe on hostile input).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/text_util.h"

namespace vigil::diagnose {

// What the prefixes of a line said about who wrote it.
struct LineContext {
  int64_t rank = -1;   // launcher's rank ("rank=2", "[rank3]:", "[default0]:", "3: ")
  int64_t pid = -1;
  int64_t device = -1;
  std::string ip;
  std::string proc;    // launcher's process name ("VllmWorker", a pod)
  Micros time = kNoTime;
  bool rank_weak = false;  // the rank is a weak prefix's (a task label): a rank the line names wins
  void Merge(const LineContext& o);  // fills what this one lacks
};

// A coded error line: "[PID: n] time Title(EIxxxx): msg" and its other layouts.
struct CodedLine {
  std::string_view code, title, msg;
  int64_t pid = -1;
  Micros time = kNoTime;
  std::string_view layout;  // the layout's name
};

class LineFormats {
 public:
  static const LineFormats& Get();

  // Strips the prefixes at the start of `line` (repeatedly: "[rank3]: (VllmWorker ...) ..."),
  // filling *ctx, and returns what is left. Stops at a CANN plog record start. A line that
  // relays another process's error (the "relays" of line_formats.json) keeps only the time.
  std::string_view StripPrefixes(std::string_view line, LineContext* ctx) const;

  // The first layout that matches (searched, not anchored). False when no code is found.
  bool MatchCoded(std::string_view text, CodedLine* out) const;

  size_t prefix_count() const;
  size_t layout_count() const;
  // Load errors (bad JSON, a regex RE2 rejects); a test asserts there are none.
  const std::vector<std::string>& errors() const;

  ~LineFormats();
  LineFormats(const LineFormats&) = delete;
  LineFormats& operator=(const LineFormats&) = delete;

 private:
  LineFormats();
  std::string_view StripPrefixesOnly(std::string_view line, LineContext* ctx) const;
  std::string_view StripRows(std::string_view line, LineContext* ctx, LineContext* weak) const;
  // Where a process or rank prefix starts after text no row knows, within the first columns.
  size_t LauncherPrefixAhead(std::string_view line) const;
  struct Impl;
  Impl* impl_;
};

// Whether s holds an error-code token: 'E' + [A-Z0-9] + four digits ("EI0002", "EE9999",
// "E39999"), or "ERR" + five digits, not inside a longer word. One pass, no allocation.
bool HasCodeToken(std::string_view s);

// A line that carries a multi-line message with its newlines escaped (a Python repr or a JSON
// string printed as it is: "...error code is 507899\\n[ERROR] 2026-... \\nEL9999: ..."): its
// pieces when a piece after an escaped newline starts a log line of its own (a record, a level
// tag, a code); else empty.
std::vector<std::string_view> EscapedLines(std::string_view line);

// Time stamps in the forms lines carry: CANN's, ISO 8601 ("2025-01-02T03:04:05.123Z"), Python's
// asctime ("2025-01-02 03:04:05,123"). kNoTime otherwise.
Micros ParseLineTime(std::string_view s);

}  // namespace vigil::diagnose
