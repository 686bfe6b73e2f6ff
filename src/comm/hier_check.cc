// The consistency check along the hosts' snake, folded into hierarchical ops
// (comm/hier_check.h).
#include "comm/hier_check.h"

namespace vigil::comm {

void HierCheck::Init(const alg::HostLayout& layout, uint32_t rank, uint32_t size) {
  snake_ = false;
  intra_peers_.clear();
  neighbours_.clear();
  inter_members_.clear();
  const uint32_t local = layout.per_host();
  const uint32_t hosts = layout.host_count();
  if (!layout.Hierarchical() || local < 2 || hosts % 2 != 0 || hosts * local != size) return;
  for (uint32_t h = 0; h < hosts; ++h) {
    for (uint32_t j = 0; j < local; ++j) {
      if (layout.hosts[h][j] != h * local + j) return;  // not consecutive
    }
  }
  // The snake: position q holds host q / local, local index q % local forward on even hosts
  // and backward on odd ones.
  auto at = [&](uint32_t q) {
    const uint32_t h = q / local, j = q % local;
    return h * local + (h % 2 == 0 ? j : local - 1 - j);
  };
  const uint32_t h = rank / local, j = rank % local;
  const uint32_t pos = h * local + (h % 2 == 0 ? j : local - 1 - j);
  prev_ = at((pos + size - 1) % size);
  next_ = at((pos + 1) % size);
  neighbours_.push_back(prev_);
  if (next_ != prev_) neighbours_.push_back(next_);
  host_ = layout.host;
  hosts_ = hosts;
  const std::vector<uint32_t>& mine = layout.hosts[layout.host];
  const uint32_t i = layout.local;
  intra_peers_.push_back(mine[(i + local - 1) % local]);
  if (local > 2) intra_peers_.push_back(mine[(i + 1) % local]);
  for (const auto& members : layout.hosts) inter_members_.push_back(members[i]);
  snake_ = true;
}

HcclResult HierCheck::Start(const OpFingerprint& mine, bool report, alg::Group* group,
                            ConsistencyResult* check) {
  HcclResult rc =
      ExchangeFingerprintsWith(mine, intra_peers_, group->links, true, true, group->wait, check);
  if (rc != HCCL_SUCCESS) return rc;
  inter_.Reset(mine, host_, hosts_, report, inter_members_.data());
  group->inter_header = inter_.header();
  return HCCL_SUCCESS;
}

void HierCheck::ResetFlat(FingerprintHeader* header, const OpFingerprint& mine, uint32_t rank,
                          uint32_t size, bool report) const {
  if (snake_) {
    header->Reset(mine, rank, size, prev_, next_, report);
  } else {
    header->Reset(mine, rank, size, report);
  }
}

HcclResult HierCheck::Round(const OpFingerprint& mine, uint32_t rank, uint32_t size,
                            const alg::Group& group, ConsistencyResult* check) const {
  if (!snake_) return ExchangeFingerprints(mine, rank, size, group.links, group.wait, check);
  return ExchangeFingerprintsWith(mine, neighbours_, group.links, true, true, group.wait, check);
}

}  // namespace vigil::comm
