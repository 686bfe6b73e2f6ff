// Hierarchical AllReduce (HCCL's intra ReduceScatter -> inter AllReduce -> intra AllGather).
// The message is cut into one block per local rank (Blocks(count, local)). Local rank i ends
// the first phase holding its host's sum of block i in recv, AllReduces that block with the
// ranks of local index i on the other hosts (the only traffic between hosts: 1/local of the
// message per rank), and the last phase gathers the finished blocks inside the host.
#include "algorithm/alg_context.h"
#include "algorithm/hierarchical.h"
#include "common/dtype.h"

namespace vigil::alg {

using detail::Blocks;

HcclResult HierAllReduce(const HierPlan& plan, const HostLayout& layout, Group& g, const void* send,
                         void* recv, uint64_t count, HcclDataType type, HcclReduceOp op,
                         Scratch scratch, AlgResult* result) {
  if (count == 0) return HCCL_SUCCESS;
  const size_t es = DataTypeSize(type);
  const uint32_t local = layout.per_host();
  const uint32_t i = layout.local;
  Group intra = detail::SubGroup(g, layout.hosts[layout.host], i);
  Group inter = detail::SubGroup(g, detail::SameLocalIndex(layout, i), layout.host);
  inter.header = g.inter_header;

  const Blocks blk(count, local);
  std::vector<uint64_t> counts(local), displs(local);
  for (uint32_t j = 0; j < local; ++j) {
    counts[j] = blk.Len(j);
    displs[j] = blk.Off(j);
  }
  // One rank per host: the inter-host AllReduce is the whole op, from send (the first phase
  // would copy the message into recv before any byte crossed: 2 hosts at 5 Gbit/s, 32 MiB out of
  // place moved 0.52 GB/s where in place moved 0.59).
  if (local == 1)
    return AllReduce(plan.level1, inter, send, recv, count, type, op, scratch, result);
  char* mine = static_cast<char*>(recv) + displs[i] * es;
  // In place (send == recv) works: the ring ReduceScatterV reads this rank's own block only in
  // the step that writes it.
  HcclResult hr = ReduceScatterV(intra, send, counts.data(), displs.data(), mine, counts[i], type,
                                 op, scratch, result);
  if (hr != HCCL_SUCCESS) return hr;
  if (counts[i] > 0) {
    hr = AllReduce(plan.level1, inter, mine, mine, counts[i], type, op, scratch, result);
    if (hr != HCCL_SUCCESS) return hr;
  }
  return AllGatherV(intra, mine, counts[i], recv, counts.data(), displs.data(), type, scratch,
                    result);
}

}  // namespace vigil::alg
