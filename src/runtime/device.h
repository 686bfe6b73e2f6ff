// Logical devices. VIGIL_DEVICE_COUNT of them (default 8); the current device is per thread,
// as in CANN, so several threads of one process may each drive their own device.
#pragma once

#include <cstdint>

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

}  // namespace vigil::rt
