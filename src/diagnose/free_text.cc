#include "diagnose/free_text.h"

#include <utility>

#include "common/knowledge_base.h"
#include "diagnose/kb_matcher.h"
#include "diagnose/line_parser.h"
#include "diagnose/plog_forms.h"
#include "diagnose/python_exception.h"
#include "diagnose/record.h"
#include "diagnose/text_util.h"

namespace vigil::diagnose {
namespace {

constexpr size_t kFrames = FreeTextReader::kFrames;
constexpr uint64_t kFrameReach = FreeTextReader::kFrameReach;
// Lines after the last frame where its exception is: the frame's code line and Python 3.11's
// caret lines take up to three, and other ranks' output interleaves with a rank's traceback on
// a shared console (two foreign lines lost the exception of LMCache/LMCache-Ascend#184 at 4).
constexpr uint64_t kExceptionReach = 8;

// A Python traceback frame: `File "/x/y.py", line 12, in fn` (after any prefix).
bool IsFrame(std::string_view s, std::string_view* frame) {
  size_t k = s.find("File \"");
  if (k == std::string_view::npos) return false;
  std::string_view f = s.substr(k);
  if (f.find("\", line ") == std::string_view::npos) return false;
  *frame = f.substr(0, 240);
  return true;
}

void FillFromKb(const KbFields& f, Event* ev) {
  if (ev->rank < 0) ev->rank = f.rank;
  if (ev->remote_rank < 0) ev->remote_rank = f.remote_rank;
  if (ev->src_rank < 0) ev->src_rank = f.src_rank;
  if (ev->dst_rank < 0) ev->dst_rank = f.dst_rank;
  if (ev->pid < 0) ev->pid = f.pid;
  if (ev->device < 0) ev->device = f.device;
  if (ev->seq < 0) ev->seq = f.seq;
  if (ev->timeout_ms < 0) ev->timeout_ms = f.timeout_ms;
  if (ev->elapsed_ms < 0) ev->elapsed_ms = f.elapsed_ms;
  if (ev->ret < 0) ev->ret = f.ret;
  if (ev->port < 0) ev->port = f.port;
  if (ev->ip.empty()) ev->ip = f.ip;
  if (ev->remote_ip.empty()) ev->remote_ip = f.remote_ip;
  if (ev->op.empty()) ev->op = f.op;
  if (ev->group.empty()) ev->group = f.group;
  if (ev->tag.empty()) ev->tag = f.tag;
  if (ev->status.empty()) ev->status = f.status;
  if (ev->named_kb.empty()) ev->named_kb = f.kb;
  if (ev->informer_rank < 0) ev->informer_rank = f.informer_rank;
  ev->exited = ev->exited || f.exited;
}

// An event for a knowledge-base entry recognised in `body` (the line after its prefixes).
Event KbEvent(const kb::Entry& e, const Loc& loc, std::string_view body, const char* layout) {
  Event ev;
  ev.kind = EventKind::kKb;
  ev.loc = loc;
  ev.kb = e.id;
  ev.code = e.code;
  ev.name = e.title;
  ev.layout = layout;
  ev.detail = Printable(Trim(body), 1200);
  return ev;
}

// CANN's catch-all codes: the last four digits 9999 ("EE9999: Inner Error!", EZ9999, EH9999,
// EI9999, E39999).
bool IsCatchAll(std::string_view code) { return code.size() == 6 && code.substr(2) == "9999"; }

}  // namespace

bool FreeTextReader::Wanted(std::string_view line) {
  ++line_no_;
  summary_line_ = summary_.Member(line);
  if (summary_line_) return true;
  std::string_view frame;
  if (line.find("File \"") != std::string_view::npos && IsFrame(line, &frame)) {
    // Frames further apart than the reach belong to different tracebacks: a new one starts.
    if (line_no_ - frames_line_ > kFrameReach) frames_.clear();
    if (frames_.size() >= kFrames) frames_.pop_front();
    frames_.emplace_back(Printable(Trim(frame), 240));
    frames_line_ = line_no_;
    return false;
  }
  if (TracebackOpen() && !TracebackExceptionType(line).empty()) return true;
  return HasCodeToken(line) || KbMatcher::Get().AnyNeedle(line);
}

bool FreeTextReader::TracebackOpen() const {
  return frames_line_ > closed_frames_line_ && line_no_ - frames_line_ <= kExceptionReach;
}

void FreeTextReader::ApplyContext(const LineContext& ctx, Event* ev) {
  if (ctx.rank >= 0 && !(ctx.rank_weak && ev->rank >= 0)) {
    ev->launcher_rank = ctx.rank;
    ev->launcher_weak = ctx.rank_weak;
  }
  if (ev->pid < 0) ev->pid = ctx.pid;
  if (ev->device < 0) ev->device = ctx.device;
  if (ev->ip.empty()) ev->ip = ctx.ip;
  if (ev->launcher.empty()) ev->launcher = ctx.proc;
  if (ev->time == kNoTime) ev->time = ctx.time;
}

bool FreeTextReader::Read(std::string_view line, const Loc& loc, std::vector<Event>* out,
                          std::string_view* rest_out, LineContext* ctx_out) {
  const size_t before = out->size();
  std::string_view text = line;
  if (line.find('\x1b') != std::string_view::npos) {
    StripAnsi(line, &clean_);
    text = clean_;
  }
  if (summary_line_) {
    // One event per entry of the block, not one per field line.
    summary_.Read(text, loc, out);
    return true;
  }
  LineContext ctx;
  std::string_view rest = LineFormats::Get().StripPrefixes(text, &ctx);
  if (!rest.empty() && IsRecordStart(rest) && !rest.starts_with("[PID:")) {
    *rest_out = rest;
    *ctx_out = ctx;
    return false;
  }
  // A plog record behind text no prefix row knows (a journald or shipper's stamp, a bullet, a
  // grep file name): the record from its head; the prefixes read before that text still count.
  if (const size_t at = FindRecordStart(rest, 0);
      at != std::string_view::npos && at > 0 && !rest.substr(at).starts_with("[PID:")) {
    *rest_out = rest.substr(at);
    *ctx_out = ctx;
    return false;
  }
  std::string context;
  if (!frames_.empty() && line_no_ - frames_line_ <= kFrameReach) {
    for (const std::string& f : frames_) context += (context.empty() ? "" : " <- ") + f;
  }
  const kb::KnowledgeBase& base = kb::Get();
  const KbMatcher& matcher = KbMatcher::Get();
  std::string coded_kb;
  CodedLine cl;
  if (LineFormats::Get().MatchCoded(rest, &cl)) {
    Event ev;
    ev.kind = cl.code == "EI9001" ? EventKind::kBufferOom : EventKind::kScreenError;
    ev.level = Level::kScreen;
    ev.loc = loc;
    ev.code = std::string(cl.code);
    ev.name = std::string(cl.title);
    ev.detail = Printable(Trim(cl.msg), 1200);
    ev.pid = cl.pid;
    ev.time = cl.time;
    ev.layout = std::string(cl.layout);
    ParseScreenFields(cl.msg, &ev);
    if (ev.detail.empty()) ev.detail = Printable(Trim(cl.msg), 1200);
    if (const kb::Entry* e = base.Find(ev.code)) {
      ev.kb = e->id;
      coded_kb = e->id;
      if (ev.name.empty()) ev.name = e->title;
      KbFields f;
      if (matcher.Fields(*e, rest, &f)) FillFromKb(f, &ev);
    }
    ApplyContext(ctx, &ev);
    ev.context = context;
    ev.text = Printable(text, 1000);
    out->push_back(std::move(ev));
  }
  std::vector<KbMatch> matches = matcher.Match(rest, 2);
  if (!coded_kb.empty() && IsCatchAll(out->back().code)) {
    // CANN's xx9999 codes are catch-alls ("Inner Error"): a specific entry recognised in the same
    // line says more ("... hccl fftsplus task timeout occurred ..."), a cause more than a symptom
    // ("synchronize failed, reason=vector core timeout" is the kernel timeout).
    const KbMatch* best = nullptr;
    for (const KbMatch& m : matches) {
      if (m.entry->id == coded_kb) continue;
      if (best == nullptr || (best->entry->role == "symptom" && m.entry->role != "symptom"))
        best = &m;
    }
    if (best != nullptr) {
      out->back().kb = best->entry->id;
      FillFromKb(best->fields, &out->back());
      coded_kb = best->entry->id;
    }
  }
  for (KbMatch& m : matches) {
    if (m.entry->id == coded_kb) continue;
    // A coded line is that code's: another code's pattern matching its words adds nothing.
    if (!coded_kb.empty() && !m.entry->code.empty()) continue;
    Event ev = KbEvent(*m.entry, loc, rest, "pattern");
    ev.level = Level::kScreen;
    FillFromKb(m.fields, &ev);
    ApplyContext(ctx, &ev);
    ev.context = context;
    ev.text = Printable(text, 1000);
    out->push_back(std::move(ev));
  }
  // The exception that ends a traceback: one per traceback, and only when no entry above
  // recognised the line (a last resort that still names the exception type).
  std::string_view exception = TracebackOpen() ? TracebackExceptionType(rest) : std::string_view();
  if (!exception.empty()) {
    closed_frames_line_ = frames_line_;
    const kb::Entry* e = base.Find("python.uncaught_exception");
    if (out->size() == before && e != nullptr) {
      Event ev = KbEvent(*e, loc, rest, "traceback");
      ev.level = Level::kScreen;
      ev.status = std::string(exception);
      ApplyContext(ctx, &ev);
      ev.context = context;
      ev.text = Printable(text, 1000);
      out->push_back(std::move(ev));
    }
  }
  return true;
}

void FreeTextReader::Finish(std::vector<Event>* out) { summary_.Flush(out); }

void FreeTextReader::Prime(std::string_view line) {
  std::swap(summary_, prime_summary_);
  if (Wanted(line) && !summary_line_) {
    std::vector<Event> dropped;
    std::string_view rest;
    LineContext ctx;
    (void)Read(line, Loc{}, &dropped, &rest, &ctx);
  }
  summary_line_ = false;
  std::swap(summary_, prime_summary_);
}

void FreeTextReader::ReadRecordContent(std::string_view content, const Loc& loc, std::vector<Event>* out) {
  const KbMatcher& matcher = KbMatcher::Get();
  if (!matcher.AnyNeedle(content)) return;
  for (KbMatch& m : matcher.Match(content, 2)) {
    Event ev = KbEvent(*m.entry, loc, content, "plog");
    FillFromKb(m.fields, &ev);
    out->push_back(std::move(ev));
  }
}

}  // namespace vigil::diagnose
