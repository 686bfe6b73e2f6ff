// Rules 2 and 3, per failing communicator: ranks without logs, silent ranks, the first rank to
// report an error of its own, ranks at different op indices or with different op, count or dtype,
// and the gap between error times against HCCL_EXEC_TIMEOUT.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/knowledge_base.h"

namespace vigil::diagnose::rules {
namespace {

std::string RankName(const RankRef& r) { return DescribeRank(r); }

bool IsTaskEvent(EventKind k) {
  return k == EventKind::kTaskBase || k == EventKind::kTaskGroupRank || k == EventKind::kTaskOpData ||
         k == EventKind::kTaskPara;
}

// Errors that are a cause of their own, not the waiting that follows someone else's fault.
bool IsPrimaryError(const Event& e) {
  if (e.level != Level::kError && e.level != Level::kScreen) return false;
  if (IsTaskEvent(e.kind) || e.kind == EventKind::kClusterException) return false;
  if (e.kind == EventKind::kScreenError && e.code == "EI0002") return false;
  if (e.kind == EventKind::kError) {
    // Generic follow-up lines of a timeout are not causes.
    const std::string& t = e.text;
    if (t.find("imeout") != std::string::npos || t.find("TaskExecStage") != std::string::npos ||
        t.find("Task from HCCL run failed") != std::string::npos)
      return false;
  }
  return true;
}

struct Attr {
  std::string op, dtype;
  int64_t count = -1, index = -1;
};

}  // namespace

void RuleComms(Ctx* cx) {
  const Job& job = cx->job;
  for (const Comm& c : job.comms) {
    std::vector<const TaskFailure*> fails;
    for (const TaskFailure& tf : job.failures)
      if (tf.group == c.group) fails.push_back(&tf);
    bool comm_failed = !fails.empty();
    if (!comm_failed) continue;

    // Latest failure per process (the first one, really: the op that timed out first).
    std::map<int64_t, const TaskFailure*> by_proc;
    for (const TaskFailure* tf : fails)
      if (!by_proc.count(tf->proc) || tf->time < by_proc[tf->proc]->time) by_proc[tf->proc] = tf;

    // Ranks of the comm without logs at all.
    std::vector<int64_t> missing;
    if (c.rank_size > 0 && c.rank_size <= 65536) {
      for (int64_t r = 0; r < c.rank_size; ++r)
        if (c.MemberOfRank(r) < 0) missing.push_back(r);
    }
    // Silent ranks: present, but no error at all.
    std::vector<const Member*> silent, failed;
    for (const Member& m : c.members) {
      if (m.proc < 0) continue;
      if (by_proc.count(m.proc)) failed.push_back(&m);
      else if (job.processes[m.proc].errors == 0) silent.push_back(&m);
    }
    // Primary errors (not timeouts) of members.
    const Event* first_primary = nullptr;
    for (const Event& e : job.events) {
      if (!IsPrimaryError(e) || c.MemberOfProc(e.proc) < 0) continue;
      if (first_primary == nullptr || (e.time != kNoTime && e.time < first_primary->time)) first_primary = &e;
    }

    if (!missing.empty() && missing.size() < static_cast<size_t>(c.rank_size)) {
      Finding f;
      f.fault = "missing_logs";
      f.title = fmt::format("No logs for rank(s) {} of {}", RankList(missing), c.group);
      f.summary = fmt::format("The communicator has {} ranks; the given logs show {} of them. The "
                              "missing ranks may be the cause: collect their run/ and debug/ plogs.",
                              c.rank_size, c.rank_size - static_cast<int64_t>(missing.size()));
      FromKb(&f);
      f.confidence = "low";
      f.score = 25;
      f.facts.push_back({"missing_ranks", RankList(missing)});
      cx->out.push_back(std::move(f));
    }

    if (first_primary != nullptr) {
      Finding f;
      int64_t mi = c.MemberOfProc(first_primary->proc);
      RankRef r = cx->Ref(first_primary->proc, "root cause", c.group, c.members[mi].rank);
      f.fault = "first_error";
      f.title = fmt::format("Rank {} errored first in {}", c.members[mi].rank, c.group);
      f.summary = fmt::format("Before the others timed out, {} reported an error of its own at {}: {}",
                              RankName(r), FormatTime(first_primary->time),
                              Printable(first_primary->text, 240));
      f.code = first_primary->code;
      // The class of the error it relays, when the knowledge base knows its code.
      if (const kb::Entry* ce = f.code.empty() ? nullptr : kb::Get().Find(f.code)) f.cls = ce->cls;
      FromKb(&f);
      if (!f.code.empty()) f.advice += " " + CatalogueAdvice(f.code);
      f.confidence = "medium";
      f.score = 62;
      f.time = first_primary->time;
      f.ranks.push_back(r);
      f.evidence.push_back(cx->Ev(*first_primary, "first error of its own"));
      cx->out.push_back(std::move(f));
    }

    if (!silent.empty() && !failed.empty()) {
      Finding f;
      f.fault = "silent_rank";
      std::vector<int64_t> ids;
      for (const Member* m : silent) {
        ids.push_back(m->rank);
        f.ranks.push_back(cx->Ref(m->proc, "silent", c.group, m->rank));
      }
      Micros first_fail = kNoTime;
      for (const auto& [p, tf] : by_proc)
        if (first_fail == kNoTime || tf->time < first_fail) first_fail = tf->time;
      std::string detail;
      for (const Member* m : silent) {
        const Process& p = job.processes[m->proc];
        detail += fmt::format(" Rank {} (pid {}): logs end at {}{}.", m->rank, p.pid, FormatTime(p.last),
                              m->ops.total > 0 ? fmt::format(", {} ops issued", m->ops.total) : "");
      }
      f.title = fmt::format("Rank(s) {} of {} logged no error while {} rank(s) failed", RankList(ids), c.group,
                            failed.size());
      f.summary = "The failing ranks waited for rank(s) that logged nothing: they never reached the op "
                  "(stuck host code) or died without a trace." + detail;
      FromKb(&f);
      f.confidence = "medium";
      f.score = 66;
      f.time = first_fail;
      cx->out.push_back(std::move(f));
    }

    // Rule 3: every rank with logs timed out.
    bool all_timeout = failed.size() >= 2 && silent.empty();
    for (const Member* m : failed)
      if (by_proc[m->proc]->stage != "Timeout") all_timeout = false;
    if (!all_timeout) continue;

    std::vector<std::pair<const Member*, const TaskFailure*>> rows;
    for (const Member* m : failed) rows.push_back({m, by_proc[m->proc]});

    // 3a: same index, different op / count / dtype.
    std::set<int64_t> indices;
    for (auto& [m, tf] : rows) indices.insert(tf->index);
    bool mismatch_found = false;
    if (indices.size() == 1) {
      auto odd_ones = [&](auto get) {
        std::map<std::string, std::vector<const Member*>> groups;
        for (auto& [m, tf] : rows) {
          std::string v = get(tf);
          if (!v.empty()) groups[v].push_back(m);
        }
        return groups;
      };
      struct Check {
        const char* what;
        std::map<std::string, std::vector<const Member*>> groups;
      };
      std::vector<Check> checks = {
          {"op", odd_ones([](const TaskFailure* t) { return t->op; })},
          {"count", odd_ones([](const TaskFailure* t) { return t->count >= 0 ? std::to_string(t->count) : ""; })},
          {"dataType", odd_ones([](const TaskFailure* t) { return t->dtype; })},
      };
      for (const Check& ch : checks) {
        if (ch.groups.size() < 2) continue;
        mismatch_found = true;
        // Majority value; the others are the odd ranks (ties: all named).
        size_t best = 0;
        std::string major;
        for (const auto& [v, ms] : ch.groups)
          if (ms.size() > best) {
            best = ms.size();
            major = v;
          }
        bool tie = false;
        for (const auto& [v, ms] : ch.groups)
          if (v != major && ms.size() == best) tie = true;
        Finding f;
        f.fault = std::string(ch.what) == "op" ? "op_mismatch"
                  : std::string(ch.what) == "count" ? "count_mismatch" : "dtype_mismatch";
        std::string parts;
        for (const auto& [v, ms] : ch.groups) {
          std::vector<int64_t> ids;
          for (const Member* m : ms) ids.push_back(m->rank);
          parts += fmt::format("{}rank{} {} {}", parts.empty() ? "" : "; ", ids.size() > 1 ? "s" : "",
                               RankList(ids), v);
          bool odd = tie || v != major;
          for (const Member* m : ms) {
            if (!odd) continue;
            RankRef r = cx->Ref(m->proc, "root cause", c.group, m->rank);
            f.ranks.push_back(r);
          }
        }
        std::string odd_desc;
        for (const RankRef& r : f.ranks) {
          const TaskFailure* tf = nullptr;
          for (auto& [m, t] : rows)
            if (m->rank == r.rank) tf = t;
          std::string val = std::string(ch.what) == "op" ? tf->op
                            : std::string(ch.what) == "count" ? std::to_string(tf->count) : tf->dtype;
          odd_desc += fmt::format("{}rank {} called {} with {} {}", odd_desc.empty() ? "" : ", ", r.rank,
                                  tf->op, ch.what, val);
        }
        f.title = fmt::format("{} mismatch at op index {} of {}: {}", ch.what, *indices.begin(), c.group,
                              tie ? parts : odd_desc + " (the others: " + major + ")");
        f.summary = fmt::format(
            "All {} ranks timed out on op index {}, but not on the same op: {}. Collectives must be "
            "called in the same order with the same arguments on every rank.",
            rows.size(), *indices.begin(), parts);
        f.code = "EI0005";
        FromKb(&f, {0, 1});
        f.advice += " " + CatalogueAdvice("EI0005");
        f.confidence = tie ? "medium" : "high";
        f.score = tie ? 84 : 88;
        f.time = rows.front().second->time;
        f.facts.push_back({"index", std::to_string(*indices.begin())});
        f.facts.push_back({"field", ch.what});
        for (auto& [m, tf] : rows)
          for (const Loc& l : tf->locs)
            if (f.evidence.size() < kMaxEvidence && l.line != 0)
              f.evidence.push_back(cx->EvLoc(l, fmt::format("rank {}", m->rank)));
        cx->out.push_back(std::move(f));
        break;  // one mismatch finding per comm: the first field that differs
      }
    } else if (indices.size() > 1) {
      mismatch_found = true;
      Finding f;
      f.fault = "index_mismatch";
      std::string parts;
      int64_t low = *indices.begin();
      for (auto& [m, tf] : rows) {
        parts += fmt::format("{}rank {} at index {} ({})", parts.empty() ? "" : ", ", m->rank, tf->index, tf->op);
        if (tf->index == low) f.ranks.push_back(cx->Ref(m->proc, "behind", c.group, m->rank));
      }
      f.title = fmt::format("Ranks of {} timed out at different op indices", c.group);
      f.summary = fmt::format("{}. The rank(s) at the lowest index ({}) are behind: the others already "
                              "issued later ops.", parts, low);
      FromKb(&f);
      f.confidence = "medium";
      f.score = 78;
      for (auto& [m, tf] : rows)
        if (f.evidence.size() < kMaxEvidence) f.evidence.push_back(cx->EvLoc(tf->loc, fmt::format("rank {}", m->rank)));
      cx->out.push_back(std::move(f));
    }
    if (mismatch_found) continue;

    // A late rank found from the entry times themselves (RuleLateEntry) explains the timeouts.
    if (cx->late_entry_comms.count(c.group) != 0) continue;

    // 3b: error-time gap against the exec timeout.
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second->time < b.second->time; });
    Micros first = rows.front().second->time, last = rows.back().second->time;
    int64_t timeout_s = 0;
    for (auto& [m, tf] : rows) timeout_s = std::max(timeout_s, job.ExecTimeoutOf(tf->proc));
    Micros gap = last - first;
    if (gap > timeout_s * kSec) {
      Finding f;
      f.fault = "late_rank";
      std::vector<int64_t> late;
      for (auto& [m, tf] : rows)
        if (tf->time - first > timeout_s * kSec) {
          late.push_back(m->rank);
          f.ranks.push_back(cx->Ref(m->proc, "late", c.group, m->rank));
        }
      f.title = fmt::format("Rank(s) {} entered op index {} {} after rank {}: more than HCCL_EXEC_TIMEOUT {} s",
                            RankList(late), rows.back().second->index, FormatDuration(gap),
                            rows.front().first->rank, timeout_s);
      f.summary = fmt::format(
          "All ranks of {} timed out on the same op ({} index {}, count {}, {}), but their errors are {} "
          "apart ({} at {}, {} at {}) while HCCL_EXEC_TIMEOUT is {} s{}. The early rank(s) gave up "
          "waiting before the late one(s) arrived, so every rank timed out.",
          c.group, rows.front().second->op, rows.front().second->index, rows.front().second->count,
          rows.front().second->dtype, FormatDuration(gap), fmt::format("rank {}", rows.front().first->rank),
          FormatTime(first), fmt::format("rank {}", rows.back().first->rank), FormatTime(last), timeout_s,
          job.exec_timeout_from_log ? "" : " (the default: no HCCL_EXEC_TIMEOUT echo found)");
      f.advice = fmt::format(
          "Find what delayed the late rank(s) by {} (data loading, checkpoint save, a slow host, "
          "compilation). If the delay is expected, raise HCCL_EXEC_TIMEOUT above it on every rank. {}",
          FormatDuration(gap), CatalogueAdvice("EI0002"));
      f.code = "EI0002";
      ClassFromKb(&f);  // the advice names the delay: formatted here
      f.confidence = "high";
      f.score = 86;
      f.time = last;
      f.facts.push_back({"gap_seconds", fmt::format("{:.3f}", static_cast<double>(gap) / kSec)});
      f.facts.push_back({"exec_timeout_seconds", std::to_string(timeout_s)});
      for (auto& [m, tf] : rows)
        if (f.evidence.size() < kMaxEvidence) f.evidence.push_back(cx->EvLoc(tf->loc, fmt::format("rank {} error time", m->rank)));
      if (job.exec_timeout_from_log) f.evidence.push_back(cx->EvLoc(job.exec_timeout_loc, "timeout in force"));
      cx->out.push_back(std::move(f));
      continue;
    }

    // 3c: consistent and in time: the cause is not in these logs.
    Finding f;
    f.fault = "exec_timeout";
    // Fields the lines did not give (a cut or wrapped line) are unknown, not equal.
    bool known = true;
    for (auto& [m, tf] : rows) known = known && !tf->op.empty() && tf->index >= 0 && tf->count >= 0;
    if (known) {
      f.title = fmt::format("All ranks of {} timed out on {} index {} with consistent arguments",
                            c.group, rows.front().second->op, rows.front().second->index);
      f.summary = fmt::format(
          "Error times are within {} of each other (HCCL_EXEC_TIMEOUT {} s) and the op, count and "
          "data type agree: no rank is late or inconsistent in these logs.",
          FormatDuration(gap), timeout_s);
    } else {
      f.title = fmt::format("All ranks of {} timed out within the timeout of each other", c.group);
      f.summary = fmt::format(
          "Error times are within {} of each other (HCCL_EXEC_TIMEOUT {} s); the ops could not be "
          "compared (the op, index or count is missing from some rank's lines).",
          FormatDuration(gap), timeout_s);
    }
    f.code = "EI0002";
    FromKb(&f);
    f.advice += " " + CatalogueAdvice("EI0002");
    f.confidence = "low";
    f.score = 30;
    f.time = first;
    for (auto& [m, tf] : rows)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->EvLoc(tf->loc, fmt::format("rank {}", m->rank)));
    cx->out.push_back(std::move(f));
  }
}

}  // namespace vigil::diagnose::rules
