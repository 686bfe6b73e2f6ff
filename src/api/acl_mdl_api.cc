// The acl graph-capture API (acl/acl_mdl.h) over the runtime's stream capture
// (runtime/stream_capture.h): argument checks, CANN's result codes, one RUNTIME ERROR line per
// rejected call naming what is wrong. No exception leaves here.
#include <cstring>
#include <memory>
#include <string>

#include "acl/acl.h"
#include "api/acl_api_util.h"
#include "log/plog.h"
#include "runtime/device.h"
#include "runtime/rt_log.h"
#include "runtime/stream.h"
#include "runtime/stream_capture.h"

namespace {

using vigil::rt::CapturedModel;
using vigil::rt::CaptureMode;
using vigil::rt::CaptureStatus;
using vigil::rt::Stream;

// A capture needs a stream of its own: the default stream (null) is refused by the callers.
aclError ResolveStream(const char* api, aclrtStream handle, std::shared_ptr<Stream>* out) {
  *out = vigil::rt::StreamRef(handle);
  if (!*out) {
    VIGIL_RT_FAIL("{} failed: param stream[{}] is not a valid stream (unknown or destroyed).", api,
                  handle);
    return ACL_ERROR_RT_PARAM_INVALID;
  }
  return ACL_SUCCESS;
}

std::shared_ptr<CapturedModel> ResolveModel(const char* api, aclmdlRI handle) {
  auto model = vigil::rt::ModelRef(handle);
  if (!model) {
    VIGIL_RT_FAIL("{} failed: param modelRI[{}] is not a valid model (unknown or destroyed).", api,
                  handle);
  }
  return model;
}

// An enum argument's bits as an int: C callers may pass any value.
template <typename E>
int RawEnum(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int raw = 0;
  std::memcpy(&raw, &e, sizeof(raw));
  return raw;
}

bool ValidMode(int mode) {
  return mode >= ACL_MODEL_RI_CAPTURE_MODE_GLOBAL && mode <= ACL_MODEL_RI_CAPTURE_MODE_RELAXED;
}

}  // namespace

extern "C" {

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
  static constexpr const char* kApi = "aclmdlRICaptureBegin";
  CHECK_NOT_NULL(kApi, stream);
  const int raw_mode = RawEnum(mode);
  if (!ValidMode(raw_mode)) {
    VIGIL_RT_FAIL("{} failed: param mode[{}] is not a valid aclmdlRICaptureMode.", kApi, raw_mode);
    return ACL_ERROR_INVALID_PARAM;
  }
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    return s->BeginCapture(static_cast<CaptureMode>(raw_mode));
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureGetInfo(aclrtStream stream,
                                                    aclmdlRICaptureStatus* status,
                                                    aclmdlRI* modelRI) {
  static constexpr const char* kApi = "aclmdlRICaptureGetInfo";
  CHECK_NOT_NULL(kApi, stream);
  if (status == nullptr && modelRI == nullptr) {
    VIGIL_RT_FAIL("{} failed: params status and modelRI must not both be null.", kApi);
    return ACL_ERROR_INVALID_PARAM;
  }
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    std::shared_ptr<CapturedModel> model;
    const CaptureStatus st = s->GetCaptureInfo(&model);
    if (status != nullptr) *status = static_cast<aclmdlRICaptureStatus>(static_cast<int>(st));
    if (modelRI != nullptr) *modelRI = model.get();
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  static constexpr const char* kApi = "aclmdlRICaptureEnd";
  CHECK_NOT_NULL(kApi, stream);
  CHECK_NOT_NULL(kApi, modelRI);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    *modelRI = nullptr;
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    std::shared_ptr<CapturedModel> model;
    if (aclError rc = s->EndCapture(&model); rc != ACL_SUCCESS) return rc;
    *modelRI = model.get();  // the handle registry keeps it until aclmdlRIDestroy
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRIDebugPrint(aclmdlRI modelRI) {
  static constexpr const char* kApi = "aclmdlRIDebugPrint";
  CHECK_NOT_NULL(kApi, modelRI);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    auto model = ResolveModel(kApi, modelRI);
    if (!model) return ACL_ERROR_RT_PARAM_INVALID;
    for (const std::string& line : model->Describe()) RT_RUN_INFO("[ModelRI]{}", line);
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode* mode) {
  static constexpr const char* kApi = "aclmdlRICaptureThreadExchangeMode";
  CHECK_NOT_NULL(kApi, mode);
  const int raw_mode = RawEnum(*mode);
  if (!ValidMode(raw_mode)) {
    VIGIL_RT_FAIL("{} failed: param mode[{}] is not a valid aclmdlRICaptureMode.", kApi, raw_mode);
    return ACL_ERROR_INVALID_PARAM;
  }
  const CaptureMode old = vigil::rt::ExchangeThreadCaptureMode(static_cast<CaptureMode>(raw_mode));
  *mode = static_cast<aclmdlRICaptureMode>(static_cast<int>(old));
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
  static constexpr const char* kApi = "aclmdlRIExecuteAsync";
  CHECK_NOT_NULL(kApi, modelRI);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    auto model = ResolveModel(kApi, modelRI);
    if (!model) return ACL_ERROR_RT_PARAM_INVALID;
    std::shared_ptr<Stream> s;
    if (stream == nullptr) {
      const int32_t dev = vigil::rt::CurrentDevice();
      if (dev < 0) {
        VIGIL_RT_FAIL("{} failed: param stream is null (default stream) and no current device "
                      "is set on this thread.", kApi);
        return ACL_ERROR_RT_CONTEXT_NULL;
      }
      s = vigil::rt::DefaultStream(dev);
    } else if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) {
      return rc;
    }
    std::string why;
    const aclError rc = model->Replay(*s, &why);
    if (rc != ACL_SUCCESS) VIGIL_RT_FAIL("{} failed: {}.", kApi, why);
    return rc;
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRIDestroy(aclmdlRI modelRI) {
  static constexpr const char* kApi = "aclmdlRIDestroy";
  CHECK_NOT_NULL(kApi, modelRI);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    const aclError rc = vigil::rt::DestroyModel(modelRI);
    if (rc == ACL_ERROR_RT_PARAM_INVALID) {
      VIGIL_RT_FAIL("{} failed: param modelRI[{}] is not a valid model (unknown or destroyed).",
                    kApi, modelRI);
    } else if (rc == ACL_ERROR_RT_MODEL_CAPTURED) {
      VIGIL_RT_FAIL("{} failed: param modelRI[{}] is still being captured; end the capture "
                    "(aclmdlRICaptureEnd) first.", kApi, modelRI);
    }
    return rc;
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskGrpBegin(aclrtStream stream) {
  static constexpr const char* kApi = "aclmdlRICaptureTaskGrpBegin";
  CHECK_NOT_NULL(kApi, stream);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    return s->BeginTaskGroup();
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskGrpEnd(aclrtStream stream, aclrtTaskGrp* handle) {
  static constexpr const char* kApi = "aclmdlRICaptureTaskGrpEnd";
  CHECK_NOT_NULL(kApi, stream);
  CHECK_NOT_NULL(kApi, handle);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    *handle = nullptr;
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    return s->EndTaskGroup(handle);
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskUpdateBegin(aclrtStream stream,
                                                            aclrtTaskGrp handle) {
  static constexpr const char* kApi = "aclmdlRICaptureTaskUpdateBegin";
  CHECK_NOT_NULL(kApi, stream);
  CHECK_NOT_NULL(kApi, handle);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    return s->BeginTaskUpdate(handle);
  });
}

ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskUpdateEnd(aclrtStream stream) {
  static constexpr const char* kApi = "aclmdlRICaptureTaskUpdateEnd";
  CHECK_NOT_NULL(kApi, stream);
  return vigil::api::Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    if (aclError rc = ResolveStream(kApi, stream, &s); rc != ACL_SUCCESS) return rc;
    return s->EndTaskUpdate();
  });
}

}  // extern "C"
