// Timeout reports judged together, per communicator: every rank of a comm that timed out said so,
// and the reports as a whole point at the rank that is different from the others.
//   Notify Wait timeouts ("Task run failed ... taskType[Notify Wait]"): a rank with logs that did
//   not report; reports spread over more than HCCL_EXEC_TIMEOUT (the last one came late); a
//   rank's own device-side error about one timeout before the reports (causal order beats the
//   shape of the waits); ranks at different op indices (the lowest is behind); a minority op name in the tags (it issued
//   another collective); else the wait graph of "remote rank:[R]": a rank waiting on its own
//   second stream ("remote rank:[local]") that others wait on, the end of a chain, or a cycle
//   (a deadlock of the op schedule, no single root).
//   Root-info init failures ("receive msg length from fdhandle failed"): ranks that neither have
//   logs nor reached the root's connected list; ranks with logs that did not report; reports
//   spread over more than HCCL_CONNECT_TIMEOUT (the last came late); else the comm's root rank,
//   which all of them failed to hear from, named from the identifier when its logs are absent.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "diagnose/rules/rule_context.h"

namespace vigil::diagnose::rules {
namespace {

constexpr int64_t kDefaultConnectTimeoutS = 120;

struct Report {
  int64_t proc = -1;
  Micros time = kNoTime;
  const TaskFailure* tf = nullptr;  // notify: the first failure of the process
  const Event* ev = nullptr;        // root info: the first failure line
  int64_t target = -2;              // notify: the process waited on (-1: a rank without logs)
  bool self = false;                // notify: waits on its own stream
};

// The comm a process is in: `group` when known, else the largest one it belongs to.
int64_t CommOf(const Job& job, int64_t proc, const std::string& group) {
  if (!group.empty()) {
    int64_t ci = job.CommIndex(group);
    if (ci >= 0) return ci;
  }
  int64_t best = -1;
  for (size_t i = 0; i < job.comms.size(); ++i) {
    const Comm& c = job.comms[i];
    if (c.MemberOfProc(proc) < 0) continue;
    if (best < 0 || c.rank_size > job.comms[best].rank_size) best = static_cast<int64_t>(i);
  }
  return best;
}

// The processes of a comm's ranks that have logs. When two processes claim one rank (an earlier
// run's logs in the same folder), the one whose logs start later is that rank now.
std::vector<int64_t> LoggedProcs(const Job& job, const Comm& c) {
  std::map<int64_t, int64_t> by_rank;
  std::vector<int64_t> out;
  for (const Member& m : c.members) {
    if (m.proc < 0) continue;
    if (m.rank < 0) {
      if (std::find(out.begin(), out.end(), m.proc) == out.end()) out.push_back(m.proc);
      continue;
    }
    auto [it, fresh] = by_rank.emplace(m.rank, m.proc);
    if (!fresh && job.processes[m.proc].first > job.processes[it->second].first) it->second = m.proc;
  }
  for (const auto& [rank, proc] : by_rank)
    if (std::find(out.begin(), out.end(), proc) == out.end()) out.push_back(proc);
  return out;
}

int64_t ConnectTimeoutOf(const Job& job, int64_t proc) {
  const auto& env = job.processes[proc].env;
  auto it = env.find("HCCL_CONNECT_TIMEOUT");
  if (it != env.end())
    if (auto v = ToInt(it->second)) return *v;
  return kDefaultConnectTimeoutS;
}

void AddEvidence(Ctx* cx, Finding* f, const std::vector<Report>& reports, const std::string& note) {
  for (const Report& r : reports) {
    if (f->evidence.size() >= kMaxEvidence) break;
    if (r.ev != nullptr) f->evidence.push_back(cx->Ev(*r.ev, note));
    else if (r.tf != nullptr) f->evidence.push_back(cx->EvLoc(r.tf->loc, note));
  }
}

// `kb`: a knowledge-base entry id, or a catalogue code (the entry is found from it).
// `cls`: empty takes the class of the fault's knowledge-base entry (diagnose.<fault>).
Finding Base(const std::string& fault, const std::string& cls, int score, Micros t, const std::string& kb) {
  Finding f;
  f.fault = fault;
  if (kb.starts_with("EI")) f.code = kb;
  else f.kb = kb;
  f.cls = cls;
  ClassFromKb(&f);
  f.score = score;
  f.time = t;
  f.confidence = "medium";
  return f;
}

// The process that waits on `tf`'s remote rank: -3 none named, -1 a rank without logs.
int64_t Target(const Comm& c, const TaskFailure& tf) {
  if (tf.para_local) return tf.proc;
  if (tf.para_remote < 0) return -3;
  int64_t mi = c.MemberOfRank(tf.para_remote);
  return mi >= 0 && c.members[mi].proc >= 0 ? c.members[mi].proc : -1;
}

void NotifyShape(Ctx* cx, const Comm& c, const std::vector<Report>& reports);

void NotifyComm(Ctx* cx, const Comm& c, std::vector<Report> reports) {
  const Job& job = cx->job;
  std::sort(reports.begin(), reports.end(), [](const Report& a, const Report& b) { return a.time < b.time; });
  std::set<int64_t> reported;
  for (const Report& r : reports) reported.insert(r.proc);
  const Micros first = reports.front().time, last = reports.back().time;
  auto ref = [&](int64_t proc, const std::string& role) { return cx->Ref(proc, role, c.group); };

  // 1. Ranks of the comm with logs that did not report.
  std::vector<int64_t> silent;
  for (int64_t p : LoggedProcs(job, c))
    if (!reported.count(p)) silent.push_back(p);
  if (!silent.empty()) {
    Finding f = Base("notify_silent_rank", "", 84, first, "EI0002");
    f.title = fmt::format("{} of {} rank(s) of {} reported a Notify Wait timeout; the others did not",
                          reported.size(), reported.size() + silent.size(), c.group);
    f.summary = "Every rank that waited timed out and said so; the ranks with logs that did not report never "
                "reached the wait: they are where the collective stalled (stuck or exited process).";
    FromKb(&f);
    for (int64_t p : silent) f.ranks.push_back(ref(p, "root cause"));
    AddEvidence(cx, &f, reports, "Notify Wait timeout");
    cx->out.push_back(std::move(f));
    return;
  }
  // 2. Reports spread over more than the exec timeout: the last one came late.
  int64_t exec_s = job.ExecTimeoutOf(reports.back().proc);
  if (reports.size() > 1 && exec_s > 0 && last - first > exec_s * kSec) {
    // A late rank in a collective is a process fault; the entry's class is link setup's.
    Finding f = Base("late_reporter", "process", 84, last, "EI0002");
    f.title = fmt::format("Notify Wait timeouts of {} spread over {}, more than HCCL_EXEC_TIMEOUT ({} s)", c.group,
                          FormatDuration(last - first), exec_s);
    f.summary = "The last rank to report timed out one timeout period after the others: it reached the collective "
                "late, and the others waited for it.";
    FromKb(&f, {2});
    f.ranks.push_back(ref(reports.back().proc, "root cause"));
    AddEvidence(cx, &f, {reports.back(), reports.front()}, "Notify Wait timeout");
    cx->out.push_back(std::move(f));
    return;
  }
  int cap = 100;
  // 3. Causal order beats the shape of the waits: a rank's own device-side error about one exec
  // timeout before everybody's timeouts is why they waited, whatever the wait graph looks like.
  for (int64_t p : LoggedProcs(job, c)) {
    const Process& pr = job.processes[p];
    if (pr.first_error == kNoTime || pr.first_error > first - exec_s * kSec / 2) continue;
    std::string_view text = pr.first_error_text;
    bool device = text.find("] RUNTIME(") != std::string_view::npos || text.find("] DRV(") != std::string_view::npos ||
                  text.starts_with("RUNTIME(") || text.find("[ERROR] RUNTIME") != std::string_view::npos ||
                  text.find("[ERROR] DRV") != std::string_view::npos;
    if (!device) continue;
    Finding f = Base("error_before_timeouts", "", 87, pr.first_error, "");
    f.title = fmt::format("A device-side error on one rank {} before the Notify Wait timeouts of {}",
                          FormatDuration(first - pr.first_error), c.group);
    f.summary = "This rank's own task failed first; the other ranks then waited for it until HCCL_EXEC_TIMEOUT and "
                "reported timeouts (whatever shape their waits take): the early error is the root.";
    FromKb(&f);
    f.ranks.push_back(ref(p, "root cause"));
    f.evidence.push_back(cx->EvLoc(pr.first_error_loc, "first error, before the timeouts"));
    AddEvidence(cx, &f, {reports.front()}, "the first Notify Wait timeout");
    cx->out.push_back(std::move(f));
    cap = 60;  // what follows describes the waits, not their cause
    break;
  }
  size_t shape = cx->out.size();
  NotifyShape(cx, c, reports);
  for (size_t i = shape; i < cx->out.size(); ++i) cx->out[i].score = std::min(cx->out[i].score, cap);
}

// Steps 4-6 of NotifyComm: what the reports themselves say about who is different.
void NotifyShape(Ctx* cx, const Comm& c, const std::vector<Report>& reports) {
  const Micros first = reports.front().time;
  auto ref = [&](int64_t proc, const std::string& role) { return cx->Ref(proc, role, c.group); };
  // 4. Different op indices: the lowest is behind.
  std::map<int64_t, std::vector<const Report*>> by_index;
  for (const Report& r : reports)
    if (r.tf->index >= 0) by_index[r.tf->index].push_back(&r);
  if (by_index.size() > 1) {
    const auto& [low, at] = *by_index.begin();
    Finding f = Base("index_mismatch", "", 88, first, "EI0002");
    f.title = fmt::format("Ranks of {} time out at different ops: {} rank(s) at op index {}, the others later", c.group,
                          at.size(), low);
    f.summary = fmt::format("The Notify Wait timeouts name op index {} on {} rank(s) and higher indices on the "
                            "others: those ranks are behind, the others went on to the next op and wait for them.",
                            low, at.size());
    FromKb(&f, {1});
    for (const Report* r : at) f.ranks.push_back(ref(r->proc, "root cause"));
    std::vector<Report> ev;
    for (const Report* r : at) ev.push_back(*r);
    AddEvidence(cx, &f, ev, "op index " + std::to_string(low));
    cx->out.push_back(std::move(f));
    return;
  }
  // 5. A minority op name in the tags.
  std::map<std::string, std::vector<const Report*>> by_op;
  for (const Report& r : reports)
    if (!r.tf->op.empty()) by_op[r.tf->op].push_back(&r);
  if (by_op.size() > 1) {
    auto minority = by_op.begin();
    for (auto it = by_op.begin(); it != by_op.end(); ++it)
      if (it->second.size() < minority->second.size()) minority = it;
    Finding f = Base("op_mismatch", "", 88, first, "EI0002");
    f.title = fmt::format("Ranks of {} wait in different collectives: {} rank(s) in {}", c.group,
                          minority->second.size(), minority->first);
    f.summary = fmt::format("At the same point the task tags name {} on {} rank(s) and another op on the others: "
                            "the minority issued a different collective.",
                            minority->first, minority->second.size());
    FromKb(&f, {3});
    for (const Report* r : minority->second) f.ranks.push_back(ref(r->proc, "root cause"));
    std::vector<Report> ev;
    for (const Report* r : minority->second) ev.push_back(*r);
    AddEvidence(cx, &f, ev, "tag " + minority->first);
    cx->out.push_back(std::move(f));
    return;
  }
  // 6. The wait graph.
  std::map<int64_t, const Report*> of;
  std::map<int64_t, int> waiters;
  for (const Report& r : reports) {
    of[r.proc] = &r;
    if (r.target >= 0 && r.target != r.proc) ++waiters[r.target];
  }
  for (const Report& r : reports) {
    if (!r.self || waiters[r.proc] == 0) continue;
    Finding f = Base("waits_own_stream", "", 88, r.time, "EI0002");
    f.title = fmt::format("Rank waits on its own second stream and {} rank(s) of {} wait on it", waiters[r.proc],
                          c.group);
    f.summary = "Its Notify Wait names remote rank 'local': its main stream waits for a task of its own other "
                "stream (compute, AICPU kernel, copy) that never finished, and the other ranks' waits end at it.";
    FromKb(&f);
    f.ranks.push_back(ref(r.proc, "root cause"));
    for (const Report& w : reports)
      if (w.target == r.proc && w.proc != r.proc) f.ranks.push_back(ref(w.proc, "waiting"));
    AddEvidence(cx, &f, {r}, "remote rank:[local]");
    cx->out.push_back(std::move(f));
    return;
  }
  std::vector<int64_t> path;
  int64_t at = reports.front().proc;
  while (at >= 0 && std::find(path.begin(), path.end(), at) == path.end() && of.count(at)) {
    path.push_back(at);
    at = of[at]->target;
  }
  if (at >= 0 && std::find(path.begin(), path.end(), at) != path.end()) {
    std::vector<int64_t> cycle(std::find(path.begin(), path.end(), at), path.end());
    if (cycle.size() < 2) return;
    Finding f = Base("wait_cycle", "", 72, first, "EI0002");
    f.confidence = "low";
    std::vector<int64_t> ranks;
    for (int64_t p : cycle) ranks.push_back(ref(p, "").rank);
    f.title = fmt::format("Notify Wait timeouts of {} form a cycle: ranks {}", c.group, RankList(ranks));
    f.summary = "Each rank of the cycle waits on the next and all timed out within the limit: a deadlock of the op "
                "schedule (ranks issuing ops or streams in different orders), no single rank is the root.";
    FromKb(&f);
    for (int64_t p : cycle) f.ranks.push_back(ref(p, "involved"));
    std::vector<Report> ev;
    for (int64_t p : cycle) ev.push_back(*of[p]);
    AddEvidence(cx, &f, ev, "waits on the next rank of the cycle");
    cx->out.push_back(std::move(f));
    return;
  }
  if (path.size() >= 2 && at == -1) {
    // The chain leaves the logs: the awaited rank has none.
    const Report& lastr = *of[path.back()];
    Finding f = Base("wait_chain_end", "", 80, first, "EI0002");
    f.title = fmt::format("Notify Wait timeouts of {} lead to rank {}, whose logs are missing", c.group,
                          lastr.tf->para_remote);
    f.summary = "The ranks wait on each other in a chain that ends at a rank without logs.";
    FromKb(&f);
    RankRef r;
    r.role = "root cause";
    r.group = c.group;
    r.rank = lastr.tf->para_remote;
    f.ranks.push_back(r);
    AddEvidence(cx, &f, {lastr}, "waits on a rank without logs");
    cx->out.push_back(std::move(f));
  }
}

void RuleNotifyReports(Ctx* cx) {
  const Job& job = cx->job;
  std::map<int64_t, std::map<int64_t, Report>> by_comm;  // comm → proc → report
  for (const TaskFailure& tf : job.failures) {
    bool notify = tf.task_type == "Notify Wait" || (tf.task_type.empty() && tf.has_para);
    if (!notify || tf.proc < 0) continue;
    int64_t ci = CommOf(job, tf.proc, tf.group);
    if (ci < 0) continue;
    const Comm& c = job.comms[ci];
    Report& r = by_comm[ci][tf.proc];
    int64_t target = Target(c, tf);
    if (r.tf == nullptr || tf.time < r.time) {
      bool keep_target = r.tf != nullptr && r.tf->tag == tf.tag && target == tf.proc && r.target >= -1;
      r.proc = tf.proc;
      r.time = tf.time;
      r.tf = &tf;
      if (!keep_target) {
        r.target = target;
        r.self = tf.para_local;
      }
    } else if (r.self && target != tf.proc && target >= -1 && r.tf->tag == tf.tag) {
      r.target = target;  // a numeric remote rank of the same op names the peer
      r.self = false;
    }
  }
  for (auto& [ci, procs] : by_comm) {
    std::vector<Report> reports;
    for (auto& [p, r] : procs) reports.push_back(r);
    NotifyComm(cx, job.comms[ci], std::move(reports));
  }
}

void RootInfoComm(Ctx* cx, const Comm& c, std::vector<Report> reports, const Event* connected,
                  int64_t root_proc) {
  const Job& job = cx->job;
  std::sort(reports.begin(), reports.end(), [](const Report& a, const Report& b) { return a.time < b.time; });
  std::set<int64_t> reported;
  for (const Report& r : reports) reported.insert(r.proc);
  auto ref = [&](int64_t proc, const std::string& role) { return cx->Ref(proc, role, c.group); };
  const Micros first = reports.front().time, last = reports.back().time;

  // 1. Ranks that neither have logs nor reached the root.
  if (connected != nullptr && c.rank_size > 0) {
    std::vector<int64_t> missing;
    for (int64_t k = 0; k < c.rank_size; ++k) {
      bool logged = c.MemberOfRank(k) >= 0 && c.members[c.MemberOfRank(k)].proc >= 0;
      bool conn = std::find(connected->ranks.begin(), connected->ranks.end(), k) != connected->ranks.end();
      if (!logged && !conn) missing.push_back(k);
    }
    if (!missing.empty() && missing.size() < static_cast<size_t>(c.rank_size)) {
      Finding f = Base("rank_never_connected", "", 90, connected->time, "hccl.root_info_detect_timeout");
      f.title = fmt::format("Rank(s) {} of {} never connected to the root rank and left no logs", RankList(missing),
                            c.group);
      f.summary = "The root rank listed the ranks that reached it during the root-info exchange; these did not, and "
                  "there are no logs of them: their processes never reached communicator init or died before it.";
      FromKb(&f);
      for (int64_t k : missing) {
        RankRef r;
        r.role = "root cause";
        r.group = c.group;
        r.rank = k;
        r.host = c.root_ip;
        f.ranks.push_back(r);
      }
      f.evidence.push_back(cx->Ev(*connected, "ranks connected to the root"));
      cx->out.push_back(std::move(f));
      return;
    }
  }
  // 2. Ranks with logs that did not report.
  std::vector<int64_t> silent;
  for (int64_t p : LoggedProcs(job, c))
    if (!reported.count(p) && p != root_proc) silent.push_back(p);
  if (!silent.empty()) {
    Finding f = Base("rootinfo_silent_rank", "", 88, first, "hccl.root_info_recv_failed");
    f.title = fmt::format("Root-info init of {} failed on {} rank(s); rank(s) with logs that did not fail are suspects",
                          c.group, reported.size());
    f.summary = "The ranks that reported failed to receive the root-info exchange; the ranks below are in the same "
                "communicator, have logs, and reported nothing: they stopped before the exchange.";
    FromKb(&f);
    for (int64_t p : silent) f.ranks.push_back(ref(p, "root cause"));
    AddEvidence(cx, &f, reports, "root-info receive failed");
    cx->out.push_back(std::move(f));
    return;
  }
  // 3. Reports spread over more than the connect timeout: the last came late.
  int64_t conn_s = ConnectTimeoutOf(job, reports.back().proc);
  if (reports.size() > 1 && last - first > conn_s * kSec) {
    Finding f = Base("late_reporter", "", 88, last, "hccl.root_info_recv_failed");
    f.title = fmt::format("Root-info init failures of {} spread over {}, more than HCCL_CONNECT_TIMEOUT ({} s)",
                          c.group, FormatDuration(last - first), conn_s);
    f.summary = "The last rank to fail reached communicator init one connect timeout after the first: it arrived "
                "late and the others gave up waiting.";
    FromKb(&f, {0});
    f.ranks.push_back(ref(reports.back().proc, "root cause"));
    AddEvidence(cx, &f, {reports.back(), reports.front()}, "root-info receive failed");
    cx->out.push_back(std::move(f));
    return;
  }
  // 4. Everybody failed within the limit: the root rank.
  Finding f = Base("rootinfo_root", "", 84, first, "hccl.root_info_recv_failed");
  std::string host = c.group.substr(0, c.group.find('%'));
  if (root_proc >= 0) {
    f.ranks.push_back(ref(root_proc, "root cause"));
  } else {
    RankRef r;
    r.role = "root cause";
    r.group = c.group;
    r.rank = 0;
    r.host = host;
    f.ranks.push_back(r);
  }
  f.title = fmt::format("All {} reporting rank(s) of {} failed to hear from the root rank (host {})", reports.size(),
                        c.group, host);
  f.summary = "Every rank that reported failed to receive the root-info exchange within the same period: the root "
              "rank's side is the suspect (its host's reachability, the root not accepting all connections in time, "
              "open-file or TCP backlog limits).";
  // The advice names the root's host: formatted here.
  f.advice = fmt::format("Check the root rank on {}: its logs, that its port is reachable from the other hosts, and "
                         "its open-file and somaxconn limits.",
                         host);
  AddEvidence(cx, &f, reports, "root-info receive failed");
  cx->out.push_back(std::move(f));
}

void RuleRootInfoReports(Ctx* cx) {
  const Job& job = cx->job;
  // The comm of each process's root-info failure: its "HcclCommInitRootInfo failed" line.
  std::map<int64_t, std::string> failed_group;
  std::map<std::string, int64_t> root_of;  // comm → process of its root rank
  for (const Event& e : job.events) {
    if (e.kind != EventKind::kRankInfo || e.proc < 0) continue;
    if (e.detail == "failed" && !e.group.empty()) failed_group.emplace(e.proc, e.group);
    if (e.name == "root") root_of.emplace(e.group, e.proc);
  }
  std::map<int64_t, std::map<int64_t, Report>> by_comm;
  std::map<int64_t, const Event*> connected;
  for (const Event& e : job.events) {
    if (e.proc < 0) continue;
    bool server = e.kind == EventKind::kConnectedRanks ||
                  (e.kind == EventKind::kTopoTimeout && e.detail == "server");
    if (e.kind != EventKind::kRootInfoFail && !server) continue;
    auto g = failed_group.find(e.proc);
    int64_t ci = CommOf(job, e.proc, g == failed_group.end() ? std::string() : g->second);
    if (ci < 0) continue;
    if (server) {
      root_of.emplace(job.comms[ci].group, e.proc);
      if (e.kind == EventKind::kConnectedRanks && !connected.count(ci)) connected[ci] = &e;
      continue;
    }
    Report& r = by_comm[ci][e.proc];
    if (r.ev == nullptr || e.time < r.time) {
      r.proc = e.proc;
      r.time = e.time;
      r.ev = &e;
    }
  }
  for (auto& [ci, procs] : by_comm) {
    const Comm& c = job.comms[ci];
    auto ro = root_of.find(c.group);
    int64_t root_proc = ro == root_of.end() ? -1 : ro->second;
    std::vector<Report> reports;
    for (auto& [p, r] : procs)
      if (p != root_proc) reports.push_back(r);
    if (reports.empty()) continue;
    auto cn = connected.find(ci);
    RootInfoComm(cx, c, std::move(reports), cn == connected.end() ? nullptr : cn->second, root_proc);
  }
}

}  // namespace

void RuleTimeoutReports(Ctx* cx) {
  RuleNotifyReports(cx);
  RuleRootInfoReports(cx);
}

}  // namespace vigil::diagnose::rules
