// Rule 1: the heartbeat's crimer. Cluster-exception and heartbeat lines name a suspect rank; the
// worst status leads (ERROR CQE > STUCK > LOST) within HCCL's key-event window, a LOST rank whose
// links failed too has exited, and ranks that lost each other point at the network.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace vigil::diagnose::rules {
namespace {

constexpr Micros kJitter = 300 * kSec;   // HCCL's key-event window (JITTER_TIME)
constexpr Micros kLostDelay = 30 * kSec; // LOST needs 30 missed beats

const char* StatusName(int prio) {
  switch (prio) {
    case 0: return "ERROR CQE";
    case 1: return "STUCK";
    case 2: return "LOST";
    case 3: return "INCONSISTENT";
    default: return "OTHER";
  }
}

struct Crimer {
  std::string uid;
  int prio = 9;
  Micros first = kNoTime;
  std::set<int64_t> reporters;
  std::set<std::string> informers;
  std::vector<const Event*> events;
  bool from_ce = false;
};

Micros FirstFailureTime(const Job& job) {
  Micros t = kNoTime;
  for (const TaskFailure& f : job.failures)
    if (f.time != kNoTime && (t == kNoTime || f.time < t)) t = f.time;
  return t;
}

}  // namespace

void RuleHeartbeat(Ctx* cx) {
  const Job& job = cx->job;
  std::vector<const Event*> ce, hb;
  for (const Event& e : job.events) {
    if (e.kind == EventKind::kClusterException && !e.crimer.empty()) ce.push_back(&e);
    if (e.kind == EventKind::kHeartbeat && !e.crimer.empty()) hb.push_back(&e);
  }
  if (ce.empty() && hb.empty()) return;
  Micros timeout = job.exec_timeout_s * kSec;

  std::vector<const Event*> use;
  bool windowed = false;
  if (!ce.empty()) {
    use = ce;
  } else {
    // NOTE 1 of the seed: the events near the time the job got stuck are the cause.
    Micros ref = kNoTime;
    Micros fail = FirstFailureTime(job);
    if (fail != kNoTime) ref = fail - timeout;
    if (ref == kNoTime) {
      for (const Comm& c : job.comms)
        for (const Member& m : c.members)
          if (m.ops.last > ref) ref = m.ops.last;
    }
    if (ref != kNoTime) {
      for (const Event* e : hb) {
        if (e->time == kNoTime) continue;
        int prio = StatusPriority(e->status);
        Micros d = e->time - ref;
        bool keep;
        if (prio == 1) keep = d >= timeout / 3 - kJitter && d <= 2 * timeout / 3 + kJitter;
        else if (prio == 2) keep = std::llabs(d - kLostDelay) <= kJitter;
        else keep = std::llabs(d) <= kJitter;
        if (keep) use.push_back(e);
      }
      windowed = !use.empty();
    }
    if (use.empty()) use = hb;
  }

  std::map<std::string, Crimer> crimers;
  for (const Event* e : use) {
    Crimer& c = crimers[e->crimer];
    c.uid = e->crimer;
    c.prio = std::min(c.prio, StatusPriority(e->status));
    Micros t = e->kind == EventKind::kClusterException && e->aux_time != kNoTime ? e->aux_time : e->time;
    if (t != kNoTime && (c.first == kNoTime || t < c.first)) c.first = t;
    c.reporters.insert(e->proc);
    if (!e->informer.empty()) c.informers.insert(e->informer);
    c.events.push_back(e);
    c.from_ce = c.from_ce || e->kind == EventKind::kClusterException;
  }
  // Cluster Exception lines name the discoverer for LOST only: the informers of the other
  // statuses come from the HeartbeatAbnormal lines on the same crimer.
  for (const Event* e : hb) {
    auto it = crimers.find(e->crimer);
    if (it != crimers.end() && !e->informer.empty() && StatusPriority(e->status) == it->second.prio)
      it->second.informers.insert(e->informer);
  }
  std::vector<Crimer*> order;
  for (auto& [k, c] : crimers) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](const Crimer* a, const Crimer* b) {
    if (a->prio != b->prio) return a->prio < b->prio;
    if (a->reporters.size() != b->reporters.size()) return a->reporters.size() > b->reporters.size();
    return a->first < b->first;
  });
  const Crimer& top = *order.front();

  // NOTE 2: both ends reporting each other LOST means the network between them.
  std::string mutual;
  if (top.prio == 2) {
    for (const Event* a : hb) {
      if (StatusPriority(a->status) != 2 || a->crimer != top.uid) continue;
      for (const Event* b : hb) {
        if (StatusPriority(b->status) == 2 && b->crimer == a->informer && b->informer == top.uid &&
            a->informer != top.uid) {
          mutual = a->informer;
          break;
        }
      }
      if (!mutual.empty()) break;
    }
  }

  Finding f;
  f.time = top.first;
  RankRef root = cx->UidRef(top.uid, "root cause");
  f.ranks.push_back(root);
  int64_t proc = job.ProcOfUid(top.uid);
  std::string tail;
  if (proc >= 0 && job.processes[proc].last != kNoTime && top.first != kNoTime) {
    Micros last = job.processes[proc].last;
    tail = fmt::format(" Its own logs end at {} ({} {} the event).", FormatTime(last),
                       FormatDuration(std::llabs(top.first - last)), last <= top.first ? "before" : "after");
  } else if (proc < 0) {
    tail = " No logs of that rank were given; collect them.";
  }
  std::string informers;
  for (const auto& i : top.informers) informers += (informers.empty() ? "" : ", ") + i;
  // ERROR CQE names the far end of a failed link; when that rank's own logs stop before the
  // first event (and the heartbeat also lost it, or several peers' links to it failed at once),
  // the process went away and the CQEs are the consequence: a LOST, not a network fault.
  bool exited = false;
  if (top.prio == 0 && proc >= 0) {
    // Record times, not "Arrival Time" (whole seconds in Cluster Exception lines).
    Micros first_rec = kNoTime;
    for (const Event* e : top.events)
      if (e->time != kNoTime && (first_rec == kNoTime || e->time < first_rec)) first_rec = e->time;
    Micros last = job.processes[proc].last;
    bool lost_too = false;
    for (const Event* e : hb)
      lost_too = lost_too || (e->crimer == top.uid && StatusPriority(e->status) == 2);
    exited = last != kNoTime && first_rec != kNoTime && last < first_rec && (lost_too || top.informers.size() >= 2);
  }
  if (!mutual.empty()) {
    f.fault = "network";
    f.title = fmt::format("Network between {} and {} (both report the other LOST)", top.uid, mutual);
    f.summary = fmt::format(
        "Heartbeat: {} and {} each report the other as LOST. Both processes were alive to report, "
        "so the link between them failed, not a process.",
        top.uid, mutual);
    f.ranks.push_back(cx->UidRef(mutual, "peer"));
    f.code = "EI0013";
    FromKb(&f);
    f.advice += " " + CatalogueAdvice("EI0013");
    f.score = 93;
  } else if (exited) {
    f.fault = "heartbeat_lost";
    f.title = fmt::format("Process at {} exited: heartbeat LOST and its links failed (ERROR CQE)", top.uid);
    f.summary = fmt::format(
        "Heartbeat: {} reported ERROR CQE (by {}) and LOST, and its own logs stop before the first "
        "event: the process exited or was killed, and its peers' links to it failed as a result.{}",
        top.uid, informers, tail);
    FromKb(&f, {0});
    f.score = 93;
  } else if (top.prio == 0) {
    f.fault = "error_cqe";
    f.title = fmt::format("ERROR CQE at {} (RoCE retransmission exceeded)", top.uid);
    f.summary = fmt::format("Heartbeat: {} reported ERROR CQE (by {}).{}", top.uid, informers, tail);
    f.code = "EI0013";
    FromKb(&f, {0});
    f.advice += " " + CatalogueAdvice("EI0013");
    f.score = 94;
    // The informer of an ERROR CQE is the other end of the failed link.
    if (top.informers.size() <= 2)
      for (const std::string& i : top.informers)
        if (i != top.uid) f.ranks.push_back(cx->UidRef(i, "other end"));
  } else if (top.prio == 1) {
    f.fault = "process_stuck";
    f.title = fmt::format("Process stuck at {}", top.uid);
    f.summary = fmt::format(
        "Heartbeat: {} is STUCK (its op in/out counters stopped moving; reported by {}). Note STUCK is "
        "detected (1/3..2/3) x HCCL_EXEC_TIMEOUT = {}..{} after the stop.{}",
        top.uid, informers, FormatDuration(job.exec_timeout_s * kSec / 3),
        FormatDuration(job.exec_timeout_s * kSec * 2 / 3), tail);
    FromKb(&f);
    f.score = 92;
  } else if (top.prio == 2) {
    f.fault = "heartbeat_lost";
    f.title = fmt::format("Heartbeat lost from {} (process exited or unreachable)", top.uid);
    f.summary = fmt::format("Heartbeat: {} LOST, discovered by {}.{}", top.uid,
                            informers.empty() ? std::string("?") : informers, tail);
    FromKb(&f, {1});
    f.score = 91;
  } else {
    f.fault = top.prio == 3 ? "op_inconsistent" : "heartbeat_event";
    f.title = fmt::format("Heartbeat event {} at {}", top.events.front()->status, top.uid);
    f.summary = fmt::format("Heartbeat names {} with status {}.", top.uid, top.events.front()->status);
    ClassFromKb(&f);
    f.advice = CatalogueAdvice("EI0005");
    f.score = 70;
  }
  if (top.from_ce) {
    f.confidence = "high";
  } else if (windowed) {
    f.confidence = "medium";
    f.score -= 6;
  } else {
    f.confidence = "low";
    f.score -= 25;
    f.summary += " (No event falls in the window around the stop time; all heartbeat events used.)";
  }
  f.facts.push_back({"status", exited ? "LOST" : StatusName(top.prio)});
  if (exited) f.facts.push_back({"reported_status", StatusName(top.prio)});
  if (top.first != kNoTime) f.facts.push_back({"arrival_time", FormatTime(top.first)});
  f.facts.push_back({"crimer", top.uid});
  f.facts.push_back({"informers", informers});
  f.facts.push_back({"reporting_processes", std::to_string(top.reporters.size())});
  for (const Event* e : top.events) {
    if (f.evidence.size() >= 4) break;
    f.evidence.push_back(cx->Ev(*e, e->kind == EventKind::kClusterException ? "cluster exception location"
                                                                           : "heartbeat event"));
  }
  // The other crimers, for context.
  for (size_t i = 1; i < order.size() && f.evidence.size() < kMaxEvidence; ++i)
    f.evidence.push_back(cx->Ev(*order[i]->events.front(),
                                fmt::format("also: {} {}", order[i]->uid, StatusName(order[i]->prio))));
  cx->out.push_back(std::move(f));
}

}  // namespace vigil::diagnose::rules
