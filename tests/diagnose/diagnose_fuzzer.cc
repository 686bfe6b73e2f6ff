// libFuzzer entry for the diagnose line parser (build with -DVIGIL_DIAGNOSE_FUZZER=ON and clang):
//   ./diagnose_fuzzer -max_total_time=60 -max_len=4096
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "diagnose/job_model.h"
#include "diagnose/rules.h"
#include "diagnose/scanner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  vigil::diagnose::ScanResult scan;
  scan.files.push_back({"<fuzz>", "node", size});
  scan.results.push_back(vigil::diagnose::ParseText(text, 0));
  vigil::diagnose::Job job = vigil::diagnose::BuildJob(std::move(scan));
  (void)vigil::diagnose::ApplyRules(job);
  return 0;
}
