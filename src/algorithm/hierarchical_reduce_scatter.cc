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
  inter.header = g.inter_header;

  // One rank per host: the slots are the send buffer itself (slot k = block of host k's only
  // rank, rank k), so level 1 reads it in place. Staging it cost a copy of the whole input into
  // freshly mapped pages every op: 64 MiB on 2 hosts at 1 Gbit/s ran at 7% of the link bound,
  // the page faults (expensive on this VM) dominating, and 93% after (bench/cluster).
  if (local == 1) {
    return ReduceScatter(plan.level1, inter, send, recv, recv_count, type, op, scratch, result);
  }
  // Plain host memory: the staging slots are this op's own, never a user or CCL buffer. Kept
  // by the thread between ops (grown, never shrunk), so an op does not fault in new pages.
  thread_local std::unique_ptr<char[]> kept;
  thread_local size_t kept_bytes = 0;
  const size_t need = static_cast<size_t>(hosts) * recv_count * es;
  if (kept_bytes < need) {
    kept.reset(new (std::nothrow) char[need]);
    kept_bytes = kept ? need : 0;
  }
  char* stage = kept.get();
  if (stage == nullptr) {
    if (result) result->code = HCCL_E_MEMORY;
    return HCCL_E_MEMORY;
  }
  std::vector<uint64_t> counts(local, recv_count), displs(local);
  HcclResult hr = HCCL_SUCCESS;
  for (uint32_t k = 0; k < hosts; ++k) {
    for (uint32_t j = 0; j < local; ++j) displs[j] = layout.hosts[k][j] * recv_count;
    hr = ReduceScatterV(intra, send, counts.data(), displs.data(),
                        stage + k * recv_count * es, recv_count, type, op, scratch, result);
    if (hr != HCCL_SUCCESS) return hr;
  }
  return ReduceScatter(plan.level1, inter, stage, recv, recv_count, type, op, scratch,
                       result);
}

}  // namespace vigil::alg
