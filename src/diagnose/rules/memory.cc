// Rule 6: out of memory: device memory for the queue pairs (EI0011, qp_memory) against the CCL
// buffer (buffer_oom), one finding per process and kind.
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

namespace vigil::diagnose::rules {

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
    // The process's communicator rank: an allocation that fails in init comes after its
    // CommInit entry line, and a process of one communicator has one rank to name.
    std::string group;
    int comms_of_proc = 0;
    for (const Comm& c : job.comms) {
      if (c.MemberOfProc(e.proc) < 0) continue;
      group = c.group;
      ++comms_of_proc;
    }
    f.ranks.push_back(cx->Ref(e.proc, "root cause", comms_of_proc == 1 ? group : std::string()));
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
      FromKb(&f);
      f.advice += " " + CatalogueAdvice("EI0011");
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
      FromKb(&f);
      f.advice += " " + CatalogueAdvice("EI9001");
      if (b != p.env.end()) f.evidence.push_back(cx->EvLoc(p.env_loc.at("HCCL_BUFFSIZE"), "buffer size in force"));
    }
    f.confidence = "high";
    f.score = 90;
    cx->out.push_back(std::move(f));
  }
}

}  // namespace vigil::diagnose::rules
