// The communicator's choice of algorithm for an op (by op type, message size and where its ranks
// are) and the AlgType string that names it in logs.
#include <fmt/format.h>

#include "comm/communicator.h"
#include "common/dtype.h"

namespace vigil::comm {

namespace {

// The collective an op type runs in levels over several hosts (kBarrier: none).
alg::CollOp LevelledOp(OpType type) {
  switch (type) {
    case OpType::kAllReduce: return alg::CollOp::kAllReduce;
    case OpType::kAllGather: return alg::CollOp::kAllGather;
    case OpType::kReduceScatter: return alg::CollOp::kReduceScatter;
    case OpType::kBroadcast: return alg::CollOp::kBroadcast;
    case OpType::kReduce: return alg::CollOp::kReduce;
    default: return alg::CollOp::kBarrier;
  }
}

}  // namespace

bool Communicator::LevelsAreOneRankAHost(OpType type) const {
  return host_count_ > 1 && layout_.Hierarchical() && layout_.per_host() == 1 &&
         LevelledOp(type) != alg::CollOp::kBarrier;
}

alg::Algo Communicator::PickAlgorithm(const OpDesc& op, alg::HierPlan* plan) const {
  const size_t bytes = op.count * DataTypeSize(op.dtype);
  const alg::CollOp coll = LevelledOp(op.type);
  if (host_count_ > 1 && coll != alg::CollOp::kBarrier) {
    // Ranks on several hosts: intra-host then inter-host levels when the op has them.
    const bool gathered = op.type == OpType::kAllGather || op.type == OpType::kReduceScatter;
    const size_t whole = gathered ? bytes * size() : bytes;
    if (alg::ChooseHierarchical(coll, layout_, whole, plan, &options_.algo)) {
      if (!LevelsAreOneRankAHost(op.type)) return alg::Algo::kHierarchical;
      // One rank a host: the op is its inter-host level alone, run flat over all ranks. Its
      // transfers then carry the op's fingerprints, where a hierarchical op exchanges them in
      // a round of its own first (2 hosts, 8 B: two exchanges of a one-way trip each, 16.9 us
      // against OpenMPI's 10.7). The flat Broadcast and Reduce choose by size themselves.
      return coll == alg::CollOp::kBroadcast || coll == alg::CollOp::kReduce ? alg::Algo::kStar
                                                                             : plan->level1;
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
