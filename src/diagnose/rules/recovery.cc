// Recoveries beside the root cause: a data link that broke while both processes lived and that
// op retry recovered ("[OpRetry] ... recovered by retry", comm/op_retry.h), or did not. A
// recovery is not a failure's cause: its finding scores low, so a root cause still leads, and a
// job that recovered has it as its only finding.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "diagnose/rules/rule_context.h"

namespace vigil::diagnose::rules {

namespace {

struct Flap {
  const Event* first = nullptr;  // earliest line of the kind
  std::set<int64_t> ranks;       // ranks that logged it
  int64_t attempts = 0;
  double lost_s = 0;
  Micros failed_at = kNoTime;  // when the link failed (the recovered line says)
  std::vector<const Event*> evs;
};

}  // namespace

void RuleRecovery(Ctx* cx) {
  const Job& job = cx->job;
  // (group, link's ends, op index, step) -> what the ranks logged.
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t, std::string>, Flap> flaps;
  for (const Event& e : job.events) {
    if (e.kind != EventKind::kOpRetry || (e.detail != "recovered" && e.detail != "failed"))
      continue;
    Flap& f = flaps[{e.group, e.src_rank, e.dst_rank, e.index, e.detail}];
    if (f.first == nullptr || e.time < f.first->time) f.first = &e;
    if (e.rank >= 0) f.ranks.insert(e.rank);
    f.attempts = std::max<int64_t>(f.attempts, ToInt(e.status).value_or(0));
    f.lost_s = std::max(f.lost_s, std::atof(e.value.c_str()));
    if (e.aux_time != kNoTime && (f.failed_at == kNoTime || e.aux_time < f.failed_at)) {
      f.failed_at = e.aux_time;
    }
    f.evs.push_back(&e);
  }
  for (const auto& [key, f] : flaps) {
    const auto& [group, a, b, index, step] = key;
    const bool recovered = step == "recovered";
    Finding out;
    out.fault = recovered ? "link_flap_recovered" : "op_retry_failed";
    out.time = f.failed_at != kNoTime ? f.failed_at : f.first->time;
    const int64_t ci = job.CommIndex(group);
    auto ref = [&](int64_t rank) {
      int64_t proc = -1;
      if (ci >= 0) {
        const int64_t mi = job.comms[ci].MemberOfRank(rank);
        if (mi >= 0) proc = job.comms[ci].members[mi].proc;
      }
      return cx->Ref(proc, "link end", group, rank);
    };
    out.ranks.push_back(ref(a));
    out.ranks.push_back(ref(b));
    const std::string ends =
        fmt::format("{} and {}", DescribeRank(out.ranks[0]), DescribeRank(out.ranks[1]));
    std::string tag = f.first->tag;
    if (recovered) {
      out.title = fmt::format("Link flap between rank {} and rank {} recovered by op retry", a, b);
      out.summary = fmt::format(
          "The data link between {} broke at {} while both processes lived; op retry re-made "
          "the links and re-executed op {} (index {}) from its start: recovered after {} "
          "attempt(s), {:.3f} s lost ({} rank(s) of communicator {} logged the recovery).",
          ends, FormatTime(out.time), tag, index, f.attempts, f.lost_s, f.ranks.size(), group);
    } else {
      out.title =
          fmt::format("Op retry did not recover the link between rank {} and rank {}", a, b);
      out.summary = fmt::format(
          "The data link between {} broke at {}; op retry held op {} (index {}) and gave up "
          "after {} attempt(s), {:.3f} s lost, on {} rank(s): the op failed as without retry "
          "(see the [OpRetry] 'retry failed' / 'can not retry' lines).",
          ends, FormatTime(out.time), tag, index, f.attempts, f.lost_s, f.ranks.size());
    }
    FromKb(&out);
    out.confidence = "high";
    out.score = recovered ? 20 : 30;
    out.facts.push_back({"recovered", recovered ? "true" : "false"});
    out.facts.push_back({"link", fmt::format("{}-{}", a, b)});
    out.facts.push_back({"attempts", std::to_string(f.attempts)});
    out.facts.push_back({"lost_seconds", fmt::format("{:.3f}", f.lost_s)});
    out.facts.push_back({"op_index", std::to_string(index)});
    for (const Event* e : f.evs) {
      if (out.evidence.size() >= 4) break;
      out.evidence.push_back(cx->Ev(*e, recovered ? "op retry recovered" : "op retry gave up"));
    }
    cx->out.push_back(std::move(out));
  }
}

}  // namespace vigil::diagnose::rules
