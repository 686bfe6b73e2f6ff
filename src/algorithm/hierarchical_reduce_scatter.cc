// Hierarchical ReduceScatter. Phase 1, inside the host: for every host k, the local ranks
// reduce-scatter the blocks of host k's ranks, so local rank i holds its host's sum of block
// hosts[k][i] for every k (one slot per host in a staging buffer). Phase 2, between hosts: the
// ranks of local index i reduce-scatter those slots; host h's member keeps slot h, the full sum
// of its own block. Between hosts each rank moves (hosts-1)/hosts of one slot set, as little as
// a flat algorithm's cross-host share.
#include <memory>
#include <new>

#include "algorithm/alg_context.h"
#include "algorithm/hierarchical.h"
#include "common/dtype.h"

namespace vigil::alg {

HcclResult HierReduceScatter(const HierPlan& plan, const HostLayout& layout, Group& g,
                             const void* send, void* recv, uint64_t recv_count, HcclDataType type,
                             HcclReduceOp op, Scratch scratch, AlgResult* result) {
  if (recv_count == 0) return HCCL_SUCCESS;
  const size_t es = DataTypeSize(type);
  const uint32_t hosts = layout.host_count();
  const uint32_t local = layout.per_host();
  const uint32_t i = layout.local;
  Group intra = detail::SubGroup(g, layout.hosts[layout.host], i);
  Group inter = detail::SubGroup(g, detail::SameLocalIndex(layout, i), layout.host);

  // Plain host memory: the staging slots are this op's own, never a user or CCL buffer.
  std::unique_ptr<char[]> stage(new (std::nothrow) char[hosts * recv_count * es]);
  if (!stage) {
    if (result) result->code = HCCL_E_MEMORY;
    return HCCL_E_MEMORY;
  }
  std::vector<uint64_t> counts(local, recv_count), displs(local);
  HcclResult hr = HCCL_SUCCESS;
  for (uint32_t k = 0; k < hosts; ++k) {
    for (uint32_t j = 0; j < local; ++j) displs[j] = layout.hosts[k][j] * recv_count;
    hr = ReduceScatterV(intra, send, counts.data(), displs.data(),
                        stage.get() + k * recv_count * es, recv_count, type, op, scratch, result);
    if (hr != HCCL_SUCCESS) return hr;
  }
  return ReduceScatter(plan.level1, inter, stage.get(), recv, recv_count, type, op, scratch,
                       result);
}

}  // namespace vigil::alg
