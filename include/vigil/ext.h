/* Vigil's extensions to the HCCL C API (not in HCCL; libhccl.so exports them). C and
 * C++17-clean, like hccl/hccl.h.
 *
 * VigilCommGetLastErrorMessage: HCCL reports an op's failure as a bare HcclResult (from
 * aclrtSynchronizeStream / HcclGetCommAsyncError); the root cause is only in the logs. This call
 * returns that text for a communicator, so a framework can put it into its own exception:
 *   line 1: the newest failed op: "<Op> failed on communicator [id] rank [r]: op index [i]
 *           tag [..], <HCCL_E_*>, <EIxxxx> <title>: <reason>" (or the comm's async error when no
 *           failed op is kept);
 *   then per heartbeat event about a member (print order, as the task-exception report):
 *           "crimer rank [c] (<ip/id>) status [LOST|STUCK|ERROR CQE], informer rank [i] (<ip/id>)"
 *           and the "Cluster Exception Location[IP/ID]:[..] ... ExceptionType:[..]" line.
 * The text is NUL-terminated and cut to len - 1 bytes; "" when the communicator has no error.
 * Returns HCCL_E_PARA for an unknown or destroyed comm, HCCL_E_PTR for a null buf or len 0. */
#ifndef VIGIL_EXT_H_
#define VIGIL_EXT_H_

#include <stddef.h>

#include "hccl/hccl.h"

#ifdef __cplusplus
extern "C" {
#endif

HCCL_API HcclResult VigilCommGetLastErrorMessage(HcclComm comm, char* buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* VIGIL_EXT_H_ */
