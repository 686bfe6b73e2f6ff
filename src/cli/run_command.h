// `vigil run -n N [options] -- PROGRAM ARGS`: the local launcher.
#pragma once

#include <CLI/CLI.hpp>

namespace vigil::cli {

void RegisterRunCommand(CLI::App& app, int* exit_code);

}  // namespace vigil::cli
