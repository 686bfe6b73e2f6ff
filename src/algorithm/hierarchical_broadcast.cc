// Hierarchical Broadcast and Reduce, rooted at rank `root` = local index ir on host hr.
//  Broadcast: the ranks of local index ir broadcast from host hr (between hosts), then every
//             host broadcasts from its local index ir (inside the host).
//  Reduce:    every host reduces to its local index ir (inside the host), then those ranks
//             reduce to host hr (between hosts), i.e. to root.
// The message crosses between hosts once per host either way.
#include <memory>
#include <new>

#include "algorithm/alg_context.h"
#include "algorithm/hierarchical.h"
#include "common/dtype.h"

namespace vigil::alg {

namespace {

// Host index and local index of global rank r.
bool Locate(const HostLayout& layout, uint32_t r, uint32_t* host, uint32_t* local) {
  for (uint32_t h = 0; h < layout.hosts.size(); ++h) {
    for (uint32_t j = 0; j < layout.hosts[h].size(); ++j) {
      if (layout.hosts[h][j] == r) {
        *host = h;
        *local = j;
        return true;
      }
    }
  }
  return false;
}

HcclResult BadRoot(AlgResult* result) {
  if (result) result->code = HCCL_E_PARA;
  return HCCL_E_PARA;
}

}  // namespace

HcclResult HierBroadcast(const HierPlan& plan, const HostLayout& layout, Group& g, void* buf,
                         uint64_t count, HcclDataType type, uint32_t root, Scratch scratch,
                         AlgResult* result) {
  (void)plan;  // each level picks tree or chain by size, as named in the plan
  uint32_t hr = 0, ir = 0;
  if (!Locate(layout, root, &hr, &ir)) return BadRoot(result);
  if (count == 0) return HCCL_SUCCESS;
  const uint32_t i = layout.local;
  if (i == ir) {
    Group inter = detail::SubGroup(g, detail::SameLocalIndex(layout, i), layout.host);
    HcclResult rc = Broadcast(inter, buf, count, type, hr, scratch, result);
    if (rc != HCCL_SUCCESS) return rc;
  }
  Group intra = detail::SubGroup(g, layout.hosts[layout.host], i);
  return Broadcast(intra, buf, count, type, ir, scratch, result);
}

HcclResult HierReduce(const HierPlan& plan, const HostLayout& layout, Group& g, const void* send,
                      void* recv, uint64_t count, HcclDataType type, HcclReduceOp op, uint32_t root,
                      Scratch scratch, AlgResult* result) {
  (void)plan;
  uint32_t hr = 0, ir = 0;
  if (!Locate(layout, root, &hr, &ir)) return BadRoot(result);
  if (count == 0) return HCCL_SUCCESS;
  const uint32_t i = layout.local;
  std::unique_ptr<char[]> partial;
  if (i == ir) {
    partial.reset(new (std::nothrow) char[count * DataTypeSize(type)]);
    if (!partial) {
      if (result) result->code = HCCL_E_MEMORY;
      return HCCL_E_MEMORY;
    }
  }
  Group intra = detail::SubGroup(g, layout.hosts[layout.host], i);
  HcclResult rc = Reduce(intra, send, partial.get(), count, type, op, ir, scratch, result);
  if (rc != HCCL_SUCCESS || i != ir) return rc;
  Group inter = detail::SubGroup(g, detail::SameLocalIndex(layout, i), layout.host);
  return Reduce(inter, partial.get(), recv, count, type, op, hr, scratch, result);
}

}  // namespace vigil::alg
