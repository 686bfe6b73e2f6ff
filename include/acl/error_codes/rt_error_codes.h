/* Vigil: runtime result codes, with the names and values of CANN's acl/error_codes/rt_error_codes.h. */
#ifndef VIGIL_ACL_RT_ERROR_CODES_H_
#define VIGIL_ACL_RT_ERROR_CODES_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static const int32_t ACL_RT_SUCCESS = 0;

static const int32_t ACL_ERROR_RT_PARAM_INVALID = 107000;
static const int32_t ACL_ERROR_RT_INVALID_DEVICEID = 107001;
static const int32_t ACL_ERROR_RT_CONTEXT_NULL = 107002;
static const int32_t ACL_ERROR_RT_STREAM_CONTEXT = 107003;
static const int32_t ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID = 107006;
static const int32_t ACL_ERROR_RT_ADDR_UNALIGNED = 107008;
static const int32_t ACL_ERROR_RT_INVALID_MEMORY_TYPE = 107016;
static const int32_t ACL_ERROR_RT_INVALID_HANDLE = 107017;
static const int32_t ACL_ERROR_RT_INVALID_MALLOC_TYPE = 107018;
/* graph capture (acl/acl_mdl.h) */
static const int32_t ACL_ERROR_RT_CAPTURE_DEPENDENCY = 107024;
static const int32_t ACL_ERROR_RT_STREAM_UNJOINED = 107025;
static const int32_t ACL_ERROR_RT_MODEL_CAPTURED = 107026;
static const int32_t ACL_ERROR_RT_STREAM_CAPTURED = 107027;
static const int32_t ACL_ERROR_RT_EVENT_CAPTURED = 107028;
static const int32_t ACL_ERROR_RT_STREAM_NOT_CAPTURED = 107029;
static const int32_t ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT = 107030;
static const int32_t ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT = 107031;
static const int32_t ACL_ERROR_STREAM_CAPTURE_CONFLICT = 107032;
static const int32_t ACL_ERROR_STREAM_TASK_GROUP_STATUS = 107033;
static const int32_t ACL_ERROR_STREAM_TASK_GROUP_INTR = 107034;
static const int32_t ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED = 107036;
static const int32_t ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD = 107038;

static const int32_t ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
static const int32_t ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;
static const int32_t ACL_ERROR_RT_MEMORY_FREE = 207002;
static const int32_t ACL_ERROR_RT_NO_DEVICE = 207004;
static const int32_t ACL_ERROR_RT_RESOURCE_ALLOC_FAIL = 207005;
static const int32_t ACL_ERROR_RT_NO_EVENT_RESOURCE = 207007;
static const int32_t ACL_ERROR_RT_NO_STREAM_RESOURCE = 207008;
static const int32_t ACL_ERROR_RT_NO_NOTIFY_RESOURCE = 207009;
static const int32_t ACL_ERROR_RT_OVER_LIMIT = 207012;
static const int32_t ACL_ERROR_RT_REPEATED_INIT = 207015;

static const int32_t ACL_ERROR_RT_INTERNAL_ERROR = 507000;
static const int32_t ACL_ERROR_RT_TS_ERROR = 507001;
static const int32_t ACL_ERROR_RT_STREAM_TASK_FULL = 507002;
static const int32_t ACL_ERROR_RT_STREAM_TASK_EMPTY = 507003;
static const int32_t ACL_ERROR_RT_STREAM_NOT_COMPLETE = 507004;
static const int32_t ACL_ERROR_RT_EVENT_NOT_COMPLETE = 507006;
static const int32_t ACL_ERROR_RT_LOST_HEARTBEAT = 507010;
static const int32_t ACL_ERROR_RT_MODEL_EXECUTE = 507011;
static const int32_t ACL_ERROR_RT_REPORT_TIMEOUT = 507012;
static const int32_t ACL_ERROR_RT_SYS_DMA = 507013;
static const int32_t ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046;
static const int32_t ACL_ERROR_RT_EVENT_SYNC_TIMEOUT = 507047;
static const int32_t ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899;
static const int32_t ACL_ERROR_RT_SOCKET_CLOSE = 507901;
static const int32_t ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED = 507903;

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_ACL_RT_ERROR_CODES_H_ */
