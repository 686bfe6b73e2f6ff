// Rule 8: link establishment: connect and topology timeouts with the ranks that never came
// (EI0006, EI0015), a port already in use (EI0019, EI0020), HCCL's op check between peers, and
// transport errors.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <set>

namespace vigil::diagnose::rules {

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
    // A bind without a port (a client's source address, "client bind fail! IP:..."): the
    // address is what could not be bound.
    f.title = port < 0 && !ip.empty()
                  ? fmt::format("Address {} could not be bound", ip)
                  : fmt::format("Listen port {} could not be bound{}",
                                port >= 0 ? std::to_string(port) : "?",
                                ip.empty() ? "" : " on " + ip);
    f.summary =
        port < 0 && !ip.empty()
            ? fmt::format("The process could not bind a socket to {}: the address is not one of "
                          "this host's (a NIC not configured, or another host's address named).",
                          ip)
            : fmt::format("The process could not listen on {}:{}: the port is taken (often a "
                          "leftover process of an earlier run, or two jobs on one host) or the IP "
                          "is not local.",
                          ip.empty() ? "?" : ip, port >= 0 ? std::to_string(port) : "?");
    // HCCL's "socket type[0]" and "[1]" are the device NIC's ports (the parameter plane; 16666
    // by default), "[2]" the host NIC's: two processes on one device both bind the device's port.
    bool device_port = false;
    for (const Event* b : binds)
      device_port = device_port || b->text.find("socket type[0]") != std::string::npos ||
                    b->text.find("socket type[1]") != std::string::npos;
    if (device_port) {
      f.summary += " The port is on the device's NIC: another process on the same device holds it.";
      FromKb(&f, {1});  // the knowledge base's advice for a device port
    } else {
      FromKb(&f);
      f.advice += " " + CatalogueAdvice("EI0019");
    }
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
    // The root lists the ranks that did connect ("connected rankinfo[LINE 0]: [..],[..]"): the
    // gaps below the highest one (or the communicator's size, when known) never came.
    if (ranks.empty()) {
      std::set<int64_t> came;
      int64_t size = -1;
      for (const Event& e : job.events) {
        if (e.kind != EventKind::kConnectedRanks) continue;
        came.insert(e.ranks.begin(), e.ranks.end());
        for (const Comm& c : job.comms)
          if (c.MemberOfProc(e.proc) >= 0 && c.rank_size > 0) size = c.rank_size;
      }
      if (!came.empty()) {
        const int64_t top = size > 0 ? size : *came.rbegin() + 1;
        for (int64_t r = 0; r < top && r < 65536; ++r)
          if (!came.count(r)) ranks.insert(r);
      }
    }
    // Without a list of the missing: the ranks the failed links lead to ("Transport init error
    // ... rank[11] ... dst_rank[14]") but the reporters' own ranks.
    if (ranks.empty()) {
      std::set<int64_t> own, dest;
      for (const Event& e : job.events) {
        if (e.code != "EI0009" || e.remote_rank < 0) continue;
        if (e.rank >= 0) own.insert(e.rank);
        dest.insert(e.remote_rank);
      }
      for (int64_t r : dest)
        if (!own.count(r)) ranks.insert(r);
    }
    std::vector<int64_t> rv(ranks.begin(), ranks.end());
    // The code the verdict cites: EI0015 (the root's rank-table detection) when that is what the
    // ranks printed and no socket timeout (EI0006) is among the reports.
    // The topology detection of root-info init (the agents report to the root: its timeouts and
    // the ranks it lists as not connected) is EI0015; a socket timeout of link setup is EI0006.
    bool socket_timeout = false, detect_timeout = !missing.empty();
    std::set<int64_t> reporters;
    for (const Event* t : timeouts) {
      socket_timeout = socket_timeout || t->kind == EventKind::kLinkTimeout || t->code == "EI0006";
      detect_timeout = detect_timeout || t->kind == EventKind::kTopoTimeout || t->code == "EI0015";
      reporters.insert(t->proc);
    }
    for (const Event* m : missing) reporters.insert(m->proc);
    const bool detect = detect_timeout && !socket_timeout;
    const char* code = detect ? "EI0015" : "EI0006";
    // An agent that could not reach the root names it ("connect server[IP : port] failed").
    const Event* unreached = nullptr;
    for (const Event& e : job.events)
      if (e.kb == "hccl.root_info_detect_timeout" && !e.remote_ip.empty()) {
        unreached = &e;
        break;
      }
    Finding f;
    f.fault = detect ? "rank_detect_timeout" : "link_timeout";
    f.code = code;
    if (detect) {
      if (!rv.empty()) {
        f.title = fmt::format("Communicator creation timed out: rank(s) {} never reported to "
                              "the root", RankList(rv));
      } else if (unreached != nullptr) {
        f.title = fmt::format("Communicator creation timed out: the root at {}:{} could not be "
                              "reached", unreached->remote_ip, unreached->port);
      } else {
        f.title = "Communicator creation timed out collecting the ranks at the root";
      }
    } else {
      f.title = rv.empty() ? std::string("Link establishment timed out")
                           : fmt::format("Link establishment timed out: rank(s) {} never connected",
                                         RankList(rv));
    }
    std::vector<int64_t> wv(waited.begin(), waited.end());
    f.summary = fmt::format(
        "{} process(es) hit a connect timeout{}{}. Missing ranks did not reach communicator init / "
        "link setup within HCCL_CONNECT_TIMEOUT (crashed, started late, or cannot reach the peer).",
        reporters.size(), rv.empty() ? "" : fmt::format("; missing rank(s): {}", RankList(rv)),
        wv.empty() ? "" : fmt::format("; rank(s) named by the socket timeout: {}", RankList(wv)));
    FromKb(&f);
    f.advice += " " + CatalogueAdvice(code);
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
    if (detect && unreached != nullptr)
      f.evidence.push_back(cx->Ev(*unreached, "root not reached"));
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
    ClassFromKb(&f);
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
    ClassFromKb(&f);
    f.advice = CatalogueAdvice("EI0009");
    f.confidence = "medium";
    f.score = 60;
    f.time = e.time;
    f.ranks.push_back(cx->Ref(e.proc, "reporter"));
    f.evidence.push_back(cx->Ev(e, "transport error"));
    cx->out.push_back(std::move(f));
  }
}

}  // namespace vigil::diagnose::rules
