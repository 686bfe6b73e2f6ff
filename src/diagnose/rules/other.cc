// AIV kernel failures, and the screen error codes no other rule explains (error_code), each with
// the catalogue's advice.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "common/knowledge_base.h"

namespace vigil::diagnose::rules {

void RuleOther(Ctx* cx) {
  const Job& job = cx->job;
  std::set<int64_t> aiv_done;
  for (const Event& e : job.events) {
    if (e.kind != EventKind::kAivKernel || aiv_done.count(e.proc)) continue;
    aiv_done.insert(e.proc);
    Finding f;
    f.fault = "aiv_kernel";
    f.title = fmt::format("AIV communication kernel {} failed (pid {})", e.name, e.pid);
    f.summary = fmt::format("HCCL ran the op as an AIV kernel ({}; {}) and it failed on device {} stream {}. "
                            "Analyze it as a notify timeout (EI0002): all ranks timed out? who failed first?",
                            e.name, e.detail, e.device, e.stream);
    f.advice = CatalogueAdvice("EI0002");
    f.code = "EI0002";
    ClassFromKb(&f);
    f.confidence = "low";
    f.score = 40;
    f.time = e.time;
    f.ranks.push_back(cx->Ref(e.proc, "reporter"));
    f.evidence.push_back(cx->Ev(e, "AIV kernel failure"));
    cx->out.push_back(std::move(f));
  }
  // Screen codes no rule explained and the knowledge base does not know: name them (the
  // knowledge base's codes are the evidence rule's, rules/evidence.cc).
  std::set<std::string> covered = {"EI0002", "EI0005", "EI0006", "EI0011", "EI0012", "EI0013",
                                   "EI0015", "EI0019", "EI0020", "EI9001"};
  std::map<std::string, const Event*> codes;
  for (const Event& e : job.events) {
    if (e.kind != EventKind::kScreenError || !e.kb.empty() || covered.count(e.code)) continue;
    // The first report of the code, or the first that says which process printed it.
    auto it = codes.find(e.code);
    if (it == codes.end()) {
      codes[e.code] = &e;
    } else if (it->second->pid < 0 && e.pid >= 0) {
      it->second = &e;
    }
  }
  for (const auto& [code, e] : codes) {
    Finding f;
    f.fault = "error_code";
    f.code = code;
    const ErrorCodeInfo* info = FindErrorCode(code);
    f.title = fmt::format("{}({}) reported{}", info ? std::string(info->title) : e->name, code,
                          e->pid >= 0 ? fmt::format(" (pid {})", e->pid) : std::string());
    f.summary = Printable(e->detail, 300);
    std::string_view text = info != nullptr ? AdviceText(*info) : std::string_view();
    // The class of the code itself when the knowledge base knows it.
    if (const kb::Entry* ce = kb::Get().Find(code)) f.cls = ce->cls;
    if (!text.empty()) {
      ClassFromKb(&f);
      f.advice = std::string(text);
    } else {
      FromKb(&f);
    }
    f.confidence = "medium";
    f.score = code == "EI0001" || code == "EI0004" || code == "EI0014" || code == "EI0017" ? 85 : 55;
    f.time = e->time;
    f.ranks.push_back(cx->Ref(e->proc, "reporter"));
    f.evidence.push_back(cx->Ev(*e, "screen error"));
    cx->out.push_back(std::move(f));
  }
}

// Nothing recognised, but processes wrote ERROR records: the earliest one, named as what it is
// (an error no rule or entry explains), so that the verdict points at it instead of "no fault".
void RuleUnexplainedError(Ctx* cx) {
  const Job& job = cx->job;
  int64_t first = -1, errors = 0, processes = 0;
  for (size_t i = 0; i < job.processes.size(); ++i) {
    const Process& p = job.processes[i];
    if (p.errors <= 0 || p.first_error_text.empty()) continue;
    errors += p.errors;
    ++processes;
    const Process* q = first < 0 ? nullptr : &job.processes[static_cast<size_t>(first)];
    if (q == nullptr || (p.first_error != kNoTime &&
                         (q->first_error == kNoTime || p.first_error < q->first_error))) {
      first = static_cast<int64_t>(i);
    }
  }
  if (first < 0) return;
  const Process& p = job.processes[static_cast<size_t>(first)];
  Finding f;
  f.fault = "unexplained_error";
  // "[ERROR] LITE(30860,...):2023-11-10-03:19:29.005.385 [file.cc:756] Func] message": the
  // module and the message for the title.
  std::string_view text = p.first_error_text, module;
  if (const size_t open = text.find("] "), paren = text.find('(');
      text.starts_with('[') && open != std::string_view::npos && paren != std::string_view::npos &&
      open < paren) {
    module = text.substr(open + 2, paren - open - 2);
    if (const size_t head = text.find("):"), end = text.find("] ", head);
        head != std::string_view::npos && end != std::string_view::npos) {
      text.remove_prefix(end + 2);
    }
  }
  f.title = fmt::format("An ERROR record no rule explains{}{}: {}",
                        module.empty() ? "" : " from " + std::string(module),
                        p.pid >= 0 ? fmt::format(" (pid {})", p.pid) : std::string(),
                        Printable(text, 160));
  f.summary = fmt::format(
      "No line matches a failure the knowledge base describes, but {} ERROR record(s) of {} "
      "process(es) were written; this is the earliest. Its module and message are where to start.",
      errors, processes);
  FromKb(&f);
  f.confidence = "low";
  f.score = 30;
  f.time = p.first_error;
  f.ranks.push_back(cx->Ref(first, "reporter"));
  f.evidence.push_back(cx->EvLoc(p.first_error_loc, "earliest ERROR record"));
  cx->out.push_back(std::move(f));
}

}  // namespace vigil::diagnose::rules
