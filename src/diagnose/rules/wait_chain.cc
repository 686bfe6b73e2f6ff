// Waiting chains across ranks at link setup: each rank that failed to build a link names the peer
// it waited for (a link-table row's dest IP, resolved by device NIC IP or by vNIC IP on the same
// node; "connected p2p timeout ... remote physic id:N", device N of the same node; "Transport
// init error ... remoteIpAddr[S/N]", device N of server S; an AICPU NOTIFY WAIT's remoteRank in
// its group). Walked from the earliest-failing rank, the chain ends at the root: a rank that waits
// on nobody (it never got that far), every rank of a cycle, or the last rank in the logs when the
// next one has none.
// When every rank with logs failed link setup but over more than HCCL_CONNECT_TIMEOUT, the last
// one came late and is named instead.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "diagnose/rules/rule_context.h"

namespace vigil::diagnose::rules {
namespace {

struct Edge {
  int64_t to = -1;      // process, or -1 when the peer has no logs
  std::string unknown;  // the peer as printed, when it has no logs
  const Event* ev = nullptr;
};

int64_t ProcByDeviceIp(const Job& job, const std::string& ip, const std::string& node) {
  if (ip.empty()) return -1;
  for (size_t i = 0; i < job.processes.size(); ++i)
    if (job.processes[i].device_ip == ip) return static_cast<int64_t>(i);
  for (size_t i = 0; i < job.processes.size(); ++i)
    if (job.processes[i].vnic_ip == ip && job.processes[i].node == node) return static_cast<int64_t>(i);
  return -1;
}

int64_t ProcByDevice(const Job& job, const std::string& node, const std::string& host, int64_t dev) {
  if (dev < 0) return -1;
  for (size_t i = 0; i < job.processes.size(); ++i) {
    const Process& p = job.processes[i];
    bool here = !host.empty() ? p.host_ip == host : p.node == node;
    if (here && (p.phy_device == dev || (p.phy_device < 0 && p.device == dev))) return static_cast<int64_t>(i);
  }
  return -1;
}

struct Chain {
  std::vector<int64_t> path;
  bool cycle = false;            // path's tail loops back to cycle_from
  size_t cycle_from = 0;
  std::string unknown;           // the chain left the logs at this peer
  std::vector<const Event*> evs;
};

Chain Walk(const std::map<int64_t, std::vector<Edge>>& edges, int64_t start) {
  Chain ch;
  int64_t at = start;
  while (true) {
    auto seen = std::find(ch.path.begin(), ch.path.end(), at);
    if (seen != ch.path.end()) {
      ch.cycle = true;
      ch.cycle_from = static_cast<size_t>(seen - ch.path.begin());
      return ch;
    }
    ch.path.push_back(at);
    auto it = edges.find(at);
    if (it == edges.end() || it->second.empty()) return ch;
    const Edge* next = nullptr;
    for (const Edge& e : it->second)
      if (e.to >= 0 && e.to != at) {
        next = &e;
        break;
      }
    if (next == nullptr) {
      ch.unknown = it->second.front().unknown;
      ch.evs.push_back(it->second.front().ev);
      return ch;
    }
    ch.evs.push_back(next->ev);
    at = next->to;
  }
}

void Report(Ctx* cx, const std::map<int64_t, std::vector<Edge>>& edges, const std::string& what, const char* code,
            int score) {
  const Job& job = cx->job;
  if (edges.empty()) return;
  // Start at the rank that failed first.
  int64_t start = -1;
  Micros best = kNoTime;
  for (const auto& [proc, es] : edges) {
    Micros t = job.processes[proc].first_error;
    for (const Edge& e : es)
      if (t == kNoTime || (e.ev->time != kNoTime && e.ev->time < t)) t = e.ev->time;
    if (start < 0 || (t != kNoTime && (best == kNoTime || t < best))) {
      start = proc;
      best = t;
    }
  }
  Chain ch = Walk(edges, start);
  auto ref = [&](int64_t proc, const std::string& role) {
    std::string group;
    int64_t rank = RankInLargestComm(job, proc, &group);
    return cx->Ref(proc, role, group, rank);
  };
  auto name = [&](int64_t proc) { return DescribeRank(ref(proc, "")); };
  std::string chain_text;
  for (int64_t p : ch.path) chain_text += (chain_text.empty() ? "" : " -> ") + name(p);
  Finding f;
  f.fault = "wait_chain";
  f.code = code;
  f.confidence = "medium";
  f.score = score;
  f.time = best;
  FromKb(&f);
  if (ch.cycle) {
    if (ch.path.size() - ch.cycle_from < 2) return;
    chain_text += " -> " + name(ch.path[ch.cycle_from]);
    f.title = fmt::format("{} wait on each other in a cycle: {}", what, chain_text);
    f.summary = "Each rank of the cycle names the next as the peer it could not link to: they wait on each other, "
                "typically a configuration or network problem between them.";
    for (size_t i = ch.cycle_from; i < ch.path.size(); ++i) f.ranks.push_back(ref(ch.path[i], "root cause"));
  } else if (!ch.unknown.empty()) {
    chain_text += " -> " + ch.unknown;
    f.title = fmt::format("{} lead to {}, which has no logs here: {}", what, ch.unknown, chain_text);
    f.summary = fmt::format("The last rank in these logs waits on {}; collect the logs of the host that owns it. "
                            "Until then the last rank that can be seen is named.",
                            ch.unknown);
    f.ranks.push_back(ref(ch.path.back(), "root cause"));
  } else {
    if (ch.path.size() < 2) return;
    f.title = fmt::format("{} end at a rank that waits on nobody: {}", what, chain_text);
    f.summary = "Each rank names the next as the peer it could not link to; the last one did not fail this way "
                "itself: it never reached the link setup the others waited in (stuck before it, or exited).";
    f.ranks.push_back(ref(ch.path.back(), "root cause"));
    f.confidence = "high";
  }
  for (size_t i = 0; i + 1 < ch.path.size() && !ch.cycle; ++i) f.ranks.push_back(ref(ch.path[i], "waiting"));
  for (const Event* e : ch.evs)
    if (e != nullptr && f.evidence.size() < kMaxEvidence) f.evidence.push_back(cx->Ev(*e, "waits for its peer"));
  f.facts.push_back({"wait_chain", chain_text});
  cx->out.push_back(std::move(f));
}

// Every rank of the comm that has logs failed link setup, but the first and the last failure are
// more than HCCL_CONNECT_TIMEOUT apart: the last one reached link setup late (the others gave up
// waiting for it), whatever the chain says.
bool LateSocketReporter(Ctx* cx, const std::map<int64_t, std::vector<Edge>>& socket) {
  const Job& job = cx->job;
  if (socket.size() < 2) return false;
  std::string group;
  size_t best = 0;
  for (const auto& [proc, es] : socket) {
    std::string g;
    RankInLargestComm(job, proc, &g);
    int64_t ci = job.CommIndex(g);
    if (ci >= 0 && job.comms[ci].members.size() > best) {
      best = job.comms[ci].members.size();
      group = g;
    }
  }
  int64_t ci = job.CommIndex(group);
  if (ci < 0) return false;
  std::map<int64_t, const Event*> first;  // proc → its first link failure
  for (const Member& m : job.comms[ci].members) {
    if (m.proc < 0) continue;
    auto it = socket.find(m.proc);
    if (it == socket.end()) return false;  // a rank with logs stayed silent: the chain decides
    for (const Edge& e : it->second)
      if (e.ev->time != kNoTime && (!first.count(m.proc) || e.ev->time < first[m.proc]->time)) first[m.proc] = e.ev;
  }
  if (first.size() < 2) return false;
  const Event* lo = nullptr;
  const Event* hi = nullptr;
  for (const auto& [proc, e] : first) {
    if (lo == nullptr || e->time < lo->time) lo = e;
    if (hi == nullptr || e->time > hi->time) hi = e;
  }
  int64_t limit = 120;  // HCCL_CONNECT_TIMEOUT's default
  const auto& env = job.processes[hi->proc].env;
  if (auto it = env.find("HCCL_CONNECT_TIMEOUT"); it != env.end()) limit = ToInt(it->second).value_or(limit);
  if (hi->time - lo->time <= limit * kSec) return false;
  std::string g;
  int64_t rank = RankInLargestComm(job, hi->proc, &g);
  Finding f;
  f.fault = "late_reporter";
  f.code = "EI0006";
  f.confidence = "medium";
  f.score = 89;
  f.time = hi->time;
  f.title = fmt::format("Link setup failures of {} spread over {}, more than HCCL_CONNECT_TIMEOUT ({} s)", group,
                        FormatDuration(hi->time - lo->time), limit);
  f.summary = "Every rank with logs failed to set up its links, the last one a connect timeout after the first: it "
              "reached link setup late and the others had given up waiting for it.";
  FromKb(&f, {1});
  f.ranks.push_back(cx->Ref(hi->proc, "root cause", g, rank));
  f.evidence.push_back(cx->Ev(*hi, "the last link failure"));
  f.evidence.push_back(cx->Ev(*lo, "the first link failure"));
  cx->out.push_back(std::move(f));
  return true;
}

void SocketChains(Ctx* cx) {
  const Job& job = cx->job;
  std::map<int64_t, std::vector<Edge>> socket, transport;
  for (const Event& e : job.events) {
    if (e.proc < 0) continue;
    const Process& p = job.processes[e.proc];
    if (e.kind == EventKind::kWaitPeer && (e.detail == "socket" || e.detail == "p2p")) {
      Edge ed;
      ed.ev = &e;
      if (e.detail == "socket") {
        ed.to = ProcByDeviceIp(job, e.remote_ip, p.node);
        ed.unknown = e.remote_ip;
      } else {
        ed.to = ProcByDevice(job, p.node, {}, ToInt(e.remote_device).value_or(-1));
        ed.unknown = "device " + e.remote_device + " of " + p.node;
      }
      if (ed.to == e.proc) continue;
      socket[e.proc].push_back(ed);
    } else if (e.kind == EventKind::kTransportError && !e.remote_device.empty()) {
      if (!transport[e.proc].empty()) continue;  // the first such line only
      Edge ed;
      ed.ev = &e;
      ed.to = ProcByDevice(job, p.node, e.remote_server, ToInt(e.remote_device).value_or(-1));
      ed.unknown = e.remote_server + "/" + e.remote_device;
      if (ed.to == e.proc) continue;
      transport[e.proc].push_back(ed);
    }
  }
  // Known peers first, in the order printed.
  for (auto* m : {&socket, &transport})
    for (auto& [proc, es] : *m)
      std::stable_sort(es.begin(), es.end(), [](const Edge& a, const Edge& b) { return a.to >= 0 && b.to < 0; });
  Report(cx, transport, "Transport init errors", "EI0009", 89);
  if (!LateSocketReporter(cx, socket)) Report(cx, socket, "Link setup timeouts", "EI0006", 89);
}

void AicpuChains(Ctx* cx) {
  const Job& job = cx->job;
  for (const TaskFailure& tf : job.failures)
    if (tf.has_para) return;  // the host plog names the peers itself
  std::map<int64_t, std::vector<Edge>> edges;
  std::map<int64_t, const Event*> pending;  // proc → its last NOTIFY WAIT line
  for (const Event& e : job.events) {
    if (e.kind != EventKind::kWaitPeer || e.proc < 0) continue;
    if (e.detail == "aicpu") {
      pending[e.proc] = e.remote_rank >= 0 ? &e : nullptr;
      continue;
    }
    if (e.detail != "aicpu_op") continue;
    auto it = pending.find(e.proc);
    if (it == pending.end() || it->second == nullptr) continue;
    const Event& w = *it->second;
    pending.erase(it);
    int64_t ci = job.CommIndex(e.group);
    if (ci < 0 || !edges[e.proc].empty()) continue;
    const Comm& c = job.comms[ci];
    int64_t mi = c.MemberOfRank(w.remote_rank);
    Edge ed;
    ed.ev = &w;
    ed.to = mi >= 0 ? c.members[mi].proc : -1;
    ed.unknown = fmt::format("rank {} of {}", w.remote_rank, e.group);
    if (ed.to != e.proc) edges[e.proc].push_back(ed);
  }
  for (auto it = edges.begin(); it != edges.end();)
    it = it->second.empty() ? edges.erase(it) : std::next(it);
  if (edges.empty()) return;
  size_t before = cx->out.size();
  Report(cx, edges, "AICPU Notify Wait timeouts", "", 86);
  for (size_t i = before; i < cx->out.size(); ++i) {
    Finding& f = cx->out[i];
    f.fault = "aicpu_wait_chain";
    f.cls.clear();  // Report classed it as a link-setup chain
    f.kb = "hccl.aicpu_notify_wait_failed";
    FromKb(&f);
  }
}

}  // namespace

void RuleWaitChain(Ctx* cx) {
  SocketChains(cx);
  AicpuChains(cx);
}

}  // namespace vigil::diagnose::rules
