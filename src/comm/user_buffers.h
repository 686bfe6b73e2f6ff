// The user buffers an op reads and writes on one rank, for the check at the op's start that
// each is live and large enough (Communicator::FaultyUserBuffer, in user_buffers.cc, for the
// generic path of communicator.cc and the direct one of communicator_direct.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "comm/op.h"

namespace vigil::comm {

// Fills *out (cleared first; the caller reuses it, so an op allocates nothing here).
void UserBuffers(const OpDesc& op, uint32_t rank, uint32_t nranks, std::vector<BufferUse>* out);

// Ops whose user buffers follow from BufferKey's fields alone (UserBuffers; the others have
// per-rank counts or items).
inline bool KeyedBuffers(OpType type) {
  switch (type) {
    case OpType::kAllReduce:
    case OpType::kBroadcast:
    case OpType::kAllGather:
    case OpType::kReduceScatter:
    case OpType::kReduce:
    case OpType::kScatter:
    case OpType::kBarrier:
      return true;
    default:
      return false;
  }
}

inline bool SameRanges(const std::vector<BufferUse>& a, const std::vector<BufferUse>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].ptr != b[i].ptr || a[i].bytes != b[i].bytes) return false;
  }
  return true;
}

}  // namespace vigil::comm
