// Rule 3 by entry times: a rank that entered an op more than HCCL_EXEC_TIMEOUT after the others
// is the cause (late_rank), whatever the timeout errors say afterwards. EntryShift lines Entry-line
// ordinals up with flight-recorder indices, for this rule and sequences.cc.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>

namespace vigil::diagnose::rules {

// Entry-line ordinals count from 0 within the logs; flight-recorder indices are the library's op
// index (Vigil's from 1, as in the "Task run failed" opData line). When a comm mixes members known
// by flight dumps and members known only by Entry lines, the Entry ordinals are shifted onto the
// flight numbering: by the offset seen on a member that has both (same op entered at the same
// time), else by 1.
int64_t EntryShift(const Comm& c) {
  bool any_flight = false, any_entries_only = false;
  for (const Member& m : c.members) {
    any_flight = any_flight || !m.flight.empty();
    any_entries_only = any_entries_only || (m.flight.empty() && !m.ops.recent.empty());
  }
  if (!any_flight || !any_entries_only) return 0;
  for (const Member& m : c.members) {
    if (m.flight.empty() || m.ops.recent.empty()) continue;
    for (const FlightOp& f : m.flight) {
      if (f.enter == kNoTime) continue;
      for (const OpEntry& o : m.ops.recent)
        if (o.op == f.op && o.time != kNoTime && std::llabs(o.time - f.enter) <= 5000) return f.index - o.seq;
    }
  }
  return 1;
}

// F7: per op index, the time each rank entered it (flight-recorder "enter", else its Entry line).
// When the ranks split into an on-time group and a smaller group that entered more than
// HCCL_EXEC_TIMEOUT after the last on-time rank, the on-time ranks gave up before the late ones
// arrived: the late rank(s) are the cause, whatever the timeout errors say afterwards.
void RuleLateEntry(Ctx* cx) {
  const Job& job = cx->job;
  struct Enter {
    int64_t index;
    Micros time;
    Loc loc;
  };
  struct Row {
    const Member* m;
    std::vector<Enter> ops;  // sorted by index
  };
  for (const Comm& c : job.comms) {
    std::vector<Row> rows;
    const int64_t shift = EntryShift(c);
    for (const Member& m : c.members) {
      Row r{&m, {}};
      if (!m.flight.empty()) {
        for (const FlightOp& o : m.flight)
          if (o.index >= 0 && o.enter != kNoTime) r.ops.push_back({o.index, o.enter, m.flight_loc});
      } else {
        for (const OpEntry& o : m.ops.recent)
          if (o.time != kNoTime) r.ops.push_back({o.seq + shift, o.time, o.loc});
      }
      std::stable_sort(r.ops.begin(), r.ops.end(), [](const Enter& a, const Enter& b) { return a.index < b.index; });
      if (!r.ops.empty()) rows.push_back(std::move(r));
    }
    if (rows.size() < 2) continue;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const Row& r : rows) {
      lo = std::min(lo, r.ops.front().index);
      hi = std::max(hi, r.ops.back().index);
    }
    if (hi - lo > 1000000) lo = hi - 1000000;  // bounded work on odd indices
    struct At {
      const Row* row;
      const Enter* e;
    };
    std::vector<At> at;
    for (int64_t i = lo; i <= hi; ++i) {
      at.clear();
      for (const Row& r : rows) {
        auto it = std::lower_bound(r.ops.begin(), r.ops.end(), i, [](const Enter& e, int64_t x) { return e.index < x; });
        if (it != r.ops.end() && it->index == i) at.push_back({&r, &*it});
      }
      if (at.size() < 2) continue;
      std::sort(at.begin(), at.end(), [](const At& a, const At& b) { return a.e->time < b.e->time; });
      // The widest gap between consecutive entry times splits on-time from late.
      size_t split = 0;
      Micros gap = 0;
      for (size_t k = 1; k < at.size(); ++k)
        if (at[k].e->time - at[k - 1].e->time > gap) {
          gap = at[k].e->time - at[k - 1].e->time;
          split = k;
        }
      size_t late_n = at.size() - split;
      if (split == 0 || late_n > split) continue;  // the late ones must be the fewer ("the others")
      int64_t timeout_s = 0;
      for (size_t k = 0; k < split; ++k) timeout_s = std::max(timeout_s, job.ExecTimeoutOf(at[k].row->m->proc));
      if (gap <= timeout_s * kSec) continue;

      const At& last_on_time = at[split - 1];
      const At& first_late = at[split];
      bool echoed = false;
      for (size_t k = 0; k < split; ++k) {
        int64_t proc = at[k].row->m->proc;
        echoed = echoed || (proc >= 0 && job.processes[proc].env.count("HCCL_EXEC_TIMEOUT") != 0);
      }
      std::string op_name;
      if (!first_late.row->m->flight.empty()) {
        for (const FlightOp& o : first_late.row->m->flight)
          if (o.index == i) op_name = o.op;
      } else {
        for (const OpEntry& o : first_late.row->m->ops.recent)
          if (o.seq + shift == i) op_name = o.op.str();
      }
      Finding f;
      f.fault = "late_rank";
      std::vector<int64_t> late;
      for (size_t k = split; k < at.size(); ++k) {
        const Member* m = at[k].row->m;
        late.push_back(m->rank);
        f.ranks.push_back(cx->Ref(m->proc, "late", c.group, m->rank));
      }
      std::string late_names;
      for (const RankRef& r : f.ranks) late_names += (late_names.empty() ? "" : ", ") + DescribeRank(r);
      f.title = fmt::format("Rank{} {} entered op index {}{} {} after the others: more than HCCL_EXEC_TIMEOUT {} s",
                            late.size() > 1 ? "s" : "", RankList(late), i,
                            op_name.empty() ? "" : " (" + op_name + ")", FormatDuration(gap), timeout_s);
      f.summary = fmt::format(
          "On {}, {} of {} rank(s) entered op index {} between {} and {}; {} entered it at {}, {} after the last of "
          "them, while HCCL_EXEC_TIMEOUT is {} s{}. The on-time ranks gave up waiting before the late one(s) "
          "arrived, so the timeouts that follow are a consequence.",
          c.group, split, at.size(), i, FormatTime(at.front().e->time), FormatTime(last_on_time.e->time), late_names,
          FormatTime(first_late.e->time), FormatDuration(gap), timeout_s,
          echoed ? "" : " (the default: no HCCL_EXEC_TIMEOUT echo found)");
      f.advice = fmt::format(
          "Find what delayed rank(s) {} by {} before op index {} (data loading, checkpoint save, a slow host, "
          "compilation). If the delay is expected, raise HCCL_EXEC_TIMEOUT above it on every rank. {}",
          RankList(late), FormatDuration(gap), i, CatalogueAdvice("EI0002"));
      f.code = "EI0002";
      ClassFromKb(&f);  // the advice names the ranks and the delay: formatted here
      f.confidence = "high";
      f.score = 90;
      f.time = first_late.e->time;
      f.facts.push_back({"index", std::to_string(i)});
      f.facts.push_back({"late_ranks", RankList(late)});
      f.facts.push_back({"gap_seconds", fmt::format("{:.3f}", static_cast<double>(gap) / kSec)});
      f.facts.push_back({"exec_timeout_seconds", std::to_string(timeout_s)});
      f.facts.push_back({"exec_timeout_source", echoed ? "log" : "default"});
      f.evidence.push_back(cx->EvLoc(first_late.e->loc, fmt::format("rank {} enters op {}", first_late.row->m->rank, i)));
      f.evidence.push_back(
          cx->EvLoc(last_on_time.e->loc, fmt::format("rank {} (last on time) enters op {}", last_on_time.row->m->rank, i)));
      if (at.front().row != last_on_time.row)
        f.evidence.push_back(
            cx->EvLoc(at.front().e->loc, fmt::format("rank {} (first) enters op {}", at.front().row->m->rank, i)));
      for (size_t k = 0; k < split && echoed; ++k) {
        int64_t proc = at[k].row->m->proc;
        if (proc < 0) continue;
        auto it = job.processes[proc].env_loc.find("HCCL_EXEC_TIMEOUT");
        if (it == job.processes[proc].env_loc.end()) continue;
        f.evidence.push_back(cx->EvLoc(it->second, "timeout in force"));
        break;
      }
      cx->out.push_back(std::move(f));
      cx->late_entry_comms.insert(c.group);
      break;  // the first such index explains the rest
    }
  }
}

// A rank that entered communicator creation more than HCCL_CONNECT_TIMEOUT after the others (its
// Entry-HcclCommInitRootInfo line): the others' detection gave up before it came, so the
// connect timeouts, or a hang, follow from its delay.
void RuleLateInit(Ctx* cx) {
  const Job& job = cx->job;
  int64_t timeout_s = 120;  // HCCL's default
  bool echoed = false;
  Loc echo_loc;
  for (const Process& p : job.processes) {
    auto it = p.env.find("HCCL_CONNECT_TIMEOUT");
    if (it == p.env.end()) continue;
    if (auto v = ToInt(it->second); v && *v > 0) {
      timeout_s = *v;
      echoed = true;
      echo_loc = p.env_loc.at("HCCL_CONNECT_TIMEOUT");
      break;
    }
  }
  for (const Comm& c : job.comms) {
    std::vector<const Member*> in;
    for (const Member& m : c.members)
      if (m.has_init && m.init_time != kNoTime) in.push_back(&m);
    if (in.size() < 2) continue;
    std::stable_sort(in.begin(), in.end(),
                     [](const Member* a, const Member* b) { return a->init_time < b->init_time; });
    size_t split = 0;
    Micros gap = 0;
    for (size_t k = 1; k < in.size(); ++k) {
      if (in[k]->init_time - in[k - 1]->init_time > gap) {
        gap = in[k]->init_time - in[k - 1]->init_time;
        split = k;
      }
    }
    if (gap <= timeout_s * kSec) continue;
    Finding f;
    f.fault = "late_init";
    std::vector<int64_t> late;
    for (size_t k = split; k < in.size(); ++k) {
      late.push_back(in[k]->rank);
      f.ranks.push_back(cx->Ref(in[k]->proc, "late", c.group, in[k]->rank));
    }
    f.title = fmt::format(
        "Rank{} {} entered communicator creation {} after the others: more than "
        "HCCL_CONNECT_TIMEOUT {} s",
        late.size() > 1 ? "s" : "", RankList(late), FormatDuration(gap), timeout_s);
    f.summary = fmt::format(
        "On {}, {} of {} rank(s) called communicator creation by {}; rank(s) {} called it at {}, "
        "{} later, while HCCL_CONNECT_TIMEOUT is {} s{}. The early ranks' wait for the others ran "
        "out before the late one(s) came.",
        c.group, split, in.size(), FormatTime(in[split - 1]->init_time), RankList(late),
        FormatTime(in[split]->init_time), FormatDuration(gap), timeout_s,
        echoed ? "" : " (the default: no HCCL_CONNECT_TIMEOUT echo found)");
    f.code = "EI0015";
    FromKb(&f);
    f.confidence = "medium";
    f.score = 80;
    f.time = in[split]->init_time;
    f.facts.push_back({"late_ranks", RankList(late)});
    f.facts.push_back({"gap_seconds", fmt::format("{:.3f}", static_cast<double>(gap) / kSec)});
    f.facts.push_back({"connect_timeout_seconds", std::to_string(timeout_s)});
    f.evidence.push_back(
        cx->EvLoc(in[split]->init_loc, fmt::format("rank {} enters", in[split]->rank)));
    f.evidence.push_back(
        cx->EvLoc(in[split - 1]->init_loc, fmt::format("rank {} enters", in[split - 1]->rank)));
    if (echoed) f.evidence.push_back(cx->EvLoc(echo_loc, "timeout in force"));
    cx->out.push_back(std::move(f));
  }
}

}  // namespace vigil::diagnose::rules
