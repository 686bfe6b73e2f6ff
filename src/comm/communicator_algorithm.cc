// The communicator's choice of algorithm for an op (by op type, message size and where its ranks
// are) and the AlgType string that names it in logs.
#include <fmt/format.h>

#include "comm/communicator.h"
#include "common/dtype.h"

namespace vigil::comm {

alg::Algo Communicator::PickAlgorithm(const OpDesc& op, alg::HierPlan* plan) const {
  const size_t bytes = op.count * DataTypeSize(op.dtype);
  if (host_count_ > 1) {
    // Ranks on several hosts: intra-host then inter-host levels when the op has them.
    alg::CollOp coll = alg::CollOp::kBarrier;
    size_t whole = bytes;
    switch (op.type) {
      case OpType::kAllReduce: coll = alg::CollOp::kAllReduce; break;
      case OpType::kAllGather:
        coll = alg::CollOp::kAllGather;
        whole = bytes * size();
        break;
      case OpType::kReduceScatter:
        coll = alg::CollOp::kReduceScatter;
        whole = bytes * size();
        break;
      case OpType::kBroadcast: coll = alg::CollOp::kBroadcast; break;
      case OpType::kReduce: coll = alg::CollOp::kReduce; break;
      default: break;
    }
    if (coll != alg::CollOp::kBarrier && alg::ChooseHierarchical(coll, layout_, whole, plan, &options_.algo)) {
      if (layout_.per_host() > 1) return alg::Algo::kHierarchical;
      // One rank a host: the op is its inter-host level alone, run flat over all ranks. Its
      // transfers then carry the op's fingerprints, where a hierarchical op exchanges them in
      // a round of its own first (2 hosts, 8 B: two exchanges of a one-way trip each, 16.9 us
      // against OpenMPI's 10.7). The flat Broadcast and Reduce choose by size themselves.
      switch (op.type) {
        case OpType::kAllReduce:
        case OpType::kAllGather:
        case OpType::kReduceScatter:
          return plan->level1;
        default:
          return alg::Algo::kStar;
      }
    }
  }
  switch (op.type) {
    case OpType::kAllReduce: return alg::ChooseAllReduce(size(), bytes, &options_.algo);
    case OpType::kAllGather: return alg::ChooseAllGather(size(), bytes, &options_.algo);
    case OpType::kReduceScatter: return alg::ChooseReduceScatter(size(), bytes, &options_.algo);
    case OpType::kAlltoAll:
    case OpType::kAlltoAllV:
    case OpType::kAlltoAllVC: return alg::Algo::kPairwise;
    case OpType::kBroadcast:
    case OpType::kReduce:
    case OpType::kScatter: return alg::Algo::kStar;
    default: return alg::Algo::kMesh;
  }
}

std::string Communicator::AlgTypeString(alg::Algo algo, const alg::HierPlan& plan) const {
  // level0 = inside a host, level1 = between hosts, level2 = between superpods.
  if (algo == alg::Algo::kHierarchical) return alg::HierAlgType(plan);
  if (host_count_ <= 1) return fmt::format("{}-null-null", alg::AlgoName(algo));
  return fmt::format("null-{}-null", alg::AlgoName(algo));
}

alg::Algo Communicator::PickAndCache(const OpDesc& op, uint64_t bytes,
                                     alg::HierPlan* plan) const {
  const alg::Algo algo = PickAlgorithm(op, plan);
  if (bytes < (uint64_t{1} << 54)) {  // counts are checked to stay below 2^48 bytes
    alg_cache_[static_cast<size_t>(op.type)].store(
        bytes << 10 | static_cast<uint64_t>(plan->level1) << 7 |
            static_cast<uint64_t>(plan->level0) << 4 | static_cast<uint64_t>(algo) << 1 | 1,
        std::memory_order_relaxed);
  }
  return algo;
}

}  // namespace vigil::comm
