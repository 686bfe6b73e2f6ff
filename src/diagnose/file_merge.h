// Joins the results of the pieces of one file, parsed in parallel, into what one pass over the
// whole file gives: line numbers continued, op ordinals and per-stream statistics carried across
// the cuts (including a stream switch that straddles one), per-process firsts and lasts, and the
// per-file event caps applied again in file order. Each piece after the first starts with the
// free-text reader's traceback state of the lines before it (piece_context.h), so a traceback
// cut by a piece's start keeps its context. Approximations: a piece that alone fills a cap may
// keep or drop a few different events than one pass would; a torchrun summary block cut by a
// piece's start is read by the previous piece up to the cut (its open entry ends there); and a
// traceback followed by over a MiB of plog records before the cut loses its context.
#pragma once

#include <vector>

#include "diagnose/scanner.h"

namespace vigil::diagnose {

// `parts` in file order; each parsed by its own FileParser from a line start.
FileResult MergeParts(std::vector<FileResult>&& parts);

}  // namespace vigil::diagnose
