// Collective algorithms over the transport's links, Gloo-style: each algorithm is plain code over
// Progress() (send/recv all at once) plus the reduction kernels, one small file each
// (ring_allreduce.cc, mesh_allreduce.cc, hd_allreduce.cc, pairwise_alltoall.cc, ...).
//
// Algorithms read and write the user's buffers directly and stage received data in `scratch`
// (the communicator's CCL buffer, HCCL_BUFFSIZE bytes): a message larger than the scratch is
// moved in pieces. Every copy or reduction that touches device memory goes through
// rt::DeviceMemory's checked path, so a freed CCL buffer (comm destroyed before sync) or a user
// buffer smaller than count fails with HCCL_E_RUNTIME and AlgResult::copy filled (EI0012).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hccl/hccl_types.h"
#include "runtime/device_memory.h"
#include "transport/link.h"

namespace vigil::alg {

enum class Algo { kAuto, kRing, kMesh, kHalvingDoubling, kPairwise, kStar };
// HCCL's level names: "ring", "fullmesh", "H-D", "pairwise", "star".
const char* AlgoName(Algo algo);
bool ParseAlgoName(const std::string& name, Algo* out);

// The ranks an algorithm runs over. links[i] is the link to member i (nullptr for self).
struct Group {
  uint32_t rank = 0;
  uint32_t size = 1;
  std::vector<transport::Link*> links;
  transport::WaitPolicy wait;
};

struct Scratch {
  void* base = nullptr;
  size_t bytes = 0;
};

// Why an algorithm failed: a transfer (timeout, abort, broken link) or a checked copy.
struct AlgResult {
  HcclResult code = HCCL_SUCCESS;
  transport::ProgressError progress;
  rt::CopyFault copy;
  size_t copy_bytes = 0;
  const void* copy_src = nullptr;
  const void* copy_dst = nullptr;
};

// Picks the algorithm for an op from size and rank count (HCCL_ALGO may force one).
Algo ChooseAllReduce(uint32_t nranks, size_t bytes);
Algo ChooseAllGather(uint32_t nranks, size_t bytes);
Algo ChooseReduceScatter(uint32_t nranks, size_t bytes);

// send and recv may be the same buffer (in place). Counts are elements of `type`.
HcclResult AllReduce(Algo algo, Group& g, const void* send, void* recv, uint64_t count,
                     HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result);
// send holds size*recv_count elements; recv gets this rank's reduced block.
HcclResult ReduceScatter(Algo algo, Group& g, const void* send, void* recv, uint64_t recv_count,
                         HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result);
// recv gets size*send_count elements, rank r's block at r*send_count.
HcclResult AllGather(Algo algo, Group& g, const void* send, void* recv, uint64_t send_count,
                     HcclDataType type, Scratch scratch, AlgResult* result);
HcclResult Broadcast(Group& g, void* buf, uint64_t count, HcclDataType type, uint32_t root,
                     Scratch scratch, AlgResult* result);
// recv significant only at root.
HcclResult Reduce(Group& g, const void* send, void* recv, uint64_t count, HcclDataType type,
                  HcclReduceOp op, uint32_t root, Scratch scratch, AlgResult* result);
// send (size*recv_count elements) significant only at root.
HcclResult Scatter(Group& g, const void* send, void* recv, uint64_t recv_count, HcclDataType type,
                   uint32_t root, Scratch scratch, AlgResult* result);
HcclResult AllGatherV(Group& g, const void* send, uint64_t send_count, void* recv,
                      const uint64_t* recv_counts, const uint64_t* recv_displs, HcclDataType type,
                      Scratch scratch, AlgResult* result);
HcclResult ReduceScatterV(Group& g, const void* send, const uint64_t* send_counts,
                          const uint64_t* send_displs, void* recv, uint64_t recv_count,
                          HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result);
// Counts and displacements in elements; pairwise exchange (step k: send to rank+k, recv from rank-k).
HcclResult AlltoAllV(Group& g, const void* send, const uint64_t* send_counts,
                     const uint64_t* send_displs, HcclDataType send_type, void* recv,
                     const uint64_t* recv_counts, const uint64_t* recv_displs,
                     HcclDataType recv_type, Scratch scratch, AlgResult* result);
HcclResult Barrier(Group& g, AlgResult* result);

// One point-to-point item of a batch (HcclSend/HcclRecv/HcclBatchSendRecv).
struct P2pItem {
  bool send = false;
  void* buf = nullptr;
  uint64_t count = 0;
  HcclDataType type = HCCL_DATA_TYPE_INT8;
  uint32_t peer = 0;
};
// All items progress together; items to one peer in one direction complete in order.
HcclResult SendRecv(Group& g, const std::vector<P2pItem>& items, Scratch scratch,
                    AlgResult* result);

}  // namespace vigil::alg
