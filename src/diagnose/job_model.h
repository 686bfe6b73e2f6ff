// The job as the logs describe it: processes (node + pid), communicators by identifier with their
// ranks, each rank's op sequence (from Entry lines and flight-recorder dumps), task failures
// assembled from the three "Task run failed" lines, every other typed event, and the env values
// in force.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "diagnose/events.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {

constexpr int64_t kDefaultExecTimeoutS = 1836;  // HCCL_EXEC_TIMEOUT default (27 x 68 s)

struct Process {
  std::string node;        // log root folder
  int64_t pid = -1;
  std::string pname;
  std::string uid;         // "IP/ID" as the heartbeat names this process (its "local rank")
  std::string host_ip;
  int64_t device = -1;
  int64_t phy_device = -1;      // physical device id (SetupAgent phydevId, vNIC devPhyId)
  std::string device_ip;        // the device NIC's IP (SetupAgent deviceIp)
  std::string vnic_ip;          // the device's vNIC listen IP (intra-server links)
  std::vector<uint32_t> files;
  Micros first = kNoTime, last = kNoTime;
  int64_t records = 0, errors = 0;
  Micros first_error = kNoTime;
  Loc first_error_loc;
  std::string first_error_text;
  std::map<std::string, std::string> env;       // name → value (the last echo wins)
  std::map<std::string, Loc> env_loc;
  std::map<std::string, bool> env_from_env;
  Micros destroy_time = kNoTime;                // first Entry-HcclCommDestroy
  Loc destroy_loc;
};

// The ops one process issued on one communicator, merged over its (rotated) files.
struct RankOps {
  int64_t total = 0;
  std::vector<OpEntry> recent;                  // the last CommOps::kKeep, seq over all files
  std::map<int32_t, StreamStat> streams;
  int64_t stream_switches = 0;
  Micros min_switch_gap = -1;
  Loc switch_loc_a, switch_loc_b;
  Micros first = kNoTime, last = kNoTime;
};

struct Member {
  int64_t rank = -1;
  int64_t proc = -1;
  int64_t device = -1;
  Micros init_time = kNoTime;
  Loc init_loc;
  bool has_init = false;
  RankOps ops;
  std::vector<FlightOp> flight;                 // from a dump, when one exists
  Loc flight_loc;
  Micros flight_time = kNoTime;                 // that dump's dump_time
};

struct Comm {
  std::string group;
  int64_t rank_size = -1;
  std::string root_ip;
  int64_t port = -1;
  std::vector<Member> members;                  // one per (process) rank seen
  int64_t MemberOfProc(int64_t proc) const;
  int64_t MemberOfRank(int64_t rank) const;
};

// The base / groupRank / opData / para lines of one failed task, joined.
struct TaskFailure {
  int64_t proc = -1;
  Micros time = kNoTime;
  Loc loc;
  std::string stage, engine;                    // "Timeout" / "RunFailed", "Host"
  int64_t stream = -1, task = -1;
  std::string tag, op, group, alg;
  int64_t rank_size = -1, rank = -1, peer_rank = -1;
  int64_t index = -1, count = -1, device = -1;
  std::string dtype, reduce;
  uint64_t src = 0, dst = 0;
  Micros op_time = kNoTime;
  bool has_base = false, has_group_rank = false, has_op_data = false, has_para = false;
  uint64_t para_src = 0, para_dst = 0, para_size = 0;
  int64_t para_remote = -1;
  bool para_local = false;                      // remote rank:[local]: waits on its own stream
  std::string task_type;                        // "Notify Wait"
  std::string link_type;
  std::vector<Loc> locs;
};

struct JobStats {
  uint64_t files = 0, bytes = 0, lines = 0, records = 0;
  uint64_t unparsed_lines = 0, binary_lines = 0, overlong_lines = 0, dropped_events = 0;
  uint64_t ignored_files = 0;
  uint64_t op_entries = 0;
};

struct Job {
  std::vector<InputFile> files;
  std::vector<SkippedFile> skipped;             // not read, or read with no records
  std::vector<Process> processes;
  std::vector<Comm> comms;
  std::vector<Event> events;                    // all typed events, proc set, file order
  std::vector<TaskFailure> failures;
  std::vector<FlightDump> dumps;
  std::vector<RankTableDevice> rank_table;
  JobStats stats;
  int64_t exec_timeout_s = kDefaultExecTimeoutS;
  bool exec_timeout_from_log = false;
  Loc exec_timeout_loc;

  int64_t CommIndex(const std::string& group) const;
  // The pid a file's name gives (plog-<pid>_<stamp>.log, plog-parser-<pid>-<n>.log,
  // debug/device-<n>/device-<pid>_<stamp>.log), or -1.
  static int64_t PidOfFileName(const std::string& path);
  // The process a heartbeat uid ("IP/ID") names, or -1.
  int64_t ProcOfUid(const std::string& uid) const;
  // Exec timeout in force for one process (its echo, else the job's).
  int64_t ExecTimeoutOf(int64_t proc) const;
  std::string FilePath(const Loc& loc) const;
  // Where that file's bytes are read (an archive member's extracted copy), for ReadLineAt.
  std::string OpenPath(const Loc& loc) const;
  std::shared_ptr<const ArchiveSpace> unpacked;  // keeps archive members readable
};

Job BuildJob(ScanResult&& scan);

}  // namespace vigil::diagnose
