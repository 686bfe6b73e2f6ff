// Op sequences from Entry lines and flight dumps, compared across a comm's ranks: the first index
// where op, count or dtype differ (op/count/dtype_mismatch), and ranks that issued fewer ops than
// the others (missing_op).
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace vigil::diagnose::rules {

// Op sequences from Entry lines / flight dumps: the first index where ranks differ, and ranks
// that issued fewer ops than the others.
void RuleSequences(Ctx* cx) {
  const Job& job = cx->job;
  // The attributes compared at one op index, as views into the job (no copies: a large job has
  // a thousand ranks with 256 recent ops each).
  struct OpView {
    std::string_view op, dtype;
    int64_t count = -1;
    bool operator==(const OpView& o) const { return op == o.op && dtype == o.dtype && count == o.count; }
    std::string Key() const { return fmt::format("{} count {} {}", op, count, dtype); }
  };
  struct Seq {
    const Member* m = nullptr;
    std::vector<const FlightOp*> flight;    // sorted by index
    const std::vector<OpEntry>* entries = nullptr;  // sorted by seq
    int64_t shift = 0;                               // entry seq + shift = index (EntryShift)
    int64_t total = 0;
    bool Empty() const { return flight.empty() && (entries == nullptr || entries->empty()); }
    int64_t First() const { return !flight.empty() ? flight.front()->index : entries->front().seq + shift; }
    int64_t Last() const { return !flight.empty() ? flight.back()->index : entries->back().seq + shift; }
    bool At(int64_t i, OpView* v) const {
      if (!flight.empty()) {
        auto it = std::lower_bound(flight.begin(), flight.end(), i,
                                   [](const FlightOp* o, int64_t x) { return o->index < x; });
        if (it == flight.end() || (*it)->index != i) return false;
        *v = OpView{(*it)->op, (*it)->dtype, (*it)->count};
        return true;
      }
      auto it = std::lower_bound(entries->begin(), entries->end(), i - shift,
                                 [](const OpEntry& o, int64_t x) { return o.seq < x; });
      if (it == entries->end() || it->seq != i - shift) return false;
      *v = OpView{it->op.view(), it->dtype.view(), static_cast<int64_t>(it->count)};
      return true;
    }
  };
  for (const Comm& c : job.comms) {
    std::vector<Seq> seqs;
    const int64_t shift = EntryShift(c);
    for (const Member& m : c.members) {
      Seq s;
      s.m = &m;
      s.shift = shift;
      if (!m.flight.empty()) {
        for (const FlightOp& o : m.flight) s.flight.push_back(&o);
        std::stable_sort(s.flight.begin(), s.flight.end(),
                         [](const FlightOp* a, const FlightOp* b) { return a->index < b->index; });
        // One op per index (a dump may repeat one): the last recorded wins, as a map would.
        std::vector<const FlightOp*> uniq;
        for (const FlightOp* o : s.flight) {
          if (!uniq.empty() && uniq.back()->index == o->index) uniq.back() = o;
          else uniq.push_back(o);
        }
        s.flight = std::move(uniq);
        s.total = m.flight.back().index + 1;
      } else if (m.ops.total > 0) {
        s.entries = &m.ops.recent;
        s.total = m.ops.total + shift;
      } else {
        continue;
      }
      seqs.push_back(std::move(s));
    }
    if (seqs.size() < 2) continue;
    // First index present on all ranks where they disagree.
    int64_t lo = 0, hi = INT64_MAX;
    for (const Seq& s : seqs) {
      if (s.Empty()) continue;
      lo = std::max(lo, s.First());
      hi = std::min(hi, s.Last());
    }
    bool reported = false;
    for (int64_t i = lo; i <= hi && !reported; ++i) {
      OpView first, v;
      bool all = true, differ = false;
      for (size_t k = 0; k < seqs.size() && all; ++k) {
        if (!seqs[k].At(i, k == 0 ? &first : &v)) all = false;
        else if (k > 0 && !(v == first)) differ = true;
      }
      if (!all || !differ) continue;
      std::map<std::string, std::vector<const Seq*>> by;
      for (const Seq& s : seqs) {
        s.At(i, &v);
        by[v.Key()].push_back(&s);
      }
      size_t best = 0;
      std::string major;
      for (const auto& [k, vs] : by)
        if (vs.size() > best) best = vs.size(), major = k;
      size_t at_best = 0;
      for (const auto& [k, vs] : by) at_best += vs.size() == best ? 1 : 0;
      const bool tie = at_best > 1;  // no majority: every side is named
      // The field that differs names the fault, as the timeout and EI0005 rules do.
      std::set<std::string_view> ops, dtypes;
      std::set<int64_t> counts;
      for (const auto& [k, vs] : by) {
        vs.front()->At(i, &v);
        ops.insert(v.op);
        dtypes.insert(v.dtype);
        counts.insert(v.count);
      }
      const char* field = ops.size() > 1 ? "op" : counts.size() > 1 ? "count" : "dataType";
      Finding f;
      f.fault = ops.size() > 1 ? "op_mismatch" : counts.size() > 1 ? "count_mismatch" : "dtype_mismatch";
      std::string parts;
      for (const auto& [k, vs] : by) {
        std::vector<int64_t> ids;
        for (const Seq* s : vs) ids.push_back(s->m->rank);
        parts += fmt::format("{}rank(s) {}: {}", parts.empty() ? "" : "; ", RankList(ids), k);
        if (k != major || tie)
          for (const Seq* s : vs) f.ranks.push_back(cx->Ref(s->m->proc, "root cause", c.group, s->m->rank));
      }
      f.facts.push_back({"index", std::to_string(i)});
      f.facts.push_back({"field", field});
      f.facts.push_back({"source", "call sequence"});
      f.title = fmt::format("Call sequences of {} differ at op #{}", c.group, i);
      f.summary = fmt::format("The recorded calls (Entry lines / flight recorder) differ at op #{}: {}.", i, parts);
      f.code = "EI0005";
      FromKb(&f, {2});
      f.confidence = tie ? "medium" : "high";
      f.score = tie ? 80 : 83;
      f.time = kNoTime;
      for (const Seq& s : seqs) {
        if (f.evidence.size() >= kMaxEvidence) break;
        if (!s.flight.empty()) {
          if (s.m->flight_loc.line != 0)
            f.evidence.push_back(cx->EvLoc(s.m->flight_loc, fmt::format("rank {} flight recorder", s.m->rank)));
          continue;
        }
        auto it = std::lower_bound(s.entries->begin(), s.entries->end(), i - s.shift,
                                   [](const OpEntry& o, int64_t x) { return o.seq < x; });
        if (it != s.entries->end() && it->seq == i - s.shift)
          f.evidence.push_back(cx->EvLoc(it->loc, fmt::format("rank {} op #{}", s.m->rank, i)));
      }
      cx->out.push_back(std::move(f));
      reported = true;
    }
    if (reported) continue;
    // Counts: a rank that issued fewer ops than all others.
    int64_t max_total = 0;
    for (const Seq& s : seqs) max_total = std::max(max_total, s.total);
    std::vector<const Seq*> behind;
    for (const Seq& s : seqs)
      if (s.total < max_total) behind.push_back(&s);
    // Only a minority can be "behind": logs of a killed job end at slightly different ops.
    if (!behind.empty() && behind.size() * 2 < seqs.size()) {
      Finding f;
      f.fault = "missing_op";
      std::vector<int64_t> ids;
      for (const Seq* s : behind) {
        ids.push_back(s->m->rank);
        f.ranks.push_back(cx->Ref(s->m->proc, "root cause", c.group, s->m->rank));
      }
      int64_t min_total = max_total;
      for (const Seq* s : behind) min_total = std::min(min_total, s->total);
      f.title = fmt::format("Rank(s) {} of {} never entered op #{}", RankList(ids), c.group, min_total);
      f.summary = fmt::format("The other ranks issued {} ops on {}; rank(s) {} stopped after {}: their host "
                              "code did not reach the next collective.",
                              max_total, c.group, RankList(ids), min_total);
      FromKb(&f);
      f.confidence = "medium";
      f.score = 74;
      const Member* m = behind.front()->m;
      if (!m->ops.recent.empty()) f.evidence.push_back(cx->EvLoc(m->ops.recent.back().loc, "its last op"));
      cx->out.push_back(std::move(f));
    }
  }
}

}  // namespace vigil::diagnose::rules
