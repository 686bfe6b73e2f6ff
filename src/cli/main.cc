// vigil: the one command — run (local launcher), diagnose (log analyzer), bench, health.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "cli/bench_command.h"
#include "cli/diagnose_command.h"
#include "cli/health_command.h"
#include "cli/run_args.h"
#include "cli/run_command.h"

int main(int argc, char** argv) {
  CLI::App app{"Vigil: HCCL-compatible collectives for CPU clusters, with fault diagnosis"};
  app.require_subcommand(1);
  int exit_code = 0;
  vigil::cli::RegisterRunCommand(app, &exit_code);
  vigil::cli::RegisterDiagnoseCommand(app, &exit_code);
  vigil::cli::RegisterBenchCommand(app, &exit_code);
  vigil::cli::RegisterHealthCommand(app, &exit_code);
  std::vector<std::string> args(argv + 1, argv + argc);
  vigil::cli::SeparateRunCommand(app, &args);
  std::reverse(args.begin(), args.end());  // the order CLI11 parses from
  app.name(argv[0]);
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
