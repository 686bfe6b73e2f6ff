/* Vigil: the profiling API of CANN's acl/acl_prof.h (libmsprofiler.so).
 *
 * A CPU device has no AI Core, AI CPU or device-side counters, so none of those are collected.
 * What Vigil records between aclprofStart and aclprofStop is a host-side trace of the device work
 * it does run: every stream task (copies, event records and waits, HCCL ops with their names,
 * counts and data types) with the moments its stream started and finished it. aclprofStop writes
 * it as a Chrome trace (chrome://tracing, Perfetto) to
 * <profilerResultPath>/vigil_trace_<pid>_<n>.json (the n-th trace of the process) and says so in
 * a run log line; aclprofStart writes a WARNING that device-side profiling data is not collected. Call order and codes as CANN:
 * Start/Stop/Finalize before Init give ACL_ERROR_PROF_NOT_RUN, a second Init
 * ACL_ERROR_REPEAT_INITIALIZE, a second Start of a device ACL_ERROR_PROF_ALREADY_RUN. */
#ifndef VIGIL_ACL_ACL_PROF_H_
#define VIGIL_ACL_ACL_PROF_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifndef MSVP_PROF_API
#define MSVP_PROF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* dataTypeConfig bits of aclprofCreateConfig. On a CPU device ACL_PROF_TASK_TIME,
 * ACL_PROF_TASK_TIME_L0, ACL_PROF_HCCL_TRACE and ACL_PROF_RUNTIME_API select the stream task
 * trace; the others (device counters, AI CPU, L2 cache, memory) have nothing to collect. */
#define ACL_PROF_ACL_API 0x00000001ULL
#define ACL_PROF_TASK_TIME 0x00000002ULL
#define ACL_PROF_AICORE_METRICS 0x00000004ULL
#define ACL_PROF_AICPU 0x00000008ULL
#define ACL_PROF_L2CACHE 0x00000010ULL
#define ACL_PROF_HCCL_TRACE 0x00000020ULL
#define ACL_PROF_TRAINING_TRACE 0x00000040ULL
#define ACL_PROF_MSPROFTX 0x00000080ULL
#define ACL_PROF_RUNTIME_API 0x00000100ULL
#define ACL_PROF_TASK_TIME_L0 0x00000800ULL
#define ACL_PROF_TASK_MEMORY 0x00001000ULL
#define ACL_PROF_OP_ATTR 0x00004000ULL

typedef enum {
  ACL_AICORE_ARITHMETIC_UTILIZATION = 0,
  ACL_AICORE_PIPE_UTILIZATION = 1,
  ACL_AICORE_MEMORY_BANDWIDTH = 2,
  ACL_AICORE_L0B_AND_WIDTH = 3,
  ACL_AICORE_RESOURCE_CONFLICT_RATIO = 4,
  ACL_AICORE_MEMORY_UB = 5,
  ACL_AICORE_L2_CACHE = 6,
  ACL_AICORE_PIPE_EXECUTE_UTILIZATION = 7,
  ACL_AICORE_MEMORY_ACCESS = 8,
  ACL_AICORE_NONE = 0xFF
} aclprofAicoreMetrics;

typedef struct aclprofConfig aclprofConfig;
typedef struct aclprofAicoreEvents aclprofAicoreEvents;

/* profilerResultPath: a directory (created if missing); length: its strlen. */
MSVP_PROF_API aclError aclprofInit(const char* profilerResultPath, size_t length);
/* Stops every device still started (writing its trace) and ends profiling. */
MSVP_PROF_API aclError aclprofFinalize(void);
/* Starts recording on the config's devices. */
MSVP_PROF_API aclError aclprofStart(const aclprofConfig* profilerConfig);
/* Stops the config's devices and writes the trace of what they ran since aclprofStart. */
MSVP_PROF_API aclError aclprofStop(const aclprofConfig* profilerConfig);
/* deviceIdList: deviceNums valid device ids, no repeats; aicoreEvents must be null. Null, with
 * an ERROR line, for a bad argument. */
MSVP_PROF_API aclprofConfig* aclprofCreateConfig(uint32_t* deviceIdList, uint32_t deviceNums,
                                                 aclprofAicoreMetrics aicoreMetrics,
                                                 const aclprofAicoreEvents* aicoreEvents,
                                                 uint64_t dataTypeConfig);
MSVP_PROF_API aclError aclprofDestroyConfig(const aclprofConfig* profilerConfig);

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_ACL_ACL_PROF_H_ */
