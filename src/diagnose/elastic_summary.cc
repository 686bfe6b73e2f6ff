#include "diagnose/elastic_summary.h"

#include <fmt/format.h>

#include "common/knowledge_base.h"
#include "diagnose/line_formats.h"
#include "diagnose/text_util.h"

namespace vigil::diagnose {
namespace {

constexpr std::string_view kRootHeader = "Root Cause (first observed failure):";

enum class Shape { kOther, kRootHeader, kFailuresHeader, kEntry, kField, kRule, kNoOthers };

// "key      : value" of an entry, the key one of torchrun's.
bool FieldOf(std::string_view t, std::string_view* key, std::string_view* value) {
  size_t colon = t.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view k = Trim(t.substr(0, colon));
  if (k != "time" && k != "host" && k != "rank" && k != "exitcode" && k != "error_file" && k != "traceback")
    return false;
  *key = k;
  *value = Trim(t.substr(colon + 1));
  return true;
}

Shape ShapeOf(std::string_view line, bool in_block, std::string_view* key, std::string_view* value) {
  if (line.find(kRootHeader) != std::string_view::npos) return Shape::kRootHeader;
  std::string_view t = Trim(line);
  if (t == "Failures:") return Shape::kFailuresHeader;
  if (!in_block) return Shape::kOther;
  if (t.size() >= 4 && t.front() == '[' && t.ends_with("]:")) {
    bool digits = true;
    for (char c : t.substr(1, t.size() - 3)) digits = digits && c >= '0' && c <= '9';
    if (digits) return Shape::kEntry;
  }
  if (FieldOf(t, key, value)) return Shape::kField;
  if (t.size() >= 8 && (t.find_first_not_of('-') == std::string_view::npos ||
                        t.find_first_not_of('=') == std::string_view::npos))
    return Shape::kRule;
  if (t == "<NO_OTHER_FAILURES>") return Shape::kNoOthers;
  return Shape::kOther;
}

// "1 (local_rank: 1)" / "-9 (pid: 14689)": the number, and the one in parentheses after `inner`.
bool NumberAndInner(std::string_view v, std::string_view inner, int64_t* a, int64_t* b) {
  size_t open = v.find('(');
  auto x = ToInt(Trim(v.substr(0, open)));
  if (!x) return false;
  *a = *x;
  if (open != std::string_view::npos) {
    size_t k = v.find(inner, open);
    if (k != std::string_view::npos) {
      std::string_view rest = v.substr(k + inner.size());
      size_t close = rest.find(')');
      if (auto y = ToInt(Trim(rest.substr(0, close)))) *b = *y;
    }
  }
  return true;
}

// "Signal 9 (SIGKILL) received by PID 14689" → "SIGKILL".
std::string SignalInTraceback(std::string_view tb) {
  if (!tb.starts_with("Signal ")) return {};
  size_t open = tb.find('('), close = tb.find(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return {};
  return std::string(tb.substr(open + 1, close - open - 1));
}

}  // namespace

std::string SignalName(int64_t n) {
  switch (n) {
    case 1: return "SIGHUP";
    case 2: return "SIGINT";
    case 3: return "SIGQUIT";
    case 4: return "SIGILL";
    case 6: return "SIGABRT";
    case 7: return "SIGBUS";
    case 8: return "SIGFPE";
    case 9: return "SIGKILL";
    case 11: return "SIGSEGV";
    case 13: return "SIGPIPE";
    case 15: return "SIGTERM";
    default: return fmt::format("signal {}", n);
  }
}

// The line without a launcher's or logger's prefix ("worker-1  | ", a kubectl timestamp): looked
// for only inside a summary and on lines that may open one, so other lines cost nothing.
std::string_view ElasticSummary::Body(std::string_view line) {
  if (!in_block_ && line.find("Failures:") == std::string_view::npos) return line;
  LineContext ctx;
  std::string_view body = LineFormats::Get().StripPrefixes(line, &ctx);
  if (!in_block_) {
    wrap_ = 0;
    const size_t at = body.find("Failures:");
    const size_t after = at + 9;
    const std::string_view ends = " \"<\\";  // the header's line ends, or a wrapper's text
    if (at != std::string_view::npos && at > 0 && at <= 120 &&
        (after == body.size() || ends.find(body[after]) != std::string_view::npos))
      wrap_ = at;
  }
  if (wrap_ > 0 && body.size() > wrap_) body.remove_prefix(wrap_);
  return body;
}

bool ElasticSummary::Member(std::string_view line) {
  std::string_view key, value;
  switch (ShapeOf(Body(line), in_block_, &key, &value)) {
    case Shape::kRootHeader:
    case Shape::kFailuresHeader:
      in_block_ = true;
      return true;
    case Shape::kOther:
      // The summary ended (or never began). An entry it left open (no traceback field: a cut
      // log, a traceback over several lines) stays pending for Flush() or the next summary.
      in_block_ = false;
      section_ = Section::kNone;
      return false;
    default:
      return true;
  }
}

void ElasticSummary::Close(std::vector<Event>* out) {
  Entry e = entry_;
  entry_ = Entry{};
  if (!e.open || e.rank < 0) return;
  const bool root = e.section == Section::kRoot;
  Event ev;
  ev.kind = EventKind::kKb;
  ev.level = Level::kScreen;
  ev.loc = e.loc;
  ev.kb = root ? "framework.torchrun_first_failure" : "framework.torchrun_child_failed";
  if (const kb::Entry* k = kb::Get().Find(ev.kb)) ev.name = k->title;
  ev.layout = "torchrun_summary";
  ev.rank = e.rank;
  ev.launcher_rank = e.rank;
  ev.pid = e.pid;
  if (e.have_exit) ev.ret = e.exitcode;
  std::string signal = SignalInTraceback(e.traceback);
  if (signal.empty() && e.have_exit && e.exitcode < 0) signal = SignalName(-e.exitcode);
  ev.status = !signal.empty() ? signal : e.have_exit ? fmt::format("exitcode {}", e.exitcode) : std::string();
  ev.exited = true;
  ev.local_server = e.host;
  std::string t = e.time;
  for (char& c : t)
    if (c == '_') c = ' ';
  ev.time = ParseAnyTime(t);
  std::string how = !e.have_exit ? std::string("exit code not in the log")
                    : !signal.empty()
                        ? fmt::format("killed by {} (exitcode {})", signal, e.exitcode)
                        : fmt::format("exitcode {}", e.exitcode);
  ev.text = Printable(fmt::format("{} rank {} (local_rank {}), {}, pid {}, host {}, at {}{}",
                                  root ? "torchrun's first observed failure:" : "torchrun's failure:", e.rank,
                                  e.local_rank, how, e.pid >= 0 ? std::to_string(e.pid) : "?",
                                  e.host.empty() ? "?" : e.host, e.time.empty() ? "?" : e.time,
                                  e.traceback.empty() ? "" : "; traceback: " + e.traceback),
                      1000);
  ev.detail = ev.text;
  out->push_back(std::move(ev));
}

void ElasticSummary::Flush(std::vector<Event>* out) { Close(out); }

void ElasticSummary::Read(std::string_view line, const Loc& loc, std::vector<Event>* out) {
  std::string_view key, value;
  switch (ShapeOf(Body(line), true, &key, &value)) {
    case Shape::kRootHeader:
      Close(out);
      section_ = Section::kRoot;
      return;
    case Shape::kFailuresHeader:
      Close(out);
      section_ = Section::kFailures;
      return;
    case Shape::kEntry:
      Close(out);
      entry_.open = section_ != Section::kNone;
      entry_.section = section_;
      return;
    case Shape::kRule:
    case Shape::kNoOthers:
      Close(out);
      return;
    case Shape::kField:
      break;
    case Shape::kOther:
      return;
  }
  if (!entry_.open) return;
  if (key == "time") {
    entry_.time = std::string(value);
  } else if (key == "host") {
    entry_.host = std::string(value);
  } else if (key == "rank") {
    if (NumberAndInner(value, "local_rank:", &entry_.rank, &entry_.local_rank)) {
      entry_.loc = loc;
      entry_.have_loc = true;
    }
  } else if (key == "exitcode") {
    entry_.have_exit = NumberAndInner(value, "pid:", &entry_.exitcode, &entry_.pid);
    if (!entry_.have_loc) entry_.loc = loc;
  } else if (key == "traceback") {
    entry_.traceback = std::string(value.substr(0, 300));
    Close(out);
  }
}

}  // namespace vigil::diagnose
