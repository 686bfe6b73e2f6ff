// Logical devices: a per-thread current device and a per-process open count per device.
// aclrtResetDevice is reference counted like CANN's: the device's streams and events are
// released when the last aclrtSetDevice is matched.
#include "runtime/device.h"

#include <mutex>
#include <unordered_map>

#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/event.h"
#include "runtime/rt_log.h"
#include "runtime/stream.h"

namespace vigil::rt {
namespace {

thread_local int32_t tls_device = -1;
thread_local std::string tls_recent_error;

struct DeviceTable {
  std::mutex mu;
  std::unordered_map<int32_t, uint32_t> open_count;  // aclrtSetDevice calls not yet reset
};

DeviceTable& Table() {
  static DeviceTable* table = new DeviceTable();  // leaked: used until process exit
  return *table;
}

}  // namespace

uint32_t DeviceCount() { return Env().device_count; }

bool IsValidDevice(int32_t device) {
  return device >= 0 && static_cast<uint32_t>(device) < DeviceCount();
}

aclError SetCurrentDevice(int32_t device) {
  if (!IsValidDevice(device)) {
    VIGIL_RT_FAIL("Set device failed: deviceId={} is invalid, valid range is [0, {}).", device,
                  DeviceCount());
    return ACL_ERROR_RT_INVALID_DEVICEID;
  }
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(Table().mu);
    first = Table().open_count[device]++ == 0;
  }
  tls_device = device;
  if (first) RT_RUN_INFO("Device {} opened (logical device, count={}).", device, DeviceCount());
  return ACL_SUCCESS;
}

int32_t CurrentDevice() { return tls_device; }

void BindThreadDevice(int32_t device) { tls_device = device; }

aclError ResetDevice(int32_t device) {
  if (!IsValidDevice(device)) {
    VIGIL_RT_FAIL("Reset device failed: deviceId={} is invalid, valid range is [0, {}).", device,
                  DeviceCount());
    return ACL_ERROR_RT_INVALID_DEVICEID;
  }
  bool release = false;
  {
    std::lock_guard<std::mutex> lock(Table().mu);
    auto it = Table().open_count.find(device);
    if (it != Table().open_count.end() && it->second > 0) {
      release = --it->second == 0;
    }
  }
  if (tls_device == device) tls_device = -1;
  if (release) {
    DestroyDeviceStreams(device);
    DestroyDeviceEvents(device);
    RT_RUN_INFO("Device {} reset: streams and events released.", device);
  }
  return ACL_SUCCESS;
}

const std::string& RecentErrorMessage() { return tls_recent_error; }

void SetRecentErrorMessage(std::string message) { tls_recent_error = std::move(message); }

}  // namespace vigil::rt
