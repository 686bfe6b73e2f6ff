// Joins the results of the pieces of one file, parsed in parallel, into what one pass over the
// whole file gives: line numbers continued, op ordinals and per-stream statistics carried across
// the cuts (including a stream switch that straddles one), per-process firsts and lasts, and the
// per-file event caps applied again in file order. (The caps are the only approximation: a
// piece that alone fills a cap may keep or drop a few different events than one pass would.)
#pragma once

#include <vector>

#include "diagnose/scanner.h"

namespace vigil::diagnose {

// `parts` in file order; each parsed by its own FileParser from a line start.
FileResult MergeParts(std::vector<FileResult>&& parts);

}  // namespace vigil::diagnose
