// Hierarchical AllGather. Phase 1, between hosts: the ranks of local index i gather their
// blocks, each straight to its final place in recv (block of rank r at r*send_count). Phase 2,
// inside the host: for every host k, the local ranks gather the blocks of host k's ranks, which
// local rank j received in phase 1. Each block crosses between hosts once per host.
#include "algorithm/alg_context.h"
#include "algorithm/hierarchical.h"
#include "common/dtype.h"

namespace vigil::alg {

HcclResult HierAllGather(const HierPlan& plan, const HostLayout& layout, Group& g, const void* send,
                         void* recv, uint64_t send_count, HcclDataType type, Scratch scratch,
                         AlgResult* result) {
  (void)plan;  // both levels are rings (the V forms place blocks anywhere)
  if (send_count == 0) return HCCL_SUCCESS;
  const size_t es = DataTypeSize(type);
  const uint32_t hosts = layout.host_count();
  const uint32_t local = layout.per_host();
  const uint32_t i = layout.local;
  const std::vector<uint32_t> peers = detail::SameLocalIndex(layout, i);
  Group intra = detail::SubGroup(g, layout.hosts[layout.host], i);
  Group inter = detail::SubGroup(g, peers, layout.host);
  inter.header = g.inter_header;
  char* out = static_cast<char*>(recv);

  std::vector<uint64_t> counts(hosts, send_count), displs(hosts);
  for (uint32_t k = 0; k < hosts; ++k) displs[k] = peers[k] * send_count;
  // In place (send = recv + rank*send_count): the ring's first copy is then a no-op.
  HcclResult hr = AllGatherV(inter, send, send_count, recv, counts.data(), displs.data(), type,
                             scratch, result);
  if (hr != HCCL_SUCCESS) return hr;
  counts.assign(local, send_count);
  displs.resize(local);
  for (uint32_t k = 0; k < hosts; ++k) {
    for (uint32_t j = 0; j < local; ++j) displs[j] = layout.hosts[k][j] * send_count;
    hr = AllGatherV(intra, out + displs[i] * es, send_count, recv, counts.data(), displs.data(),
                    type, scratch, result);
    if (hr != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg
