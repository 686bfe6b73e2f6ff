#include "diagnose/file_merge.h"

#include <map>
#include <string>
#include <utility>

namespace vigil::diagnose {
namespace {

void Shift(Loc* loc, uint64_t lines) {
  if (loc->line > 0) loc->line += lines;
}

// Moves every line number of a piece behind the lines of the pieces before it.
void ShiftLines(FileResult* r, uint64_t lines) {
  if (lines == 0) return;
  for (Event& e : r->events) Shift(&e.loc, lines);
  for (CommOps& c : r->comms) {
    for (OpEntry& op : c.recent) Shift(&op.loc, lines);
    for (auto& [sid, st] : c.streams) {
      Shift(&st.first_loc, lines);
      Shift(&st.last_loc, lines);
    }
    Shift(&c.switch_loc_a, lines);
    Shift(&c.switch_loc_b, lines);
    Shift(&c.first.loc, lines);
  }
  for (auto& [pid, ps] : r->processes) Shift(&ps.first_error_loc, lines);
}

// The same rule as FileParser::AddOp for one pair of consecutive ops on different streams.
void NoteSwitch(CommOps* c, const OpEntry& prev, const OpEntry& op) {
  if (prev.stream == op.stream) return;
  ++c->stream_switches;
  Micros gap = op.time - prev.time;
  if (gap < 0) gap = -gap;
  if (c->min_switch_gap < 0 || gap < c->min_switch_gap) {
    c->min_switch_gap = gap;
    c->switch_loc_a = prev.loc;
    c->switch_loc_b = op.loc;
  }
}

// `part`'s ops on this communicator follow `acc`'s.
void MergeComm(CommOps* acc, CommOps&& part) {
  if (acc->local_rank < 0) acc->local_rank = part.local_rank;
  if (part.total == 0) return;
  for (OpEntry& op : part.recent) op.seq += acc->total;
  part.first.seq += acc->total;
  if (acc->total == 0) {
    acc->first = part.first;
  } else {
    NoteSwitch(acc, acc->recent.back(), part.first);
  }
  acc->stream_switches += part.stream_switches;
  if (part.min_switch_gap >= 0 &&
      (acc->min_switch_gap < 0 || part.min_switch_gap < acc->min_switch_gap)) {
    acc->min_switch_gap = part.min_switch_gap;
    acc->switch_loc_a = part.switch_loc_a;
    acc->switch_loc_b = part.switch_loc_b;
  }
  for (auto& [sid, st] : part.streams) {
    auto [it, fresh] = acc->streams.try_emplace(sid, st);
    if (fresh) continue;
    StreamStat& a = it->second;
    a.ops += st.ops;
    a.last = st.last;
    a.last_loc = st.last_loc;
    a.last_op = std::move(st.last_op);
  }
  acc->recent.insert(acc->recent.end(), part.recent.begin(), part.recent.end());
  if (acc->recent.size() > CommOps::kKeep)
    acc->recent.erase(
        acc->recent.begin(),
        acc->recent.begin() + static_cast<std::ptrdiff_t>(acc->recent.size() - CommOps::kKeep));
  acc->total += part.total;
}

// The same rules as FileParser::RecordText for one process seen in consecutive pieces.
void MergeProcess(ProcessSeen* acc, ProcessSeen&& part) {
  if (acc->pname.empty()) acc->pname = std::move(part.pname);
  if (part.first != kNoTime && (acc->first == kNoTime || part.first < acc->first))
    acc->first = part.first;
  if (part.last > acc->last) acc->last = part.last;
  acc->records += part.records;
  if (part.errors > 0 && (acc->first_error == kNoTime ||
                          (part.first_error != kNoTime && part.first_error < acc->first_error))) {
    acc->first_error = part.first_error;
    acc->first_error_loc = part.first_error_loc;
    acc->first_error_text = std::move(part.first_error_text);
  }
  acc->errors += part.errors;
}

}  // namespace

FileResult MergeParts(std::vector<FileResult>&& parts) {
  FileResult out;
  std::map<std::pair<int64_t, std::string>, size_t> comm_index;
  size_t error_events = 0;
  for (FileResult& p : parts) {
    ShiftLines(&p, out.lines);
    out.read = out.read || p.read;
    if (out.skip_reason.empty()) out.skip_reason = std::move(p.skip_reason);
    out.bytes += p.bytes;
    out.lines += p.lines;
    out.records += p.records;
    out.unparsed_lines += p.unparsed_lines;
    out.binary_lines += p.binary_lines;
    out.overlong_lines += p.overlong_lines;
    out.dropped_events += p.dropped_events;
    for (Event& e : p.events) {
      if (e.kind == EventKind::kError) {
        if (error_events >= kMaxErrorEventsPerFile) {
          ++out.dropped_events;
          continue;
        }
        ++error_events;
      }
      if (out.events.size() >= kMaxEventsPerFile) {
        ++out.dropped_events;
        continue;
      }
      out.events.push_back(std::move(e));
    }
    for (CommOps& c : p.comms) {
      auto [it, fresh] = comm_index.try_emplace({c.pid, c.group}, out.comms.size());
      if (fresh) {
        out.comms.push_back(std::move(c));
      } else {
        MergeComm(&out.comms[it->second], std::move(c));
      }
    }
    for (auto& [pid, ps] : p.processes) {
      auto [it, fresh] = out.processes.try_emplace(pid, ps);
      if (!fresh) MergeProcess(&it->second, std::move(ps));
    }
  }
  return out;
}

}  // namespace vigil::diagnose
