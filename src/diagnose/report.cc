#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "diagnose/diagnose.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {

DiagnoseResult Diagnose(const DiagnoseOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  ScanOptions so;
  so.threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.min_piece_bytes = options.min_piece_bytes;
  so.progress = options.progress;
  DiagnoseResult r;
  r.job = BuildJob(Scan(options.inputs, so));
  r.findings = ApplyRules(r.job);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

namespace {

std::string Human(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1ull << 20));
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

std::string RankLine(const RankRef& r) {
  std::string s = DescribeRank(r);
  if (!r.group.empty()) s += fmt::format(" in {}", r.group);
  if (!r.node.empty()) s += fmt::format("  [logs: {}]", r.node);
  return s;
}

void AppendFinding(std::string* out, const Finding& f, bool verdict, size_t n) {
  if (verdict) {
    *out += fmt::format("VERDICT: {}\n", f.title);
  } else {
    *out += fmt::format("{}. {}\n", n, f.title);
  }
  std::string ind = verdict ? "  " : "   ";
  *out += fmt::format("{}fault: {}   confidence: {}   score: {}{}\n", ind, f.fault, f.confidence, f.score,
                      f.code.empty() ? "" : "   code: " + f.code);
  for (const RankRef& r : f.ranks) *out += fmt::format("{}{}: {}\n", ind, r.role, RankLine(r));
  if (f.time != kNoTime) *out += fmt::format("{}time: {}\n", ind, FormatTime(f.time));
  *out += fmt::format("{}what happened: {}\n", ind, f.summary);
  *out += fmt::format("{}what to do: {}\n", ind, f.advice);
  // What the verdict rests on and what would overturn it (the evidence rule's facts).
  for (const auto& [k, v] : f.facts) {
    if (k == "rests_on") *out += fmt::format("{}rests on: {}\n", ind, v);
    else if (k == "would_refute") *out += fmt::format("{}would refute it: {}\n", ind, v);
  }
  if (!f.kb.empty()) *out += fmt::format("{}knowledge base: {} (vigil diagnose --explain {})\n", ind, f.kb, f.kb);
  if (!f.evidence.empty()) {
    *out += fmt::format("{}evidence:\n", ind);
    for (const Evidence& e : f.evidence)
      *out += fmt::format("{}  {}:{}  ({}) {}\n", ind, e.file, e.loc.line, e.note, Printable(e.text, 400));
  }
}

nlohmann::json Null() { return nlohmann::json(); }
nlohmann::json Num(int64_t v) { return v < 0 ? Null() : nlohmann::json(v); }
nlohmann::json TimeJ(Micros t) { return t == kNoTime ? Null() : nlohmann::json(FormatTime(t)); }

nlohmann::json FindingJson(const Finding& f) {
  nlohmann::json j;
  j["fault"] = f.fault;
  j["title"] = f.title;
  j["summary"] = f.summary;
  j["advice"] = f.advice;
  j["code"] = f.code;
  j["class"] = f.cls;
  j["kb"] = f.kb;
  j["confidence"] = f.confidence;
  j["score"] = f.score;
  j["time"] = TimeJ(f.time);
  j["ranks"] = nlohmann::json::array();
  for (const RankRef& r : f.ranks) {
    j["ranks"].push_back({{"role", r.role}, {"uid", r.uid}, {"group", r.group}, {"rank", Num(r.rank)},
                          {"pid", Num(r.pid)}, {"node", r.node}, {"host", r.host}, {"device", Num(r.device)}});
  }
  j["facts"] = nlohmann::json::object();
  for (const auto& [k, v] : f.facts) j["facts"][k] = v;
  j["evidence"] = nlohmann::json::array();
  for (const Evidence& e : f.evidence)
    j["evidence"].push_back({{"file", e.file}, {"line", e.loc.line}, {"text", e.text}, {"note", e.note}});
  return j;
}

std::string Esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o.push_back(c);
    }
  }
  return o;
}

}  // namespace

std::string RenderText(const DiagnoseResult& r, bool verbose) {
  const Job& job = r.job;
  std::string out;
  out += fmt::format("vigil diagnose: {} file(s), {}, {} records, {} op entries in {:.2f} s; {} process(es), {} communicator(s)\n\n",
                     job.stats.files, Human(job.stats.bytes), job.stats.records, job.stats.op_entries, r.seconds,
                     job.processes.size(), job.comms.size());
  if (r.findings.empty()) {
    out += "VERDICT: no fault found in these logs\n";
    if (job.stats.records == 0) {
      // Nothing to judge: say what is missing instead of guessing.
      out += fmt::format(
          "  None of the {} line(s) is a CANN plog record or carries an error code or a message the "
          "knowledge base knows: this is not the part of the job's output that holds the failure. "
          "Collect the failing rank's screen output from its first error on (with the traceback), "
          "or the plog folders of every node ($ASCEND_PROCESS_LOG_PATH, default ~/ascend/log: "
          "run/plog and debug/plog).\n",
          job.stats.lines);
    } else {
      out += "  No heartbeat event, task exception, error code, error message or link error was found. If the "
             "job hung, collect the logs of every node (run/ and debug/ plog) and rerun with "
             "HCCL_ENTRY_LOG_ENABLE=1.\n";
    }
  } else {
    AppendFinding(&out, r.findings.front(), true, 1);
    if (r.findings.size() > 1) {
      out += "\nOTHER FINDINGS (best first)\n";
      size_t limit = verbose ? r.findings.size() : std::min<size_t>(r.findings.size(), 8);
      for (size_t i = 1; i < limit; ++i) {
        AppendFinding(&out, r.findings[i], false, i + 1);
      }
      if (limit < r.findings.size()) out += fmt::format("   ... {} more (--verbose)\n", r.findings.size() - limit);
    }
  }
  out += "\nJOB\n";
  out += fmt::format("  HCCL_EXEC_TIMEOUT in force: {} s ({})\n", job.exec_timeout_s,
                     job.exec_timeout_from_log ? "from the logs" : "default; no echo found");
  size_t shown = 0;
  for (const Comm& c : job.comms) {
    if (!verbose && shown++ >= 8) {
      out += fmt::format("  ... {} more communicators (--verbose)\n", job.comms.size() - 8);
      break;
    }
    out += fmt::format("  comm {}: {} rank(s){}\n", c.group, c.rank_size >= 0 ? std::to_string(c.rank_size) : "?",
                       c.root_ip.empty() ? "" : fmt::format(", root {}:{}", c.root_ip, c.port));
    size_t ms = 0;
    for (const Member& m : c.members) {
      if (!verbose && ms++ >= 16) {
        out += fmt::format("    ... {} more ranks\n", c.members.size() - 16);
        break;
      }
      const Process* p = m.proc >= 0 ? &job.processes[m.proc] : nullptr;
      std::string streams;
      // fmt rather than `"literal" + std::string`: GCC 12 -O3 reports a false -Werror=restrict on
      // operator+(const char*, std::string&&).
      for (const auto& [sid, st] : m.ops.streams) streams += fmt::format("{}{}", streams.empty() ? "" : ",", sid);
      out += fmt::format("    rank {:>3}: pid {} device {} {}{} ops {}{}{}\n", m.rank, p ? p->pid : -1, m.device,
                         p && !p->uid.empty() ? fmt::format("{} ", p->uid) : std::string(),
                         p ? fmt::format("errors {},", p->errors) : std::string(), m.ops.total,
                         streams.empty() ? std::string() : fmt::format(" streams {}", streams),
                         p ? fmt::format("  [{}]", p->node) : std::string());
    }
  }
  if (!job.skipped.empty()) {
    out += fmt::format("\nNOT READ OR EMPTY ({} file(s))\n", job.skipped.size());
    size_t n = 0;
    for (const SkippedFile& s : job.skipped) {
      if (!verbose && n++ >= 20) {
        out += "  ...\n";
        break;
      }
      out += fmt::format("  {}: {}\n", s.path, s.reason);
    }
  }
  const JobStats& st = job.stats;
  if (st.unparsed_lines || st.binary_lines || st.overlong_lines || st.dropped_events || st.ignored_files) {
    out += fmt::format("\nINPUT: {} line(s) without a log record (continuations, text, junk), {} with binary bytes, "
                       "{} cut (longer than 4 MiB), {} event(s) over the per-file caps, {} non-log file(s) ignored\n",
                       st.unparsed_lines, st.binary_lines, st.overlong_lines, st.dropped_events, st.ignored_files);
  }
  return out;
}

nlohmann::json RenderJson(const DiagnoseResult& r) {
  const Job& job = r.job;
  nlohmann::json j;
  j["schema"] = kJsonSchema;
  j["verdict"] = r.findings.empty() ? Null() : FindingJson(r.findings.front());
  j["findings"] = nlohmann::json::array();
  for (const Finding& f : r.findings) j["findings"].push_back(FindingJson(f));
  nlohmann::json jj;
  jj["exec_timeout_s"] = job.exec_timeout_s;
  jj["exec_timeout_source"] = job.exec_timeout_from_log ? "log" : "default";
  jj["communicators"] = nlohmann::json::array();
  for (const Comm& c : job.comms) {
    nlohmann::json cj{{"group", c.group}, {"rank_size", Num(c.rank_size)}, {"root_ip", c.root_ip}, {"port", Num(c.port)}};
    cj["ranks"] = nlohmann::json::array();
    for (const Member& m : c.members) {
      const Process* p = m.proc >= 0 ? &job.processes[m.proc] : nullptr;
      nlohmann::json streams = nlohmann::json::array();
      for (const auto& [sid, st] : m.ops.streams) streams.push_back(sid);
      int64_t failures = 0;
      for (const TaskFailure& tf : job.failures)
        if (tf.proc == m.proc && tf.group == c.group) ++failures;
      cj["ranks"].push_back({{"rank", Num(m.rank)}, {"pid", p ? Num(p->pid) : Null()}, {"node", p ? p->node : ""},
                             {"host", p ? p->host_ip : ""}, {"uid", p ? p->uid : ""}, {"device", Num(m.device)},
                             {"ops", m.ops.total}, {"streams", streams}, {"failures", failures},
                             {"errors", p ? p->errors : 0}});
    }
    jj["communicators"].push_back(std::move(cj));
  }
  jj["processes"] = nlohmann::json::array();
  for (const Process& p : job.processes) {
    nlohmann::json fe = Null();
    if (p.first_error != kNoTime)
      fe = {{"time", FormatTime(p.first_error)}, {"file", job.FilePath(p.first_error_loc)},
            {"line", p.first_error_loc.line}, {"text", p.first_error_text}};
    jj["processes"].push_back({{"node", p.node}, {"pid", p.pid}, {"pname", p.pname}, {"uid", p.uid},
                               {"host", p.host_ip}, {"device", Num(p.device)}, {"first", TimeJ(p.first)},
                               {"last", TimeJ(p.last)}, {"errors", p.errors}, {"first_error", fe}});
  }
  j["job"] = std::move(jj);
  const JobStats& st = job.stats;
  nlohmann::json in{{"files", st.files},
                    {"bytes", st.bytes},
                    {"lines", st.lines},
                    {"records", st.records},
                    {"unparsed_lines", st.unparsed_lines},
                    {"binary_lines", st.binary_lines},
                    {"overlong_lines", st.overlong_lines},
                    {"dropped_events", st.dropped_events},
                    {"ignored_files", st.ignored_files},
                    {"op_entries", st.op_entries},
                    {"seconds", r.seconds}};
  in["not_read"] = nlohmann::json::array();
  for (const SkippedFile& s : job.skipped) in["not_read"].push_back({{"path", s.path}, {"reason", s.reason}});
  j["input"] = std::move(in);
  return j;
}

std::string RenderJsonText(const DiagnoseResult& r, int indent) {
  return RenderJson(r).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RenderHtml(const DiagnoseResult& r) {
  const Job& job = r.job;
  std::string h;
  h += "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>vigil diagnose</title><style>"
       "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
       ".verdict{border:2px solid #c0392b;border-radius:6px;padding:12px 16px;background:#fdf2f0}"
       ".finding{border:1px solid #ccc;border-radius:6px;padding:8px 12px;margin:8px 0}"
       ".k{color:#666}.ev{font-family:monospace;font-size:12px;white-space:pre-wrap;word-break:break-all;"
       "background:#f6f6f6;padding:4px;margin:2px 0}"
       "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:2px 6px}"
       ".lane text{font-size:11px;font-family:monospace}"
       "</style></head><body>\n";
  h += fmt::format("<h1>vigil diagnose</h1><p class=\"k\">{} file(s), {} records, {} process(es), {} communicator(s), "
                   "HCCL_EXEC_TIMEOUT {} s ({})</p>\n",
                   job.stats.files, job.stats.records, job.processes.size(), job.comms.size(), job.exec_timeout_s,
                   job.exec_timeout_from_log ? "from the logs" : "default");
  auto finding_html = [&](const Finding& f, bool verdict) {
    std::string s = fmt::format("<div class=\"{}\" data-fault=\"{}\"><h2>{}{}</h2>", verdict ? "verdict" : "finding",
                                Esc(f.fault), verdict ? "Verdict: " : "", Esc(f.title));
    s += fmt::format("<p><span class=\"k\">fault</span> {} &middot; <span class=\"k\">confidence</span> {} "
                     "&middot; <span class=\"k\">time</span> {}</p>",
                     Esc(f.fault), Esc(f.confidence), Esc(FormatTime(f.time)));
    for (const RankRef& rr : f.ranks) s += fmt::format("<p><b>{}</b>: {}</p>", Esc(rr.role), Esc(RankLine(rr)));
    s += fmt::format("<p>{}</p><p><b>What to do:</b> {}</p>", Esc(f.summary), Esc(f.advice));
    for (const Evidence& e : f.evidence)
      s += fmt::format("<div class=\"ev\">{}:{} ({})\n{}</div>", Esc(e.file), e.loc.line, Esc(e.note), Esc(e.text));
    return s + "</div>\n";
  };
  if (r.findings.empty()) h += "<div class=\"verdict\" data-fault=\"none\"><h2>Verdict: no fault found</h2></div>\n";
  else h += finding_html(r.findings.front(), true);

  // Timeline: the ranks of the communicator the verdict names (else the first ones), ops as ticks,
  // events as markers, over the span of their events (plus the last ops before them).
  std::string group;
  if (!r.findings.empty())
    for (const RankRef& rr : r.findings.front().ranks)
      if (!rr.group.empty()) group = rr.group;
  if (group.empty() && !job.comms.empty()) group = job.comms.front().group;
  int64_t ci = job.CommIndex(group);
  struct Lane {
    std::string label;
    int64_t proc;
    const Member* m;
  };
  std::vector<Lane> lanes;
  if (ci >= 0)
    for (const Member& m : job.comms[ci].members)
      if (lanes.size() < 64) lanes.push_back({fmt::format("rank {}", m.rank), m.proc, &m});
  std::set<int64_t> in_lanes;
  for (const Lane& l : lanes) in_lanes.insert(l.proc);
  for (size_t p = 0; p < job.processes.size() && lanes.size() < 64; ++p)
    if (!in_lanes.count(static_cast<int64_t>(p)))
      lanes.push_back({fmt::format("pid {}", job.processes[p].pid), static_cast<int64_t>(p), nullptr});
  Micros lo = kNoTime, hi = kNoTime;
  auto widen = [&](Micros t) {
    if (t == kNoTime) return;
    if (lo == kNoTime || t < lo) lo = t;
    if (hi == kNoTime || t > hi) hi = t;
  };
  for (const Event& e : job.events)
    if (e.kind != EventKind::kEnv && e.kind != EventKind::kKeyInfo && in_lanes.count(e.proc)) widen(e.time);
  for (const Lane& l : lanes) {
    if (l.m != nullptr && !l.m->ops.recent.empty()) widen(l.m->ops.recent[l.m->ops.recent.size() > 32 ? l.m->ops.recent.size() - 32 : 0].time);
    // Flight-recorder ops (the last ones of a dump): their enter times, and the last one's leave.
    if (l.m != nullptr && l.m->ops.recent.empty())
      for (size_t k = l.m->flight.size() > 32 ? l.m->flight.size() - 32 : 0; k < l.m->flight.size(); ++k)
        widen(l.m->flight[k].enter);
  }
  if (!lanes.empty() && lo != kNoTime) {
    if (hi == lo) hi = lo + 1000000;
    const int width = 1100, left = 110, lane_h = 26;
    int height = static_cast<int>(lanes.size()) * lane_h + 40;
    auto x_of = [&](Micros t) {
      return left + static_cast<int>(static_cast<double>(t - lo) / static_cast<double>(hi - lo) * (width - left - 20));
    };
    h += fmt::format("<h2>Timeline{}</h2><p class=\"k\">{} to {} &middot; grey ticks: ops (Entry lines, flight "
                     "recorder; purple: not finished); red: errors and task failures; orange: heartbeat events; blue: comm init/destroy. Hover for details.</p>\n",
                     group.empty() ? "" : " of " + Esc(group), Esc(FormatTime(lo)), Esc(FormatTime(hi)));
    h += fmt::format("<svg id=\"timeline\" class=\"lane\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\">", width, height);
    for (size_t i = 0; i < lanes.size(); ++i) {
      int y = 20 + static_cast<int>(i) * lane_h;
      h += fmt::format("<g class=\"rank-lane\" data-label=\"{}\"><text x=\"4\" y=\"{}\">{}</text>"
                       "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>",
                       Esc(lanes[i].label), y + 4, Esc(lanes[i].label), left, y, width - 10, y);
      if (lanes[i].m != nullptr) {
        for (const OpEntry& o : lanes[i].m->ops.recent) {
          if (o.time < lo || o.time > hi) continue;
          int x = x_of(o.time);
          h += fmt::format("<rect class=\"op\" x=\"{}\" y=\"{}\" width=\"2\" height=\"12\" fill=\"#999\"><title>#{} {} "
                           "count {} {} stream {} at {}</title></rect>",
                           x, y - 6, o.seq, Esc(o.op), o.count, Esc(o.dtype), o.stream, Esc(FormatTime(o.time)));
        }
        if (lanes[i].m->ops.recent.empty()) {
          for (const FlightOp& o : lanes[i].m->flight) {
            if (o.enter == kNoTime || o.enter < lo || o.enter > hi) continue;
            bool bad = o.state == "failed" || o.state == "running" || o.state == "queued";
            h += fmt::format("<rect class=\"op flight\" x=\"{}\" y=\"{}\" width=\"2\" height=\"12\" fill=\"{}\">"
                             "<title>#{} {} count {} {} stream {} entered {} ({})</title></rect>",
                             x_of(o.enter), y - 6, bad ? "#8e44ad" : "#999", o.index, Esc(o.op), o.count, Esc(o.dtype),
                             o.stream, Esc(FormatTime(o.enter)), Esc(o.state));
          }
        }
      }
      for (const Event& e : job.events) {
        if (e.proc != lanes[i].proc || e.time == kNoTime || e.kind == EventKind::kEnv || e.kind == EventKind::kKeyInfo)
          continue;
        const char* color = e.kind == EventKind::kHeartbeat || e.kind == EventKind::kClusterException ? "#e67e22"
                            : e.kind == EventKind::kCommInit || e.kind == EventKind::kCommDestroy   ? "#2980b9"
                                                                                                      : "#c0392b";
        h += fmt::format("<circle class=\"event\" data-kind=\"{}\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"><title>{} {}\n{}</title></circle>",
                         EventKindName(e.kind), x_of(e.time), y, color, Esc(FormatTime(e.time)), EventKindName(e.kind),
                         Esc(Printable(e.text, 300)));
      }
      h += "</g>";
    }
    h += "</svg>\n";
  }
  if (r.findings.size() > 1) {
    h += "<h2>Other findings</h2>\n";
    for (size_t i = 1; i < r.findings.size(); ++i) h += finding_html(r.findings[i], false);
  }
  h += "<h2>Communicators</h2><table><tr><th>comm</th><th>rank</th><th>pid</th><th>uid</th><th>device</th><th>ops</th>"
       "<th>errors</th><th>logs</th></tr>\n";
  for (const Comm& c : job.comms)
    for (const Member& m : c.members) {
      const Process* p = m.proc >= 0 ? &job.processes[m.proc] : nullptr;
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       Esc(c.group), m.rank, p ? p->pid : -1, p ? Esc(p->uid) : "", m.device, m.ops.total,
                       p ? p->errors : 0, p ? Esc(p->node) : "");
    }
  h += "</table>\n";
  if (!job.skipped.empty()) {
    h += "<h2>Not read</h2><ul>";
    for (const SkippedFile& s : job.skipped) h += fmt::format("<li>{}: {}</li>", Esc(s.path), Esc(s.reason));
    h += "</ul>\n";
  }
  h += "</body></html>\n";
  return h;
}

}  // namespace vigil::diagnose
