#include "comm/user_buffers.h"

#include <algorithm>

#include "common/dtype.h"
#include "runtime/device_memory.h"

namespace vigil::comm {

namespace {

uint64_t MaxExtent(const std::vector<uint64_t>& counts, const std::vector<uint64_t>& displs) {
  uint64_t extent = 0;
  for (size_t i = 0; i < counts.size() && i < displs.size(); ++i) {
    if (counts[i] > 0) extent = std::max(extent, displs[i] + counts[i]);
  }
  return extent;
}

}  // namespace

void UserBuffers(const OpDesc& op, uint32_t rank, uint32_t nranks, std::vector<BufferUse>* out) {
  const size_t sz = DataTypeSize(op.dtype);
  const size_t rsz = DataTypeSize(op.recv_dtype);
  std::vector<BufferUse>& uses = *out;
  uses.clear();
  auto add = [&](const void* p, uint64_t elems, size_t esz, const char* name) {
    if (p != nullptr && elems > 0) uses.push_back({p, static_cast<size_t>(elems * esz), name});
  };
  switch (op.type) {
    case OpType::kAllReduce:
      add(op.send, op.count, sz, "input");
      add(op.recv, op.count, sz, "output");
      break;
    case OpType::kBroadcast:
      add(op.recv, op.count, sz, "buffer");
      break;
    case OpType::kAllGather:
      add(op.send, op.count, sz, "input");
      add(op.recv, op.count * nranks, sz, "output");
      break;
    case OpType::kReduceScatter:
      add(op.send, op.count * nranks, sz, "input");
      add(op.recv, op.count, sz, "output");
      break;
    case OpType::kReduce:
      add(op.send, op.count, sz, "input");
      if (rank == op.root) add(op.recv, op.count, sz, "output");
      break;
    case OpType::kScatter:
      if (rank == op.root) add(op.send, op.count * nranks, sz, "input");
      add(op.recv, op.count, sz, "output");
      break;
    case OpType::kAllGatherV:
      add(op.send, op.count, sz, "input");
      add(op.recv, MaxExtent(op.lists().recv_counts, op.lists().recv_displs), sz, "output");
      break;
    case OpType::kReduceScatterV:
      add(op.send, MaxExtent(op.lists().send_counts, op.lists().send_displs), sz, "input");
      add(op.recv, op.count, sz, "output");
      break;
    case OpType::kAlltoAll:  // equal blocks, no lists: count elements of dtype to each rank
      add(op.send, op.count * nranks, sz, "input");
      add(op.recv, op.count * sz / rsz * nranks, rsz, "output");
      break;
    case OpType::kAlltoAllV:
    case OpType::kAlltoAllVC:
      add(op.send, MaxExtent(op.lists().send_counts, op.lists().send_displs), sz, "input");
      add(op.recv, MaxExtent(op.lists().recv_counts, op.lists().recv_displs), rsz, "output");
      break;
    case OpType::kSend:
    case OpType::kRecv:
    case OpType::kBatchSendRecv:
      for (const auto& item : op.items) {
        add(item.buf, item.count, DataTypeSize(item.type), item.send ? "send" : "recv");
      }
      break;
    case OpType::kBarrier:
      break;
  }
}

const BufferUse* Communicator::FaultyUserBuffer(const OpDesc& op, const BufferKey& key,
                                                uint64_t checked_at, bool* unchanged) {
  *unchanged = checked_at == checked_at_ && key == checked_key_;
  if (*unchanged) return nullptr;
  UserBuffers(op, rank(), size(), &uses_);
  *unchanged = checked_at == checked_at_ && SameRanges(uses_, checked_uses_);
  if (*unchanged) return nullptr;
  for (const BufferUse& use : uses_) {
    if (rt::IsFault(rt::DeviceMemory::Instance().State(use.ptr, use.bytes))) return &use;
  }
  return nullptr;
}

void Communicator::NoteBuffersChecked(const OpDesc& op, const BufferKey& key,
                                      uint64_t checked_at) {
  checked_at_ = checked_at;
  checked_uses_ = uses_;  // no allocation once it has held as many buffers
  checked_key_ = KeyedBuffers(op.type) ? key : BufferKey{};
}

}  // namespace vigil::comm
