// Hierarchical collectives for ranks spread over several hosts: the ranks of one host work over
// their shared-memory links (level 0), one rank per host and local index works over the TCP
// links between hosts (level 1), as HCCL does between servers. Each op is two or three phases,
// each phase one of the flat algorithms run on a sub-group of the op's Group:
//   AllReduce:     intra ReduceScatter -> inter AllReduce of this rank's block among the ranks of
//                  the same local index -> intra AllGather.
//   ReduceScatter: intra ReduceScatter of each host's share -> inter ReduceScatter.
//   AllGather:     inter AllGather among same local index -> intra AllGather of each host's share.
//   Broadcast:     inter Broadcast among the root's local index -> intra Broadcast.
//   Reduce:        intra Reduce to the root's local index -> inter Reduce to the root.
// Only every host holding the same number of ranks makes a level-1 group per local index, so a
// layout with unequal hosts (or a single host) runs flat.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithm/collective.h"

namespace vigil::alg {

// Which ranks share a host. Hosts are ordered by their lowest rank, ranks inside a host ascend.
struct HostLayout {
  std::vector<std::vector<uint32_t>> hosts;
  uint32_t host = 0;   // this rank's host index
  uint32_t local = 0;  // this rank's index inside its host

  // host_of_rank[r] = any string naming rank r's host (equal strings = one host).
  static HostLayout FromHostIds(const std::vector<std::string>& host_of_rank, uint32_t rank);
  uint32_t host_count() const { return static_cast<uint32_t>(hosts.size()); }
  // Every host has the same number of ranks (and there are at least two hosts).
  bool Hierarchical() const;
  uint32_t per_host() const { return hosts.empty() ? 0 : static_cast<uint32_t>(hosts[0].size()); }
};

// The algorithm of each level, as run (so the AlgType string tells the truth).
struct HierPlan {
  Algo level0 = Algo::kRing;
  Algo level1 = Algo::kRing;
};

// Whether `op` runs hierarchically on this layout, and with which levels. `bytes` is the op's
// whole message (as for Choose*). False = run flat: a single host, hosts of unequal rank counts,
// an op without a hierarchical form, or HCCL_ALGO naming a flat algorithm for this op without
// levels (e.g. HCCL_ALGO=ring). HCCL_ALGO with levels ("level0:NA;level1:H-D_R",
// "allreduce=level0:ring;level1:ring") picks each level (NA = automatic); a level an op cannot
// run falls back to automatic with one warning. Automatic: level 0 ring; level 1 AllReduce H-D
// for a power-of-two host count or blocks <= 64 KiB, else ring; ReduceScatter fullmesh over 2
// hosts or for blocks <= 64 KiB over up to 8, else ring; AllGather ring; Broadcast/Reduce tree
// ("H-D") up to 64 KiB, else chain
// ("ring"). `algo_spec`: the communicator's hcclAlgo in HCCL_ALGO's form; null or empty: HCCL_ALGO.
bool ChooseHierarchical(CollOp op, const HostLayout& layout, size_t bytes, HierPlan* plan,
                        const std::string* algo_spec = nullptr);
// The ranks a hierarchical op of `rank` needs links to: its host, the same local index on the
// other hosts, and its ring neighbours rank +- 1 (the communicator's op-consistency check).
// Symmetric (r needs p exactly when p needs r), sorted, without `rank`.
std::vector<uint32_t> HierPeers(const HostLayout& layout, uint32_t rank, uint32_t size);
// HCCL's "level0-level1-level2" for a plan, e.g. "ring-H-D-null" ("HD" at level 0).
std::string HierAlgType(const HierPlan& plan);

// The ops. Arguments and in-place rules as the flat forms in collective.h; `g` is the whole
// communicator, `layout` must satisfy Hierarchical().
HcclResult HierAllReduce(const HierPlan& plan, const HostLayout& layout, Group& g, const void* send,
                         void* recv, uint64_t count, HcclDataType type, HcclReduceOp op,
                         Scratch scratch, AlgResult* result);
HcclResult HierReduceScatter(const HierPlan& plan, const HostLayout& layout, Group& g,
                             const void* send, void* recv, uint64_t recv_count, HcclDataType type,
                             HcclReduceOp op, Scratch scratch, AlgResult* result);
HcclResult HierAllGather(const HierPlan& plan, const HostLayout& layout, Group& g, const void* send,
                         void* recv, uint64_t send_count, HcclDataType type, Scratch scratch,
                         AlgResult* result);
HcclResult HierBroadcast(const HierPlan& plan, const HostLayout& layout, Group& g, void* buf,
                         uint64_t count, HcclDataType type, uint32_t root, Scratch scratch,
                         AlgResult* result);
HcclResult HierReduce(const HierPlan& plan, const HostLayout& layout, Group& g, const void* send,
                      void* recv, uint64_t count, HcclDataType type, HcclReduceOp op, uint32_t root,
                      Scratch scratch, AlgResult* result);

namespace detail {
// The sub-group of g made of `members` (global ranks), this rank being members[index].
Group SubGroup(const Group& g, const std::vector<uint32_t>& members, uint32_t index);
// Ranks of local index i on every host, in host order.
std::vector<uint32_t> SameLocalIndex(const HostLayout& layout, uint32_t i);
}  // namespace detail

}  // namespace vigil::alg
