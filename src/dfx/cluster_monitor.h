// The hooks by which the API layer and the task-exception handler reach the cluster heartbeat
// (heartbeat.h). A communicator is attached after init and detached at destroy.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/op.h"
#include "dfx/heartbeat_event.h"

namespace vigil::dfx {

// Registers a new communicator with the process's heartbeat: neighbour links, op in/out
// counters, its transport's link errors as ERROR CQE events, and abort of its ops when a member
// is known LOST.
void AttachHeartbeat(const std::shared_ptr<comm::Communicator>& comm);
void DetachHeartbeat(const comm::Communicator* comm);

// After the "Task run failed" lines of a failed op: the Cluster Exception Location lines for
// the key heartbeat events this process holds (none when there are none); returns those events
// in print order.
std::vector<HbEvent> ReportClusterException(const comm::OpRecord& op);
// The heartbeat events those lines name, in print order (empty when none or heartbeat off).
std::vector<HbEvent> ClusterExceptionEvents(const comm::OpRecord& op);

// Whether a peer rank of a failed op's communicator has exited (heartbeat.h PeerExited).
bool PeerExited(const comm::OpRecord& op, int32_t remote_rank);

}  // namespace vigil::dfx
