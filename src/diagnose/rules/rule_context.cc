// Helpers more than one rule family uses: status order, catalogue advice, rank lists, a process's
// rank.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "common/knowledge_base.h"

namespace vigil::diagnose::rules {

int StatusPriority(const std::string& s) {
  std::string u;
  for (char c : s) u.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (u.find("CQE") != std::string::npos) return 0;
  if (u.find("STUCK") != std::string::npos) return 1;
  if (u.find("LOST") != std::string::npos) return 2;
  if (u.find("INCONSISTENT") != std::string::npos) return 3;
  return 4;
}

// What the catalogue says to do for a code: Vigil's own advice text, else HCCL's solution when
// it says something ("N/A" is HCCL's "nothing to say").
std::string_view AdviceText(const ErrorCodeInfo& info) {
  if (!info.advice.empty()) return info.advice;
  std::string_view sol = info.solution;
  if (sol.starts_with("Solution:")) sol.remove_prefix(9);
  while (!sol.empty() && sol.front() == ' ') sol.remove_prefix(1);
  return sol == "N/A" ? std::string_view() : sol;
}

std::string CatalogueAdvice(const std::string& code) {
  const ErrorCodeInfo* info = FindErrorCode(code);
  if (info == nullptr) return {};
  std::string_view text = AdviceText(*info);
  if (text.empty()) return {};
  return fmt::format("[{} {}] {}", info->code, info->title, text);
}

void ClassFromKb(Finding* f) {
  const kb::KnowledgeBase& base = kb::Get();
  const kb::Entry* e = base.Find("diagnose." + f->fault);
  if (e == nullptr) return;
  if (f->cls.empty()) f->cls = e->cls;
  // A code with an entry of its own is the finding's evidence (ClassifyFindings names it).
  if (f->kb.empty() && (f->code.empty() || base.Find(f->code) == nullptr)) f->kb = e->id;
}

void FromKb(Finding* f, std::initializer_list<size_t> actions) {
  ClassFromKb(f);
  const kb::Entry* e = kb::Get().Find("diagnose." + f->fault);
  if (e == nullptr) return;
  f->advice.clear();
  for (size_t i : actions)
    if (i < e->actions.size()) f->advice += (f->advice.empty() ? "" : " ") + e->actions[i];
}

std::string RankList(const std::vector<int64_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::map<int64_t, int64_t> ProcRanks(const Job& job) {
  std::map<int64_t, std::map<int64_t, int>> votes;
  for (const Event& e : job.events) {
    if (e.proc < 0) continue;
    if (e.launcher_rank >= 0) votes[e.proc][e.launcher_rank] += 2;
    else if (e.kind == EventKind::kKb && e.rank >= 0) votes[e.proc][e.rank] += 1;
  }
  std::map<int64_t, int64_t> out;
  for (const auto& [proc, v] : votes) {
    auto best = std::max_element(v.begin(), v.end(),
                                 [](auto& a, auto& b) { return a.second < b.second; });
    out[proc] = best->first;
  }
  return out;
}

int64_t RankInLargestComm(const Job& job, int64_t proc, std::string* group) {
  int64_t best = -1, rank = -1;
  for (const Comm& c : job.comms) {
    int64_t mi = c.MemberOfProc(proc);
    if (mi < 0 || c.members[mi].rank < 0) continue;
    if (best < 0 || c.rank_size > best) {
      best = c.rank_size;
      *group = c.group;
      rank = c.members[mi].rank;
    }
  }
  return rank;
}

}  // namespace vigil::diagnose::rules
