// What the acl C API files (acl_*.cc) share: the exception guard, argument-check macros, and
// handle resolution with CANN's codes and one RUNTIME ERROR line per rejected call.
#pragma once

#include <cstring>
#include <exception>
#include <memory>

#include "acl/acl_base.h"
#include "runtime/device.h"
#include "runtime/event.h"
#include "runtime/rt_log.h"
#include "runtime/stream.h"

namespace vigil::api {

// Catches anything thrown below (std::bad_alloc, ...) so it never crosses the C ABI.
template <typename Fn>
aclError Guard(const char* api, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    VIGIL_RT_FAIL("{} failed: internal error: {}.", api, e.what());
  } catch (...) {
    VIGIL_RT_FAIL("{} failed: internal error.", api);
  }
  return ACL_ERROR_RT_INTERNAL_ERROR;
}

#define CHECK_NOT_NULL(api, arg)                                         \
  do {                                                                   \
    if ((arg) == nullptr) {                                              \
      VIGIL_RT_FAIL("{} failed: param {} must not be null.", api, #arg); \
      return ACL_ERROR_INVALID_PARAM;                                    \
    }                                                                    \
  } while (0)

// The calling thread's device, or CANN's "context is null" error when none was set.
#define REQUIRE_CURRENT_DEVICE(api, dev)                                                        \
  int32_t dev = vigil::rt::CurrentDevice();                                                     \
  do {                                                                                          \
    if (dev < 0) {                                                                              \
      VIGIL_RT_FAIL("{} failed: no current device on this thread (call aclrtSetDevice first).", \
                    api);                                                                       \
      return ACL_ERROR_RT_CONTEXT_NULL;                                                         \
    }                                                                                           \
  } while (0)

// Resolves an aclrtStream: nullptr is the current device's default stream (as in CANN).
inline aclError ResolveStream(const char* api, aclrtStream handle,
                              std::shared_ptr<vigil::rt::Stream>* out) {
  if (handle == nullptr) {
    int32_t dev = vigil::rt::CurrentDevice();
    if (dev < 0) {
      VIGIL_RT_FAIL(
          "{} failed: param stream is null (default stream) and no current device is "
          "set on this thread.",
          api);
      return ACL_ERROR_RT_CONTEXT_NULL;
    }
    *out = vigil::rt::DefaultStream(dev);
    return ACL_SUCCESS;
  }
  *out = vigil::rt::StreamRef(handle);
  if (!*out) {
    VIGIL_RT_FAIL("{} failed: param stream[{}] is not a valid stream (unknown or destroyed).", api,
                  handle);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  return ACL_SUCCESS;
}

// A destroyed stream loses its callback thread (acl_callback_api.cc).
void ForgetSubscription(const vigil::rt::Stream* stream);

inline std::shared_ptr<vigil::rt::Event> ResolveEvent(const char* api, aclrtEvent handle) {
  auto event = vigil::rt::EventRef(handle);
  if (!event) {
    VIGIL_RT_FAIL("{} failed: param event[{}] is not a valid event (unknown or destroyed).", api,
                  handle);
  }
  return event;
}

// An enum argument's bits as an int: C callers may pass any value, and loading an
// out-of-range value as the enum type would be undefined behaviour in C++.
template <typename E>
int RawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int raw = 0;
  std::memcpy(&raw, &e, sizeof(raw));
  return raw;
}

}  // namespace vigil::api
