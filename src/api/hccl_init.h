// The end of every communicator init (root info, rank table, sub-communicator): the config's
// fields over the environment's, the communicator made, its DFX attached, its handle registered.
#pragma once

#include <string>

#include "bootstrap/root_info.h"
#include "comm/communicator.h"
#include "hccl/hccl_types.h"

namespace vigil::api {

// host_ip: the address this rank's links listen on ("" = picked by the usual rules).
// default_name: the communicator's name when the config gives none ("" = its identifier).
// inherit: settings to start from instead of the environment's (a shrunk communicator keeps its
// predecessor's buffer size, exec timeout, algorithm and determinism unless `config` says).
HcclResult InitWithRoot(const char* api, uint32_t nRanks, const bootstrap::RootInfo& root,
                        uint32_t rank, const HcclCommConfig* config, HcclComm* comm,
                        const std::string& host_ip = "", const std::string& default_name = "",
                        const comm::CommOptions* inherit = nullptr);

}  // namespace vigil::api
