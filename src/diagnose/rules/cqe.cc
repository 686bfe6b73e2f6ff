// Rule 7: error CQEs (EI0013 and RoCE CQE lines): the two ends of each failed link, and whether
// the peer exited first (its logs end, it destroyed its comm, the heartbeat lost it) or the
// network between them is suspect.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace vigil::diagnose::rules {

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
    ClassFromKb(&f);
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
    std::string local_group;
    int64_t local_rank = RankInLargestComm(job, e.proc, &local_group);
    RankRef local = cx->Ref(e.proc, "local end", local_group, local_rank);
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
    FromKb(&f, {exited.empty() ? size_t{1} : size_t{2}});
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

}  // namespace vigil::diagnose::rules
