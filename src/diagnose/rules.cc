// ApplyRules: the order the rule families (rules/<family>.cc) run in, and how their findings are
// reconciled and ranked into a verdict.
#include "diagnose/rules.h"

#include <fmt/format.h>

#include <algorithm>

#include "diagnose/rules/alarms.h"
#include "diagnose/rules/evidence.h"
#include "diagnose/rules/rule_context.h"

namespace vigil::diagnose {
namespace {

using rules::Ctx;
using rules::kMaxEvidence;

// The heartbeat says where (STUCK: a rank stopped issuing ops); a finding that names that same
// rank and says why (it entered the op late, it called a different op) explains it and leads,
// with the heartbeat's events as corroboration.
void Reconcile(Ctx* cx) {
  auto same = [](const RankRef& a, const RankRef& b) {
    if (a.pid >= 0 && b.pid >= 0) return a.pid == b.pid && a.node == b.node;
    return !a.uid.empty() && a.uid == b.uid;
  };
  for (const Finding& hb : cx->out) {
    if (hb.fault != "process_stuck" || hb.ranks.empty()) continue;
    const RankRef& crimer = hb.ranks.front();
    for (Finding& f : cx->out) {
      if (f.fault != "late_rank" && f.fault != "op_mismatch" && f.fault != "count_mismatch" &&
          f.fault != "dtype_mismatch" && f.fault != "missing_op")
        continue;
      bool names = false;
      for (const RankRef& r : f.ranks) names = names || same(r, crimer);
      if (!names || f.score > hb.score) continue;
      f.score = hb.score + 1;
      f.confidence = "high";
      f.facts.push_back({"heartbeat", "STUCK at " + crimer.uid});
      f.summary += fmt::format(" The heartbeat agrees: it reported {} STUCK.", crimer.uid);
      if (!hb.evidence.empty() && f.evidence.size() < kMaxEvidence) {
        Evidence e = hb.evidence.front();
        e.note = "heartbeat: " + e.note;
        f.evidence.push_back(std::move(e));
      }
    }
  }
}

// A recovery (a shrink) is how the job got past its root cause, not a cause: it follows the
// verdict, which says the job recovered; alone (no fault found beside it) it is the verdict.
void PlaceRecoveries(std::vector<Finding>* out) {
  auto is_recovery = [](const Finding& f) { return f.fault == "comm_shrunk"; };
  std::vector<Finding> recoveries, rest;
  for (Finding& f : *out) (is_recovery(f) ? recoveries : rest).push_back(std::move(f));
  out->clear();
  if (!rest.empty()) {
    Finding& verdict = rest.front();
    for (const Finding& r : recoveries) {
      verdict.summary += fmt::format(" Recovered afterwards: {}", r.title.substr(r.title.find(": ") + 2));
      verdict.facts.push_back({"recovered", r.title});
    }
    out->push_back(std::move(rest.front()));
  }
  for (Finding& r : recoveries) out->push_back(std::move(r));
  for (size_t i = 1; i < rest.size(); ++i) out->push_back(std::move(rest[i]));
}

}  // namespace

std::string DescribeRank(const RankRef& r) {
  std::string s = r.uid.empty() ? r.host : r.uid;
  std::vector<std::string> parts;
  if (s.empty()) {
    s = r.rank >= 0 ? fmt::format("rank {}", r.rank) : std::string("?");
  } else if (r.rank >= 0) {
    parts.push_back(fmt::format("rank {}", r.rank));
  }
  if (r.pid >= 0) parts.push_back(fmt::format("pid {}", r.pid));
  if (r.device >= 0 && r.uid.empty()) parts.push_back(fmt::format("device {}", r.device));
  if (parts.empty()) return s;
  std::string joined;
  for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
  return s + " (" + joined + ")";
}

std::vector<Finding> ApplyRules(const Job& job) {
  using namespace rules;
  Ctx cx(job);
  RuleHeartbeat(&cx);
  RuleLateEntry(&cx);
  RuleLateInit(&cx);
  RuleComms(&cx);
  RuleSequences(&cx);
  RuleStreams(&cx);
  RuleSdma(&cx);
  RuleMemory(&cx);
  RuleCqe(&cx);
  RuleLink(&cx);
  RuleConsistency(&cx);
  RuleWaitChain(&cx);
  RuleTimeoutReports(&cx);
  RuleOther(&cx);
  RuleRecovery(&cx);
  RuleShrink(&cx);
  Reconcile(&cx);
  ClassifyFindings(&cx.out);
  Job uncleared;  // filled only when an alarm was raised and later cleared
  RuleEvidence(WithoutClearedAlarms(job, &uncleared), &cx.out);
  if (cx.out.empty()) RuleUnexplainedError(&cx);
  for (Finding& f : cx.out)
    for (Evidence& e : f.evidence)
      if (e.text.empty()) e.text = ReadLineAt(job.OpenPath(e.loc), e.loc.offset);
  std::stable_sort(cx.out.begin(), cx.out.end(), [](const Finding& a, const Finding& b) { return a.score > b.score; });
  PlaceRecoveries(&cx.out);
  return std::move(cx.out);
}

}  // namespace vigil::diagnose
