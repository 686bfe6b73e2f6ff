// vigil diagnose on one log file's bytes: the scanner (records, free text, tracebacks, launcher
// prefixes), the same text read in pieces, the job model, the rules and the three reports.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "diagnose/diagnose.h"
#include "diagnose/job_model.h"
#include "diagnose/rules.h"
#include "diagnose/scanner.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  using namespace vigil::diagnose;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // Read whole, and in three pieces split at line boundaries (merged like a big file's). Only
  // the line count is compared: a piece starts without the free-text context of the lines before
  // it (traceback frames, a torchrun summary), so an exception line just after a boundary can
  // read differently (corpus/diagnose_scan/found-piece-boundary-traceback).
  FileResult whole = ParseText(text, 0);
  FileResult pieces = ParseTextInPieces(text, 0, 3);
  FUZZ_CHECK(pieces.lines == whole.lines);
  FUZZ_CHECK(pieces.bytes == whole.bytes);
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
