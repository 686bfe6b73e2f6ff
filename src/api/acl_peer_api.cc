// The acl C API calls HCCL programs make around their collectives that need little of the CPU
// runtime: peer access between devices, streams with a priority and flags, two-dimensional
// copies, and the operator timeouts. Names, arguments and codes as CANN's acl_rt.h.
//
// Every Vigil device is memory of this one process, so any two distinct devices can reach each
// other; peer access is bookkeeping that answers as CANN does (flags must be 0, the peer must be
// another valid device).
#include <mutex>
#include <set>
#include <utility>

#include "acl/acl.h"
#include "acl_api_util.h"
#include "runtime/device_memory.h"

namespace {

using vigil::api::Guard;
using vigil::api::RawEnum;
using vigil::api::ResolveStream;
using vigil::rt::DeviceMemory;
using vigil::rt::Stream;

struct Peers {
  std::mutex mu;
  std::set<std::pair<int32_t, int32_t>> enabled;  // (device, peer)
};
Peers& PeerState() {
  static Peers* p = new Peers;
  return *p;
}

bool ValidKind(int kind) {
  return kind >= ACL_MEMCPY_HOST_TO_HOST && kind <= ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}

aclError CheckPeer(const char* api, int32_t device, int32_t peer) {
  if (!vigil::rt::IsValidDevice(peer)) {
    VIGIL_RT_FAIL("{} failed: param peerDeviceId[{}] is not a device (0..{}).", api, peer,
                  vigil::rt::DeviceCount() - 1);
    return ACL_ERROR_RT_INVALID_DEVICEID;
  }
  if (peer == device) {
    VIGIL_RT_FAIL("{} failed: param peerDeviceId[{}] is the current device itself.", api, peer);
    return ACL_ERROR_INVALID_PARAM;
  }
  return ACL_SUCCESS;
}

aclError Check2d(const char* api, void* dst, size_t dpitch, const void* src, size_t spitch,
                 size_t width, size_t height, int kind) {
  CHECK_NOT_NULL(api, dst);
  CHECK_NOT_NULL(api, src);
  if (width == 0 || height == 0 || width > dpitch || width > spitch) {
    VIGIL_RT_FAIL(
        "{} failed: width[{}] and height[{}] must be > 0 and width at most dpitch[{}] "
        "and spitch[{}].",
        api, width, height, dpitch, spitch);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (!ValidKind(kind)) {
    VIGIL_RT_FAIL("{} failed: param kind[{}] is not a valid aclrtMemcpyKind.", api, kind);
    return ACL_ERROR_INVALID_PARAM;
  }
  return ACL_SUCCESS;
}

// Row by row, each row checked against the device memory map as a plain copy is.
aclError Copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                size_t height, std::string* detail) {
  for (size_t row = 0; row < height; ++row) {
    char* d = static_cast<char*>(dst) + row * dpitch;
    const char* s = static_cast<const char*>(src) + row * spitch;
    vigil::rt::CopyFault fault;
    aclError rc = DeviceMemory::Instance().CheckedCopy(d, s, width, &fault);
    if (rc != ACL_SUCCESS) {
      *detail = fmt::format("row {}: {}", row, vigil::rt::DescribeCopyFault(fault, d, s, width));
      return rc;
    }
  }
  return ACL_SUCCESS;
}

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtDeviceCanAccessPeer(int32_t* canAccessPeer, int32_t deviceId,
                                                      int32_t peerDeviceId) {
  constexpr const char* kApi = "aclrtDeviceCanAccessPeer";
  CHECK_NOT_NULL(kApi, canAccessPeer);
  for (int32_t d : {deviceId, peerDeviceId}) {
    if (!vigil::rt::IsValidDevice(d)) {
      VIGIL_RT_FAIL("{} failed: device id[{}] is not a device (0..{}).", kApi, d,
                    vigil::rt::DeviceCount() - 1);
      return ACL_ERROR_RT_INVALID_DEVICEID;
    }
  }
  *canAccessPeer = deviceId != peerDeviceId ? 1 : 0;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
  constexpr const char* kApi = "aclrtDeviceEnablePeerAccess";
  if (flags != 0) {
    VIGIL_RT_FAIL("{} failed: param flags[{}] is reserved and must be 0.", kApi, flags);
    return ACL_ERROR_INVALID_PARAM;
  }
  REQUIRE_CURRENT_DEVICE(kApi, dev);
  if (aclError rc = CheckPeer(kApi, dev, peerDeviceId); rc != ACL_SUCCESS) return rc;
  Peers& p = PeerState();
  std::lock_guard<std::mutex> lock(p.mu);
  p.enabled.insert({dev, peerDeviceId});
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
  constexpr const char* kApi = "aclrtDeviceDisablePeerAccess";
  REQUIRE_CURRENT_DEVICE(kApi, dev);
  if (aclError rc = CheckPeer(kApi, dev, peerDeviceId); rc != ACL_SUCCESS) return rc;
  Peers& p = PeerState();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.enabled.erase({dev, peerDeviceId}) == 0) {
    VIGIL_RT_FAIL("{} failed: access from device {} to peer {} was not enabled.", kApi, dev,
                  peerDeviceId);
    return ACL_ERROR_INVALID_PARAM;
  }
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateStreamWithConfig(aclrtStream* stream, uint32_t priority,
                                                         uint32_t flag) {
  constexpr const char* kApi = "aclrtCreateStreamWithConfig";
  CHECK_NOT_NULL(kApi, stream);
  if (priority > 7) {
    VIGIL_RT_FAIL("{} failed: param priority[{}] must be 0..7.", kApi, priority);
    return ACL_ERROR_INVALID_PARAM;
  }
  if ((flag & ~(ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC)) != 0) {
    VIGIL_RT_FAIL(
        "{} failed: param flag[{:#x}] has bits other than ACL_STREAM_FAST_LAUNCH and "
        "ACL_STREAM_FAST_SYNC.",
        kApi, flag);
    return ACL_ERROR_INVALID_PARAM;
  }
  // Vigil's streams launch and synchronize the fast way already, and run on CPU threads of equal
  // priority: every configuration is a plain stream.
  return aclrtCreateStream(stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSetOpWaitTimeout(uint32_t timeout) {
  // Device operators' wait timeout: Vigil runs no device operators; collectives keep
  // HCCL_EXEC_TIMEOUT.
  RT_DEBUG("aclrtSetOpWaitTimeout({}) noted: no device operators to apply it to.", timeout);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetOpExecuteTimeOut(uint32_t timeout) {
  RT_DEBUG("aclrtSetOpExecuteTimeOut({}) noted: no device operators to apply it to.", timeout);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpy2d(void* dst, size_t dpitch, const void* src, size_t spitch,
                                           size_t width, size_t height, aclrtMemcpyKind kind) {
  constexpr const char* kApi = "aclrtMemcpy2d";
  const int raw = RawEnum(kind);
  if (aclError rc = Check2d(kApi, dst, dpitch, src, spitch, width, height, raw);
      rc != ACL_SUCCESS) {
    return rc;
  }
  return Guard(kApi, [&]() -> aclError {
    std::string detail;
    aclError rc = Copy2d(dst, dpitch, src, spitch, width, height, &detail);
    if (rc != ACL_SUCCESS) {
      VIGIL_RT_FAIL("{} failed: memory copy fault (sdma error), kind[{}], {}.", kApi, raw, detail);
    }
    return rc;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpy2dAsync(void* dst, size_t dpitch, const void* src,
                                                size_t spitch, size_t width, size_t height,
                                                aclrtMemcpyKind kind, aclrtStream stream) {
  constexpr const char* kApi = "aclrtMemcpy2dAsync";
  if (aclError rc = Check2d(kApi, dst, dpitch, src, spitch, width, height, RawEnum(kind));
      rc != ACL_SUCCESS) {
    return rc;
  }
  return Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    s->Enqueue(vigil::rt::TaskType::kMemcpy,
               [dst, dpitch, src, spitch, width, height](std::string* detail) {
                 aclError copy_rc = Copy2d(dst, dpitch, src, spitch, width, height, detail);
                 if (copy_rc != ACL_SUCCESS) *detail = "sdma error: " + *detail;
                 return copy_rc;
               });
    return ACL_SUCCESS;
  });
}

}  // extern "C"
