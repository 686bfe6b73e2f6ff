#include "diagnose/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "common/dtype.h"
#include "common/error_codes.h"
#include "diagnose/line_parser.h"

namespace vigil::diagnose {
namespace {

constexpr Micros kSec = 1000000;
constexpr Micros kJitter = 300 * kSec;   // HCCL's key-event window (JITTER_TIME)
constexpr Micros kLostDelay = 30 * kSec; // LOST needs 30 missed beats
constexpr size_t kMaxEvidence = 10;

// --- helpers -------------------------------------------------------------------------------

class Ctx {
 public:
  explicit Ctx(const Job& job) : job(job) {}
  const Job& job;
  std::vector<Finding> out;
  std::set<std::string> late_entry_comms;  // comms where RuleLateEntry named a late rank

  RankRef Ref(int64_t proc, const std::string& role, const std::string& group = {},
              int64_t rank = -1) const {
    RankRef r;
    r.role = role;
    r.group = group;
    r.rank = rank;
    if (proc >= 0 && static_cast<size_t>(proc) < job.processes.size()) {
      const Process& p = job.processes[proc];
      r.pid = p.pid;
      r.node = p.node;
      r.host = p.host_ip;
      r.device = p.device;
      r.uid = p.uid;
      if (!group.empty() && rank < 0) {
        int64_t ci = job.CommIndex(group);
        if (ci >= 0) {
          int64_t mi = job.comms[ci].MemberOfProc(proc);
          if (mi >= 0) r.rank = job.comms[ci].members[mi].rank;
        }
      }
      if (r.uid.empty() && !r.host.empty() && r.device >= 0) r.uid = fmt::format("{}/{}", r.host, r.device);
    }
    return r;
  }

  RankRef UidRef(const std::string& uid, const std::string& role) const {
    int64_t proc = job.ProcOfUid(uid);
    RankRef r = Ref(proc, role);
    r.uid = uid;
    if (r.host.empty()) r.host = uid.substr(0, uid.rfind('/'));
    if (r.device < 0) {
      auto d = ToInt(std::string_view(uid).substr(uid.rfind('/') + 1));
      if (d) r.device = *d;
    }
    // The comm rank of that process, when it is in exactly one comm.
    if (proc >= 0 && r.rank < 0) {
      for (const Comm& c : job.comms) {
        int64_t mi = c.MemberOfProc(proc);
        if (mi >= 0) {
          if (r.group.empty()) {
            r.group = c.group;
            r.rank = c.members[mi].rank;
          }
        }
      }
    }
    return r;
  }

  Evidence Ev(const Event& e, const std::string& note) const {
    return Evidence{e.loc, job.FilePath(e.loc), e.text, note};
  }
  Evidence EvLoc(const Loc& loc, const std::string& note) const {
    std::string path = job.FilePath(loc);
    return Evidence{loc, path, ReadLineAt(path, loc.offset), note};
  }
};

int StatusPriority(const std::string& s) {
  std::string u;
  for (char c : s) u.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (u.find("CQE") != std::string::npos) return 0;
  if (u.find("STUCK") != std::string::npos) return 1;
  if (u.find("LOST") != std::string::npos) return 2;
  if (u.find("INCONSISTENT") != std::string::npos) return 3;
  return 4;
}

const char* StatusName(int prio) {
  switch (prio) {
    case 0: return "ERROR CQE";
    case 1: return "STUCK";
    case 2: return "LOST";
    case 3: return "INCONSISTENT";
    default: return "OTHER";
  }
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

std::string RankName(const RankRef& r) { return DescribeRank(r); }

std::string RankList(const std::vector<int64_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

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

// --- rule 1: heartbeat ---------------------------------------------------------------------

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
    f.advice = "Check the network path between the two hosts (link flaps: hccn_tool -i <dev> -link_stat -g; "
               "switch ports, cables, firewall). " + CatalogueAdvice("EI0013");
    f.code = "EI0013";
    f.score = 93;
  } else if (exited) {
    f.fault = "heartbeat_lost";
    f.title = fmt::format("Process at {} exited: heartbeat LOST and its links failed (ERROR CQE)", top.uid);
    f.summary = fmt::format(
        "Heartbeat: {} reported ERROR CQE (by {}) and LOST, and its own logs stop before the first "
        "event: the process exited or was killed, and its peers' links to it failed as a result.{}",
        top.uid, informers, tail);
    f.advice = "Check why that process exited (exit status, core dump, OOM killer: dmesg, SIGKILL by "
               "the scheduler) at that time; the other ranks' errors follow from it.";
    f.score = 93;
  } else if (top.prio == 0) {
    f.fault = "error_cqe";
    f.title = fmt::format("ERROR CQE at {} (RoCE retransmission exceeded)", top.uid);
    f.summary = fmt::format("Heartbeat: {} reported ERROR CQE (by {}).{}", top.uid, informers, tail);
    f.advice = "The network to or from this rank dropped packets until RoCE gave up. Check its links "
               "(hccn_tool -link_stat), then whether the peer process exited first. " + CatalogueAdvice("EI0013");
    f.code = "EI0013";
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
    f.advice = "The host process of that rank stopped issuing collective ops (deadlock, waiting on "
               "data/IO, a Python exception swallowed, or a device task hang). Dump its stacks "
               "(py-spy dump / gdb -p) and check what it was doing at that time.";
    f.score = 92;
  } else if (top.prio == 2) {
    f.fault = "heartbeat_lost";
    f.title = fmt::format("Heartbeat lost from {} (process exited or unreachable)", top.uid);
    f.summary = fmt::format("Heartbeat: {} LOST, discovered by {}.{}", top.uid,
                            informers.empty() ? std::string("?") : informers, tail);
    f.advice = "Check whether that process exited (core dump, OOM killer: dmesg, SIGKILL by the "
               "scheduler) or froze (SIGSTOP) at that time, or whether its host's network went down.";
    f.score = 91;
  } else {
    f.fault = top.prio == 3 ? "op_inconsistent" : "heartbeat_event";
    f.title = fmt::format("Heartbeat event {} at {}", top.events.front()->status, top.uid);
    f.summary = fmt::format("Heartbeat names {} with status {}.", top.uid, top.events.front()->status);
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

// --- rule 3 by entry times: a rank that entered an op later than the timeout -------------------

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

// --- rule 2 + 3: the failing communicators ----------------------------------------------------

struct Attr {
  std::string op, dtype;
  int64_t count = -1, index = -1;
};

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
      f.advice = "Collect the CANN log folders of every node of the job and run diagnose on all of them.";
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
      f.advice = "Investigate this rank's own error first; the others only waited for it.";
      f.code = first_primary->code;
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
      f.advice = "Look at what the silent rank(s) were doing: stack dump if alive, exit status / dmesg if not.";
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
        f.advice = "Fix the script so every rank issues the same collective sequence (look for "
                   "rank-dependent branches, uneven data per rank, a skipped or extra call). "
                   "HCCL_ENTRY_LOG_ENABLE=1 logs every call to compare. " + CatalogueAdvice("EI0005");
        f.code = "EI0005";
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
      f.advice = "Find why the lagging rank issued fewer collectives (a skipped call, a branch, uneven data).";
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
    f.title = fmt::format("All ranks of {} timed out on {} index {} with consistent arguments", c.group,
                          rows.front().second->op, rows.front().second->index);
    f.summary = fmt::format("Error times are within {} of each other (HCCL_EXEC_TIMEOUT {} s) and the op, "
                            "count and data type agree: no rank is late or inconsistent in these logs.",
                            FormatDuration(gap), timeout_s);
    f.advice = "Check the network (error cqe, link flaps) and device health; rerun with "
               "HCCL_ENTRY_LOG_ENABLE=1 to trace every call. " + CatalogueAdvice("EI0002");
    f.code = "EI0002";
    f.confidence = "low";
    f.score = 30;
    f.time = first;
    for (auto& [m, tf] : rows)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->EvLoc(tf->loc, fmt::format("rank {}", m->rank)));
    cx->out.push_back(std::move(f));
  }
}

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
      f.advice = "Make every rank issue the same collectives in the same order with the same arguments.";
      f.code = "EI0005";
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
      f.advice = "Find where the lagging rank's host code stopped (stack dump), or why it skipped a call.";
      f.confidence = "medium";
      f.score = 74;
      const Member* m = behind.front()->m;
      if (!m->ops.recent.empty()) f.evidence.push_back(cx->EvLoc(m->ops.recent.back().loc, "its last op"));
      cx->out.push_back(std::move(f));
    }
  }
}

// --- rule 4: two streams on one comm ----------------------------------------------------------

void RuleStreamEvents(Ctx* cx, std::set<std::pair<int64_t, std::string>>* done);

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
      f.advice = "Issue all collectives of one communicator on one stream, or synchronize the streams "
                 "(events / aclrtSynchronizeStream) between them; or use one communicator per stream.";
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
    f.advice = "Issue all collectives of one communicator on one stream, or synchronize the streams "
               "(events / aclrtSynchronizeStream) between them; or use one communicator per stream.";
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

// --- rule 5: SDMA ------------------------------------------------------------------------------

void RuleSdma(Ctx* cx) {
  const Job& job = cx->job;
  std::map<int64_t, std::vector<const Event*>> by_proc;
  for (const Event& e : job.events) {
    if ((e.kind == EventKind::kScreenError && e.code == "EI0012") || e.kind == EventKind::kSdmaRuntime)
      by_proc[e.proc].push_back(&e);
  }
  for (const auto& [proc, evs] : by_proc) {
    const Process& p = job.processes[proc];
    Micros t = kNoTime;
    const Event* ei = nullptr;
    for (const Event* e : evs) {
      if (e->time != kNoTime && (t == kNoTime || e->time < t)) t = e->time;
      if (e->code == "EI0012" && ei == nullptr) ei = e;
    }
    // The failed op of this process, if the task exception lines are there.
    const TaskFailure* tf = nullptr;
    for (const TaskFailure& x : job.failures)
      if (x.proc == proc && (tf == nullptr || std::llabs(x.time - t) < std::llabs(tf->time - t))) tf = &x;
    std::string group = tf != nullptr ? tf->group : (ei != nullptr ? ei->group : std::string());
    Finding f;
    f.ranks.push_back(cx->Ref(proc, "root cause", group, tf != nullptr ? tf->rank : -1));
    f.time = t;
    f.code = "EI0012";
    for (const Event* e : evs)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->Ev(*e, "SDMA error"));
    if (tf != nullptr && f.evidence.size() < 6) f.evidence.push_back(cx->EvLoc(tf->loc, "failed op"));

    // Destroy before the error only: a destroy right after it is the program's cleanup.
    bool destroyed = p.destroy_time != kNoTime && t != kNoTime && p.destroy_time <= t &&
                     (tf == nullptr || tf->op_time == kNoTime || p.destroy_time >= tf->op_time);
    // Does the failing copy touch the user's buffer of the op (not the CCL buffer)?
    bool user_buffer = false;
    std::string where;
    if (tf != nullptr && tf->count > 0) {
      uint64_t bytes = static_cast<uint64_t>(tf->count) * static_cast<uint64_t>(std::max(1, DtypeSize(tf->dtype)));
      auto inside = [&](uint64_t a, uint64_t base) { return base != 0 && a >= base && a < base + bytes; };
      // A copy's destination is checked against the receive buffer first, its source against
      // the send buffer first (the two may be adjacent).
      struct Addr {
        uint64_t a;
        bool is_dst;
      };
      for (Addr x : {Addr{ei ? ei->dst : 0, true}, Addr{ei ? ei->src : 0, false}, Addr{tf->para_dst, true},
                     Addr{tf->para_src, false}}) {
        if (x.a == 0) continue;
        bool in_dst = inside(x.a, tf->dst), in_src = inside(x.a, tf->src);
        if (in_dst && (x.is_dst || !in_src))
          where = fmt::format("the receive buffer at offset {} of {} bytes", x.a - tf->dst, bytes);
        else if (in_src)
          where = fmt::format("the send buffer at offset {} of {} bytes", x.a - tf->src, bytes);
        if (!where.empty()) {
          user_buffer = true;
          break;
        }
      }
    }
    bool link = false;
    for (const Event& e : job.events) {
      if ((e.kind == EventKind::kCqeDetail || e.kind == EventKind::kRoceCqe ||
           (e.kind == EventKind::kHeartbeat && StatusPriority(e.status) <= 2)) &&
          e.time != kNoTime && t != kNoTime && std::llabs(e.time - t) < 120 * kSec)
        link = true;
    }
    if (destroyed) {
      f.fault = "destroy_before_sync";
      f.title = fmt::format("Communicator destroyed before the op finished (pid {})", p.pid);
      f.summary = fmt::format(
          "HcclCommDestroy was called at {}, {} before the SDMA error at {}: the op was still running "
          "when the CCL buffer was freed, so its memory copy hit freed memory.",
          FormatTime(p.destroy_time), FormatDuration(t - p.destroy_time), FormatTime(t));
      f.advice = "Synchronize the stream (aclrtSynchronizeStream) after the last collective and before "
                 "HcclCommDestroy.";
      f.confidence = "high";
      f.score = 92;
      f.evidence.insert(f.evidence.begin(), cx->EvLoc(p.destroy_loc, "comm destroyed here"));
    } else if (user_buffer || !link) {
      f.fault = "buffer_too_small";
      f.title = fmt::format("SDMA copy fault on a user buffer (pid {}): buffer smaller than count, or freed",
                            p.pid);
      f.summary = user_buffer
          ? fmt::format("The failing copy touches {}: the buffer passed to {} holds fewer than count "
                        "({}) elements, or was freed before the op ran. No comm destroy before the error.",
                        where, tf->op, tf->count)
          : "SDMA copy fault with no comm destroy before it and no link error near it: most likely an "
            "input/output buffer smaller than count, or freed before the op completed.";
      f.advice = "Check the allocation size of the op's send/receive buffers against count x sizeof(dtype), "
                 "and that they are not freed before the stream is synchronized. " + CatalogueAdvice("EI0012");
      f.confidence = user_buffer ? "high" : "medium";
      f.score = user_buffer ? 88 : 72;
    } else {
      f.fault = "sdma_link";
      f.title = fmt::format("SDMA copy fault with a link error nearby (pid {})", p.pid);
      f.summary = "The SDMA error comes with link errors (error CQE / heartbeat loss) within two minutes: a "
                  "link fault between the devices is the likely cause.";
      f.advice = "Check the link state between the two ends. " + CatalogueAdvice("EI0012");
      f.confidence = "medium";
      f.score = 70;
    }
    if (ei != nullptr) {
      f.facts.push_back({"remote_rank", std::to_string(ei->remote_rank)});
      f.facts.push_back({"link_type", ei->detail});
    }
    cx->out.push_back(std::move(f));
  }
}

// --- rule 6: memory ----------------------------------------------------------------------------

void RuleMemory(Ctx* cx) {
  const Job& job = cx->job;
  for (const Event& e : job.events) {
    bool qp = e.kind == EventKind::kScreenError && e.code == "EI0011";
    bool oom = e.kind == EventKind::kBufferOom;
    if (!qp && !oom) continue;
    // One finding per process and kind.
    bool dup = false;
    for (const Finding& f : cx->out)
      if (f.fault == (qp ? "qp_memory" : "buffer_oom") && !f.ranks.empty() && f.ranks[0].pid == e.pid &&
          f.ranks[0].node == job.processes[e.proc].node)
        dup = true;
    if (dup) continue;
    const Process& p = job.processes[e.proc];
    Finding f;
    f.ranks.push_back(cx->Ref(e.proc, "root cause"));
    f.time = e.time;
    f.evidence.push_back(cx->Ev(e, qp ? "QP memory allocation failed" : "CCL buffer allocation failed"));
    if (qp) {
      auto q = p.env.find("HCCL_RDMA_QPS_PER_CONNECTION");
      std::string qps = q != p.env.end() ? q->second : std::string();
      f.fault = "qp_memory";
      f.code = "EI0011";
      f.title = fmt::format("Device memory exhausted by link (QP) resources (EI0011, pid {})", p.pid);
      f.summary = fmt::format(
          "Link establishment could not allocate QP memory on the device{}. Each RoCE link needs QP "
          "memory; HCCL_RDMA_QPS_PER_CONNECTION multiplies it.",
          qps.empty() ? "" : fmt::format(" (HCCL_RDMA_QPS_PER_CONNECTION = {})", qps));
      f.advice = "Lower HCCL_RDMA_QPS_PER_CONNECTION (default 1; keep it <= 8), use fewer RoCE links "
                 "(algorithm/topology), lower the model's device memory use (batch size), or stop other "
                 "processes on the device. This is not the CCL buffer: HCCL_BUFFSIZE does not help here. " +
                 CatalogueAdvice("EI0011");
      if (!qps.empty()) f.evidence.push_back(cx->EvLoc(p.env_loc.at("HCCL_RDMA_QPS_PER_CONNECTION"), "QPs per connection"));
    } else {
      auto b = p.env.find("HCCL_BUFFSIZE");
      std::string buf = b != p.env.end() ? b->second : std::string("200");
      int comms = 0;
      for (const Comm& c : job.comms)
        if (c.MemberOfProc(e.proc) >= 0) ++comms;
      f.fault = "buffer_oom";
      f.code = "EI9001";
      f.title = fmt::format("Device memory too small for the CCL buffer (HCCL_BUFFSIZE {} MB, pid {})", buf, p.pid);
      f.summary = fmt::format(
          "The communication buffer could not be allocated: each communicator takes 2 x HCCL_BUFFSIZE = "
          "{} MB of device memory{}{}.",
          ToInt(buf) ? std::to_string(2 * *ToInt(buf)) : "2 x " + buf,
          b == p.env.end() ? " (HCCL_BUFFSIZE not echoed; default 200 assumed)" : "",
          comms > 0 ? fmt::format(", and this process is in {} communicator(s)", comms) : "");
      f.advice = "Lower HCCL_BUFFSIZE (or HcclCommConfig.hcclBufferSize per communicator), use fewer "
                 "communicators, or free device memory. This is not EI0011: QPS_PER_CONNECTION does not "
                 "help here. " + CatalogueAdvice("EI9001");
      if (b != p.env.end()) f.evidence.push_back(cx->EvLoc(p.env_loc.at("HCCL_BUFFSIZE"), "buffer size in force"));
    }
    f.confidence = "high";
    f.score = 90;
    cx->out.push_back(std::move(f));
  }
}

// --- rule 7: error CQE -------------------------------------------------------------------------

void RuleCqe(Ctx* cx) {
  const Job& job = cx->job;
  struct Pair {
    const Event* first = nullptr;
    std::vector<const Event*> evs;
  };
  std::map<std::string, Pair> pairs;
  std::vector<const Event*> raw;
  for (const Event& e : job.events) {
    if (e.kind == EventKind::kRoceCqe) raw.push_back(&e);
    bool detail = e.kind == EventKind::kCqeDetail || (e.kind == EventKind::kScreenError && e.code == "EI0013");
    if (!detail) continue;
    // Devices too: on one host every end may share the server and device IP.
    std::string key = fmt::format("{}|{}|{}|{}|{}|{}", e.local_server, e.local_device, e.local_ip, e.remote_server,
                                  e.remote_device, e.remote_ip);
    Pair& p = pairs[key];
    if (p.first == nullptr || e.time < p.first->time) p.first = &e;
    p.evs.push_back(&e);
  }
  if (pairs.empty() && !raw.empty()) {
    // Only driver lines: still an error CQE, endpoints unknown.
    Finding f;
    f.fault = "error_cqe";
    f.code = "EI0013";
    f.title = fmt::format("Error CQE reported by the RoCE driver (pid {})", raw.front()->pid);
    f.summary = "The RoCE driver reported error CQEs (retransmission exceeded); the HCCL line naming the "
                "remote end is not in these logs.";
    f.advice = CatalogueAdvice("EI0013");
    f.confidence = "medium";
    f.score = 80;
    f.time = raw.front()->time;
    f.ranks.push_back(cx->Ref(raw.front()->proc, "root cause"));
    f.evidence.push_back(cx->Ev(*raw.front(), "driver error cqe"));
    cx->out.push_back(std::move(f));
    return;
  }
  for (const auto& [key, pr] : pairs) {
    const Event& e = *pr.first;
    Micros t = e.aux_time != kNoTime ? e.aux_time : e.time;
    Finding f;
    f.fault = "error_cqe";
    f.code = "EI0013";
    f.time = t;
    RankRef local = cx->Ref(e.proc, "local end");
    if (local.host.empty()) local.host = e.local_server;
    // The peer: by its device IP (another process's local end, or the rank table), else by
    // server/device as a heartbeat uid.
    // server/device first: device IPs are shared when several ranks sit on one host.
    int64_t peer_proc = -1;
    if (!e.remote_server.empty() && !e.remote_device.empty())
      peer_proc = job.ProcOfUid(e.remote_server + "/" + e.remote_device);
    if (peer_proc < 0 && !e.remote_ip.empty()) {
      // Another process's local end with that IP; when several share it, the device decides.
      std::set<int64_t> by_ip, by_dev;
      for (const Event& o : job.events)
        if (o.kind == EventKind::kCqeDetail && o.proc != e.proc && o.local_ip == e.remote_ip) {
          by_ip.insert(o.proc);
          if (o.local_device == e.remote_device) by_dev.insert(o.proc);
        }
      if (by_ip.size() == 1) peer_proc = *by_ip.begin();
      else if (by_dev.size() == 1) peer_proc = *by_dev.begin();
    }
    if (peer_proc < 0) {
      std::vector<const RankTableDevice*> by_ip;
      for (const RankTableDevice& d : job.rank_table)
        if (!e.remote_ip.empty() && d.device_ip == e.remote_ip) by_ip.push_back(&d);
      for (const RankTableDevice* d : by_ip)
        if (by_ip.size() == 1 || std::to_string(d->device_id) == e.remote_device)
          peer_proc = job.ProcOfUid(d->server_id + "/" + std::to_string(d->device_id));
    }
    RankRef peer = cx->Ref(peer_proc, "peer");
    if (peer.host.empty()) peer.host = e.remote_server;
    std::string local_desc = fmt::format("server {} device {} (device IP {})", e.local_server, e.local_device, e.local_ip);
    std::string peer_desc = fmt::format("server {} device {} (device IP {})", e.remote_server, e.remote_device, e.remote_ip);
    f.ranks.push_back(local);
    f.ranks.push_back(peer);
    // Did the peer exit first? Its logs end, it destroyed its comm, or the heartbeat lost it.
    std::string exited;
    if (peer_proc >= 0) {
      const Process& pp = job.processes[peer_proc];
      if (pp.destroy_time != kNoTime && pp.destroy_time < t)
        exited = fmt::format("the peer destroyed its communicator at {} ({} before the CQE)", FormatTime(pp.destroy_time),
                             FormatDuration(t - pp.destroy_time));
      else if (pp.last != kNoTime && pp.last < t)
        exited = fmt::format("the peer's logs end at {} ({} before the CQE)", FormatTime(pp.last),
                             FormatDuration(t - pp.last));
    }
    for (const Event& o : job.events) {
      if (!exited.empty()) break;
      if (o.kind == EventKind::kHeartbeat && StatusPriority(o.status) == 2 && o.time != kNoTime && o.time <= t &&
          (o.crimer == peer.uid || (!e.remote_server.empty() && o.crimer == e.remote_server + "/" + e.remote_device)))
        exited = fmt::format("the heartbeat lost the peer at {}", FormatTime(o.time));
    }
    f.title = fmt::format("Error CQE between {} and {}", local_desc, peer_desc);
    f.summary = fmt::format("RoCE retransmission from {} to {} ran out (status {}) at {}. {}", local_desc, peer_desc,
                            e.status.empty() ? "12" : e.status, FormatTime(t),
                            exited.empty() ? "No sign that the peer exited first: suspect the network between them."
                                           : "The peer exited first: " + exited + ".");
    f.advice = exited.empty()
        ? "1. Check the network between the two ends first (hccn_tool -i <dev> -link_stat -g for link flaps, "
          "switch logs). 2. Then check whether the peer process exited first. 3. If links are poor, raise "
          "HCCL_RDMA_TIMEOUT / HCCL_RDMA_RETRY_CNT."
        : "Find why the peer process exited (its own logs, exit status, dmesg); the CQE is a consequence. "
          "If it did not exit, check the network between the two ends.";
    f.advice += " " + CatalogueAdvice("EI0013");
    f.confidence = "high";
    f.score = exited.empty() ? 89 : 87;
    if (!exited.empty()) {
      f.ranks[1].role = "root cause (exited first)";
      f.ranks[0].role = "local end";
    }
    f.facts.push_back({"peer_exited_first", exited.empty() ? "false" : "true"});
    f.facts.push_back({"local", local_desc});
    f.facts.push_back({"peer", peer_desc});
    for (const Event* x : pr.evs)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->Ev(*x, "error CQE"));
    for (const Event* x : raw)
      if (f.evidence.size() < 6 && x->proc == e.proc) f.evidence.push_back(cx->Ev(*x, "driver error cqe"));
    cx->out.push_back(std::move(f));
  }
}

// --- rule 8: link establishment ----------------------------------------------------------------

void RuleLink(Ctx* cx) {
  const Job& job = cx->job;
  std::vector<const Event*> timeouts, binds, missing, transport, inconsistent;
  for (const Event& e : job.events) {
    if (e.kind == EventKind::kLinkTimeout || e.kind == EventKind::kTopoTimeout ||
        (e.kind == EventKind::kScreenError && (e.code == "EI0006" || e.code == "EI0015")))
      timeouts.push_back(&e);
    if (e.kind == EventKind::kBindFail || (e.kind == EventKind::kScreenError && (e.code == "EI0019" || e.code == "EI0020")))
      binds.push_back(&e);
    if (e.kind == EventKind::kMissingRanks) missing.push_back(&e);
    if (e.kind == EventKind::kTransportError) transport.push_back(&e);
    // HCCL's heartbeat op check; Vigil's own check line names the remote rank (RuleConsistency).
    if (e.kind == EventKind::kOpInconsistent && e.remote_rank < 0) inconsistent.push_back(&e);
  }
  if (!binds.empty()) {
    const Event& e = *binds.front();
    int64_t port = -1;
    std::string ip;
    for (const Event* b : binds) {
      if (port < 0 && b->port >= 0) port = b->port;
      if (ip.empty() && !b->ip.empty()) ip = b->ip;
    }
    Finding f;
    f.fault = "port_in_use";
    f.code = "EI0019";
    f.title = fmt::format("Listen port {} could not be bound{}", port >= 0 ? std::to_string(port) : "?",
                          ip.empty() ? "" : " on " + ip);
    f.summary = fmt::format("The process could not listen on {}:{}: the port is taken (often a leftover "
                            "process of an earlier run, or two jobs on one host) or the IP is not local.",
                            ip.empty() ? "?" : ip, port >= 0 ? std::to_string(port) : "?");
    f.advice = "Find the holder (ss -ltnp | grep <port>) and stop it, or move the job with HCCL_IF_BASE_PORT / "
               "HCCL_HOST_SOCKET_PORT_RANGE. " + CatalogueAdvice("EI0019");
    f.confidence = "high";
    f.score = 90;
    f.time = e.time;
    f.ranks.push_back(cx->Ref(e.proc, "root cause"));
    f.facts.push_back({"port", std::to_string(port)});
    for (const Event* b : binds)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->Ev(*b, "bind failure"));
    cx->out.push_back(std::move(f));
  }
  if (!timeouts.empty() || !missing.empty()) {
    std::set<int64_t> ranks;
    for (const Event* m : missing)
      for (int64_t r : m->ranks) ranks.insert(r);
    for (const Event* t : timeouts)
      for (int64_t r : t->ranks) ranks.insert(r);
    // Ranks of the comms involved that never logged an init line.
    std::set<std::string> groups;
    for (const Event* t : timeouts)
      for (const Comm& c : job.comms)
        if (c.MemberOfProc(t->proc) >= 0) groups.insert(c.group);
    std::vector<int64_t> never;
    for (const std::string& g : groups) {
      const Comm& c = job.comms[job.CommIndex(g)];
      for (int64_t r = 0; r >= 0 && r < c.rank_size && r < 65536; ++r) {
        int64_t mi = c.MemberOfRank(r);
        if (mi < 0 || !c.members[mi].has_init) never.push_back(r);
      }
    }
    for (int64_t r : never) ranks.insert(r);
    // Ranks named in "wait socket establish timeout ... rank[..]" are the ones waited for.
    std::set<int64_t> waited;
    for (const Event* t : timeouts)
      if (t->kind == EventKind::kLinkTimeout && t->rank >= 0) waited.insert(t->rank);
    std::vector<int64_t> rv(ranks.begin(), ranks.end());
    Finding f;
    f.fault = "link_timeout";
    f.code = "EI0006";
    f.title = rv.empty() ? std::string("Link establishment timed out")
                         : fmt::format("Link establishment timed out: rank(s) {} never connected", RankList(rv));
    std::vector<int64_t> wv(waited.begin(), waited.end());
    f.summary = fmt::format(
        "{} rank(s) hit a connect timeout{}{}. Missing ranks did not reach communicator init / link "
        "setup within HCCL_CONNECT_TIMEOUT (crashed, started late, or cannot reach the peer).",
        timeouts.size() + missing.size(), rv.empty() ? "" : fmt::format("; missing rank(s): {}", RankList(rv)),
        wv.empty() ? "" : fmt::format("; rank(s) named by the socket timeout: {}", RankList(wv)));
    f.advice = "Check that the missing rank(s) started and reached init (their own logs), that all ranks use "
               "the same root info, and the network between them; if they only start late, raise "
               "HCCL_CONNECT_TIMEOUT on every rank. " + CatalogueAdvice("EI0006");
    f.confidence = rv.empty() ? "medium" : "high";
    f.score = rv.empty() ? 75 : 88;
    const Event& e = timeouts.empty() ? *missing.front() : *timeouts.front();
    f.time = e.time;
    f.facts.push_back({"missing_ranks", RankList(rv)});
    for (int64_t r : rv) {
      RankRef ref;
      ref.role = "missing";
      ref.rank = r;
      if (!groups.empty()) ref.group = *groups.begin();
      f.ranks.push_back(ref);
    }
    for (const Event* t : timeouts)
      if (f.evidence.size() < 4) f.evidence.push_back(cx->Ev(*t, "connect timeout"));
    for (const Event* m : missing)
      if (f.evidence.size() < 6) f.evidence.push_back(cx->Ev(*m, "missing ranks"));
    cx->out.push_back(std::move(f));
  }
  if (!inconsistent.empty()) {
    const Event& e = *inconsistent.front();
    Finding f;
    f.fault = "op_inconsistent";
    f.code = "EI0005";
    f.title = fmt::format("Heartbeat op check: ops differ at index {} of {}", e.index, e.group);
    f.summary = fmt::format("Local ({}) vs remote ({}).", e.local, e.remote);
    f.advice = CatalogueAdvice("EI0005");
    f.confidence = "high";
    f.score = 87;
    f.time = e.time;
    f.ranks.push_back(cx->Ref(e.proc, "reporter", e.group));
    f.evidence.push_back(cx->Ev(e, "op inconsistency"));
    cx->out.push_back(std::move(f));
  }
  if (!transport.empty() && timeouts.empty()) {
    const Event& e = *transport.front();
    Finding f;
    f.fault = "transport_error";
    f.code = "EI0009";
    f.title = "Transport (link) initialization failed";
    f.summary = "Creating a link failed: " + Printable(e.text, 200);
    f.advice = CatalogueAdvice("EI0009");
    f.confidence = "medium";
    f.score = 60;
    f.time = e.time;
    f.ranks.push_back(cx->Ref(e.proc, "reporter"));
    f.evidence.push_back(cx->Ev(e, "transport error"));
    cx->out.push_back(std::move(f));
  }
}

// --- rule 8c: arguments inconsistent between ranks (EI0005, consistency-check lines) -----------

// HCCL's RankConsistentcyChecker prints its enums as numbers (HcclCMDType, HcclDataType,
// HcclReduceOp) and compares the tag ("<Op>_<identifier>") as a string: name the values as the
// Entry lines do, so that they compare across ranks and read like ops. A tag that differs in its
// op is the same fault as a cmdType that differs, so it is reported as cmdType.
void NormaliseCheckValues(std::string* param, std::string* local, std::string* remote) {
  std::string p = *param;
  for (char& ch : p) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (p == "optype") {  // the EI0005 screen line's name for it
    p = "cmdtype";
    *param = "cmdType";
  }
  auto number = [](const std::string& v, int64_t* out) {
    if (v.empty() || v.size() > 9 ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    *out = std::stoll(v);
    return true;
  };
  auto decode = [&](std::string* v) {
    int64_t n = 0;
    if (!number(*v, &n)) return;
    if (p == "cmdtype") {
      static const char* const kCmd[] = {
          "invalid",  "Broadcast",  "AllReduce",      "Reduce",        "Send",
          "Receive",  "AllGather",  "ReduceScatter",  "AlltoAllV",     "AlltoAllVC",
          "AlltoAll", "Gather",     "Scatter",        "BatchSendRecv", "BatchPut",
          "BatchGet", "AllGatherV", "ReduceScatterV", "BatchWrite"};
      if (n < static_cast<int64_t>(std::size(kCmd))) *v = kCmd[n];
    } else if (p == "datatype") {
      std::string_view name = DataTypeName(static_cast<HcclDataType>(n));
      if (!name.empty() && name != "unknown") *v = std::string(name);
    } else if (p == "op") {
      std::string_view name = ReduceOpName(static_cast<HcclReduceOp>(n));
      if (!name.empty() && name != "unknown") *v = std::string(name);
    }
  };
  decode(local);
  decode(remote);
  if (p == "op") *param = "reduceOp";
  if (p == "tag") {
    std::string_view lop, lg, rop, rg;
    SplitTag(*local, &lop, &lg);
    SplitTag(*remote, &rop, &rg);
    if (!lop.empty() && !rop.empty() && lop != rop) {
      *param = "cmdType";
      *local = std::string(lop);
      *remote = std::string(rop);
    }
  }
}

// The value of one parameter that each rank holds, from every rank's own report (its local
// value) and from its peers' reports (their remote value): the ranks off the majority are the
// odd ones. Two ranks (or a tie) cannot be told apart: both are named.
void RuleConsistency(Ctx* cx) {
  const Job& job = cx->job;
  struct Obs {
    const Event* e;
    std::string group, param, local, remote, ccl_op;
    int64_t rank = -1, remote_rank = -1, index = -1;
  };
  // Vigil's op-check lines: local/remote rank and index per (process, group).
  std::map<std::pair<int64_t, std::string>, const Event*> op_lines;
  for (const Event& e : job.events)
    if (e.kind == EventKind::kOpInconsistent && e.remote_rank >= 0) op_lines.emplace(std::make_pair(e.proc, e.group), &e);
  std::vector<Obs> obs;
  std::set<std::tuple<int64_t, std::string, std::string>> seen;  // (proc, group, param): one report each
  for (const Event& e : job.events) {
    bool screen = e.kind == EventKind::kScreenError && e.code == "EI0005";
    if (!screen && e.kind != EventKind::kParamCheckFail) continue;
    Obs o{&e, e.group, e.name, e.local, e.remote, screen ? e.tag : std::string()};
    NormaliseCheckValues(&o.param, &o.local, &o.remote);
    if (o.group.empty() && e.proc >= 0) {
      // HCCL's "CMD information" line names no comm: the process's only comm, if one.
      int n = 0;
      for (const Comm& c : job.comms)
        if (c.MemberOfProc(e.proc) >= 0) o.group = c.group, ++n;
      if (n != 1) o.group.clear();
    }
    o.rank = e.rank;
    o.remote_rank = e.remote_rank;
    if (o.rank < 0 && !o.group.empty()) o.rank = cx->Ref(e.proc, "", o.group).rank;
    auto ol = op_lines.find({e.proc, o.group});
    if (ol != op_lines.end()) {
      if (o.rank < 0) o.rank = ol->second->rank;
      if (o.remote_rank < 0) o.remote_rank = ol->second->remote_rank;
      o.index = ol->second->index;
    }
    if (o.index < 0)
      for (const TaskFailure& tf : job.failures)
        if (tf.proc == e.proc && tf.group == o.group && tf.index >= 0) o.index = tf.index;
    if (!seen.insert({e.proc, o.group, o.param}).second) {
      // The same report twice (screen line and check line): keep what the second adds.
      for (Obs& x : obs)
        if (x.e->proc == e.proc && x.group == o.group && x.param == o.param) {
          if (x.remote_rank < 0) x.remote_rank = o.remote_rank;
          if (x.ccl_op.empty()) x.ccl_op = o.ccl_op;
          if (x.local.empty()) x.local = o.local;
          if (x.remote.empty()) x.remote = o.remote;
        }
      continue;
    }
    obs.push_back(std::move(o));
  }
  // Two different collectives also differ in their reduction (AllGather has none: HCCL prints
  // 255): a consequence of the cmdType mismatch the same rank reports, not a second fault.
  // Vigil prints HCCL's "CMD information cclbufferSize" line (bytes) beside its own buffsize line
  // (MB, both ranks named): one fault, told once, by the richer line.
  // (HCCL's lines name no comm, so this goes by process.)
  std::set<int64_t> other_op, buffsize;
  for (const Obs& o : obs) {
    if (o.param == "cmdType") other_op.insert(o.e->proc);
    if (o.param == "buffsize") buffsize.insert(o.e->proc);
  }
  std::map<std::pair<std::string, std::string>, std::vector<const Obs*>> by;
  for (const Obs& o : obs) {
    if (o.param == "reduceOp" && other_op.count(o.e->proc)) continue;
    if (o.param == "cclbufferSize" && buffsize.count(o.e->proc)) continue;
    by[{o.group, o.param}].push_back(&o);
  }
  for (const auto& [key, list] : by) {
    const auto& [group, param] = key;
    // rank -> value; a rank's own report wins over what a peer says of it.
    std::map<int64_t, std::string> value;
    for (const Obs* o : list)
      if (o->rank >= 0 && !o->local.empty()) value[o->rank] = o->local;
    for (const Obs* o : list)
      if (o->remote_rank >= 0 && !o->remote.empty() && !value.count(o->remote_rank)) value[o->remote_rank] = o->remote;
    std::map<std::string, std::vector<int64_t>> ranks_of;
    for (const auto& [r, v] : value) ranks_of[v].push_back(r);
    size_t best = 0;
    std::string major;
    for (const auto& [v, rs] : ranks_of)
      if (rs.size() > best) best = rs.size(), major = v;
    size_t at_best = 0;
    for (const auto& [v, rs] : ranks_of) at_best += rs.size() == best ? 1 : 0;
    const bool known = ranks_of.size() >= 2;
    const bool tie = known && at_best > 1;

    std::string p = param;
    for (char& ch : p) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const bool op_param = p == "optype" || p == "cmdtype";
    const bool count_param = p == "count";
    const bool dtype_param = p == "datatype";
    const bool per_op = op_param || count_param || dtype_param || p == "reduceop" || p == "root";
    int64_t index = -1;
    std::string ccl_op;
    for (const Obs* o : list) {
      if (index < 0) index = o->index;
      if (ccl_op.empty()) ccl_op = o->ccl_op;
    }
    const Obs& first = *list.front();
    Finding f;
    f.fault = op_param ? "op_mismatch" : count_param ? "count_mismatch" : dtype_param ? "dtype_mismatch" : "param_mismatch";
    f.code = "EI0005";
    std::vector<int64_t> odd;
    if (known) {
      for (const auto& [v, rs] : ranks_of)
        if (tie || v != major) odd.insert(odd.end(), rs.begin(), rs.end());
      std::sort(odd.begin(), odd.end());
      for (int64_t r : odd) {
        int64_t ci = job.CommIndex(group);
        int64_t mi = ci >= 0 ? job.comms[ci].MemberOfRank(r) : -1;
        RankRef ref = cx->Ref(mi >= 0 ? job.comms[ci].members[mi].proc : -1, "root cause", group, r);
        ref.rank = r;
        ref.group = group;
        f.ranks.push_back(ref);
      }
    } else {
      f.ranks.push_back(cx->Ref(first.e->proc, "reporter", group, first.rank));
    }
    std::string values;
    for (const auto& [v, rs] : ranks_of)
      values += fmt::format("{}rank{} {}: {}", values.empty() ? "" : "; ", rs.size() > 1 ? "s" : "", RankList(rs), v);
    std::string where = index >= 0 ? fmt::format(" at op index {}", index) : std::string();
    std::string comm = group.empty() ? std::string() : " of " + group;
    if (known && !tie) {
      std::string odd_vals;
      for (int64_t r : odd) odd_vals += fmt::format("{}rank {} has {}", odd_vals.empty() ? "" : ", ", r, value[r]);
      f.title = fmt::format("{} mismatch{}{}: {} (the others: {})", param, where, comm, odd_vals, major);
    } else if (known) {
      f.title = fmt::format("{} mismatch{}{}: {}", param, where, comm, values);
    } else {
      f.title = fmt::format("Ranks disagree on parameter {} (local {}, remote {})", param.empty() ? "?" : param,
                            first.local.empty() ? "?" : first.local, first.remote.empty() ? "?" : first.remote);
    }
    f.summary = fmt::format(
        "The consistency check{} failed on parameter {}{}: {}. {}", ccl_op.empty() ? "" : " of " + ccl_op,
        param.empty() ? "?" : param, where,
        known ? values : fmt::format("this rank has {}, its peer has {}", first.local, first.remote),
        per_op ? "Collectives must be called in the same order with the same arguments on every rank."
               : "Communicator-wide settings must be equal on every rank.");
    f.advice = (per_op ? std::string("Fix the script so every rank issues the same collective sequence (look for "
                                     "rank-dependent branches, uneven data per rank, a skipped or extra call). ")
                       : std::string("Give every rank the same value (env variables such as HCCL_BUFFSIZE must "
                                     "match on all nodes). ")) +
               CatalogueAdvice("EI0005");
    f.confidence = known && !tie ? "high" : known ? "medium" : "high";
    f.score = known && !tie ? 91 : 90;
    f.time = first.e->time;
    f.facts.push_back({"parameter", param});
    f.facts.push_back({"local", first.local});
    f.facts.push_back({"remote", first.remote});
    if (index >= 0) f.facts.push_back({"index", std::to_string(index)});
    if (!ccl_op.empty()) f.facts.push_back({"ccl_op", ccl_op});
    f.facts.push_back({"odd_ranks", RankList(odd)});
    for (const Obs* o : list)
      if (f.evidence.size() < 6) f.evidence.push_back(cx->Ev(*o->e, "consistency check"));
    for (const Obs* o : list) {
      auto ol = op_lines.find({o->e->proc, o->group});
      if (ol != op_lines.end() && f.evidence.size() < kMaxEvidence) f.evidence.push_back(cx->Ev(*ol->second, "op check"));
    }
    cx->out.push_back(std::move(f));
  }
}

// --- AIV and remaining screen errors -----------------------------------------------------------

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
    f.confidence = "low";
    f.score = 40;
    f.time = e.time;
    f.ranks.push_back(cx->Ref(e.proc, "reporter"));
    f.evidence.push_back(cx->Ev(e, "AIV kernel failure"));
    cx->out.push_back(std::move(f));
  }
  // Screen codes no rule explained (EI0001 env, EI0004 rank table, EJ..., ...): name them.
  std::set<std::string> covered = {"EI0002", "EI0005", "EI0006", "EI0011", "EI0012", "EI0013",
                                   "EI0015", "EI0019", "EI0020", "EI9001"};
  std::map<std::string, const Event*> codes;
  for (const Event& e : job.events)
    if (e.kind == EventKind::kScreenError && !covered.count(e.code) && !codes.count(e.code)) codes[e.code] = &e;
  for (const auto& [code, e] : codes) {
    Finding f;
    f.fault = "error_code";
    f.code = code;
    const ErrorCodeInfo* info = FindErrorCode(code);
    f.title = fmt::format("{}({}) reported (pid {})", info ? std::string(info->title) : e->name, code, e->pid);
    f.summary = Printable(e->detail, 300);
    std::string_view text = info != nullptr ? AdviceText(*info) : std::string_view();
    f.advice = !text.empty() ? std::string(text) : std::string("See the component's error code documentation.");
    f.confidence = "medium";
    f.score = code == "EI0001" || code == "EI0004" || code == "EI0014" || code == "EI0017" ? 85 : 55;
    f.time = e->time;
    f.ranks.push_back(cx->Ref(e->proc, "reporter"));
    f.evidence.push_back(cx->Ev(*e, "screen error"));
    cx->out.push_back(std::move(f));
  }
}

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
  Ctx cx(job);
  RuleHeartbeat(&cx);
  RuleLateEntry(&cx);
  RuleComms(&cx);
  RuleSequences(&cx);
  RuleStreams(&cx);
  RuleSdma(&cx);
  RuleMemory(&cx);
  RuleCqe(&cx);
  RuleLink(&cx);
  RuleConsistency(&cx);
  RuleOther(&cx);
  Reconcile(&cx);
  for (Finding& f : cx.out)
    for (Evidence& e : f.evidence)
      if (e.text.empty()) e.text = ReadLineAt(e.file, e.loc.offset);
  std::stable_sort(cx.out.begin(), cx.out.end(), [](const Finding& a, const Finding& b) { return a.score > b.score; });
  return std::move(cx.out);
}

}  // namespace vigil::diagnose
