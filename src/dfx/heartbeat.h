// The cluster heartbeat (seed: 集群心跳机制): one per process, shared by every communicator
// attached to it. Off with VIGIL_HEARTBEAT=0 or HCCL_DFS_CONFIG cluster_heartbeat:off; STUCK
// detection off with HCCL_DFS_CONFIG stuck_detection:off.
//
// - Maintenance links of its own: a TCP listener per process (advertised in RankInfo at
//   rendezvous) and one connection per neighbour process, separate from every data link. The
//   neighbours of a rank are those of heartbeat_graph.h within each communicator (ring + degree-2
//   de Bruijn: <= 6 per rank, diameter <= log2 N); links are shared and ref-counted across
//   communicators, and the lower listener address dials.
// - Thread "Hccl_HeartBeat": a 50 ms poll loop; a beat frame to every neighbour each beat
//   interval (1 s, or a third of VIGIL_HEARTBEAT_LOST_TIMEOUT when that is shorter) carrying the
//   op in/out counters of this process's communicators and those it heard of other ranks.
// - LOST: no frame from a neighbour within VIGIL_HEARTBEAT_LOST_TIMEOUT (default 30 s), or its
//   link closed without a bye (process died, connection reset): at once. STUCK: every third of
//   HCCL_EXEC_TIMEOUT each communicator compares this rank's counters with its peers'; a rank
//   that has not entered an op a peer is inside, or is inside one a peer has already left, with
//   no progress over two checks, reports itself (window 1/3..2/3 of the exec timeout) — unless
//   it is inside an op some rank has not entered yet (then it waits on that rank, which reports
//   itself) or its communicator was aborted for a LOST or ERROR CQE. Beats relay the counters
//   of every rank, so "some rank" is any rank of the communicator, neighbour or not.
//   ERROR CQE: a data link's error from the transport's LinkErrorObserver, unless the peer's
//   process has exited (its maintenance listener refuses a connection): then the peer is LOST.
// - Events: recorded once per (crimer, status) — the loop guard —, logged to the run log as
//   "[TaskExecStage][HeartbeatAbnormal]local rank [..]: crimer rank [..] status[..] by informer
//   rank [..]", and forwarded to every live neighbour except the sender and the informer.
// - Fail fast: LOST or ERROR CQE of a member aborts every attached communicator holding it
//   (HCCL_E_NETWORK for LOST, HCCL_E_REMOTE for CQE), so ops waiting on it end at once.
// - The listener also answers `vigil health` queries with this process's view (JSON).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/op.h"
#include "common/time_util.h"
#include "dfx/heartbeat_event.h"

namespace vigil::dfx {

class Heartbeat {
 public:
  // The process's heartbeat (never destroyed; its thread is joined at exit).
  static Heartbeat& Instance();

  // False when VIGIL_HEARTBEAT=0 or the listener could not be opened.
  bool enabled() const;
  // Opens the listener and starts the thread on first use; its port, or 0 when disabled.
  // Registered with bootstrap as the maintenance-port provider.
  uint16_t EnsureListener(const std::string& host_ip);
  // "ip:port" of the listener, "" when not started.
  std::string listen_address() const;

  void Attach(const std::shared_ptr<comm::Communicator>& comm);
  void Detach(const comm::Communicator* comm);
  // The Cluster Exception Location lines for a failed op (first three at ERROR, all to run);
  // returns the events they name, as KeyEvents.
  std::vector<HbEvent> ReportClusterException(const comm::OpRecord& op);
  // The events those lines are made of (VigilCommGetLastErrorMessage), in print order.
  std::vector<HbEvent> KeyEvents(const comm::OpRecord& op);

  // Whether rank `rank` of communicator `identifier` has exited (its maintenance listener
  // refuses connections); false when alive, unknown or the heartbeat is off. Blocks <= 300 ms.
  bool PeerExited(const std::string& identifier, uint32_t rank);

  // Rank and pid of heartbeat identity `uid` in communicator `identifier`, else in another
  // attached communicator (*in names the one); false when none attached holds it.
  bool Locate(const std::string& identifier, const std::string& uid, std::string* in,
              uint32_t* rank, uint32_t* pid);

  // Ranks of communicator `identifier` this process knows LOST (an event about them, or their
  // process found exited); empty when none, or when no communicator of that name is attached.
  std::set<uint32_t> LostRanks(const std::string& identifier);

  // A shrink this process took part in; `vigil health` lists it beside the communicators.
  struct ShrinkNote {
    std::string from, to;  // identifiers
    uint32_t from_rank = 0, to_rank = 0, from_size = 0, to_size = 0;
    std::set<uint32_t> excluded;
    int64_t ms = 0;
    WallClock::time_point at;
  };
  void NoteShrink(const ShrinkNote& note);

  // This process's view for `vigil health` (JSON text): its communicators, the last ones it
  // destroyed ("previous") and its shrinks.
  std::string ViewJson();
  // Every event recorded so far (tests).
  std::vector<HbEvent> Events();

  // BYE to every neighbour, close, join the thread. Called at exit; idempotent.
  void Stop();

  class Impl;

 private:
  Heartbeat();
  Impl* impl_;
};

}  // namespace vigil::dfx
