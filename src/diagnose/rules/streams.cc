// Rule 4: one communicator used from two streams at once (multi_stream), seen in a rank's Entry
// lines or reported by Vigil itself.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <utility>

namespace vigil::diagnose::rules {
namespace {

// Vigil detects the overlap itself ("used from two streams at once"): no Entry lines needed.
void RuleStreamEvents(Ctx* cx, std::set<std::pair<int64_t, std::string>>* done) {
  const Job& job = cx->job;
  std::map<std::pair<int64_t, std::string>, std::vector<const Event*>> by;
  for (const Event& e : job.events)
    if (e.kind == EventKind::kMultiStream) by[{e.proc, e.group}].push_back(&e);
  for (const auto& [key, evs] : by) {
    if (done->count(key) != 0) continue;
    const Event& e = *evs.front();
    std::set<std::string> ids;
    for (const Event* x : evs) {
      if (x->stream >= 0) ids.insert(std::to_string(x->stream));
      if (!x->value.empty()) ids.insert(x->value);
    }
    std::string list;
    for (const std::string& id : ids) list += (list.empty() ? "" : " and ") + id;
    Finding f;
    f.fault = "multi_stream";
    RankRef r = cx->Ref(e.proc, "root cause", e.group);
    f.ranks.push_back(r);
    f.title = fmt::format("Ops of one communicator on two streams (streamId {}) in {}", list, DescribeRank(r));
    f.summary = fmt::format(
        "{} enqueued op {} (index {}) on streamId {} while op {} was still running on streamId {} of the same "
        "communicator {}. Without stream synchronization they run concurrently and consume the communicator's "
        "shared resources (notifies, CCL buffer) in the wrong order.",
        DescribeRank(r), e.tag, e.index, e.stream, e.name, e.value, e.group);
    FromKb(&f);
    f.confidence = "high";
    f.score = 77;
    f.time = e.time;
    f.facts.push_back({"streams", list});
    f.facts.push_back({"tags", e.tag + (e.name.empty() || e.name == e.tag ? "" : ", " + e.name)});
    for (const Event* x : evs)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->Ev(*x, "two streams at once"));
    cx->out.push_back(std::move(f));
  }
}

}  // namespace

void RuleStreams(Ctx* cx) {
  const Job& job = cx->job;
  std::set<std::pair<int64_t, std::string>> done;  // (proc, group) with a finding
  for (const Comm& c : job.comms) {
    for (const Member& m : c.members) {
      if (m.ops.streams.size() < 2) continue;
      done.insert({m.proc, c.group});
      Finding f;
      f.fault = "multi_stream";
      std::string ids, tags;
      for (const auto& [sid, st] : m.ops.streams) {
        ids += (ids.empty() ? "" : " and ") + std::to_string(sid);
        tags += fmt::format("{}streamId {}: {} ops from {} ({} first)", tags.empty() ? "" : "; ", sid, st.ops,
                            FormatTime(st.first), st.first_op);
      }
      f.ranks.push_back(cx->Ref(m.proc, "root cause", c.group, m.rank));
      f.title = fmt::format("Ops of one communicator on two streams (streamId {}) in rank {}", ids, m.rank);
      f.summary = fmt::format(
          "Rank {} issued ops of {} on streams {} ({}). Without stream synchronization they run "
          "concurrently and consume the communicator's shared resources (notifies, CCL buffer) in the "
          "wrong order: timeouts or wrong results follow.{}",
          m.rank, c.group, ids, tags,
          m.ops.min_switch_gap >= 0 ? fmt::format(" The closest pair was issued {} apart.",
                                                  FormatDuration(m.ops.min_switch_gap))
                                    : "");
      FromKb(&f);
      f.confidence = m.ops.stream_switches > 0 ? "high" : "medium";
      f.score = 77;
      f.time = m.ops.streams.begin()->second.first;
      f.facts.push_back({"streams", ids});
      if (m.ops.min_switch_gap >= 0) {
        f.evidence.push_back(cx->EvLoc(m.ops.switch_loc_a, "op on one stream"));
        f.evidence.push_back(cx->EvLoc(m.ops.switch_loc_b, "next op, on another stream"));
      } else {
        for (const auto& [sid, st] : m.ops.streams)
          f.evidence.push_back(cx->EvLoc(st.first_loc, fmt::format("first op on stream {}", sid)));
      }
      cx->out.push_back(std::move(f));
    }
  }
  RuleStreamEvents(cx, &done);
}

}  // namespace vigil::diagnose::rules
