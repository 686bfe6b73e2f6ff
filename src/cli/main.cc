// vigil: the one command — run (local launcher), diagnose (log analyzer), bench, health.
#include <CLI/CLI.hpp>

#include "cli/run_command.h"
#if __has_include("cli/diagnose_command.h")
#include "cli/diagnose_command.h"
#define VIGIL_HAVE_DIAGNOSE 1
#endif
#if __has_include("cli/bench_command.h")
#include "cli/bench_command.h"
#define VIGIL_HAVE_BENCH 1
#endif
#if __has_include("cli/health_command.h")
#include "cli/health_command.h"
#define VIGIL_HAVE_HEALTH 1
#endif

int main(int argc, char** argv) {
  CLI::App app{"Vigil: HCCL-compatible collectives for CPU clusters, with fault diagnosis"};
  app.require_subcommand(1);
  int exit_code = 0;
  vigil::cli::RegisterRunCommand(app, &exit_code);
#ifdef VIGIL_HAVE_DIAGNOSE
  vigil::cli::RegisterDiagnoseCommand(app, &exit_code);
#endif
#ifdef VIGIL_HAVE_BENCH
  vigil::cli::RegisterBenchCommand(app, &exit_code);
#endif
#ifdef VIGIL_HAVE_HEALTH
  vigil::cli::RegisterHealthCommand(app, &exit_code);
#endif
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
