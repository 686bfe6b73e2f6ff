// `vigil_diagnose_dev PATH...` = `vigil diagnose PATH...`, for tests and manual runs.
#include <CLI/CLI.hpp>

#include <algorithm>

#include "cli/diagnose_command.h"

int main(int argc, char** argv) {
  CLI::App app("vigil (diagnose only)");
  app.require_subcommand(1);
  int exit_code = 0;
  vigil::cli::RegisterDiagnoseCommand(app, &exit_code);
  // Accept both `tool diagnose PATH` and `tool PATH`.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] != "diagnose") args.insert(args.begin(), "diagnose");
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
