#include "api/hccl_api_util.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/env_config.h"
#include "common/tls.h"
#include "common/tsc_clock.h"
#include "dfx/task_exception.h"
#include "log/plog.h"

namespace vigil::api {

namespace {

// What an HcclComm points to. Never freed (a destroyed communicator's handle stays, retired), and
// `weak` never changes after registration: LookupComm's per-thread cache reads it without the
// registry's lock.
struct CommHandle {
  std::shared_ptr<comm::Communicator> comm;  // the handle's reference; null once unregistered
  std::weak_ptr<comm::Communicator> weak;
};

std::mutex g_handles_mu;
// Bumped (under g_handles_mu) whenever a handle is unregistered: LookupComm's per-thread cache
// of its last answer stays good while it is unchanged.
std::atomic<uint64_t> g_removals{0};
std::unordered_map<const void*, CommHandle*>& Handles() {
  static auto* handles = new std::unordered_map<const void*, CommHandle*>();
  return *handles;
}
// Unregistered handles (under g_handles_mu): kept, so that no other handle gets their address.
std::vector<std::unique_ptr<CommHandle>>& Retired() {
  static auto* retired = new std::vector<std::unique_ptr<CommHandle>>();
  return *retired;
}

}  // namespace

namespace detail {
std::atomic<bool> g_process_ready{false};

HcclResult EnsureProcessReadySlow(std::string_view api) {
  if (!g_process_ready.load(std::memory_order_acquire)) {
    static std::once_flag once;
    std::call_once(once, [] {
      log::EchoEnvOnce();
      // The clock's first anchor (common/tsc_clock.h): by the first op, a communicator's set-up
      // later, the process has its counter rate and the op's clock reads are counter reads.
      TscNow();
      dfx::InstallTaskExceptionHandler();
      InstallProfilerLabels();
      // HCCL loads a tuner plugin's cost tables from here; Vigil's algorithm choice has its own
      // inputs, so the plugin is not loaded: said once, as HCCL reports its plugin's loading.
      if (const char* plugin = getenv("HCCL_TUNER_PLUGIN"); plugin != nullptr && *plugin) {
        HCCL_RUN_WARNING(
            "[Tuner]HCCL_TUNER_PLUGIN[{}] is set, but tuner plugins are not supported: "
            "the plugin is not loaded and algorithms are chosen as without it",
            plugin);
      }
    });
    g_process_ready.store(true, std::memory_order_release);
  }
  if (!EnvLoadError().empty()) {
    static std::once_flag screen_once;
    std::call_once(screen_once, [] {
      const auto& bad = Env().invalid;
      if (!bad.empty()) log::ScreenError("EI0001", {bad[0].value, bad[0].name, bad[0].expected});
    });
    HCCL_ERROR("[InitGroupStage][EnvConfig][{}]{}, return HCCL_E_PARA", api, EnvLoadError());
    return HCCL_E_PARA;
  }
  return HCCL_SUCCESS;
}
}  // namespace detail

HcclComm RegisterComm(std::shared_ptr<comm::Communicator> comm) {
  auto* handle = new CommHandle{comm, comm};
  std::lock_guard<std::mutex> lock(g_handles_mu);
  Handles()[handle] = handle;
  return handle;
}

std::shared_ptr<comm::Communicator> LookupComm(HcclComm handle) {
  if (handle == nullptr) return nullptr;
  // Every op looks its communicator up, and a thread usually names the same one again: the
  // cache saves the registry's lock and hash lookup. It holds the communicator weakly (through
  // its handle, which is never freed), so a destroyed one is never kept alive by it; and it is
  // trivial, so that reaching it costs no thread_local guard.
  struct Last {
    HcclComm handle;
    CommHandle* entry;
    uint64_t removals;
  };
  thread_local Last last{nullptr, nullptr, 0};
  Last& l = TlsOnce(last);
  if (handle == l.handle && g_removals.load(std::memory_order_acquire) == l.removals) {
    if (auto comm = l.entry->weak.lock()) return comm;
  }
  std::lock_guard<std::mutex> lock(g_handles_mu);
  auto it = Handles().find(handle);
  if (it == Handles().end()) return nullptr;
  l = Last{handle, it->second, g_removals.load(std::memory_order_relaxed)};
  return it->second->comm;
}

std::shared_ptr<comm::Communicator> UnregisterComm(HcclComm handle) {
  if (handle == nullptr) return nullptr;
  CommHandle* owned = nullptr;
  std::shared_ptr<comm::Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(g_handles_mu);
    auto it = Handles().find(handle);
    if (it == Handles().end()) return nullptr;
    owned = it->second;
    Handles().erase(it);
    g_removals.fetch_add(1, std::memory_order_release);
    comm = std::move(owned->comm);
    Retired().emplace_back(owned);
  }
  return comm;
}

HcclComm FindCommByName(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_handles_mu);
  for (const auto& [key, entry] : Handles()) {
    const comm::Communicator* c = entry->comm.get();
    if (c == nullptr) continue;
    const std::string& own = c->user_name().empty() ? c->identifier() : c->user_name();
    if (own == name) return const_cast<void*>(key);
  }
  return nullptr;
}

const char* ResultName(HcclResult code) {
  switch (code) {
    case HCCL_SUCCESS: return "HCCL_SUCCESS";
    case HCCL_E_PARA: return "HCCL_E_PARA";
    case HCCL_E_PTR: return "HCCL_E_PTR";
    case HCCL_E_MEMORY: return "HCCL_E_MEMORY";
    case HCCL_E_INTERNAL: return "HCCL_E_INTERNAL";
    case HCCL_E_NOT_SUPPORT: return "HCCL_E_NOT_SUPPORT";
    case HCCL_E_NOT_FOUND: return "HCCL_E_NOT_FOUND";
    case HCCL_E_UNAVAIL: return "HCCL_E_UNAVAIL";
    case HCCL_E_SYSCALL: return "HCCL_E_SYSCALL";
    case HCCL_E_TIMEOUT: return "HCCL_E_TIMEOUT";
    case HCCL_E_OPEN_FILE_FAILURE: return "HCCL_E_OPEN_FILE_FAILURE";
    case HCCL_E_TCP_CONNECT: return "HCCL_E_TCP_CONNECT";
    case HCCL_E_ROCE_CONNECT: return "HCCL_E_ROCE_CONNECT";
    case HCCL_E_TCP_TRANSFER: return "HCCL_E_TCP_TRANSFER";
    case HCCL_E_ROCE_TRANSFER: return "HCCL_E_ROCE_TRANSFER";
    case HCCL_E_RUNTIME: return "HCCL_E_RUNTIME";
    case HCCL_E_DRV: return "HCCL_E_DRV";
    case HCCL_E_PROFILING: return "HCCL_E_PROFILING";
    case HCCL_E_CCE: return "HCCL_E_CCE";
    case HCCL_E_NETWORK: return "HCCL_E_NETWORK";
    case HCCL_E_AGAIN: return "HCCL_E_AGAIN";
    case HCCL_E_REMOTE: return "HCCL_E_REMOTE";
    case HCCL_E_SUSPENDING: return "HCCL_E_SUSPENDING";
    case HCCL_E_OPRETRY_FAIL: return "HCCL_E_OPRETRY_FAIL";
    case HCCL_E_OOM: return "HCCL_E_OOM";
    case HCCL_E_IN_STATUS: return "HCCL_E_IN_STATUS";
    default: return "HCCL_E_RESERVED";
  }
}

HcclResult ArgError(std::string_view api, HcclResult code, const std::string& what) {
  const unsigned long long err_no = (5ull << 24) | static_cast<unsigned long long>(code);
  HCCL_ERROR("[InvalidArgument][{}]errNo[0x{:016x}] {}, return {}", api, err_no, what,
             ResultName(code));
  return code;
}

}  // namespace vigil::api
