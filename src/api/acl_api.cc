// The acl C API over the CPU device runtime (src/runtime): argument checks, CANN's result
// codes, one RUNTIME ERROR line per rejected call naming the argument. No exception leaves here.
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "acl/acl.h"
#include "api/acl_api_util.h"
#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/device.h"
#include "runtime/device_memory.h"
#include "runtime/event.h"
#include "runtime/rt_log.h"
#include "runtime/stream.h"
#include "runtime/stream_capture.h"

namespace {

using vigil::api::Guard;
using vigil::api::RawEnum;
using vigil::api::ResolveEvent;
using vigil::api::ResolveStream;
using vigil::rt::DeviceMemory;
using vigil::rt::Stream;

// Every kind copies the same way here (host memory both sides): only the value is checked.
bool ValidKind(int kind) {
  return kind >= ACL_MEMCPY_HOST_TO_HOST && kind <= ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}

// Host memory from aclrtMallocHost, tracked so a foreign or double aclrtFreeHost is caught.
struct HostAllocs {
  std::mutex mu;
  std::unordered_map<void*, size_t> live;
};
HostAllocs& Hosts() {
  static HostAllocs* hosts = new HostAllocs();
  return *hosts;
}

struct Contexts {
  std::mutex mu;
  std::unordered_map<void*, int32_t> live;  // context -> device
};
Contexts& Ctxs() {
  static Contexts* ctxs = new Contexts();
  return *ctxs;
}
thread_local aclrtContext tls_context = nullptr;

std::mutex g_init_mu;
bool g_initialized = false;
bool g_ever_finalized = false;

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY const char* aclGetRecentErrMsg(void) {
  const std::string& msg = vigil::rt::RecentErrorMessage();
  return msg.c_str();
}

ACL_FUNC_VISIBILITY aclError aclInit(const char* configPath) {
  return Guard("aclInit", [&]() -> aclError {
    std::lock_guard<std::mutex> lock(g_init_mu);
    if (g_initialized) {
      VIGIL_RT_FAIL("aclInit failed: repeated initialization in this process.");
      return ACL_ERROR_REPEAT_INITIALIZE;
    }
    if (configPath != nullptr && configPath[0] != '\0') {
      struct stat st {};
      if (stat(configPath, &st) != 0 || !S_ISREG(st.st_mode)) {
        VIGIL_RT_FAIL("aclInit failed: param configPath[{}] is not an existing file.", configPath);
        return ACL_ERROR_INVALID_FILE;
      }
      std::ifstream in(configPath);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
      if (!blank && nlohmann::json::parse(text, nullptr, false).is_discarded()) {
        VIGIL_RT_FAIL("aclInit failed: param configPath[{}] is not valid JSON.", configPath);
        return ACL_ERROR_PARSE_FILE;
      }
    }
    if (!vigil::EnvLoadError().empty()) RT_WARNING("{}", vigil::EnvLoadError());
    g_initialized = true;
    RT_RUN_INFO("aclInit success, config[{}], device count {}.",
                configPath == nullptr ? "" : configPath, vigil::rt::DeviceCount());
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclFinalize(void) {
  return Guard("aclFinalize", [&]() -> aclError {
    std::lock_guard<std::mutex> lock(g_init_mu);
    if (!g_initialized) {
      if (g_ever_finalized) {
        VIGIL_RT_FAIL("aclFinalize failed: repeated finalization.");
        return ACL_ERROR_REPEAT_FINALIZE;
      }
      // Lenient: aclInit is optional in Vigil, so finalizing without it is allowed.
    }
    // Join every stream worker so none outlives the process's static destructors.
    vigil::rt::DestroyAllStreams();
    g_initialized = false;
    g_ever_finalized = true;
    RT_RUN_INFO("aclFinalize success.");
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t* count) {
  CHECK_NOT_NULL("aclrtGetDeviceCount", count);
  *count = vigil::rt::DeviceCount();
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
  return Guard("aclrtSetDevice", [&] { return vigil::rt::SetCurrentDevice(deviceId); });
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
  return Guard("aclrtResetDevice", [&] { return vigil::rt::ResetDevice(deviceId); });
}

ACL_FUNC_VISIBILITY aclError aclrtResetDeviceForce(int32_t deviceId) {
  return Guard("aclrtResetDeviceForce", [&] { return vigil::rt::ResetDevice(deviceId); });
}

ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t* deviceId) {
  CHECK_NOT_NULL("aclrtGetDevice", deviceId);
  REQUIRE_CURRENT_DEVICE("aclrtGetDevice", dev);
  *deviceId = dev;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY const char* aclrtGetSocName(void) {
  // Not an Ascend name on purpose: programs choose chip-specific paths by prefix ("Ascend910B"
  // sets the saturation mode in hccl_test, "Ascend950" its CCU options, "Ascend310P" DDR
  // memory) and take their generic path for a name they do not know, which fits a CPU device.
  return "Vigil-CPU";
}

ACL_FUNC_VISIBILITY aclError aclrtSetDeviceSatMode(aclrtFloatOverflowMode mode) {
  const int raw = RawEnum(mode);
  REQUIRE_CURRENT_DEVICE("aclrtSetDeviceSatMode", dev);
  if (raw == ACL_RT_OVERFLOW_MODE_SATURATION) {
    VIGIL_RT_FAIL("aclrtSetDeviceSatMode failed: ACL_RT_OVERFLOW_MODE_SATURATION is not "
                  "supported: Vigil's reductions give IEEE inf/nan on overflow (device {}).",
                  dev);
    return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
  }
  if (raw != ACL_RT_OVERFLOW_MODE_INFNAN) {
    VIGIL_RT_FAIL("aclrtSetDeviceSatMode failed: param mode[{}] is not a valid "
                  "aclrtFloatOverflowMode.",
                  raw);
    return ACL_ERROR_INVALID_PARAM;
  }
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceSatMode(aclrtFloatOverflowMode* mode) {
  CHECK_NOT_NULL("aclrtGetDeviceSatMode", mode);
  REQUIRE_CURRENT_DEVICE("aclrtGetDeviceSatMode", dev);
  (void)dev;
  *mode = ACL_RT_OVERFLOW_MODE_INFNAN;  // the only mode (aclrtSetDeviceSatMode)
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  CHECK_NOT_NULL("aclrtGetRunMode", runMode);
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  CHECK_NOT_NULL("aclrtMalloc", devPtr);
  if (size == 0) {
    VIGIL_RT_FAIL("aclrtMalloc failed: param size must be greater than 0.");
    return ACL_ERROR_INVALID_PARAM;
  }
  const int raw_policy = RawEnum(policy);
  const int page_policy = raw_policy & 0xff;
  const int type_bits = raw_policy & ~0xff;
  constexpr int kTypes = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH;
  if (page_policy > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P ||
      (type_bits & ~(kTypes | ACL_MEM_ACCESS_USER_SPACE_READONLY)) != 0) {
    VIGIL_RT_FAIL("aclrtMalloc failed: param policy[{:#x}] is not a valid aclrtMemMallocPolicy.",
                  raw_policy);
    return ACL_ERROR_INVALID_PARAM;
  }
  if ((type_bits & ACL_MEM_ACCESS_USER_SPACE_READONLY) != 0) {
    VIGIL_RT_FAIL("aclrtMalloc failed: param policy[{:#x}]: ACL_MEM_ACCESS_USER_SPACE_READONLY is "
                  "not supported by Vigil's CPU devices.",
                  raw_policy);
    return ACL_ERROR_RT_FEATURE_NOT_SUPPORT;
  }
  // CANN allocates the size aligned up to 32 bytes, plus 32 bytes.
  constexpr size_t kAlign = 32;
  const size_t real = (size + kAlign - 1) / kAlign * kAlign + kAlign;
  if (real < size) {
    VIGIL_RT_FAIL("aclrtMalloc failed: param size[{}] is too large.", size);
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  REQUIRE_CURRENT_DEVICE("aclrtMalloc", dev);
  return Guard("aclrtMalloc", [&] { return DeviceMemory::Instance().Alloc(dev, real, devPtr); });
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void* devPtr) {
  CHECK_NOT_NULL("aclrtFree", devPtr);
  return Guard("aclrtFree", [&] { return DeviceMemory::Instance().Free(devPtr); });
}

ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void** hostPtr, size_t size) {
  CHECK_NOT_NULL("aclrtMallocHost", hostPtr);
  if (size == 0) {
    VIGIL_RT_FAIL("aclrtMallocHost failed: param size must be greater than 0.");
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard("aclrtMallocHost", [&]() -> aclError {
    void* p = nullptr;
    if (posix_memalign(&p, 64, size) != 0) {
      VIGIL_RT_FAIL("aclrtMallocHost failed: cannot allocate {} bytes of host memory.", size);
      return ACL_ERROR_BAD_ALLOC;
    }
    std::lock_guard<std::mutex> lock(Hosts().mu);
    Hosts().live.emplace(p, size);
    *hostPtr = p;
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void* hostPtr) {
  CHECK_NOT_NULL("aclrtFreeHost", hostPtr);
  {
    std::lock_guard<std::mutex> lock(Hosts().mu);
    auto it = Hosts().live.find(hostPtr);
    if (it != Hosts().live.end()) {
      Hosts().live.erase(it);
      std::free(hostPtr);
      return ACL_SUCCESS;
    }
  }
  VIGIL_RT_FAIL("aclrtFreeHost failed: param hostPtr[{}] was not allocated by aclrtMallocHost "
                "(double free or foreign pointer).", hostPtr);
  return ACL_ERROR_RT_MEMORY_FREE;
}

namespace {

aclError CheckMemcpyArgs(const char* api, void* dst, size_t destMax, const void* src, size_t count,
                         int kind) {
  CHECK_NOT_NULL(api, dst);
  CHECK_NOT_NULL(api, src);
  if (count > destMax) {
    VIGIL_RT_FAIL("{} failed: param count[{}] is greater than destMax[{}].", api, count, destMax);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (!ValidKind(kind)) {
    VIGIL_RT_FAIL("{} failed: param kind[{}] is not a valid aclrtMemcpyKind.", api, kind);
    return ACL_ERROR_INVALID_PARAM;
  }
  return ACL_SUCCESS;
}

}  // namespace

ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                                         aclrtMemcpyKind kind) {
  const int raw_kind = RawEnum(kind);
  aclError rc = CheckMemcpyArgs("aclrtMemcpy", dst, destMax, src, count, raw_kind);
  if (rc != ACL_SUCCESS) return rc;
  if (rc = vigil::rt::CheckUnsafeCall("aclrtMemcpy"); rc != ACL_SUCCESS) return rc;
  return Guard("aclrtMemcpy", [&]() -> aclError {
    vigil::rt::CopyFault fault;
    aclError copy_rc = DeviceMemory::Instance().CheckedCopy(dst, src, count, &fault);
    if (copy_rc != ACL_SUCCESS) {
      VIGIL_RT_FAIL("aclrtMemcpy failed: memory copy fault (sdma error), kind[{}], {}.", raw_kind,
                    vigil::rt::DescribeCopyFault(fault, dst, src, count));
    }
    return copy_rc;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src,
                                              size_t count, aclrtMemcpyKind kind,
                                              aclrtStream stream) {
  aclError rc = CheckMemcpyArgs("aclrtMemcpyAsync", dst, destMax, src, count, RawEnum(kind));
  if (rc != ACL_SUCCESS) return rc;
  return Guard("aclrtMemcpyAsync", [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError src_rc = ResolveStream("aclrtMemcpyAsync", stream, &s);
    if (src_rc != ACL_SUCCESS) return src_rc;
    s->Enqueue(vigil::rt::TaskType::kMemcpy, [dst, src, count](std::string* detail) {
      vigil::rt::CopyFault fault;
      aclError copy_rc = DeviceMemory::Instance().CheckedCopy(dst, src, count, &fault);
      if (copy_rc != ACL_SUCCESS) {
        *detail = "sdma error: " + vigil::rt::DescribeCopyFault(fault, dst, src, count);
      }
      return copy_rc;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value,
                                         size_t count) {
  CHECK_NOT_NULL("aclrtMemset", devPtr);
  if (count > maxCount) {
    VIGIL_RT_FAIL("aclrtMemset failed: param count[{}] is greater than maxCount[{}].", count,
                  maxCount);
    return ACL_ERROR_INVALID_PARAM;
  }
  if (aclError rc = vigil::rt::CheckUnsafeCall("aclrtMemset"); rc != ACL_SUCCESS) return rc;
  return Guard("aclrtMemset", [&]() -> aclError {
    vigil::rt::CopyFault fault;
    aclError set_rc = DeviceMemory::Instance().Guarded(
        devPtr, count, nullptr, 0, &fault, [&] { std::memset(devPtr, value, count); });
    if (set_rc != ACL_SUCCESS) {
      VIGIL_RT_FAIL("aclrtMemset failed: memory fault (sdma error), {}.",
                    vigil::rt::DescribeCopyFault(fault, devPtr, nullptr, count));
    }
    return set_rc;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtMemsetAsync(void* devPtr, size_t maxCount, int32_t value,
                                              size_t count, aclrtStream stream) {
  CHECK_NOT_NULL("aclrtMemsetAsync", devPtr);
  if (count > maxCount) {
    VIGIL_RT_FAIL("aclrtMemsetAsync failed: param count[{}] is greater than maxCount[{}].", count,
                  maxCount);
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard("aclrtMemsetAsync", [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream("aclrtMemsetAsync", stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    s->Enqueue(vigil::rt::TaskType::kMemset, [devPtr, value, count](std::string* detail) {
      vigil::rt::CopyFault fault;
      aclError set_rc = DeviceMemory::Instance().Guarded(
          devPtr, count, nullptr, 0, &fault, [&] { std::memset(devPtr, value, count); });
      if (set_rc != ACL_SUCCESS) {
        *detail = "sdma error: " + vigil::rt::DescribeCopyFault(fault, devPtr, nullptr, count);
      }
      return set_rc;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtGetMemInfo(aclrtMemAttr memAttr, size_t* free, size_t* total) {
  CHECK_NOT_NULL("aclrtGetMemInfo", free);
  CHECK_NOT_NULL("aclrtGetMemInfo", total);
  const int attr = RawEnum(memAttr);
  if (attr < ACL_DDR_MEM || attr > ACL_MEM_P2P_HUGE1G) {
    VIGIL_RT_FAIL("aclrtGetMemInfo failed: param attr[{}] is not a valid aclrtMemAttr.", attr);
    return ACL_ERROR_RT_INVALID_MEMORY_TYPE;
  }
  REQUIRE_CURRENT_DEVICE("aclrtGetMemInfo", dev);
  const DeviceMemory& mem = DeviceMemory::Instance();
  uint64_t budget = mem.Budget();
  if (budget == 0) {  // unlimited: the host's physical memory stands in for the device's
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    budget = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  }
  size_t used = mem.UsedBytes(dev);
  *total = static_cast<size_t>(budget);
  *free = used >= budget ? 0 : static_cast<size_t>(budget - used);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream* stream) {
  CHECK_NOT_NULL("aclrtCreateStream", stream);
  REQUIRE_CURRENT_DEVICE("aclrtCreateStream", dev);
  return Guard("aclrtCreateStream", [&]() -> aclError {
    Stream* s = vigil::rt::CreateStream(dev);
    *stream = s;
    RT_DEBUG("Stream created: stream_id={}, device_id={}.", s->id(), dev);
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream) {
  CHECK_NOT_NULL("aclrtDestroyStream", stream);
  return Guard("aclrtDestroyStream", [&]() -> aclError {
    vigil::api::ForgetSubscription(vigil::rt::StreamFromHandle(stream));
    aclError rc = vigil::rt::DestroyStream(stream);
    if (rc == ACL_ERROR_RT_PARAM_INVALID) {
      VIGIL_RT_FAIL("aclrtDestroyStream failed: param stream[{}] is not a valid stream (unknown "
                    "or destroyed).", stream);
    }
    return rc;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStreamForce(aclrtStream stream) {
  return aclrtDestroyStream(stream);
}

ACL_FUNC_VISIBILITY aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode) {
  if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE) {
    VIGIL_RT_FAIL("aclrtSetStreamFailureMode failed: param mode[{}] must be "
                  "ACL_CONTINUE_ON_FAILURE (0) or ACL_STOP_ON_FAILURE (1).",
                  mode);
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard("aclrtSetStreamFailureMode", [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream("aclrtSetStreamFailureMode", stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    s->SetStopOnFailure(mode == ACL_STOP_ON_FAILURE);
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  if (timeout < -1 || timeout == 0) {
    VIGIL_RT_FAIL("aclrtSynchronizeStreamWithTimeout failed: param timeout[{}] must be -1 "
                  "(forever) or > 0 ms.", timeout);
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard("aclrtSynchronizeStreamWithTimeout", [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream("aclrtSynchronizeStream", stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    return s->Synchronize(timeout);
  });
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream) {
  return aclrtSynchronizeStreamWithTimeout(stream, -1);
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
  if (timeout < -1 || timeout == 0) {
    VIGIL_RT_FAIL("aclrtSynchronizeDeviceWithTimeout failed: param timeout[{}] must be -1 "
                  "(forever) or > 0 ms.", timeout);
    return ACL_ERROR_INVALID_PARAM;
  }
  REQUIRE_CURRENT_DEVICE("aclrtSynchronizeDevice", dev);
  return Guard("aclrtSynchronizeDevice",
               [&] { return vigil::rt::SynchronizeDeviceStreams(dev, timeout); });
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void) {
  return aclrtSynchronizeDeviceWithTimeout(-1);
}

ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  CHECK_NOT_NULL("aclrtCreateContext", context);
  aclError rc = vigil::rt::SetCurrentDevice(deviceId);
  if (rc != ACL_SUCCESS) return rc;
  return Guard("aclrtCreateContext", [&]() -> aclError {
    auto* ctx = new int32_t(deviceId);  // the handle; its value is the device
    std::lock_guard<std::mutex> lock(Ctxs().mu);
    Ctxs().live.emplace(ctx, deviceId);
    tls_context = ctx;
    *context = ctx;
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context) {
  CHECK_NOT_NULL("aclrtDestroyContext", context);
  std::lock_guard<std::mutex> lock(Ctxs().mu);
  auto it = Ctxs().live.find(context);
  if (it == Ctxs().live.end()) {
    VIGIL_RT_FAIL("aclrtDestroyContext failed: param context[{}] is not a valid context.", context);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  Ctxs().live.erase(it);
  if (tls_context == context) tls_context = nullptr;
  delete static_cast<int32_t*>(context);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context) {
  CHECK_NOT_NULL("aclrtSetCurrentContext", context);
  int32_t device = -1;
  {
    std::lock_guard<std::mutex> lock(Ctxs().mu);
    auto it = Ctxs().live.find(context);
    if (it == Ctxs().live.end()) {
      VIGIL_RT_FAIL("aclrtSetCurrentContext failed: param context[{}] is not a valid context.",
                    context);
      return ACL_ERROR_RT_PARAM_INVALID;
    }
    device = it->second;
  }
  vigil::rt::BindThreadDevice(device);
  tls_context = context;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext* context) {
  CHECK_NOT_NULL("aclrtGetCurrentContext", context);
  if (tls_context == nullptr) {
    // A thread that only called aclrtSetDevice has the device's implicit context.
    REQUIRE_CURRENT_DEVICE("aclrtGetCurrentContext", dev);
    return Guard("aclrtGetCurrentContext", [&]() -> aclError {
      static std::mutex mu;
      static auto* implicit = new std::unordered_map<int32_t, aclrtContext>();
      std::lock_guard<std::mutex> lock(mu);
      aclrtContext& ctx = (*implicit)[dev];
      if (ctx == nullptr) {
        ctx = new int32_t(dev);
        std::lock_guard<std::mutex> ctx_lock(Ctxs().mu);
        Ctxs().live.emplace(ctx, dev);
      }
      *context = ctx;
      return ACL_SUCCESS;
    });
  }
  *context = tls_context;
  return ACL_SUCCESS;
}

}  // extern "C"
