// Symmetric memory windows (hccl/hccl_comm.h, hccl/hccl_sym_win.h): HcclCommSymWinRegister,
// HcclCommSymWinDeregister, HcclCommSymWinGet, HcclSymWinGetPeerPointer.
//
// Every rank registers its windows in the same order (a collective call in HCCL), so the k-th
// window of each rank of a communicator is one symmetric window. A peer's part of it is
// addressable only when that rank runs in this process (threads as ranks): its window is then
// found in this registry by (communicator identifier, rank, k).
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "api/hccl_api_util.h"
#include "hccl/hccl_sym_win.h"
#include "log/plog.h"

using vigil::api::ArgError;

namespace {

struct Window {
  const void* comm_handle;
  std::string identifier;
  uint32_t rank;
  uint64_t seq;  // the k of "k-th window of this rank"
  uintptr_t base;
  uint64_t size;
};

std::mutex g_mu;
std::map<const Window*, std::unique_ptr<Window>>& Windows() {
  static auto* windows = new std::map<const Window*, std::unique_ptr<Window>>();
  return *windows;
}
// Windows registered so far by each (identifier, rank), for the next one's seq.
std::map<std::pair<std::string, uint32_t>, uint64_t>& Registered() {
  static auto* registered = new std::map<std::pair<std::string, uint32_t>, uint64_t>();
  return *registered;
}

constexpr uint64_t kGiB = 1ull << 30;

}  // namespace

extern "C" {

HcclResult HcclCommSymWinRegister(HcclComm comm, void* addr, uint64_t size,
                                  HcclCommSymWindow* winHandle, uint32_t flag) {
  constexpr const char* kApi = "HcclCommSymWinRegister";
  auto c = vigil::api::LookupComm(comm);
  if (!c) return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  if (addr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [addr] is nullptr");
  if (winHandle == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [winHandle] is nullptr");
  if (flag != 1) {
    return ArgError(kApi, HCCL_E_PARA, fmt::format("flag[{}] is invalid: only 1 is supported", flag));
  }
  const uint64_t max_bytes = c->options().sym_win_max_gb * kGiB;
  if (size == 0 || size > max_bytes) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("size[{}] is invalid: expected 1 to {} bytes "
                                "(hcclSymWinMaxMemSizePerRank {}G of the comm config)",
                                size, max_bytes, c->options().sym_win_max_gb));
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(addr);
  auto window = std::make_unique<Window>();
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [key, w] : Windows()) {
    if (w->comm_handle == comm && base < w->base + w->size && w->base < base + size) {
      return ArgError(kApi, HCCL_E_PARA,
                      fmt::format("window [{:#x}, +{}) overlaps the window registered at "
                                  "{:#x} ({} bytes)",
                                  base, size, w->base, w->size));
    }
  }
  *window = Window{comm, c->identifier(), c->rank(), Registered()[{c->identifier(), c->rank()}]++,
                   base, size};
  const Window* key = window.get();
  Windows()[key] = std::move(window);
  *winHandle = const_cast<Window*>(key);
  HCCL_RUN_INFO("{}: communicator[{}] rank[{}] window[{}] at {:#x}, {} bytes", kApi,
                c->identifier(), c->rank(), key->seq, base, size);
  return HCCL_SUCCESS;
}

HcclResult HcclCommSymWinDeregister(HcclCommSymWindow winHandle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Windows().find(static_cast<const Window*>(winHandle));
  if (it == Windows().end()) {
    return ArgError("HcclCommSymWinDeregister", HCCL_E_PARA,
                    "winHandle is null, deregistered or unknown");
  }
  Windows().erase(it);
  return HCCL_SUCCESS;
}

HcclResult HcclCommSymWinGet(HcclComm comm, void* ptr, size_t size, HcclCommSymWindow* winHandle,
                             size_t* offset) {
  constexpr const char* kApi = "HcclCommSymWinGet";
  if (!vigil::api::LookupComm(comm)) {
    return ArgError(kApi, HCCL_E_PARA, "comm is null, destroyed or unknown");
  }
  if (ptr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [ptr] is nullptr");
  if (winHandle == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [winHandle] is nullptr");
  if (offset == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [offset] is nullptr");
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [key, w] : Windows()) {
    if (w->comm_handle == comm && p >= w->base && p - w->base + size <= w->size) {
      *winHandle = const_cast<Window*>(key);
      *offset = p - w->base;
      return HCCL_SUCCESS;
    }
  }
  return ArgError(kApi, HCCL_E_NOT_FOUND,
                  fmt::format("[{:#x}, +{}) lies in no window registered on this communicator",
                              p, size));
}

HcclResult HcclSymWinGetPeerPointer(HcclCommSymWindow winHandle, size_t offset, uint32_t peerRank,
                                    void** ptr) {
  constexpr const char* kApi = "HcclSymWinGetPeerPointer";
  if (ptr == nullptr) return ArgError(kApi, HCCL_E_PTR, "ptr [ptr] is nullptr");
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = Windows().find(static_cast<const Window*>(winHandle));
  if (it == Windows().end()) {
    return ArgError(kApi, HCCL_E_PARA, "winHandle is null, deregistered or unknown");
  }
  const Window& mine = *it->second;
  if (offset >= mine.size) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("offset[{}] is invalid: the window holds {} bytes", offset,
                                mine.size));
  }
  auto c = vigil::api::LookupComm(const_cast<void*>(mine.comm_handle));
  if (!c) return ArgError(kApi, HCCL_E_PARA, "the window's communicator was destroyed");
  if (peerRank >= c->size()) {
    return ArgError(kApi, HCCL_E_PARA,
                    fmt::format("peerRank[{}] is invalid: expected < rankSize[{}]", peerRank,
                                c->size()));
  }
  for (const auto& [key, w] : Windows()) {
    if (w->identifier == mine.identifier && w->rank == peerRank && w->seq == mine.seq) {
      if (offset >= w->size) {
        return ArgError(kApi, HCCL_E_PARA,
                        fmt::format("offset[{}] is past rank[{}]'s window of {} bytes", offset,
                                    peerRank, w->size));
      }
      *ptr = reinterpret_cast<void*>(w->base + offset);
      return HCCL_SUCCESS;
    }
  }
  if (c->ranks()[peerRank].pid != static_cast<uint32_t>(getpid())) {
    HCCL_ERROR("[{}]rank[{}] runs in process {}: its window is in another address space, which "
               "this process cannot address (only ranks of one process share pointers), return "
               "HCCL_E_NOT_SUPPORT",
               kApi, peerRank, c->ranks()[peerRank].pid);
    return HCCL_E_NOT_SUPPORT;
  }
  return ArgError(kApi, HCCL_E_NOT_FOUND,
                  fmt::format("rank[{}] has not registered window[{}] of communicator[{}] yet",
                              peerRank, mine.seq, mine.identifier));
}

}  // extern "C"
