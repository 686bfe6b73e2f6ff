// `vigil bench OP -b MIN -e MAX -f FACTOR -n ITERS -w WARMUP [-d dtype] [-o redop] ...`:
// nccl-tests-style performance and correctness sweep of one collective.
//
// Started by hand it runs its own ranks: it re-executes itself as `vigil run -n N ... -- vigil
// bench ...` (--ranks N, default 4). Started under `vigil run`, mpirun or srun it is one rank
// (include/vigil/launch.h); without VIGIL_ROOT_INFO the ranks meet through a root-info file
// (--rootinfo-file, else one named after the launcher's job id in $TMPDIR).
//
// Rank 0 prints one row per size: size, count, type, redop, root, then for out-of-place and
// in-place: time (us, the max over ranks of each rank's mean per iteration), algbw, busbw
// (nccl-tests' factors) and #wrong (elements that differ from the reference, summed over ranks,
// from a separate checked call outside the timed loop). Exit code 1 when any element was wrong.
#pragma once

#include <CLI/CLI.hpp>

namespace vigil::cli {

void RegisterBenchCommand(CLI::App& app, int* exit_code);

}  // namespace vigil::cli
