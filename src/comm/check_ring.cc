// The ring the consistency check runs along, and its fold into hierarchical ops
// (comm/check_ring.h).
#include "comm/check_ring.h"

namespace vigil::comm {

void CheckRing::Init(const alg::HostLayout& layout, uint32_t rank, uint32_t size) {
  snake_ = false;
  intra_peers_.clear();
  neighbours_.clear();
  inter_members_.clear();
  // The plain ring, rank -+ 1, unless the snake below replaces it.
  prev_ = size > 1 ? (rank + size - 1) % size : rank;
  next_ = size > 1 ? (rank + 1) % size : rank;
  if (size > 1) neighbours_.push_back(prev_);
  if (size > 2) neighbours_.push_back(next_);
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
  neighbours_ = {prev_, next_};  // size >= 4 here: two
  host_ = layout.host;
  hosts_ = hosts;
  const std::vector<uint32_t>& mine = layout.hosts[layout.host];
  const uint32_t i = layout.local;
  intra_peers_.push_back(mine[(i + local - 1) % local]);
  if (local > 2) intra_peers_.push_back(mine[(i + 1) % local]);
  for (const auto& members : layout.hosts) inter_members_.push_back(members[i]);
  snake_ = true;
}

HcclResult CheckRing::Start(const OpFingerprint& mine, bool report, alg::Group* group,
                            ConsistencyResult* check) {
  HcclResult rc = ExchangeFingerprints(mine, intra_peers_, group->links, group->wait, check);
  if (rc != HCCL_SUCCESS) return rc;
  inter_.Reset(mine, host_, hosts_, report, inter_members_.data());
  group->inter_header = inter_.header();
  return HCCL_SUCCESS;
}

void CheckRing::ResetFlat(FingerprintHeader* header, const OpFingerprint& mine, uint32_t rank,
                          uint32_t size, bool report) const {
  header->Reset(mine, rank, size, prev_, next_, report);
}

HcclResult CheckRing::Round(const OpFingerprint& mine, const alg::Group& group,
                            ConsistencyResult* check) const {
  return ExchangeFingerprints(mine, neighbours_, group.links, group.wait, check);
}

}  // namespace vigil::comm
