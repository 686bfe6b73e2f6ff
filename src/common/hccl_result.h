// HcclResult from an integer the library did not make itself: a status a peer sent, an abort
// code read from a flag another thread (or the user's program) set. HcclResult has no fixed
// underlying type, so it can hold only the values of its enumerators' range (0..HCCL_E_RESERVED):
// casting anything else to it is undefined behaviour. Every such conversion goes through here.
#pragma once

#include <cstdint>

#include "hccl/hccl_types.h"

namespace vigil {

// `code` as an HcclResult when it is one HcclResult can hold, else `otherwise`.
constexpr HcclResult ToHcclResult(int64_t code, HcclResult otherwise = HCCL_E_INTERNAL) {
  return code >= 0 && code <= static_cast<int64_t>(HCCL_E_RESERVED) ? static_cast<HcclResult>(code)
                                                                    : otherwise;
}

}  // namespace vigil
