// The analyzer's findings on a text as one file of pasted output (the tests of rules and of the
// forms lines come in).
#pragma once

#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {

inline std::vector<Finding> Verdicts(const std::string& text) {
  ScanResult scan;
  scan.files.push_back({"<screen>", "node0", text.size()});
  scan.results.push_back(ParseText(text, 0));
  Job job = BuildJob(std::move(scan));
  return ApplyRules(job);
}

// Whether a finding names `rank` in `role` ("root cause", "reporter", "late", ...).
inline bool Names(const Finding& f, int64_t rank, const std::string& role) {
  for (const RankRef& r : f.ranks)
    if (r.rank == rank && r.role == role) return true;
  return false;
}

}  // namespace vigil::diagnose
