// The API layer's and task-exception handler's way into the cluster heartbeat (heartbeat.h).
#include "dfx/cluster_monitor.h"

#include "bootstrap/root_info.h"
#include "dfx/heartbeat.h"

namespace vigil::dfx {

namespace {

uint16_t MaintenancePort(const std::string& host_ip) {
  return Heartbeat::Instance().EnsureListener(host_ip);
}

// Rendezvous advertises the heartbeat listener of every rank; registering is only a pointer
// store, so it is safe at library load (the listener starts on the first rendezvous).
const bool g_registered = [] {
  bootstrap::SetMaintenancePortProvider(&MaintenancePort);
  return true;
}();

}  // namespace

void AttachHeartbeat(const std::shared_ptr<comm::Communicator>& comm) {
  (void)g_registered;
  Heartbeat::Instance().Attach(comm);
}

void DetachHeartbeat(const comm::Communicator* comm) {
  Heartbeat::Instance().Detach(comm);
}

std::vector<HbEvent> ReportClusterException(const comm::OpRecord& op) {
  return Heartbeat::Instance().ReportClusterException(op);
}

bool PeerExited(const comm::OpRecord& op, int32_t remote_rank) {
  if (remote_rank < 0) return false;
  return Heartbeat::Instance().PeerExited(op.identifier(), static_cast<uint32_t>(remote_rank));
}

std::vector<HbEvent> ClusterExceptionEvents(const comm::OpRecord& op) {
  return Heartbeat::Instance().KeyEvents(op);
}

}  // namespace vigil::dfx
