// The runtime's error line: one RT_ERROR record that is also kept as this thread's "recent
// error message" (aclGetRecentErrMsg), formatted once.
#pragma once

#include <fmt/format.h>

#include <string>

#include "log/plog.h"
#include "runtime/device.h"

#define VIGIL_RT_FAIL(...)                                      \
  do {                                                          \
    std::string vigil_rt_msg_ = ::fmt::format(__VA_ARGS__);     \
    RT_ERROR("{}", vigil_rt_msg_);                              \
    ::vigil::rt::SetRecentErrorMessage(std::move(vigil_rt_msg_)); \
  } while (0)
