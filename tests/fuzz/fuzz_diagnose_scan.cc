// vigil diagnose on one log file's bytes: the scanner (records, free text, tracebacks, launcher
// prefixes), the same text read in pieces, the job model, the rules and the three reports.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnose/diagnose.h"
#include "diagnose/job_model.h"
#include "diagnose/rules.h"
#include "diagnose/scanner.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  using namespace vigil::diagnose;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // Read whole, and in three pieces split at line boundaries (merged like a big file's): the
  // same lines, records and events, a traceback cut by a piece's start included
  // (corpus/diagnose_scan/found-piece-boundary-traceback). Not compared: torchrun's summary
  // blocks (one cut by a piece's start stays the previous piece's) and what the per-file caps
  // dropped (file_merge.h).
  FileResult whole = ParseText(text, 0);
  FileResult pieces = ParseTextInPieces(text, 0, 3);
  FUZZ_CHECK(pieces.lines == whole.lines);
  FUZZ_CHECK(pieces.bytes == whole.bytes);
  if (whole.dropped_events == 0 && pieces.dropped_events == 0) {
    auto keys = [](const FileResult& r) {
      std::vector<std::string> k;
      for (const Event& e : r.events) {
        if (e.layout == "torchrun_summary") continue;
        k.push_back(std::to_string(e.loc.line) + "|" + e.kb + "|" + e.code + "|" + e.status + "|" +
                    e.context + "|" + e.text);
      }
      return k;
    };
    FUZZ_CHECK(keys(pieces) == keys(whole));
  }
  ScanResult scan;
  InputFile file;
  file.path = "fuzz/plog-1_20250101000000000.log";
  file.node = "fuzz";
  file.size = size;
  file.regular = true;
  scan.files.push_back(file);
  scan.results.push_back(std::move(whole));
  DiagnoseResult r;
  r.job = BuildJob(std::move(scan));
  r.findings = ApplyRules(r.job);
  (void)RenderText(r, true);
  (void)RenderJsonText(r);
  (void)RenderHtml(r);
  return 0;
}
