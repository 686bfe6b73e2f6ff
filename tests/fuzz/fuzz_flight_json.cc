// Flight-recorder dumps and rank tables as vigil diagnose reads a JSON file (ParseJsonFile),
// then what the job model and the rules make of the dumps.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "diagnose/job_model.h"
#include "diagnose/rules.h"
#include "diagnose/scanner.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  using namespace vigil::diagnose;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  FileResult result;
  if (!ParseJsonFile(text, 0, &result.dumps, &result.rank_table)) return 0;
  ScanResult scan;
  InputFile file;
  file.path = "fuzz/run/flight/flight-1_20250101000000000.json";
  file.node = "fuzz";
  file.size = size;
  file.regular = true;
  scan.files.push_back(file);
  scan.results.push_back(std::move(result));
  Job job = BuildJob(std::move(scan));
  (void)ApplyRules(job);
  return 0;
}
