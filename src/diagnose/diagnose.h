// `vigil diagnose` as a library: scan → job model → rules → report.
//
// JSON schema "vigil.diagnose/1" (RenderJson), stable across minor versions (fields are only
// added):
//   {
//     "schema": "vigil.diagnose/1",
//     "verdict": null | Finding,            // the highest-scoring finding
//     "findings": [Finding...],             // all, best first
//     "job": {
//       "exec_timeout_s": 1836, "exec_timeout_source": "default" | "log",
//       "communicators": [{"group", "rank_size", "root_ip", "port",
//                          "ranks": [{"rank", "pid", "node", "host", "uid", "device",
//                                     "ops", "streams": [..], "failures": n, "errors": n}]}],
//       "processes": [{"node", "pid", "pname", "uid", "host", "device", "first", "last",
//                      "errors", "first_error": {"time", "file", "line", "text"} | null}]
//     },
//     "input": {"files", "bytes", "lines", "records", "unparsed_lines", "binary_lines",
//               "overlong_lines", "dropped_events", "ignored_files", "op_entries", "seconds",
//               "not_read": [{"path", "reason"}]}
//   }
//   Finding = {"fault", "title", "summary", "advice", "code", "confidence", "score",
//              "time" (plog form or null), "ranks": [{"role", "uid", "group", "rank", "pid",
//              "node", "host", "device"}], "facts": {k: v}, "evidence": [{"file", "line",
//              "text", "note"}]}
// Unknown values are null (numbers) or "" (strings).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "diagnose/job_model.h"
#include "diagnose/rules.h"

namespace vigil::diagnose {

inline constexpr const char* kJsonSchema = "vigil.diagnose/1";

struct DiagnoseOptions {
  std::vector<std::string> inputs;
  int threads = 0;                         // reader threads; 0: std::thread::hardware_concurrency()
  uint64_t min_piece_bytes = 32ull << 20;  // large files are read in pieces of at least this
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct DiagnoseResult {
  Job job;
  std::vector<Finding> findings;
  double seconds = 0;
};

DiagnoseResult Diagnose(const DiagnoseOptions& options);

std::string RenderText(const DiagnoseResult& r, bool verbose);
// Strings copied from logs may hold invalid UTF-8: dump with error_handler_t::replace, or use
// RenderJsonText, which does.
nlohmann::json RenderJson(const DiagnoseResult& r);
std::string RenderJsonText(const DiagnoseResult& r, int indent = 2);
// A self-contained HTML page: verdict, findings with evidence, and a per-rank timeline of ops
// and events around the failure.
std::string RenderHtml(const DiagnoseResult& r);

}  // namespace vigil::diagnose
