#include "diagnose/line_formats.h"

#include <re2/re2.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/embedded_text.h"
#include "diagnose/record.h"

namespace vigil::embedded {
extern const EmbeddedText kLineFormats[];
extern const size_t kLineFormats_count;
}  // namespace vigil::embedded

namespace vigil::diagnose {

void LineContext::Merge(const LineContext& o) {
  if (rank < 0) rank = o.rank;
  if (pid < 0) pid = o.pid;
  if (device < 0) device = o.device;
  if (ip.empty()) ip = o.ip;
  if (proc.empty()) proc = o.proc;
  if (time == kNoTime) time = o.time;
}

namespace {

// One compiled row: the regex and the submatch index of each named group it uses (-1: absent).
struct Row {
  std::string name;
  std::unique_ptr<RE2> re;
  int rank = -1, pid = -1, ip = -1, device = -1, time = -1, proc = -1;
  int code = -1, title = -1, msg = -1;
  int groups = 0;
  // What it says fills only what no other prefix of the line says ("weak": a job step's task
  // label, which is a rank only when each task is one).
  bool weak = false;
};

bool Compile(const nlohmann::json& j, Row* row, std::vector<std::string>* errors) {
  if (!j.is_object() || !j.contains("name") || !j.contains("re") || !j["re"].is_string()) {
    errors->push_back("a row without name or re");
    return false;
  }
  row->name = j["name"].get<std::string>();
  RE2::Options opt;
  opt.set_log_errors(false);
  row->re = std::make_unique<RE2>(j["re"].get<std::string>(), opt);
  if (!row->re->ok()) {
    errors->push_back(row->name + ": " + row->re->error());
    return false;
  }
  row->groups = row->re->NumberOfCapturingGroups();
  row->weak = j.contains("weak") && j["weak"].is_boolean() && j["weak"].get<bool>();
  for (const auto& [name, index] : row->re->NamedCapturingGroups()) {
    if (name == "rank") row->rank = index;
    else if (name == "pid") row->pid = index;
    else if (name == "ip") row->ip = index;
    else if (name == "device") row->device = index;
    else if (name == "time") row->time = index;
    else if (name == "proc") row->proc = index;
    else if (name == "code") row->code = index;
    else if (name == "title") row->title = index;
    else if (name == "msg") row->msg = index;
    else errors->push_back(row->name + ": unknown group " + name);
  }
  return true;
}

int64_t Int(const re2::StringPiece* m, int i) {
  if (i < 0 || m[i].data() == nullptr) return -1;
  auto v = ToInt(std::string_view(m[i].data(), m[i].size()));
  return v ? *v : -1;
}
std::string_view View(const re2::StringPiece* m, int i) {
  if (i < 0 || m[i].data() == nullptr) return {};
  return std::string_view(m[i].data(), m[i].size());
}

}  // namespace

struct LineFormats::Impl {
  std::vector<Row> prefixes, layouts;
  std::vector<std::string> relays;  // text after which a line quotes another process
  std::vector<std::string> errors;
};

LineFormats::LineFormats() : impl_(new Impl) {
  for (size_t i = 0; i < embedded::kLineFormats_count; ++i) {
    const embedded::EmbeddedText& t = embedded::kLineFormats[i];
    nlohmann::json j = nlohmann::json::parse(std::string_view(t.text, t.size), nullptr, false);
    if (j.is_discarded()) {
      impl_->errors.push_back(std::string(t.name) + ": not valid JSON");
      continue;
    }
    if (j.contains("relays")) {
      for (const auto& r : j["relays"]) {
        if (r.is_object() && r.contains("needle") && r["needle"].is_string() &&
            !r["needle"].get<std::string>().empty()) {
          impl_->relays.push_back(r["needle"].get<std::string>());
        } else {
          impl_->errors.push_back(std::string(t.name) + ": a relay without needle");
        }
      }
    }
    for (const char* key : {"prefixes", "layouts"}) {
      if (!j.contains(key)) continue;
      for (const auto& r : j[key]) {
        Row row;
        if (Compile(r, &row, &impl_->errors))
          (std::string_view(key) == "prefixes" ? impl_->prefixes : impl_->layouts).push_back(std::move(row));
      }
    }
  }
}

LineFormats::~LineFormats() { delete impl_; }

const LineFormats& LineFormats::Get() {
  static const LineFormats* formats = new LineFormats();  // never destroyed: used by workers
  return *formats;
}

size_t LineFormats::prefix_count() const { return impl_->prefixes.size(); }
size_t LineFormats::layout_count() const { return impl_->layouts.size(); }
const std::vector<std::string>& LineFormats::errors() const { return impl_->errors; }

std::string_view LineFormats::StripPrefixes(std::string_view line, LineContext* ctx) const {
  std::string_view rest = StripPrefixesOnly(line, ctx);
  // A relay ("Worker failed with error '...'") quotes another process's error: the prefix's
  // process, rank and device are the relayer's, not the error's.
  for (const std::string& needle : impl_->relays) {
    if (rest.find(needle) != std::string_view::npos) {
      const Micros time = ctx->time;
      *ctx = LineContext{};
      ctx->time = time;
      break;
    }
  }
  return rest;
}

std::string_view LineFormats::StripPrefixesOnly(std::string_view line, LineContext* ctx) const {
  LineContext weak;
  std::string_view rest = StripRows(line, ctx, &weak);
  const bool had_rank = ctx->rank >= 0;
  ctx->Merge(weak);
  if (!had_rank && ctx->rank >= 0) ctx->rank_weak = true;
  return rest;
}

std::string_view LineFormats::StripRows(std::string_view line, LineContext* ctx,
                                        LineContext* weak) const {
  re2::StringPiece m[16];
  bool looked_past = false;
  for (int round = 0; round < 8; ++round) {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || (IsRecordStart(line) && !line.starts_with("[PID:"))) return line;
    bool stripped = false;
    for (const Row& row : impl_->prefixes) {
      int n = std::min(row.groups + 1, 16);
      if (!row.re->Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::ANCHOR_START,
                         m, n))
        continue;
      if (m[0].size() == 0) continue;
      LineContext c;
      c.rank = Int(m, row.rank);
      c.pid = Int(m, row.pid);
      c.device = Int(m, row.device);
      c.ip = std::string(View(m, row.ip));
      c.proc = std::string(View(m, row.proc));
      std::string_view t = View(m, row.time);
      if (!t.empty()) c.time = ParseLineTime(t);
      // The outermost prefix is the launcher's: its rank, device and host win over what inner
      // ones say. Its process does not: nested process prefixes ("(VLLMEngine pid=1) (Worker
      // pid=2) ...") are relays from the outer process down to the one that printed, the inner.
      if (!row.weak && c.pid >= 0) {
        ctx->pid = c.pid;
        ctx->proc = c.proc;
      }
      (row.weak ? weak : ctx)->Merge(c);
      line.remove_prefix(m[0].size());
      stripped = true;
      break;
    }
    if (!stripped && !looked_past) {
      // Text no row knows before a launcher's prefix (a journald or shipper's stamp, a bullet, a
      // chat header): a process or rank prefix within the line's first columns, after a space or
      // a quote, is still the line's.
      looked_past = true;
      const size_t skip = LauncherPrefixAhead(line);
      if (skip != std::string_view::npos) {
        line.remove_prefix(skip);
        --round;
        continue;
      }
    }
    if (!stripped) return line;
  }
  return line;
}

size_t LineFormats::LauncherPrefixAhead(std::string_view line) const {
  re2::StringPiece m[1];
  const size_t end = std::min<size_t>(line.size(), 160);
  for (size_t at = 1; at < end; ++at) {
    if ((line[at] != '(' && line[at] != '[') ||
        (line[at - 1] != ' ' && line[at - 1] != '"' && line[at - 1] != '\t'))
      continue;
    const std::string_view rest = line.substr(at);
    if (IsRecordStart(rest)) return std::string_view::npos;  // a record: the caller's to find
    for (const Row& row : impl_->prefixes) {
      if (row.weak || (row.rank < 0 && row.pid < 0)) continue;
      if (row.re->Match(re2::StringPiece(rest.data(), rest.size()), 0, rest.size(),
                        RE2::ANCHOR_START, m, 1) &&
          m[0].size() > 0)
        return at;
    }
  }
  return std::string_view::npos;
}

bool LineFormats::MatchCoded(std::string_view text, CodedLine* out) const {
  re2::StringPiece m[16];
  for (const Row& row : impl_->layouts) {
    int n = std::min(row.groups + 1, 16);
    if (!row.re->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED, m, n))
      continue;
    out->code = View(m, row.code);
    if (out->code.empty()) continue;
    out->title = View(m, row.title);
    out->msg = View(m, row.msg);
    out->pid = Int(m, row.pid);
    std::string_view t = View(m, row.time);
    out->time = t.empty() ? kNoTime : ParseLineTime(t);
    out->layout = row.name;
    return true;
  }
  return false;
}

namespace {
inline bool Alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
inline bool Dig(char c) { return c >= '0' && c <= '9'; }
}  // namespace

bool HasCodeToken(std::string_view s) {
  const size_t n = s.size();
  for (size_t p = s.find('E'); p != std::string_view::npos && p + 6 <= n; p = s.find('E', p + 1)) {
    if (p > 0 && Alnum(s[p - 1])) continue;
    char c1 = s[p + 1];
    size_t d = p + 2;
    if (c1 == 'R' && p + 8 <= n && s[p + 2] == 'R') {
      d = p + 3;  // "ERR" + five digits
      bool ok = true;
      for (size_t i = 0; i < 5 && ok; ++i) ok = Dig(s[d + i]);
      if (ok && (d + 5 == n || !Alnum(s[d + 5]))) return true;
      continue;
    }
    if (!((c1 >= 'A' && c1 <= 'Z') || Dig(c1))) continue;
    bool ok = true;
    for (size_t i = 0; i < 4 && ok; ++i) ok = Dig(s[d + i]);
    if (ok && (d + 4 == n || !Alnum(s[d + 4]))) return true;
  }
  return false;
}

std::vector<std::string_view> EscapedLines(std::string_view line) {
  std::vector<std::string_view> pieces;
  bool starts_a_line = false;
  size_t at = 0;
  while (true) {
    const size_t nl = line.find("\\n", at);
    const size_t len = nl == std::string_view::npos ? std::string_view::npos : nl - at;
    std::string_view piece = line.substr(at, len);
    pieces.push_back(piece);
    if (!starts_a_line && at > 0) {
      std::string_view t = piece;
      while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
      const std::string_view head = t.substr(0, std::min<size_t>(t.size(), 9));
      starts_a_line = IsRecordStart(t) || t.starts_with("[ERROR]") || t.starts_with("[Error]") ||
                      t.starts_with("[WARNING]") || t.starts_with("[PID:") ||
                      (t.size() >= 6 && t[0] == 'E' && HasCodeToken(head));
    }
    if (nl == std::string_view::npos) break;
    at = nl + 2;
  }
  if (!starts_a_line) pieces.clear();
  return pieces;
}

Micros ParseLineTime(std::string_view s) {
  if (Micros t = ParsePlogStamp(s)) return t;
  if (s.size() >= 19 && (s[10] == 'T' || s[10] == ' ')) {
    char buf[40];
    size_t n = std::min<size_t>(s.size(), sizeof buf);
    for (size_t i = 0; i < n; ++i) buf[i] = s[i];
    buf[10] = ' ';
    if (n > 19 && buf[19] == ',') buf[19] = '.';
    return ParseCqeTime(std::string_view(buf, n));
  }
  return ParseAnyTime(s);
}

}  // namespace vigil::diagnose
