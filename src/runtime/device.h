// Logical devices. VIGIL_DEVICE_COUNT of them (default 8); the current device is per thread,
// as in CANN, so several threads of one process may each drive their own device.
#pragma once

#include <cstdint>
#include <string>

#include "acl/acl_base.h"

namespace vigil::rt {

uint32_t DeviceCount();
bool IsValidDevice(int32_t device);
// Sets this thread's current device (opens it on first use).
aclError SetCurrentDevice(int32_t device);
// This thread's device, or -1 when aclrtSetDevice was never called on this thread.
int32_t CurrentDevice();
// Releases a device's streams and events created by this process; memory stays mapped.
aclError ResetDevice(int32_t device);

// Stream workers: make `device` this thread's current device without opening/counting it.
void BindThreadDevice(int32_t device);

// The last RT error message logged on this thread (aclGetRecentErrMsg); "" when none.
const std::string& RecentErrorMessage();
void SetRecentErrorMessage(std::string message);

}  // namespace vigil::rt
