// Rule 8c: arguments inconsistent between ranks (EI0005, consistency-check lines): per parameter,
// the ranks whose value is off the majority (op, count, dtype or param_mismatch).
#include "diagnose/rules/rule_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "common/dtype.h"
#include "diagnose/line_parser.h"

namespace vigil::diagnose::rules {
namespace {

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

}  // namespace

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
    // param_mismatch's first action is for a comm-wide value, its second for an op argument.
    FromKb(&f, {f.fault == "param_mismatch" && per_op ? size_t{1} : size_t{0}});
    f.advice += " " + CatalogueAdvice("EI0005");
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

}  // namespace vigil::diagnose::rules
