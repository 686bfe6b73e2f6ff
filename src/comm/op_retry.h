// Op retry (HCCL_OP_RETRY_ENABLE / HCCL_OP_RETRY_PARAMS, common/op_retry_config.h): a collective
// whose data link broke while the peer process lives is re-executed from its start, on re-made
// links, with its original inputs, up to MaxCnt times; the result is the fault-free run's.
//
//   1. A rank's attempt fails on a broken link of a covered level (L0 inside a host, L1 between
//      hosts) whose peer has not exited (the heartbeat's liveness probe), or a retry notice for
//      the op arrives (Progress stops: WaitPolicy::abort2).
//   2. It retires every link with a notice {epoch, op seq, attempt, origin, both ends}
//      (Transport::BeginEpoch): the peers, blocked on healthy links, read it before the bye,
//      stop their attempt too and pass the notice on over their own links. A peer the graph of
//      healthy links does not reach learns it from the handshakes of the new epoch, or from a
//      notice connection sent every IntervalTime to the peers a rank waits for.
//   3. Links are re-made at the new epoch within HoldTime (dialed every IntervalTime); older
//      epochs' handshakes are rejected, so nothing of the failed attempt reaches the new links.
//   4. Inputs an in-place op overwrote are restored from the copy taken at the op's start, and
//      the op runs again. The ranks judge attempts by the op's collective sequence number.
//   5. A rank returns an op only past its commit (a barrier: every rank had all of the op's
//      data). A rank whose failed attempt had reached the commit and that learns a peer returned
//      the op (the peer refuses its retry, or dials it for a later op) completes the op without
//      running it again; one still moving the op's data refuses the later op's links.
// Not retried (they fail as without retry): point-to-point ops, an op some rank has completed
// already (HCCL's "all ranks stop at the same op" condition: that rank refuses, the others
// end with HCCL_E_OPRETRY_FAIL), a link not back within HoldTime, MaxCnt used up (the held link
// error is then reported: ERROR CQE, EI0013). The heartbeat hands a data link's error to the
// retry (HoldLinkErrorForRetry) instead of raising ERROR CQE while a retry may recover it.
//
// Log lines (run log; failures also at ERROR): "[OpRetry]communicator[..] rank[..]: op tag[..]
// index[..] seq[..] attempt[n/MaxCnt] failed on the link rank[a] <-> rank[b] ...: retry ...",
// "... links re-made at epoch[e] in [t]ms: re-executing ...", "... recovered by retry after
// [n] attempt(s), [x]s lost, link rank[a] <-> rank[b]", "... retry failed: ..." / "... can not
// retry: ...". The flight recorder keeps each step (OpObserver::OnRetry).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/op_retry_config.h"
#include "common/time_util.h"
#include "transport/link.h"

namespace vigil::comm {

// The communicator's op retry state.
struct OpRetryState {
  OpRetryConfig cfg;
  bool on = false;  // cfg.any() and more than one rank
  // Set by a notice for the running op (HCCL_E_AGAIN): Progress gives the attempt up.
  std::atomic<int> interrupt{0};
  std::function<bool(uint32_t)> peer_exited;  // the heartbeat's liveness probe

  std::mutex mu;                 // the rest, shared with the transport's threads
  uint64_t running_seq = 0;      // the collective running (0: none)
  uint64_t done_seq = 0;         // the last collective completed
  transport::RetryNotice asked;  // the newest notice for the running or a later collective
  bool asked_valid = false;
  std::string asked_reason;                // this rank's own link error, when it asked itself
  std::vector<transport::LinkError> held;  // link errors the heartbeat handed over
  uint64_t refused_seq = 0;                // a retry this rank refused (it completed that op)
  uint64_t later_seq = 0;                  // a peer runs this later op (it returned ours)
  bool report_now = false;                 // the op gave up: link errors are reported, not held

  // The op's commit (barrier) is running, or the failed attempt had reached it: this rank had
  // all of the op's data. Written by the op's thread, read by the transport's.
  std::atomic<bool> committing{false};

  // Per op, on the op's thread only.
  uint32_t attempts = 0;  // re-executions so far
  SteadyClock::time_point first_failure;
  WallClock::time_point first_failure_wall;
  uint32_t end_a = 0, end_b = 0;  // the link that failed first
  struct Saved {
    void* ptr;
    size_t offset;  // into backup
    size_t bytes;
  };
  std::vector<Saved> saved;  // in-place inputs copied at the op's start
  std::vector<char> backup;
};

}  // namespace vigil::comm
