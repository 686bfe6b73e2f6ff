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
 * Returns HCCL_E_PARA for an unknown or destroyed comm, HCCL_E_PTR for a null buf or len 0.
 *
 * VigilCommShrink: a new communicator of the ranks of `comm` that are not excluded, for carrying
 * on after a rank is lost (as NCCL's ncclCommShrink, ULFM's MPIX_Comm_shrink). Every surviving
 * rank calls it; an excluded rank does not.
 *   excludeRanks/excludeCount  the ranks to leave out; excludeRanks == NULL (excludeCount 0):
 *           the ranks this communicator's heartbeat knows LOST, as it knows them while the
 *           survivors agree (a survivor still learning of a loss catches up; see below).
 *   config  the new communicator's HcclCommConfig; NULL keeps the old one's settings
 *           (buffer size, exec timeout, algorithm, determinism).
 *   flags   VIGIL_SHRINK_DEFAULT: first wait for this rank's ops on `comm` to end (they end
 *           at once when the heartbeat aborts a communicator that lost a member; at most
 *           HCCL_EXEC_TIMEOUT + 5 s, else HCCL_E_TIMEOUT). VIGIL_SHRINK_ABORT: abort them first
 *           (they end with HCCL_E_AGAIN unless the communicator had already failed).
 * The survivors agree on the excluded set before any builds (over the heartbeat's maintenance
 * listeners, not the old data links): the same set from every caller, each non-excluded rank
 * calling within HCCL_CONNECT_TIMEOUT. Otherwise every caller returns HCCL_E_PARA with an
 * EI0005 screen error naming the ranks and each one's set; nothing waits longer than
 * HCCL_CONNECT_TIMEOUT + 5 s. A set taken from the heartbeat gets 3 s to converge with the
 * others before a difference counts. The new communicator numbers the survivors densely in
 * their old order, needs no root info from the caller (the lowest survivor makes one and hands
 * it over in the agreement), and has a heartbeat attachment of its own; it makes new data links
 * (the old ones are not reused). `comm` stays valid until HcclCommDestroy (aborted when a member
 * was lost or VIGIL_SHRINK_ABORT was given). HCCL_E_NOT_SUPPORT when the heartbeat is off. */
#ifndef VIGIL_EXT_H_
#define VIGIL_EXT_H_

#include <stddef.h>
#include <stdint.h>

#include "hccl/hccl.h"

#ifdef __cplusplus
extern "C" {
#endif

HCCL_API HcclResult VigilCommGetLastErrorMessage(HcclComm comm, char* buf, size_t len);

#define VIGIL_SHRINK_DEFAULT 0x00u
#define VIGIL_SHRINK_ABORT 0x01u

HCCL_API HcclResult VigilCommShrink(HcclComm comm, const uint32_t* excludeRanks,
                                    uint32_t excludeCount, const HcclCommConfig* config,
                                    HcclComm* newComm, uint32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* VIGIL_EXT_H_ */
