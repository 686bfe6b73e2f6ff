// Internal to the rules (not part of rules.h): the context each rule reads the job from and adds
// its findings to, the helpers more than one family uses, and the rules ApplyRules runs in order.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/error_codes.h"
#include "diagnose/rules.h"

namespace vigil::diagnose::rules {

inline constexpr Micros kSec = 1000000;
inline constexpr size_t kMaxEvidence = 10;

// Each process's rank as its lines say it (a launcher prefix counts twice a rank a message
// names), by vote: process index -> rank.
std::map<int64_t, int64_t> ProcRanks(const Job& job);

class Ctx {
 public:
  explicit Ctx(const Job& job) : job(job), proc_ranks(ProcRanks(job)) {}
  const Job& job;
  const std::map<int64_t, int64_t> proc_ranks;
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
      if (r.rank < 0 && group.empty()) {
        auto it = proc_ranks.find(proc);
        if (it != proc_ranks.end()) r.rank = it->second;
      }
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
    return Evidence{loc, job.FilePath(loc), ReadLineAt(job.OpenPath(loc), loc.offset), note};
  }
};

// The catalogue order of heartbeat statuses: 0 ERROR CQE, 1 STUCK, 2 LOST, 3 INCONSISTENT, 4 other.
int StatusPriority(const std::string& s);

// What the catalogue says to do for a code: Vigil's own advice text, else HCCL's solution when
// it says something ("N/A" is HCCL's "nothing to say").
std::string_view AdviceText(const ErrorCodeInfo& info);
// "[EI0012 title] advice" for a catalogue code, empty when the catalogue has nothing to say.
std::string CatalogueAdvice(const std::string& code);

// The knowledge base's entry for a finding's fault ("diagnose.<fault>", data/kb/diagnose*.json):
// ClassFromKb sets the finding's class (unless the rule set one) and, when its code has no entry of
// its own, its kb id; FromKb also sets its advice to the entry's actions at those indexes, joined
// by spaces (a rule appends what it adds after). Call them once f->fault and f->code are set.
void ClassFromKb(Finding* f);
void FromKb(Finding* f, std::initializer_list<size_t> actions = {0});

// "0, 3, 5".
std::string RankList(const std::vector<int64_t>& ranks);

// A process's rank in the largest communicator it is in (its group in *group), or -1.
int64_t RankInLargestComm(const Job& job, int64_t proc, std::string* group);

// The shift from a comm's Entry-line ordinals to its flight-recorder op indices (timing.cc).
int64_t EntryShift(const Comm& c);

// The rules, in the order ApplyRules runs them; each adds its findings to cx->out.
void RuleHeartbeat(Ctx* cx);    // heartbeat.cc
void RuleLateEntry(Ctx* cx);    // timing.cc
void RuleLateInit(Ctx* cx);     // timing.cc
void RuleComms(Ctx* cx);        // comms.cc
void RuleSequences(Ctx* cx);    // sequences.cc
void RuleStreams(Ctx* cx);      // streams.cc
void RuleSdma(Ctx* cx);         // sdma.cc
void RuleMemory(Ctx* cx);       // memory.cc
void RuleCqe(Ctx* cx);          // cqe.cc
void RuleLink(Ctx* cx);         // link.cc
void RuleConsistency(Ctx* cx);  // consistency.cc
void RuleWaitChain(Ctx* cx);        // wait_chain.cc
void RuleTimeoutReports(Ctx* cx);   // timeout_reports.cc
void RuleOther(Ctx* cx);        // other.cc
void RuleUnexplainedError(Ctx* cx);  // other.cc: when nothing else was found
void RuleRecovery(Ctx* cx);     // recovery.cc (op retry)
void RuleShrink(Ctx* cx);       // shrink.cc

}  // namespace vigil::diagnose::rules
