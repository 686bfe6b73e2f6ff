// HcclCommConfig as a library reads it: the 24-byte header first (size, magic word, version),
// then only the fields that both the version introduced and the size holds, so that a program
// built against an older hccl_types.h (CANN 8.1's version 5, 300 bytes) keeps working.
#pragma once

#include "comm/communicator.h"
#include "hccl/hccl_types.h"

namespace vigil::api {

// Checks `config` (null = none) and applies its fields over `options` (which holds the
// environment's values). HCCL_E_PARA / HCCL_E_PTR with an ERROR line naming the field.
HcclResult ApplyCommConfig(const char* api, const HcclCommConfig* config,
                           comm::CommOptions* options);

// HcclSetConfig(HCCL_DETERMINISTIC): what a communicator whose config leaves
// hcclDeterministic unset gets.
uint32_t ProcessDeterministic();

}  // namespace vigil::api
