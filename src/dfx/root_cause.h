// The root-cause screen line: when a rank's op fails (EI0002, EI0012, EI0013 on the screen), the
// heartbeat event it holds about another rank — LOST, STUCK, ERROR CQE, the first of the Cluster
// Exception Location lines — is said on the screen right after HCCL's line, not only in the plog:
//
//   [PID: 4242] 2026-12-04-16:30:00.123.789 Vigil_Root_Cause(hccl.heartbeat_lost): rank 2
//   (127.0.0.1/2, pid 5678, exited) LOST, class process: <the entry's meaning, first sentence>;
//   informer rank 1 (127.0.0.1/1), 3104 ms after the event.
//
// (one line). The words come from the knowledge base entry of the status (its class and
// meaning); the line's own format is the entry "vigil.root_cause_line", whose pattern reads it
// back. No event, no line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "comm/op.h"
#include "common/knowledge_base.h"
#include "dfx/heartbeat_event.h"

namespace vigil::dfx {

// An event and where its ranks sit in the failed op's communicator (or another this process
// holds; -1 when none holds them).
struct RootCause {
  HbEvent event;
  int64_t rank = -1;
  uint32_t pid = 0;     // 0 = unknown
  bool exited = false;  // the crimer's process is known to be gone (its listener refuses)
  int64_t informer_rank = -1;
};

// The knowledge-base entry of a status: hccl.heartbeat_lost / _stuck / _error_cqe; nullptr when
// the base has none (the line then says "unknown").
const kb::Entry* RootCauseEntry(const kb::KnowledgeBase& base, HbStatus status);

// The line after the "[PID: n] time " prefix, as the header shows. `now` gives the delay since
// the informer discovered the event.
std::string FormatRootCauseLine(const RootCause& cause, const kb::KnowledgeBase& base,
                                WallClock::time_point now);

// The root cause of a failed op from its key events (ReportClusterException's, in print order:
// the first is the root); empty when there is none. May probe whether a LOST rank's process
// has exited (heartbeat.h PeerExited, <= 600 ms, answered once per rank).
std::optional<RootCause> FindRootCause(const comm::OpRecord& op, const std::vector<HbEvent>& key);

// FindRootCause's line, ready for log::ScreenError's `after`: none or one.
std::vector<std::string> RootCauseLines(const comm::OpRecord& op, const std::vector<HbEvent>& key);

}  // namespace vigil::dfx
