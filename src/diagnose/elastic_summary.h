// torchrun's failure summary (torch.distributed.elastic's ChildFailedError): after the launcher's
// traceback it prints, between rules, a "Failures:" section and a "Root Cause (first observed
// failure):" section, each a list of entries
//   [0]:
//     time      : 2026-09-07_13:02:58
//     host      : localhost
//     rank      : 1 (local_rank: 1)
//     exitcode  : 1 (pid: 14690)
//     error_file: <N/A>
//     traceback : To enable traceback see: ...     (or "Signal 9 (SIGKILL) received by PID 14689")
// The root-cause entry names the worker that failed first: its rank, exit code or signal, pid,
// host and time. Read as a block, not line by line: the fields of one entry make one event.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/events.h"

namespace vigil::diagnose {

class ElasticSummary {
 public:
  // Follows the summary through the lines of a file, every line in order: true when `line`
  // belongs to a summary (a section header, an entry's "[k]:", one of its fields, a rule between
  // sections). The caller then gives the same line to Read().
  bool Member(std::string_view line);

  // Reads the member line just passed to Member(): fields go into the current entry, and an
  // entry that is complete (its traceback field, or the next entry or section) becomes an event
  // appended to *out: knowledge-base entry "framework.torchrun_first_failure" for the root
  // cause, "framework.torchrun_child_failed" for the other failures; launcher_rank and rank: the
  // worker's rank, pid, ret: its exit code, status: the signal's name ("SIGKILL") when it died of
  // one, else "exitcode N" (empty when the log lost it), time, local_server: the host, exited;
  // text: the entry in one line. loc: where its rank field is.
  void Read(std::string_view line, const Loc& loc, std::vector<Event>* out);

  // At the end of the file: the entry still open (a log cut inside the summary) as an event.
  void Flush(std::vector<Event>* out);

 private:
  std::string_view Body(std::string_view line);
  enum class Section { kNone, kFailures, kRoot };
  struct Entry {
    bool open = false;
    Section section = Section::kNone;
    Loc loc;
    bool have_loc = false;
    int64_t rank = -1, local_rank = -1, exitcode = 0, pid = -1;
    bool have_exit = false;
    std::string time, host, traceback;
  };
  void Close(std::vector<Event>* out);

  bool in_block_ = false;
  // Columns of text no prefix row knows before the block's header ("- ", cat -n's numbers, a
  // shipper's JSON head): every line of the block carries as many.
  size_t wrap_ = 0;
  Section section_ = Section::kNone;
  Entry entry_;
};

// The name of signal `n` as torchrun prints it ("SIGKILL" for 9); "signal n" when unknown.
std::string SignalName(int64_t n);

}  // namespace vigil::diagnose
