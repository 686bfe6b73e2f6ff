// Typed events parsed from log records. One flat struct keeps the parser simple; the comment on
// each kind says which fields it fills. Op Entry lines are not events: they are the bulk of a run
// log and go to the compact OpEntry form instead.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/record.h"
#include "diagnose/text_util.h"

namespace vigil::diagnose {

enum class EventKind : uint8_t {
  kCommInit,          // rank, rank_size, ip (root host ip), port, group (identifier), device
  kCommDestroy,       // group / comm_ptr when the line names them
  kEnv,               // name, value, from_env
  kHeartbeat,         // local, crimer, informer, status ("LOST", "STUCK", "ERROR CQE", ...)
  kClusterException,  // crimer (Location), informer (Discoverer), status (ExceptionType), detail
                      // (Possible Reason), aux_time (Arrival Time)
  kTaskBase,          // stage ("Timeout"/"RunFailed"), engine, stream, task, tag, detail (AlgType)
  kTaskGroupRank,     // group, rank_size, rank, peer_rank, detail (user define information)
  kTaskOpData,        // aux_time (timeStamp), device, index, count, reduce, dtype, src, dst
  kTaskPara,          // src, dst, size, remote_rank, detail (link type), tag
  kScreenError,       // code, name (title), detail (message); per code more fields (see parser)
  kSdmaRuntime,       // device, stream, task, detail ("fftsplus sdma error" / rtCode)
  kAivKernel,         // device, stream, task, name (kernel name), detail (kernel info ext)
  kRoceCqe,           // status (ROCE/HCCP "error cqe status" / "CQE status")
  kCqeDetail,         // [ROCE CQE ERROR] / [CQE ERROR]: status, aux_time, local_*, remote_*
  kLinkTimeout,       // "wait socket establish timeout": role, rank, detail; EI0006 too
  kTopoTimeout,       // "topo exchange server|agent get socket timeout": role; connected/need
  kMissingRanks,      // "Failed to connect agent[1,3]" and similar: ranks
  kBindFail,          // "listen ... fail": ip, port
  kParamCheckFail,    // "CMD information X check fail. local[..], remote[..]": name, local, remote
  kTransportError,    // "Transport init error" / "Alloc transports failed": detail, tag
  kOpInconsistent,    // "check opinfo inconsistent": group, index, local, remote; Vigil's
                      // "op inconsistent in communicator[..]": also rank, remote_rank, tag, count,
                      // dtype (local op's), name (remote op), remote (remote op's text)
  kMultiStream,       // Vigil's "used from two streams at once": group, tag, index, stream (this
                      // op's), value (the other op's streamId), name (the other op's tag)
  kStuckTrace,        // "[HCCL_TRACE]rank:<uid>, count of currently executed operators:<n>"
  kBufferOom,         // CCL buffer allocation failure (EI9001 or driver OOM naming the buffer)
  kKeyInfo,           // "Communicator Key Info" / "LocalRank Key Info": group, rank, ip, device
  kKb,                // a knowledge-base entry recognised by its pattern in any line (an
                      // un-coded message: watchdog timeout, "ra rdma init failed", ...): kb, and
                      // the fields its pattern names; coded lines are kScreenError with kb set
  kRankInfo,          // a rank's identity (plog_forms.h): group, rank, rank_size, device,
                      // local_device (physical id), local_ip (device IP), local_server; name
                      // "root" (the comm's root rank) / "vnic" (ip: its vNIC address)
  kWaitPeer,          // whom a rank waits for at link setup (plog_forms.h): detail "socket" /
                      // "p2p" / "aicpu" / "aicpu_op"
  kRootInfoFail,      // a non-root rank failed to receive the root-info exchange: detail
  kConnectedRanks,    // the root's list of ranks that did connect: ranks
  kOpRetry,           // an op retry's step (plog_forms.h): detail "begin" / "recovered" /
                      // "failed", group, tag, index, rank, src_rank and dst_rank (the broken
                      // link's ends), status (attempts), value (seconds lost), aux_time
  kShrink,            // Vigil's "[Shrink]communicator[OLD] rankSize[N] shrunk to communicator[NEW]
                      // ...": group (OLD), value (NEW), rank_size (N), rank (the survivor's old
                      // rank), ranks (excluded), elapsed_ms (the shrink's total time)
  kError,             // any other ERROR record (first few per file, for "who errored first")
};

const char* EventKindName(EventKind k);

struct Loc {
  uint32_t file = 0;  // index into the scan's file table
  uint64_t line = 0;    // 1-based physical line
  uint64_t offset = 0;  // byte offset of the record in the file
};

struct Event {
  EventKind kind = EventKind::kError;
  Loc loc;
  Level level = Level::kUnknown;
  std::string module;
  int64_t pid = -1;
  int64_t proc = -1;           // index of the process in the job model (set when the job is built)
  Micros time = kNoTime;       // record time
  Micros aux_time = kNoTime;   // time carried in the message (arrival, opData timeStamp, CQE time)
  std::string text;            // the record, printable, for evidence

  std::string group;           // communicator identifier
  std::string tag;
  std::string name;            // env name, kernel name, parameter name, screen title
  std::string value;           // env value
  std::string code;            // EIxxxx
  std::string stage, engine;   // [TaskExecStage][Timeout][Host] → Timeout, Host
  std::string local, crimer, informer, status, remote;
  std::string ip;
  std::string detail;
  std::string link;            // the link type a coded screen error names (HCCS, PCIE, ROCE)
  std::string reduce, dtype;
  std::string local_server, local_device, local_ip, remote_server, remote_device, remote_ip;
  std::vector<int64_t> ranks;
  int64_t rank = -1, rank_size = -1, peer_rank = -1, remote_rank = -1;
  int64_t device = -1, stream = -1, task = -1, index = -1, count = -1, port = -1;
  int64_t connected = -1, need = -1;
  uint64_t src = 0, dst = 0, size = 0;
  bool from_env = false;

  // Knowledge base and the line's surroundings (screen output, launcher logs, tracebacks).
  std::string kb;              // knowledge-base entry id the line is an instance of
  std::string layout;          // which screen layout or "plog" / "pattern" carried it
  std::string context;         // the traceback frames printed right before the line
  std::string launcher;        // launcher's process name from the line prefix ("VllmWorker")
  std::string op;              // the collective a line names ("ALLREDUCE", "HcclAllreduce")
  std::string named_kb;        // an entry the line names as the fault (Vigil's root-cause line):
                               // then rank/pid/ip are that fault's rank, not the printer's
  int64_t informer_rank = -1;
  bool exited = false;
  int64_t launcher_rank = -1;  // the rank the line's prefix names ("[rank3]:", "rank=3")
  bool launcher_weak = false;  // that rank is a weak prefix's ("3: ", a task label or a gutter)
  int64_t src_rank = -1, dst_rank = -1, seq = -1, timeout_ms = -1, elapsed_ms = -1, ret = -1;
};

// A short name held inline (op, dtype and reduce names of op entries): no allocation per op, and
// a run log has millions of them. Longer names are cut at N-1 bytes.
template <size_t N>
class ShortName {
 public:
  ShortName() = default;
  ShortName(std::string_view s) { assign(s); }  // NOLINT: implicit, like std::string
  void assign(std::string_view s) {
    len_ = static_cast<uint8_t>(s.size() < N ? s.size() : N - 1);
    std::memcpy(buf_, s.data(), len_);
  }
  ShortName& operator=(std::string_view s) {
    assign(s);
    return *this;
  }
  std::string_view view() const { return std::string_view(buf_, len_); }
  operator std::string_view() const { return view(); }  // NOLINT
  std::string str() const { return std::string(view()); }
  bool empty() const { return len_ == 0; }
  void clear() { len_ = 0; }
  friend bool operator==(const ShortName& a, const ShortName& b) { return a.view() == b.view(); }
  friend bool operator==(const ShortName& a, std::string_view b) { return a.view() == b; }

 private:
  char buf_[N - 1] = {};
  uint8_t len_ = 0;
};

// One `Entry-Hccl<Op>` line, compact (the bulk of run logs when HCCL_ENTRY_LOG_ENABLE=1).
struct OpEntry {
  Micros time = kNoTime;
  uint64_t count = 0;
  Loc loc;
  int64_t seq = 0;            // ordinal of this op on its communicator within the process
  int32_t stream = -1;
  int32_t local_rank = -1;
  ShortName<32> op;           // "AllReduce"
  ShortName<16> dtype;        // "float32"
  ShortName<8> reduce;        // "sum" or empty
};

}  // namespace vigil::diagnose
