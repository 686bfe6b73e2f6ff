#include "diagnose/job_model.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "diagnose/line_parser.h"

namespace vigil::diagnose {

int64_t Comm::MemberOfProc(int64_t proc) const {
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].proc == proc) return static_cast<int64_t>(i);
  return -1;
}

int64_t Comm::MemberOfRank(int64_t rank) const {
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].rank == rank) return static_cast<int64_t>(i);
  return -1;
}

int64_t Job::CommIndex(const std::string& group) const {
  for (size_t i = 0; i < comms.size(); ++i)
    if (comms[i].group == group) return static_cast<int64_t>(i);
  return -1;
}

int64_t Job::PidOfFileName(const std::string& path) {
  std::filesystem::path fp(path);
  std::string name = fp.filename().string();
  auto digits = [](std::string_view s, char end) -> int64_t {
    size_t e = 0;
    while (e < s.size() && e < 12 && s[e] >= '0' && s[e] <= '9') ++e;
    if (e == 0 || e >= s.size() || s[e] != end) return -1;
    return ToInt(s.substr(0, e)).value_or(-1);
  };
  std::string_view n(name);
  if (n.starts_with("plog-parser-")) return digits(n.substr(12), '-');
  if (n.starts_with("plog-")) return digits(n.substr(5), '_');
  // Device-side logs of a process: debug/device-<n>/device-<pid>_<stamp>.log (a device's own
  // logs, device-<n>/device-<n>_<stamp>.log elsewhere, are not a process's).
  if (n.starts_with("device-") && fp.parent_path().filename().string().starts_with("device-") &&
      fp.parent_path().parent_path().filename() == "debug")
    return digits(n.substr(7), '_');
  return -1;
}

int64_t Job::ProcOfUid(const std::string& uid) const {
  if (uid.empty()) return -1;
  for (size_t i = 0; i < processes.size(); ++i)
    if (processes[i].uid == uid) return static_cast<int64_t>(i);
  // "IP/ID": a process on that host with that device, when exactly one matches.
  size_t slash = uid.rfind('/');
  if (slash == std::string::npos) return -1;
  std::string ip = uid.substr(0, slash);
  auto dev = ToInt(std::string_view(uid).substr(slash + 1));
  if (!dev) return -1;
  int64_t found = -1;
  int matches = 0;
  for (size_t i = 0; i < processes.size(); ++i) {
    const Process& p = processes[i];
    if (p.device != *dev) continue;
    if (!p.host_ip.empty() && p.host_ip != ip) continue;
    if (!p.uid.empty()) continue;  // it has a uid of its own, which differs
    found = static_cast<int64_t>(i);
    ++matches;
  }
  return matches == 1 ? found : -1;
}

int64_t Job::ExecTimeoutOf(int64_t proc) const {
  if (proc >= 0 && static_cast<size_t>(proc) < processes.size()) {
    auto it = processes[proc].env.find("HCCL_EXEC_TIMEOUT");
    if (it != processes[proc].env.end()) {
      auto v = ToInt(it->second);
      if (v) return *v;
    }
  }
  return exec_timeout_s;
}

std::string Job::FilePath(const Loc& loc) const {
  return loc.file < files.size() ? files[loc.file].path : std::string("?");
}

std::string Job::OpenPath(const Loc& loc) const {
  return loc.file < files.size() ? files[loc.file].Opened() : std::string();
}

namespace {

struct ProcKeyHash {
  size_t operator()(const std::pair<std::string, int64_t>& k) const {
    return std::hash<std::string>()(k.first) ^ (std::hash<int64_t>()(k.second) * 1000003);
  }
};

void MergeOps(RankOps* dst, CommOps& src) {
  int64_t base = dst->total;
  dst->total += src.total;
  if (dst->recent.empty()) {
    // The usual case (one run file per process): take the file's ops without a copy.
    dst->recent = std::move(src.recent);
    for (OpEntry& o : dst->recent) o.seq += base;
  } else {
    for (const OpEntry& op : src.recent) {
      dst->recent.push_back(op);
      dst->recent.back().seq += base;
    }
    if (dst->recent.size() > CommOps::kKeep)
      dst->recent.erase(dst->recent.begin(), dst->recent.end() - CommOps::kKeep);
  }
  for (const auto& [sid, st] : src.streams) {
    StreamStat& d = dst->streams[sid];
    if (d.ops == 0) {
      d = st;
    } else {
      d.ops += st.ops;
      d.last = st.last;
      d.last_loc = st.last_loc;
      d.last_op = st.last_op;
    }
  }
  dst->stream_switches += src.stream_switches;
  if (src.min_switch_gap >= 0 && (dst->min_switch_gap < 0 || src.min_switch_gap < dst->min_switch_gap)) {
    dst->min_switch_gap = src.min_switch_gap;
    dst->switch_loc_a = src.switch_loc_a;
    dst->switch_loc_b = src.switch_loc_b;
  }
  for (const OpEntry& op : dst->recent) {
    if (op.time == kNoTime) continue;
    if (dst->first == kNoTime || op.time < dst->first) dst->first = op.time;
    if (op.time > dst->last) dst->last = op.time;
  }
}

Comm& CommFor(Job* job, const std::string& group) {
  int64_t i = job->CommIndex(group);
  if (i >= 0) return job->comms[i];
  job->comms.push_back(Comm{});
  job->comms.back().group = group;
  return job->comms.back();
}

Member& MemberFor(Comm* c, int64_t proc, int64_t rank) {
  int64_t i = proc >= 0 ? c->MemberOfProc(proc) : -1;
  if (i < 0 && rank >= 0) {
    i = c->MemberOfRank(rank);
    // A rank id already held by another process (reused comm name across restarts) gets its own
    // member; the rules see both.
    if (i >= 0 && c->members[i].proc >= 0 && proc >= 0 && c->members[i].proc != proc) i = -1;
  }
  if (i < 0) {
    c->members.push_back(Member{});
    c->members.back().rank = rank;
    c->members.back().proc = proc;
    return c->members.back();
  }
  Member& m = c->members[i];
  if (m.rank < 0) m.rank = rank;
  if (m.proc < 0) m.proc = proc;
  return m;
}

}  // namespace

Job BuildJob(ScanResult&& scan) {
  Job job;
  job.files = std::move(scan.files);
  job.skipped = std::move(scan.skipped);
  job.stats.ignored_files = scan.ignored_files;
  job.unpacked = std::move(scan.unpacked);
  std::unordered_map<std::pair<std::string, int64_t>, int64_t, ProcKeyHash> proc_index;
  // A file named after its process belongs to that process, whatever pid its lines print
  // (copied and hand-edited logs print others). The process keeps the pid its lines print (the
  // same in real logs), the file's when some line prints that.
  std::vector<int64_t> file_pid(job.files.size());
  for (size_t f = 0; f < job.files.size(); ++f) file_pid[f] = Job::PidOfFileName(job.files[f].path);
  auto proc_of = [&](uint32_t file, int64_t pid) -> int64_t {
    auto key = std::make_pair(job.files[file].node, file_pid[file] >= 0 ? file_pid[file] : pid);
    auto it = proc_index.find(key);
    if (it != proc_index.end()) {
      if (pid == key.second) job.processes[it->second].pid = pid;  // a line confirms the file's pid
      return it->second;
    }
    int64_t idx = static_cast<int64_t>(job.processes.size());
    job.processes.push_back(Process{});
    job.processes.back().node = job.files[file].node;
    job.processes.back().pid = pid;
    proc_index.emplace(key, idx);
    return idx;
  };

  // Processes and their per-file statistics.
  for (uint32_t f = 0; f < scan.results.size(); ++f) {
    FileResult& r = scan.results[f];
    job.stats.files += r.read ? 1 : 0;
    job.stats.bytes += r.bytes;
    job.stats.lines += r.lines;
    job.stats.records += r.records;
    job.stats.unparsed_lines += r.unparsed_lines;
    job.stats.binary_lines += r.binary_lines;
    job.stats.overlong_lines += r.overlong_lines;
    job.stats.dropped_events += r.dropped_events;
    if (r.read && !r.skip_reason.empty()) job.skipped.push_back({job.files[f].path, r.skip_reason});
    for (const auto& [pid, ps] : r.processes) {
      Process& p = job.processes[proc_of(f, pid)];
      if (std::find(p.files.begin(), p.files.end(), f) == p.files.end()) p.files.push_back(f);
      if (p.pname.empty()) p.pname = ps.pname;
      if (ps.first != kNoTime && (p.first == kNoTime || ps.first < p.first)) p.first = ps.first;
      if (ps.last > p.last) p.last = ps.last;
      p.records += ps.records;
      p.errors += ps.errors;
      if (ps.first_error != kNoTime && (p.first_error == kNoTime || ps.first_error < p.first_error)) {
        p.first_error = ps.first_error;
        p.first_error_loc = ps.first_error_loc;
        p.first_error_text = ps.first_error_text;
      }
    }
  }

  // A screen capture's "[PID: n]" lines live in another folder than the plogs of the same
  // process: when a pid is otherwise unique in the job, they belong to that process.
  std::vector<int64_t> alias(job.processes.size());
  for (size_t i = 0; i < alias.size(); ++i) alias[i] = static_cast<int64_t>(i);
  for (size_t i = 0; i < job.processes.size(); ++i) {
    if (!job.processes[i].pname.empty()) continue;  // has plog records of its own
    int64_t match = -1;
    int n = 0;
    for (size_t j = 0; j < job.processes.size(); ++j) {
      if (j == i || job.processes[j].pid != job.processes[i].pid || job.processes[j].pname.empty()) continue;
      match = static_cast<int64_t>(j);
      ++n;
    }
    if (n == 1) {
      alias[i] = match;
      Process& dst = job.processes[match];
      const Process& src = job.processes[i];
      for (uint32_t f : src.files) dst.files.push_back(f);
      dst.records += src.records;
      dst.errors += src.errors;
      if (src.first_error != kNoTime && (dst.first_error == kNoTime || src.first_error < dst.first_error)) {
        dst.first_error = src.first_error;
        dst.first_error_loc = src.first_error_loc;
        dst.first_error_text = src.first_error_text;
      }
    }
  }
  auto proc_alias = [&](uint32_t file, int64_t pid) { return alias[proc_of(file, pid)]; };

  // Events, in file order; process-level facts from them.
  size_t n_events = 0;
  for (const FileResult& r : scan.results) n_events += r.events.size();
  job.events.reserve(n_events);
  for (uint32_t f = 0; f < scan.results.size(); ++f) {
    for (Event& ev : scan.results[f].events) {
      ev.proc = proc_alias(f, ev.pid);
      Process& p = job.processes[ev.proc];
      switch (ev.kind) {
        case EventKind::kEnv:
          p.env[ev.name] = ev.value;
          p.env_loc[ev.name] = ev.loc;
          p.env_from_env[ev.name] = ev.from_env;
          break;
        case EventKind::kHeartbeat:
          if (p.uid.empty() && !ev.local.empty()) p.uid = ev.local;
          break;
        case EventKind::kCommInit:
          if (ev.device >= 0) p.device = ev.device;
          break;
        case EventKind::kTaskOpData:
          if (p.device < 0 && ev.device >= 0) p.device = ev.device;
          break;
        case EventKind::kCqeDetail:
          if (p.host_ip.empty() && !ev.local_server.empty()) p.host_ip = ev.local_server;
          break;
        case EventKind::kRankInfo:
          if (ev.device >= 0 && p.device < 0) p.device = ev.device;
          if (!ev.local_device.empty() && p.phy_device < 0) p.phy_device = ToInt(ev.local_device).value_or(-1);
          if (!ev.local_ip.empty() && p.device_ip.empty()) p.device_ip = ev.local_ip;
          if (!ev.local_server.empty() && p.host_ip.empty()) p.host_ip = ev.local_server;
          if (ev.name == "vnic") p.vnic_ip = ev.ip;
          break;
        case EventKind::kKeyInfo:
          if (!ev.ip.empty()) p.host_ip = ev.ip;
          if (ev.device >= 0) p.device = ev.device;
          break;
        case EventKind::kCommDestroy:
          if (p.destroy_time == kNoTime || (ev.time != kNoTime && ev.time < p.destroy_time)) {
            p.destroy_time = ev.time;
            p.destroy_loc = ev.loc;
          }
          break;
        default:
          break;
      }
      job.events.push_back(std::move(ev));
    }
    scan.results[f].events.clear();
    scan.results[f].events.shrink_to_fit();
  }
  for (Process& p : job.processes) {
    if (p.host_ip.empty() && !p.uid.empty()) p.host_ip = p.uid.substr(0, p.uid.rfind('/'));
    if (p.device < 0 && !p.uid.empty()) {
      auto d = ToInt(std::string_view(p.uid).substr(p.uid.rfind('/') + 1));
      if (d) p.device = *d;
    }
  }
  // Heartbeat CQE lines name only the remote end: the local end is the printing process.
  for (Event& ev : job.events) {
    if (ev.kind != EventKind::kCqeDetail || ev.proc < 0 || !ev.local_server.empty() || !ev.local_ip.empty()) continue;
    const Process& p = job.processes[ev.proc];
    ev.local_server = p.host_ip;
    ev.local_ip = p.device_ip;
    int64_t dev = p.phy_device >= 0 ? p.phy_device : p.device;
    if (dev >= 0) ev.local_device = std::to_string(dev);
  }

  // Communicators: init lines first (they name every rank), then ops and failures.
  for (const Event& ev : job.events) {
    if (ev.kind == EventKind::kRankInfo && !ev.group.empty() && ev.rank >= 0) {
      Comm& c = CommFor(&job, ev.group);
      if (c.rank_size < 0 && ev.rank_size > 0) c.rank_size = ev.rank_size;
      Member& m = MemberFor(&c, ev.proc, ev.rank);
      if (m.device < 0) m.device = ev.device;
      continue;
    }
    if (ev.kind != EventKind::kCommInit || ev.group.empty()) continue;
    Comm& c = CommFor(&job, ev.group);
    if (ev.rank_size > 0) c.rank_size = ev.rank_size;
    if (!ev.ip.empty()) c.root_ip = ev.ip;
    if (ev.port >= 0) c.port = ev.port;
    Member& m = MemberFor(&c, ev.proc, ev.rank);
    m.device = ev.device;
    if (!m.has_init) {
      m.init_time = ev.time;
      m.init_loc = ev.loc;
      m.has_init = true;
    }
  }
  for (uint32_t f = 0; f < scan.results.size(); ++f) {
    for (CommOps& co : scan.results[f].comms) {
      job.stats.op_entries += static_cast<uint64_t>(co.total);
      int64_t proc = proc_alias(f, co.pid);
      Comm& c = CommFor(&job, co.group);
      Member& m = MemberFor(&c, proc, co.local_rank);
      MergeOps(&m.ops, co);
    }
    scan.results[f].comms.clear();
    for (FlightDump& d : scan.results[f].dumps) job.dumps.push_back(std::move(d));
    for (RankTableDevice& r : scan.results[f].rank_table) job.rank_table.push_back(std::move(r));
  }

  // Task failures: base starts one; the other lines of the same process attach to its latest.
  std::map<int64_t, size_t> open_failure;
  for (size_t i = 0; i < job.events.size(); ++i) {
    const Event& ev = job.events[i];
    bool base = ev.kind == EventKind::kTaskBase;
    bool part = ev.kind == EventKind::kTaskGroupRank || ev.kind == EventKind::kTaskOpData ||
                ev.kind == EventKind::kTaskPara;
    if (!base && !part) continue;
    auto it = open_failure.find(ev.proc);
    bool need_new = base || it == open_failure.end();
    if (!need_new) {
      const TaskFailure& cur = job.failures[it->second];
      // A second groupRank/opData line means a new failure whose base line was lost.
      if ((ev.kind == EventKind::kTaskGroupRank && cur.has_group_rank) ||
          (ev.kind == EventKind::kTaskOpData && cur.has_op_data) || (ev.kind == EventKind::kTaskPara && cur.has_para))
        need_new = true;
    }
    if (need_new) {
      TaskFailure tf;
      tf.proc = ev.proc;
      tf.time = ev.time;
      tf.loc = ev.loc;
      job.failures.push_back(tf);
      open_failure[ev.proc] = job.failures.size() - 1;
    }
    TaskFailure& tf = job.failures[open_failure[ev.proc]];
    tf.locs.push_back(ev.loc);
    if (tf.stage.empty()) tf.stage = ev.stage;
    if (tf.engine.empty()) tf.engine = ev.engine;
    switch (ev.kind) {
      case EventKind::kTaskBase: {
        tf.has_base = true;
        tf.stream = ev.stream;
        tf.task = ev.task;
        tf.tag = ev.tag;
        tf.alg = ev.detail;
        tf.task_type = ev.name;
        if (ev.index >= 0) tf.index = ev.index;
        std::string_view op, group;
        SplitTag(tf.tag, &op, &group);
        tf.op = std::string(op);
        if (tf.group.empty()) tf.group = std::string(group);
        break;
      }
      case EventKind::kTaskGroupRank:
        tf.has_group_rank = true;
        if (!ev.group.empty()) tf.group = ev.group;
        tf.rank_size = ev.rank_size;
        tf.rank = ev.rank;
        tf.peer_rank = ev.peer_rank;
        break;
      case EventKind::kTaskOpData:
        tf.has_op_data = true;
        tf.op_time = ev.aux_time;
        tf.device = ev.device;
        if (ev.index >= 0) tf.index = ev.index;
        tf.count = ev.count;
        tf.reduce = ev.reduce;
        tf.src = ev.src;
        tf.dst = ev.dst;
        tf.dtype = ev.dtype;
        break;
      case EventKind::kTaskPara:
        tf.has_para = true;
        tf.para_src = ev.src;
        tf.para_dst = ev.dst;
        tf.para_size = ev.size;
        tf.para_remote = ev.remote_rank;
        tf.para_local = ev.remote == "local";
        tf.link_type = ev.detail;
        break;
      default:
        break;
    }
  }
  for (const TaskFailure& tf : job.failures) {
    if (tf.group.empty()) continue;
    Comm& c = CommFor(&job, tf.group);
    if (c.rank_size < 0 && tf.rank_size > 0) c.rank_size = tf.rank_size;
    Member& m = MemberFor(&c, tf.proc, tf.rank);
    if (m.device < 0) m.device = tf.device;
  }
  for (const FlightDump& d : job.dumps) {
    if (d.group.empty()) continue;
    Comm& c = CommFor(&job, d.group);
    if (c.rank_size < 0) c.rank_size = d.rank_size;
    // The dump's process: the one with that pid in the same log root (run/flight/ next to
    // run/plog/), else the only one with that pid anywhere, else a process of its own (a job
    // diagnosed from dumps alone).
    int64_t proc = -1;
    if (d.pid >= 0) {
      auto it = proc_index.find(std::make_pair(job.files[d.loc.file].node, d.pid));
      if (it != proc_index.end()) proc = alias[it->second];
      int n = 0;
      for (size_t i = 0; proc < 0 && i < job.processes.size(); ++i)
        if (job.processes[i].pid == d.pid) ++n;
      for (size_t i = 0; proc < 0 && n == 1 && i < job.processes.size(); ++i)
        if (job.processes[i].pid == d.pid) proc = static_cast<int64_t>(i);
      if (proc < 0) {
        proc = proc_of(d.loc.file, d.pid);
        alias.push_back(proc);
      }
      Process& p = job.processes[proc];
      if (std::find(p.files.begin(), p.files.end(), d.loc.file) == p.files.end()) p.files.push_back(d.loc.file);
      if (p.host_ip.empty()) p.host_ip = d.host;
      if (p.device < 0) p.device = d.device;
    }
    Member& m = MemberFor(&c, proc, d.rank);
    if (m.device < 0) m.device = d.device;
    // Several dumps of one process (SIGUSR1, then the failure): the latest wins.
    if (m.flight.empty() || d.dump_time == kNoTime || d.dump_time >= m.flight_time) {
      m.flight = d.ops;
      m.flight_loc = d.loc;
      m.flight_time = d.dump_time;
    }
  }
  for (Comm& c : job.comms) {
    std::sort(c.members.begin(), c.members.end(), [](const Member& a, const Member& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.proc < b.proc;
    });
  }

  // HCCL_EXEC_TIMEOUT in force: the value most processes echo, else the default.
  std::map<std::string, int> votes;
  for (const Process& p : job.processes) {
    auto it = p.env.find("HCCL_EXEC_TIMEOUT");
    if (it != p.env.end() && ToInt(it->second)) ++votes[it->second];
  }
  if (!votes.empty()) {
    auto best = std::max_element(votes.begin(), votes.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    job.exec_timeout_s = *ToInt(best->first);
    job.exec_timeout_from_log = true;
    for (const Process& p : job.processes) {
      auto it = p.env.find("HCCL_EXEC_TIMEOUT");
      if (it != p.env.end() && it->second == best->first) {
        job.exec_timeout_loc = p.env_loc.at("HCCL_EXEC_TIMEOUT");
        break;
      }
    }
  } else {
    // No echo: the timeout the device's notify-wait timeouts print is the one HCCL set for them
    // ("hccl fftsplus task timeout ... timeout:1836", "notify wait timeout ... timeout=204s").
    for (const Event& ev : job.events) {
      if ((ev.kb == "runtime.fftsplus_timeout" || ev.kb == "runtime.event_wait_timeout") &&
          ev.timeout_ms > 0 && ev.timeout_ms % 1000 == 0) {
        job.exec_timeout_s = ev.timeout_ms / 1000;
        job.exec_timeout_from_log = true;
        job.exec_timeout_loc = ev.loc;
        break;
      }
    }
  }
  return job;
}

}  // namespace vigil::diagnose
