/* Vigil: the model runtime instance (graph capture) part of CANN's acl/acl_mdl.h.
 *
 * Between aclmdlRICaptureBegin and aclmdlRICaptureEnd the work enqueued on a stream (memory
 * copies, event records and waits, HCCL collectives) is recorded instead of run; the model
 * returned by aclmdlRICaptureEnd replays it, in order, on any stream of the device, as many times
 * as aclmdlRIExecuteAsync is called. Each replay of a collective is a new execution of it (a new
 * op index on its communicator), so every rank must replay its models in the same order.
 * A stream that waits on an event recorded during the capture joins it until it ends, and must
 * join back (end with an event record the capturing stream waits on). */
#ifndef VIGIL_ACL_ACL_MDL_H_
#define VIGIL_ACL_ACL_MDL_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A captured model (runtime instance). */
typedef void* aclmdlRI;
/* A task group of a capture (CANN declares it with the base types). */
typedef void* aclrtTaskGrp;

/* What unsafe calls (synchronous aclrtMemcpy / aclrtMemset) a capture forbids, and to whom. */
typedef enum {
  ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0,       /* every thread, while any global capture runs */
  ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL = 1, /* only the capturing thread */
  ACL_MODEL_RI_CAPTURE_MODE_RELAXED = 2,      /* nobody */
} aclmdlRICaptureMode;

typedef enum {
  ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0,        /* the stream is not capturing */
  ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE = 1,      /* capturing */
  ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED = 2, /* capturing, but an error spoilt the capture */
} aclmdlRICaptureStatus;

/* Starts recording the work enqueued on `stream` (not the default stream). */
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode);
/* The stream's capture status and, while it captures, the model being recorded (either out
 * pointer may be null, not both). */
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureGetInfo(aclrtStream stream,
                                                    aclmdlRICaptureStatus* status,
                                                    aclmdlRI* modelRI);
/* Stops recording and returns the model. */
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI);
/* Prints the model's tasks to the run log. */
ACL_FUNC_VISIBILITY aclError aclmdlRIDebugPrint(aclmdlRI modelRI);
/* Sets this thread's capture mode to *mode and returns the previous one in *mode. */
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode* mode);
/* Queues one replay of the model on `stream`; returns at once. */
ACL_FUNC_VISIBILITY aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream);
/* Frees the model (replays already queued still run). */
ACL_FUNC_VISIBILITY aclError aclmdlRIDestroy(aclmdlRI modelRI);

/* Task groups: the tasks a capturing stream enqueues between TaskGrpBegin and TaskGrpEnd form
 * a group; the tasks another (not capturing) stream enqueues between TaskUpdateBegin and
 * TaskUpdateEnd replace them in the model (same number and types), for the replays after. */
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskGrpBegin(aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskGrpEnd(aclrtStream stream, aclrtTaskGrp* handle);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskUpdateBegin(aclrtStream stream,
                                                            aclrtTaskGrp handle);
ACL_FUNC_VISIBILITY aclError aclmdlRICaptureTaskUpdateEnd(aclrtStream stream);

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_ACL_ACL_MDL_H_ */
