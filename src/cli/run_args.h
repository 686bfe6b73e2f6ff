// `vigil run [OPTIONS] PROGRAM ARGS`: every word from PROGRAM on is the program's, also those
// that look like vigil run's own options (`vigil run -n 4 ./bin/all_reduce_test -n 20 -b 8K`).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace vigil::cli {

// Inserts into args (argv without argv[0]) the "--" that tells the parser where the program's
// words begin: before the first word after "run" that is neither one of run's options nor the
// value of one. Leaves args alone when it has a "--" already or an option run does not know
// (the parser then reports it).
void SeparateRunCommand(const CLI::App& app, std::vector<std::string>* args);

}  // namespace vigil::cli
