// Rule 5: SDMA errors (EI0012): a communicator destroyed before its peer synchronised, a buffer
// too small for the op, else the link (destroy_before_sync, buffer_too_small, sdma_link).
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "diagnose/line_parser.h"

namespace vigil::diagnose::rules {

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
      FromKb(&f);
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
      FromKb(&f);
      f.advice += " " + CatalogueAdvice("EI0012");
      f.confidence = user_buffer ? "high" : "medium";
      f.score = user_buffer ? 88 : 72;
    } else {
      f.fault = "sdma_link";
      f.title = fmt::format("SDMA copy fault with a link error nearby (pid {})", p.pid);
      f.summary = "The SDMA error comes with link errors (error CQE / heartbeat loss) within two minutes: a "
                  "link fault between the devices is the likely cause.";
      FromKb(&f);
      f.advice += " " + CatalogueAdvice("EI0012");
      f.confidence = "medium";
      f.score = 70;
    }
    if (ei != nullptr) {
      f.facts.push_back({"remote_rank", std::to_string(ei->remote_rank)});
      f.facts.push_back({"link_type", ei->link});
    }
    cx->out.push_back(std::move(f));
  }
}

}  // namespace vigil::diagnose::rules
