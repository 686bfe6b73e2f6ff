#include "cli/diagnose_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "common/knowledge_base.h"
#include "diagnose/diagnose.h"

namespace vigil::cli {
namespace {

struct DiagnoseArgs {
  std::vector<std::string> paths;
  bool json = false;
  std::string json_file;
  std::string html_file;
  bool verbose = false;
  bool no_progress = false;
  int threads = 0;  // 0: one per hardware thread
  std::string explain;  // --explain CODE: print the knowledge-base entry instead
};

// A one-line progress bar on stderr, only for large inputs on a terminal.
void Progress(uint64_t done, uint64_t total) {
  static bool shown = false;
  if (total < (256ull << 20) || isatty(2) == 0) return;
  int pct = total ? static_cast<int>(done * 100 / total) : 100;
  int bars = pct / 4;
  std::fprintf(stderr, "\rreading logs [%-25.*s] %3d%% %.1f/%.1f GiB", bars,
               "#########################", pct, static_cast<double>(done) / (1ull << 30),
               static_cast<double>(total) / (1ull << 30));
  shown = true;
  if (done >= total && shown) std::fprintf(stderr, "\n");
}

// --explain: the knowledge base's entry for an id or code, as typed, else in upper case (codes:
// "ei0002") or lower case (ids). 2 when it is unknown.
int Explain(const std::string& id_or_code) {
  const kb::Entry* e = kb::Get().Find(id_or_code);
  for (int (*conv)(int) : {::toupper, ::tolower}) {
    if (e != nullptr) break;
    std::string s = id_or_code;
    for (char& c : s) c = static_cast<char>(conv(static_cast<unsigned char>(c)));
    e = kb::Get().Find(s);
  }
  if (e == nullptr) {
    std::cerr << "vigil diagnose: no knowledge-base entry for \"" << id_or_code
              << "\" (give a code such as EI0002 or an id such as hccl.heartbeat_lost)\n";
    return 2;
  }
  std::cout << kb::Explain(*e);
  return 0;
}

int Run(const DiagnoseArgs& a) {
  if (!a.explain.empty()) return Explain(a.explain);
  if (a.paths.empty()) {
    std::cerr << "vigil diagnose: PATH is required (or --explain CODE)\n";
    return 2;
  }
  diagnose::DiagnoseOptions o;
  o.inputs = a.paths;
  o.threads = a.threads < 1 ? 0 : a.threads;
  if (!a.no_progress) o.progress = Progress;
  diagnose::DiagnoseResult r = diagnose::Diagnose(o);
  if (isatty(2) != 0 && !a.no_progress && r.job.stats.bytes >= (256ull << 20))
    std::fprintf(stderr, "\r\033[K");
  if (r.job.stats.files == 0) {
    std::cerr << "vigil diagnose: nothing readable in the given path(s)\n";
    for (const auto& s : r.job.skipped) std::cerr << "  " << s.path << ": " << s.reason << "\n";
    if (r.job.stats.ignored_files > 0)
      std::cerr << "  " << r.job.stats.ignored_files
                << " file(s) in the folders do not look like logs by their names (*.log, *.txt, "
                   "*.out, plog/...): name a file to read it whatever its name\n";
    return 2;
  }
  if (!a.json_file.empty()) {
    std::ofstream f(a.json_file);
    f << diagnose::RenderJsonText(r) << "\n";
    if (!f) {
      std::cerr << "vigil diagnose: cannot write " << a.json_file << "\n";
      return 2;
    }
  }
  if (!a.html_file.empty()) {
    std::ofstream f(a.html_file);
    f << diagnose::RenderHtml(r);
    if (!f) {
      std::cerr << "vigil diagnose: cannot write " << a.html_file << "\n";
      return 2;
    }
  }
  if (a.json) {
    std::cout << diagnose::RenderJsonText(r) << "\n";
  } else {
    std::cout << diagnose::RenderText(r, a.verbose);
  }
  return 0;
}

}  // namespace

void RegisterDiagnoseCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DiagnoseArgs>();
  CLI::App* sub = app.add_subcommand(
      "diagnose",
      "Read every rank's logs (CANN plog folders, files, screen captures, flight-recorder "
      "dumps) and name the root-cause rank and the reason.");
  sub->add_option("PATH", args->paths, "log folders (searched recursively), files, or - for stdin");
  sub->add_option("--explain", args->explain,
                  "print what the knowledge base knows of an error code or entry id (EI0002, "
                  "ERR02200, hccl.heartbeat_lost): meaning, causes, checks, actions; no logs read");
  sub->add_flag("--json", args->json, "print the report as JSON (schema vigil.diagnose/1)");
  sub->add_option("--json-file", args->json_file, "also write the JSON report to FILE");
  sub->add_option("--html", args->html_file,
                  "also write a self-contained HTML report with a per-rank timeline");
  sub->add_flag("-v,--verbose", args->verbose, "list every finding, communicator and rank");
  sub->add_flag("--no-progress", args->no_progress, "never draw the progress bar");
  sub->add_option(
      "-j,--threads", args->threads,
      "reader threads (default: the hardware threads, std::thread::hardware_concurrency(), " +
          std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
          " here); files are read in parallel, and a large file in pieces");
  sub->callback([args, exit_code]() { *exit_code = Run(*args); });
}

}  // namespace vigil::cli
