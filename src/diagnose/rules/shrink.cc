// Shrinks: a communicator the survivors shrank after losing ranks (Vigil's "[Shrink]... shrunk
// to communicator[..]" line, one per survivor). Each shrink is a "recovered" finding: which ranks
// were left out and when they were lost (the heartbeat's events about them), from what size to
// what size, and whether every survivor took part. It is reported beside the root cause, never as
// it (ApplyRules places it right after the verdict).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "diagnose/rules/rule_context.h"

namespace vigil::diagnose::rules {
namespace {

struct Shrink {
  std::string from, to;
  int64_t from_size = -1;
  std::vector<int64_t> excluded;
  std::map<int64_t, const Event*> by;  // old rank -> its line
  Micros first = kNoTime;
  int64_t slowest_ms = -1;
};

// The earliest heartbeat event naming `uid` as crimer (its LOST first): time and status.
const Event* LossOf(const Job& job, const std::string& uid) {
  const Event* best = nullptr;
  for (const Event& e : job.events) {
    if ((e.kind != EventKind::kHeartbeat && e.kind != EventKind::kClusterException) ||
        e.crimer != uid || e.time == kNoTime) {
      continue;
    }
    const bool lost =
        e.status.find("LOST") != std::string::npos || e.status.find("Lost") != std::string::npos;
    const bool best_lost = best != nullptr && (best->status.find("LOST") != std::string::npos ||
                                               best->status.find("Lost") != std::string::npos);
    if (best == nullptr || (lost && !best_lost) || (lost == best_lost && e.time < best->time)) {
      best = &e;
    }
  }
  return best;
}

}  // namespace

void RuleShrink(Ctx* cx) {
  const Job& job = cx->job;
  std::map<std::pair<std::string, std::string>, Shrink> shrinks;
  for (const Event& e : job.events) {
    if (e.kind != EventKind::kShrink || e.group.empty() || e.value.empty()) continue;
    Shrink& s = shrinks[{e.group, e.value}];
    s.from = e.group;
    s.to = e.value;
    s.from_size = std::max(s.from_size, e.rank_size);
    if (s.excluded.empty()) s.excluded = e.ranks;
    if (!s.by.count(e.rank)) s.by[e.rank] = &e;
    if (e.time != kNoTime && (s.first == kNoTime || e.time < s.first)) s.first = e.time;
    s.slowest_ms = std::max(s.slowest_ms, e.elapsed_ms);
  }
  for (const auto& [key, s] : shrinks) {
    const std::set<int64_t> excluded(s.excluded.begin(), s.excluded.end());
    std::vector<int64_t> survivors, missing, by;
    for (int64_t r = 0; r < s.from_size; ++r) {
      if (excluded.count(r)) continue;
      survivors.push_back(r);
      if (!s.by.count(r)) missing.push_back(r);
    }
    for (const auto& [r, e] : s.by) by.push_back(r);
    const int64_t to_size = s.from_size - static_cast<int64_t>(excluded.size());
    Finding f;
    f.fault = "comm_shrunk";
    FromKb(&f);
    f.confidence = missing.empty() ? "high" : "medium";
    f.time = s.first;
    // The excluded ranks, when each was lost, and by whom.
    std::string lost;
    Micros first_loss = kNoTime;
    for (int64_t r : s.excluded) {
      RankRef ref;
      const int64_t ci = job.CommIndex(s.from);
      if (ci >= 0) {
        const int64_t mi = job.comms[ci].MemberOfRank(r);
        if (mi >= 0) ref = cx->Ref(job.comms[ci].members[mi].proc, "excluded", s.from, r);
      }
      ref.role = "excluded";
      ref.group = s.from;
      ref.rank = r;
      f.ranks.push_back(ref);
      const Event* loss = ref.uid.empty() ? nullptr : LossOf(job, ref.uid);
      std::string what = fmt::format("rank {}{}", r, ref.uid.empty() ? "" : " (" + ref.uid + ")");
      if (loss != nullptr) {
        what += fmt::format(" {} at {} (informer {})",
                            loss->status.find("Lost") != std::string::npos ? "LOST" : loss->status,
                            FormatTime(loss->time), loss->informer.empty() ? "?" : loss->informer);
        if (first_loss == kNoTime || loss->time < first_loss) first_loss = loss->time;
        if (f.evidence.size() < kMaxEvidence) f.evidence.push_back(cx->Ev(*loss, "the loss"));
      } else {
        what += " (no heartbeat event about it: left out while alive, a healthy shrink)";
      }
      lost += (lost.empty() ? "" : "; ") + what;
    }
    const std::string who =
        missing.empty() ? fmt::format("every survivor (ranks {})", RankList(survivors))
                        : fmt::format("ranks {} of the survivors {}; ranks {} logged no shrink",
                                      RankList(by), RankList(survivors), RankList(missing));
    f.title = fmt::format(
        "Recovered: communicator {} shrunk from {} to {} ranks by {} (excluded "
        "rank{} {})",
        s.from, s.from_size, to_size,
        missing.empty() ? "every survivor"
                        : fmt::format("{} of {} survivors", by.size(), survivors.size()),
        excluded.size() == 1 ? "" : "s", RankList(s.excluded));
    f.summary = fmt::format(
        "{}. The survivors agreed to exclude {} and {} built communicator {} of {} ranks{}{}; the "
        "job went on.",
        lost, excluded.size() == 1 ? "it" : "them", who, s.to, to_size,
        s.slowest_ms >= 0
            ? fmt::format(" (slowest survivor: {} ms in VigilCommShrink)", s.slowest_ms)
            : std::string(),
        first_loss != kNoTime && s.first != kNoTime
            ? fmt::format(", {} after the loss", FormatDuration(s.first - first_loss))
            : std::string());
    for (const auto& [r, e] : s.by) {
      RankRef ref = cx->Ref(e->proc, "survivor", s.from, r);
      f.ranks.push_back(ref);
      if (f.evidence.size() < kMaxEvidence) f.evidence.push_back(cx->Ev(*e, "shrink"));
    }
    // Beside the root cause, below it: ApplyRules keeps it out of the verdict.
    f.score = 50;
    f.facts.push_back({"recovered", "communicator shrunk"});
    f.facts.push_back({"from", s.from});
    f.facts.push_back({"to", s.to});
    f.facts.push_back({"from_size", std::to_string(s.from_size)});
    f.facts.push_back({"to_size", std::to_string(to_size)});
    f.facts.push_back({"excluded", RankList(s.excluded)});
    f.facts.push_back({"survivors", RankList(survivors)});
    f.facts.push_back({"shrunk_by", RankList(by)});
    if (!missing.empty()) f.facts.push_back({"survivors_without_shrink", RankList(missing)});
    cx->out.push_back(std::move(f));
  }
}

}  // namespace vigil::diagnose::rules
