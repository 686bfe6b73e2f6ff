/* Vigil: HCCL's symmetric-window pointer call (hccl/hccl_sym_win.h). */
#ifndef VIGIL_HCCL_SYM_WIN_H_
#define VIGIL_HCCL_SYM_WIN_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_rt.h"
#include "hccl/hccl_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The address of byte `offset` of peerRank's window `winHandle`, as this process may use it: the
 * rank's own window, or the window of a rank that runs in this process (threads as ranks). A rank
 * of another process has its window in another address space: HCCL_E_NOT_SUPPORT. */
extern HcclResult HcclSymWinGetPeerPointer(HcclCommSymWindow winHandle, size_t offset,
                                           uint32_t peerRank, void** ptr);

#ifdef __cplusplus
}
#endif
#endif /* VIGIL_HCCL_SYM_WIN_H_ */
