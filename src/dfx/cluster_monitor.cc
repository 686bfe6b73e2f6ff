// Placeholder hooks until the heartbeat lands (issue 4): nothing is monitored yet.
#include "dfx/cluster_monitor.h"

namespace vigil::dfx {

void AttachHeartbeat(const std::shared_ptr<comm::Communicator>&) {}
void DetachHeartbeat(const comm::Communicator*) {}
void ReportClusterException(const comm::OpRecord&) {}

}  // namespace vigil::dfx
