#include "diagnose/rules/evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "common/knowledge_base.h"
#include "diagnose/rules/rule_context.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

constexpr size_t kMaxEvidence = 10;

// One recognised line: its entry, who printed it, whom it names.
struct Obs {
  const Event* ev = nullptr;
  const kb::Entry* entry = nullptr;
  int64_t rank = -1;  // the rank that printed it
  int64_t peer = -1;  // the rank it names as the other end
};

// A catch-all code with nothing specific in its line ("EI9999: Inner Error!"): beside timeouts
// it says less than they do.
// A return number of class software ("model execute failed") says as little.
bool IsCatchAllOnly(const Obs& o) {
  if (o.entry->id.starts_with("hccl_result.")) return false;
  return (o.entry->code.size() == 6 && o.entry->code.substr(2) == "9999") || o.entry->cls == "software";
}

// Which class is the deeper cause when times do not tell (lower first).
int Depth(const std::string& cls) {
  static const char* order[] = {"device", "network", "memory", "environment", "config", "process",
                                "consistency", "software", "connection", "timeout"};
  for (size_t i = 0; i < std::size(order); ++i)
    if (cls == order[i]) return static_cast<int>(i);
  return static_cast<int>(std::size(order));
}

bool IsCause(const kb::Entry& e) { return e.role == "cause" && e.cls != "timeout"; }
// CANN's catch-all codes ("EE9999: Inner Error!") and result codes say that something failed,
// not what: they rank after every specific entry.
bool IsWeak(const kb::Entry& e) {
  bool number = !e.code.empty() && std::all_of(e.code.begin(), e.code.end(), [](char c) { return c >= '0' && c <= '9'; });
  // Catch-all codes: HCCL's and CANN's EI9999, EZ9999 ..., torch_npu's ERR99999 (its exit hook
  // saw an exception that is not its own).
  return e.id.starts_with("hccl_result.") || (e.code.size() == 6 && e.code.substr(2) == "9999") ||
         (e.code.size() == 8 && e.code.starts_with("ERR") && e.code.ends_with("99999")) ||
         (number && e.role == "either");
}
bool IsSymptom(const kb::Entry& e) { return e.role == "symptom" || e.cls == "timeout"; }

// A line's entry made precise by the result code it carries: "HCCL function error: ... error
// code is 5" is HcclResult 5 (hccl_result.5), "NPU function error: ..., error code is 507048"
// the runtime's 507048.
const kb::Entry* Refine(const kb::KnowledgeBase& base, const kb::Entry* e, const Event& ev) {
  // Only a wrapper's code is refined ("HCCL function error", a symptom or a software catch-all);
  // a specific entry's return value ("ra rdma init failed ... return[19]") adds nothing to it.
  if (ev.ret < 0 || (e->role != "symptom" && e->cls != "software")) return e;
  const kb::Entry* r = ev.ret < 1000 ? base.Find("hccl_result." + std::to_string(ev.ret))
                                     : base.Find(std::to_string(ev.ret));
  // A specific symptom's own timeout code ("links establish failed ... ret[9]") says less than
  // the line: only a catch-all's code, or a code that names a cause, replaces it.
  if (r != nullptr && IsSymptom(*r) && e->cls != "software") return e;
  return r != nullptr ? r : e;
}

// Whether entry `to` is a consequence of `from` in the knowledge base's relations (from's
// leads_to, to's symptom_of), followed a few steps.
bool Explains(const kb::KnowledgeBase& base, const std::string& from, const std::string& to) {
  std::set<std::string> seen = {from};
  std::vector<std::string> frontier = {from};
  for (int depth = 0; depth < 4 && !frontier.empty(); ++depth) {
    std::vector<std::string> next;
    for (const std::string& id : frontier) {
      std::vector<std::string> out;
      if (const kb::Entry* e = base.Find(id)) out = e->leads_to;
      for (const kb::Entry& e : base.entries())
        for (const std::string& s : e.symptom_of)
          if (s == id) out.push_back(e.id);
      for (const std::string& o : out) {
        if (o == to) return true;
        if (seen.insert(o).second) next.push_back(o);
      }
    }
    frontier = std::move(next);
  }
  return false;
}

int64_t ReporterRank(const Job& job, const Event& e, const std::map<int64_t, int64_t>& proc_rank) {
  if (e.launcher_rank >= 0) return e.launcher_rank;
  if (e.rank >= 0) return e.rank;
  if (e.pid >= 0 || e.proc >= 0) {
    auto it = proc_rank.find(e.proc);
    if (it != proc_rank.end()) return it->second;
  }
  for (const Comm& c : job.comms) {
    int64_t mi = c.MemberOfProc(e.proc);
    if (mi >= 0 && e.proc >= 0) return c.members[mi].rank;
  }
  return -1;
}

std::string RankText(int64_t r) { return r >= 0 ? fmt::format("rank {}", r) : std::string("a rank"); }

std::string Where(const Job& job, const Event& e) {
  return fmt::format("{}:{}", job.FilePath(e.loc), e.loc.line);
}

std::string Label(const kb::Entry& e) {
  std::string s = e.title.empty() ? e.id : e.title;
  if (!e.code.empty() && s.find(e.code) == std::string::npos) s += " (" + e.code + ")";
  return s;
}

std::string JoinFirst(const std::vector<std::string>& v, size_t n) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < n; ++i) s += (s.empty() ? "" : " ") + v[i];
  return s;
}

// A runtime return code printed by a framework ("error code is 107000"): the runtime's own line
// of the same failure (EE1001 ...) says more.
bool IsReturnCode(const kb::Entry& e) {
  return !e.code.empty() && std::all_of(e.code.begin(), e.code.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool Earlier(const Obs& a, const Obs& b) {
  bool ta = a.ev->time != kNoTime, tb = b.ev->time != kNoTime;
  if (ta && tb && a.ev->time != b.ev->time) return a.ev->time < b.ev->time;
  int da = Depth(a.entry->cls), db = Depth(b.entry->cls);
  if (da != db) return da < db;
  bool ra = IsReturnCode(*a.entry), rb = IsReturnCode(*b.entry);
  if (ra != rb) return rb;
  if (a.ev->loc.file != b.ev->loc.file) return a.ev->loc.file < b.ev->loc.file;
  return a.ev->loc.line < b.ev->loc.line;
}

RankRef Ref(const Job& job, const Event& e, int64_t rank, const std::string& role) {
  RankRef r;
  r.role = role;
  r.rank = rank;
  r.pid = e.pid;
  r.device = e.device;
  r.host = e.ip;
  if (!e.named_kb.empty()) {
    // The line's pid, ip and device are the faulty rank's, not its printer's.
    if (!r.host.empty() && r.device >= 0) r.uid = fmt::format("{}/{}", r.host, r.device);
    return r;
  }
  if (e.proc >= 0 && static_cast<size_t>(e.proc) < job.processes.size()) {
    const Process& p = job.processes[e.proc];
    r.node = p.node;
    if (r.host.empty()) r.host = p.host_ip;
    if (r.device < 0) r.device = p.device;
    r.uid = p.uid;
  }
  return r;
}

// Lines this close in one file, of one process, are one report.
constexpr uint64_t kBlockLines = 20;

// The device and process a report's other lines name when its deciding line does not ("(PID:553,
// Device:0, RankID:-1)" above an EL0004, "TsdOpen failed. devId=2" under an E39005): the one
// device, and the one process, the lines around it in its file name (of its process when it
// names one); none where they name two.
void LendBlockIdentity(const Job& job, const Event& at, RankRef* r) {
  int64_t device = -1, pid = -1;
  bool devices = true, pids = true;
  for (const Event& e : job.events) {
    if (e.loc.file != at.loc.file || !e.named_kb.empty()) continue;
    const uint64_t a = e.loc.line, b = at.loc.line;
    if ((a > b ? a - b : b - a) > kBlockLines) continue;
    if (e.pid >= 0 && at.pid >= 0 && e.pid != at.pid) continue;
    if (e.device >= 0) {
      devices = devices && (device < 0 || device == e.device);
      device = e.device;
    }
    if (e.pid >= 0) {
      pids = pids && (pid < 0 || pid == e.pid);
      pid = e.pid;
    }
  }
  if (r->device < 0 && devices) r->device = device;
  if (r->pid < 0 && pids) r->pid = pid;
}

// Ranks whose reports at one sequence number name different collectives.
struct OpSplit {
  int64_t seq = -1;                      // the sequence number, -1 when the reports agree
  std::map<int64_t, std::string> op_of;  // each rank's collective there
  int64_t odd = -1;                      // the one rank whose collective no other rank ran
  std::string common;                    // the collective of all the others
};

OpSplit SplitAtOneSeq(const std::vector<Obs>& symptoms) {
  std::map<int64_t, std::map<int64_t, std::string>> at;  // seq -> rank -> op
  for (const Obs& s : symptoms) {
    if (s.rank < 0 || s.ev->seq < 0 || s.ev->op.empty()) continue;
    at[s.ev->seq].emplace(s.rank, s.ev->op);
  }
  for (auto& [seq, ops] : at) {
    std::map<std::string, std::vector<int64_t>> ranks_of;
    for (const auto& [r, op] : ops) ranks_of[op].push_back(r);
    if (ranks_of.size() < 2) continue;
    OpSplit split;
    split.seq = seq;
    split.op_of = ops;
    if (ranks_of.size() == 2) {
      auto a = ranks_of.begin(), b = std::next(a);
      if (a->second.size() == 1 && b->second.size() > 1) std::swap(a, b);
      if (b->second.size() == 1 && a->second.size() > 1) {
        split.odd = b->second[0];
        split.common = a->first;
      }
    }
    return split;
  }
  return {};
}

// The one peer the observations around `at` (its file, its process, kBlockLines) name, other
// than its own rank; -1 when they name none or several.
int64_t BlockPeer(const std::vector<Obs>& obs, const Obs& at) {
  int64_t peer = -1;
  for (const Obs& o : obs) {
    const uint64_t a = o.ev->loc.line, b = at.ev->loc.line;
    if (o.ev->loc.file != at.ev->loc.file || (a > b ? a - b : b - a) > kBlockLines) continue;
    if (o.ev->pid >= 0 && at.ev->pid >= 0 && o.ev->pid != at.ev->pid) continue;
    if (o.peer < 0 || o.peer == at.rank || o.peer == o.rank) continue;
    if (peer >= 0 && peer != o.peer) return -1;
    peer = o.peer;
  }
  return peer;
}

// The ranks whose lines are in the input.
std::set<int64_t> RanksSeen(const std::vector<Obs>& obs) {
  std::set<int64_t> s;
  for (const Obs& o : obs)
    if (o.rank >= 0) s.insert(o.rank);
  return s;
}

}  // namespace

void ClassifyFindings(std::vector<Finding>* findings) {
  const kb::KnowledgeBase& base = kb::Get();
  for (Finding& f : *findings) {
    const kb::Entry* e = f.code.empty() ? nullptr : base.Find(f.code);
    if (f.kb.empty() && e != nullptr) f.kb = e->id;
    if (f.cls.empty() && e != nullptr) f.cls = e->cls;
  }
}

// A line of a report that does not say its rank beside lines of the report that do (a "[rank0]:"
// prefix on the first line of a CANN block, the block's next lines bare): the report is that
// rank's, when the lines around it name one rank only and no other process. Observations that
// become the same entry and rank keep the earliest.
void LendRanksWithinABlock(const Job& job, std::vector<Obs>* obs) {
  auto near = [](const Event& x, const Event& y) {
    const uint64_t a = x.loc.line, b = y.loc.line;
    return x.loc.file == y.loc.file && (a > b ? a - b : b - a) <= kBlockLines;
  };
  // Each file's lines that name their process, in line order (only when some line needs them).
  std::map<uint32_t, std::vector<std::pair<uint64_t, int64_t>>> pids;
  for (const Obs& o : *obs) {
    if (o.rank >= 0 || o.ev->pid < 0) continue;
    for (const Event& e : job.events) {
      if (e.pid >= 0) pids[e.loc.file].emplace_back(e.loc.line, e.pid);
    }
    for (auto& [file, lines] : pids) std::sort(lines.begin(), lines.end());
    break;
  }
  bool lent = false;
  for (Obs& o : *obs) {
    if (o.rank >= 0) continue;
    // Another process's lines among them (interleaved workers): the block is not one report.
    bool mixed = false;
    if (o.ev->pid >= 0) {
      const auto& lines = pids[o.ev->loc.file];
      const uint64_t line = o.ev->loc.line;
      auto it = std::lower_bound(lines.begin(), lines.end(),
                                 std::make_pair(line > kBlockLines ? line - kBlockLines : 0,
                                                std::numeric_limits<int64_t>::min()));
      for (; it != lines.end() && it->first <= line + kBlockLines && !mixed; ++it) {
        mixed = it->second != o.ev->pid;
      }
    }
    if (mixed) continue;
    int64_t rank = -1;
    bool one = true;
    for (const Obs& p : *obs) {
      if (!near(*p.ev, *o.ev) || (p.ev->pid >= 0 && o.ev->pid >= 0 && p.ev->pid != o.ev->pid)) {
        continue;
      }
      if (p.rank < 0) continue;
      one = one && (rank < 0 || rank == p.rank);
      rank = p.rank;
    }
    if (rank >= 0 && one) {
      o.rank = rank;
      lent = true;
    }
  }
  if (!lent) return;
  std::vector<Obs> kept;
  for (const Obs& o : *obs) {
    auto same = std::find_if(kept.begin(), kept.end(), [&](const Obs& k) {
      return k.entry == o.entry && k.rank == o.rank;
    });
    if (same == kept.end()) {
      kept.push_back(o);
    } else if (Earlier(o, *same)) {
      *same = o;
    }
  }
  *obs = std::move(kept);
}

void RuleEvidence(const Job& job, std::vector<Finding>* findings) {
  const kb::KnowledgeBase& base = kb::Get();
  std::map<int64_t, int64_t> proc_rank = rules::ProcRanks(job);
  std::vector<Obs> obs;
  std::set<std::pair<std::string, int64_t>> seen;
  for (const Event& e : job.events) {
    if (e.kb.empty()) continue;
    const kb::Entry* entry = base.Find(e.kb);
    if (entry == nullptr) continue;
    Obs o;
    o.ev = &e;
    o.entry = entry;
    o.entry = Refine(base, entry, e);
    o.rank = ReporterRank(job, e, proc_rank);
    o.peer = e.remote_rank >= 0 ? e.remote_rank : e.dst_rank;
    if (o.peer >= (int64_t{1} << 31)) o.peer = -1;  // 4294967295: HCCL's "unknown" (-1 as u32)
    if (const kb::Entry* named = e.named_kb.empty() ? nullptr : base.Find(e.named_kb)) {
      // The line names the fault (Vigil's root-cause line): its rank is the faulty one.
      o.entry = named;
      o.rank = e.launcher_rank >= 0 ? e.launcher_rank : e.informer_rank;
      o.peer = e.rank;
    }
    // One observation per entry and rank (errors repeat): the earliest.
    if (!seen.insert({o.entry->id, o.rank}).second) {
      for (Obs& p : obs)
        if (p.entry == o.entry && p.rank == o.rank && Earlier(o, p)) p = o;
      continue;
    }
    obs.push_back(o);
  }
  if (obs.empty()) return;
  LendRanksWithinABlock(job, &obs);

  std::vector<Obs> causes, eithers, weak, symptoms;
  for (const Obs& o : obs) {
    if (IsSymptom(*o.entry)) symptoms.push_back(o);
    else if (IsWeak(*o.entry)) weak.push_back(o);
    else if (IsCause(*o.entry)) causes.push_back(o);
    else eithers.push_back(o);
  }
  // Causes: the one the knowledge base says the others follow from first (the driver's memory
  // failure before the runtime's allocation error), then by time and depth.
  auto deeper = [&](const Obs& a, const Obs& b) {
    if (a.entry != b.entry) {
      if (Explains(base, a.entry->id, b.entry->id)) return true;
      if (Explains(base, b.entry->id, a.entry->id)) return false;
    }
    return Earlier(a, b);
  };
  // Symptoms: the one the others are consequences of first (EI0002 before the runtime's task
  // timeout it causes), then communication timeouts, then by time.
  auto first_symptom = [&](const Obs& a, const Obs& b) {
    if (a.entry != b.entry) {
      if (Explains(base, a.entry->id, b.entry->id)) return true;
      if (Explains(base, b.entry->id, a.entry->id)) return false;
    }
    bool ta = a.entry->cls == "timeout", tb = b.entry->cls == "timeout";
    if (ta != tb) return ta;
    return Earlier(a, b);
  };
  // These orders are not strict weak orders (relations, and times some lines lack), so no sort:
  // each list's best element is found by one pass and moved to its front; the rest stay in the
  // order the lines came.
  auto lead = [](std::vector<Obs>* v, const auto& better) {
    if (v->empty()) return;
    size_t best = 0;
    for (size_t i = 1; i < v->size(); ++i)
      if (better((*v)[i], (*v)[best])) best = i;
    std::rotate(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(best), v->begin() + static_cast<std::ptrdiff_t>(best) + 1);
  };
  lead(&causes, deeper);
  lead(&eithers, deeper);
  // A weak cause that says something (507899) before a catch-all (EL9999) beside it.
  lead(&weak, [](const Obs& a, const Obs& b) {
    if (IsCatchAllOnly(a) != IsCatchAllOnly(b)) return !IsCatchAllOnly(a);
    return Earlier(a, b);
  });
  lead(&symptoms, first_symptom);
  std::set<int64_t> ranks_seen = RanksSeen(obs);

  Finding f;
  const Obs* root = !causes.empty()    ? &causes[0]
                    : !eithers.empty() ? &eithers[0]
                    : !weak.empty() && (symptoms.empty() || !IsCatchAllOnly(weak[0])) ? &weak[0]
                                       : nullptr;
  std::vector<std::string> rests_on, collect;
  if (root != nullptr) {
    const kb::Entry& e = *root->entry;
    // A process-class entry that names its peer (a heartbeat LOST, "remote rank exited") is about
    // the peer, and so is one about the other end of a link (kb "about": "peer") even when the
    // line does not name it; everything else is about the rank that printed it.
    int64_t subject =
        (e.cls == "process" && root->peer >= 0) || e.about_peer ? root->peer : root->rank;
    if ((e.cls == "process" || e.about_peer) && subject < 0) {
      // A lost or stuck rank the line does not name: the peer the timeouts waited on.
      std::map<int64_t, int> peers;
      for (const Obs& s : symptoms)
        if (s.peer >= 0 && s.peer != s.rank) ++peers[s.peer];
      if (!peers.empty())
        subject = std::max_element(peers.begin(), peers.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
      // Else the one peer the report's other lines name ("Transport init error ... dst_rank[1]"
      // under "Remote Rank did not send the data in time").
      if (subject < 0) subject = BlockPeer(obs, *root);
    }
    f.fault = "kb_" + e.cls;
    f.cls = e.cls;
    f.kb = e.id;
    f.code = e.code;
    f.time = root->ev->time;
    const kb::ClassInfo* ci = base.Class(e.cls);
    f.title = e.about_peer && subject < 0 && root->rank >= 0
                  ? fmt::format("{} (reported by {}): {}", Label(e), RankText(root->rank),
                                ci ? ci->name : e.cls)
                  : fmt::format("{} on {}: {}", Label(e), RankText(subject), ci ? ci->name : e.cls);
    f.summary = e.meaning;
    if (!symptoms.empty()) {
      std::set<std::string> codes;
      std::set<int64_t> on;
      for (const Obs& s : symptoms) {
        codes.insert(s.entry->code.empty() ? s.entry->id : s.entry->code);
        if (s.rank >= 0) on.insert(s.rank);
      }
      std::string cl, rl;
      for (const auto& c : codes) cl += (cl.empty() ? "" : ", ") + c;
      for (int64_t r : on) rl += (rl.empty() ? "" : ", ") + std::to_string(r);
      f.summary += fmt::format(" The {} report{} ({}{}) {} a consequence of it, not the cause.",
                               symptoms.size(), symptoms.size() > 1 ? "s" : "", cl,
                               rl.empty() ? "" : " on rank " + rl, symptoms.size() > 1 ? "are" : "is");
    }
    f.advice = JoinFirst(e.checks, 2);
    if (!e.actions.empty()) f.advice += (f.advice.empty() ? "" : " ") + JoinFirst(e.actions, 2);
    bool known = subject >= 0;
    f.confidence = known ? "high" : "medium";
    f.score = IsWeak(e) ? (known ? 60 : 50) : IsCause(e) ? (known ? 89 : 74) : (known ? 68 : 58);
    if (!IsCause(e) || IsWeak(e)) f.confidence = known && !IsWeak(e) ? "medium" : "low";
    if (e.about_peer && subject != root->rank) {
      // The line's pid, host and device are its printer's: the peer is known by its rank alone.
      RankRef peer;
      peer.role = "root cause";
      peer.rank = subject;
      f.ranks.push_back(peer);
      f.ranks.push_back(Ref(job, *root->ev, root->rank, "reporter"));
    } else {
      f.ranks.push_back(Ref(job, *root->ev, subject, "root cause"));
      // Not for a process that died or hung: the lines around it are its reporter's.
      if (subject == root->rank && e.cls != "process") {
        LendBlockIdentity(job, *root->ev, &f.ranks.back());
      }
    }
    if (e.cls == "network" && root->peer >= 0 && root->peer != subject) {
      RankRef p = Ref(job, *root->ev, root->peer, "peer");
      p.pid = -1;
      f.ranks.push_back(p);
    }
    f.evidence.push_back({root->ev->loc, job.FilePath(root->ev->loc), root->ev->text,
                          fmt::format("{} ({}), {}", e.id, e.cls, root->ev->context.empty() ? "root cause"
                                                                          : "root cause; raised at " + root->ev->context)});
    rests_on.push_back(fmt::format("{} printed by {} at {}", e.code.empty() ? e.id : e.code, RankText(root->rank),
                                   Where(job, *root->ev)));
    f.facts.push_back({"would_refute", "an earlier device, network or process fault on another rank (its logs)"});
  } else {
    // Symptoms only: a timeout says whom the rank waited for, at best.
    const Obs& first = symptoms[0];
    std::map<int64_t, int> peers;
    for (const Obs& s : symptoms)
      if (s.peer >= 0 && s.peer != s.rank) ++peers[s.peer];
    int64_t suspect = -1;
    if (!peers.empty())
      suspect = std::max_element(peers.begin(), peers.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
    // Reports of several ranks with sequence numbers (torch_npu's watchdog: SeqNum): the one rank
    // at a lower number than all the others fell behind them.
    std::map<int64_t, int64_t> seq_of;
    for (const Obs& s : symptoms) {
      if (s.rank < 0 || s.ev->seq < 0) continue;
      auto it = seq_of.find(s.rank);
      if (it == seq_of.end() || s.ev->seq < it->second) seq_of[s.rank] = s.ev->seq;
    }
    int64_t behind = -1, behind_seq = -1, others_seq = -1;
    if (suspect < 0 && seq_of.size() >= 2) {
      auto low = std::min_element(seq_of.begin(), seq_of.end(), [](auto& a, auto& b) { return a.second < b.second; });
      int lows = 0;
      for (const auto& [r, q] : seq_of) {
        if (q == low->second) ++lows;
        else if (others_seq < 0 || q < others_seq) others_seq = q;
      }
      if (lows == 1) {
        behind = low->first;
        behind_seq = low->second;
      }
    }
    // Reports at one sequence number that name different collectives (a watchdog's OpType): the
    // ranks issued different calls there; a rank alone with its call is the one that diverged.
    const OpSplit split = behind < 0 ? SplitAtOneSeq(symptoms) : OpSplit{};
    const kb::Entry& e = *first.entry;
    f.fault = "kb_" + e.cls;
    f.cls = e.cls;
    f.kb = e.id;
    f.code = e.code;
    f.time = first.ev->time;
    const kb::ClassInfo* ci = base.Class(e.cls);
    if (split.seq >= 0) {
      const kb::ClassInfo* cc = base.Class("consistency");
      f.fault = "kb_consistency";
      f.cls = "consistency";
      std::string calls;
      for (const auto& [r, op] : split.op_of) {
        calls += fmt::format("{}rank {} {}", calls.empty() ? "" : ", ", r, op);
      }
      f.title = split.odd >= 0
                    ? fmt::format("{}: rank {} ran {} where the others ran {} (sequence {}): {}",
                                  Label(e), split.odd, split.op_of.at(split.odd), split.common,
                                  split.seq, cc ? cc->name : "consistency")
                    : fmt::format("{}: ranks ran different collectives at sequence {} ({}): {}",
                                  Label(e), split.seq, calls, cc ? cc->name : "consistency");
      f.summary =
          e.meaning + fmt::format(
                          " The reports at sequence number {} name different collectives ({}): "
                          "the ranks issued different calls there (a code path taken on some "
                          "ranks only, or calls in different orders), and each waited for peers "
                          "that were in another collective.",
                          split.seq, calls);
      for (const Obs& s : symptoms) {
        if (split.odd >= 0 && s.rank == split.odd) {
          f.ranks.push_back(Ref(job, *s.ev, split.odd, "suspect"));
          break;
        }
      }
      f.confidence = split.odd >= 0 ? "medium" : "low";
      f.score = split.odd >= 0 ? 60 : 50;
      collect.push_back(
          fmt::format("each rank's Python stack at sequence {} (which call each made "
                      "and why)",
                      split.seq));
    } else if (behind >= 0) {
      f.title = fmt::format("{}: rank {} fell behind the others (sequence {} against {}): {}", Label(e), behind,
                            behind_seq, others_seq, ci ? ci->name : e.cls);
      f.summary = e.meaning + fmt::format(
                                  " {} ranks reported it; rank {} at sequence number {}, every other one at {} or "
                                  "later: rank {} stopped issuing collectives first (it failed, hung, or skipped "
                                  "a call), and the others waited for it.",
                                  seq_of.size(), behind, behind_seq, others_seq, behind);
      for (const Obs& s : symptoms)
        if (s.rank == behind) {
          f.ranks.push_back(Ref(job, *s.ev, behind, "suspect"));
          break;
        }
      f.confidence = "medium";
      f.score = 60;
      collect.push_back(fmt::format("rank {}'s logs before sequence {} (its first error, or what it was doing)",
                                    behind, behind_seq));
    } else if (suspect >= 0) {
      f.title = fmt::format("{} on {}, waiting for rank {}: {}", Label(e), RankText(first.rank), suspect,
                            ci ? ci->name : e.cls);
      f.summary = e.meaning + fmt::format(" The rank waited for rank {}: its logs hold the root cause (it "
                                          "exited, hung, or failed first).", suspect);
      f.ranks.push_back(Ref(job, *first.ev, suspect, "suspect"));
      f.ranks.back().pid = -1;
      f.confidence = "medium";
      f.score = 58;
      if (!ranks_seen.count(suspect)) collect.push_back(fmt::format("rank {}'s logs (plog and screen)", suspect));
    } else {
      f.title = fmt::format("{} on {}: {}", Label(e), RankText(first.rank), ci ? ci->name : e.cls);
      f.summary = e.meaning + " The lines at hand do not name the rank that failed first.";
      f.confidence = "low";
      f.score = 45;
      collect.push_back("every rank's logs (run/plog and debug/plog, or each rank's screen output)");
    }
    f.ranks.push_back(Ref(job, *first.ev, first.rank, "reporter"));
    // The reporter's process and device from the lines of its report (torch_npu's "(PID:10355,
    // Device:0, RankID:-1)" under a Python exception).
    LendBlockIdentity(job, *first.ev, &f.ranks.back());
    f.advice = JoinFirst(e.checks, 2);
    if (!e.actions.empty()) f.advice += (f.advice.empty() ? "" : " ") + JoinFirst(e.actions, 2);
    rests_on.push_back(fmt::format("{} printed by {} at {}", e.code.empty() ? e.id : e.code, RankText(first.rank),
                                   Where(job, *first.ev)));
    f.facts.push_back({"would_refute", suspect >= 0 ? fmt::format("rank {}'s logs showing it healthy and waiting too", suspect)
                                                    : "an earlier fault in another rank's logs"});
  }
  // Evidence: the root, then the symptoms (a few).
  for (const std::vector<Obs>* list : {&causes, &eithers, &weak, &symptoms}) {
    for (const Obs& o : *list) {
      if (f.evidence.size() >= kMaxEvidence) break;
      if (root != nullptr && o.ev == root->ev) continue;
      if (root == nullptr && o.ev == symptoms[0].ev && !f.evidence.empty()) continue;
      std::string note = IsSymptom(*o.entry) && root != nullptr ? "consequence" : IsCause(*o.entry) ? "cause" : "seen";
      f.evidence.push_back({o.ev->loc, job.FilePath(o.ev->loc), o.ev->text,
                            fmt::format("{} ({}) {}, {}", o.entry->id, o.entry->cls, note, RankText(o.rank))});
    }
  }
  for (const std::string& r : rests_on) f.facts.push_back({"rests_on", r});
  if (!collect.empty()) {
    std::string c;
    for (const std::string& x : collect) c += (c.empty() ? "" : "; ") + x;
    f.facts.push_back({"collect_next", c});
    f.advice += " Collect next: " + c + ".";
  }
  // A cause the knowledge base links to another finding's fault (NIC port down -> RDMA init
  // failed -> listen port failure), or a fault of a rank before the timeouts another rule judged,
  // is that finding's root: it leads.
  if (root != nullptr && IsCause(*root->entry)) {
    for (Finding& other : *findings) {
      if (other.kb.empty() && other.cls.empty()) continue;
      bool before = f.time == kNoTime || other.time == kNoTime || f.time <= other.time;
      // Hardware first: a device or network fault before another rule's finding of another
      // class (a listen failure after the NIC went down) is its root.
      bool hardware = (f.cls == "device" || f.cls == "network") && other.cls != "device" &&
                      other.cls != "network" && f.time != kNoTime && other.time != kNoTime &&
                      f.time <= other.time;
      bool explained = (!other.kb.empty() && other.kb != f.kb && Explains(base, f.kb, other.kb)) ||
                       ((other.cls == "timeout" || other.cls == "connection") && f.cls != "timeout" && before) ||
                       hardware;
      // The same class is the same fault told by another rule: it keeps its place.
      if (!explained || other.cls == f.cls || other.score < f.score) continue;
      f.score = std::min(other.score + 1, 99);
      other.summary += fmt::format(" It is a consequence of {} ({}).", Label(*root->entry), RankText(f.ranks.front().rank));
      f.facts.push_back({"explains", other.fault + (other.kb.empty() ? "" : " (" + other.kb + ")")});
    }
  }
  findings->push_back(std::move(f));
}

}  // namespace vigil::diagnose
