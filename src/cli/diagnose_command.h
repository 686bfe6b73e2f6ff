// `vigil diagnose PATH...`: reads every rank's logs and names the root cause (src/diagnose/).
#pragma once

#include <CLI/CLI.hpp>

namespace vigil::cli {

// Adds the "diagnose" subcommand to `app`. When it runs, *exit_code is set: 0 when the analysis
// completed (whether or not faults were found), 2 for usage errors (no input could be read,
// an output file could not be written).
void RegisterDiagnoseCommand(CLI::App& app, int* exit_code);

}  // namespace vigil::cli
