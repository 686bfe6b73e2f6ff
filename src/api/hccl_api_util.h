// Shared pieces of the hccl C API: the handle registry (so a destroyed or foreign HcclComm is
// an error, never a crash) and argument checks that write exactly one ERROR line naming the
// argument, in HCCL's "errNo[0x0000000005000001] ... return HCCL_E_PARA" style.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "comm/communicator.h"
#include "common/env_config.h"
#include "hccl/hccl.h"
#include "runtime/stream.h"

namespace vigil::api {

namespace detail {
extern std::atomic<bool> g_process_ready;  // EnsureProcessReady's one-time work is done
HcclResult EnsureProcessReadySlow(std::string_view api);
}  // namespace detail

// Echoes the env once, installs the DFX handlers; returns HCCL_E_PARA (and raises EI0001) when
// the environment holds a bad value. Every op calls it: inline, two loads once ready.
inline HcclResult EnsureProcessReady(std::string_view api) {
  if (detail::g_process_ready.load(std::memory_order_acquire) && EnvLoadError().empty()) {
    return HCCL_SUCCESS;
  }
  return detail::EnsureProcessReadySlow(api);
}

// Names HCCL ops in the acl profiling trace (hccl_prof_observer.cc); once per process.
void InstallProfilerLabels();

HcclComm RegisterComm(std::shared_ptr<comm::Communicator> comm);
// nullptr for null, unknown or destroyed handles.
std::shared_ptr<comm::Communicator> LookupComm(HcclComm handle);
// Removes the handle; the communicator lives on while queued ops hold it.
std::shared_ptr<comm::Communicator> UnregisterComm(HcclComm handle);

// The live communicator named `name` (HcclGetCommName's answer), or nullptr.
HcclComm FindCommByName(std::string_view name);

// One ERROR line: "[<stage>][InvalidArgument][<api>]errNo[0x..] <what>, return <code>".
HcclResult ArgError(std::string_view api, HcclResult code, const std::string& what);
const char* ResultName(HcclResult code);

}  // namespace vigil::api
