// The ring a communicator's op-consistency check (comm/consistency.h) runs along: rank -+ 1, or
// over several hosts of k >= 2 consecutive ranks each (rank = host x k + local index) and an
// even number of hosts, a snake through the hosts. There a hierarchical AllReduce,
// AllGather or ReduceScatter folds it into its levels instead of a round of its own before
// them, which cost an inter-host trip a call (2 hosts x 2 ranks at 5 Gbit/s, 1-16 KiB AllReduce:
// 30-55 of 80-125 us).
//
// The check runs along a ring that a hierarchical op's own links already trace: a snake
// through the hosts, host 0's ranks in order, host 1's in reverse, host 2's in order, ...
// Between two hosts it steps from one local index to the same local index on the next host,
// and back from the last host's local index 0 to rank 0, so each of its inter-host edges is a
// link of the inter-host level. Every collective on such a communicator, flat or not, checks
// its neighbours on that ring:
//  - a flat op sends its fingerprint to them on its first transfers (FingerprintHeader with the
//    neighbours named), as it did to rank -+ 1;
//  - a hierarchical AllReduce, AllGather or ReduceScatter first exchanges fingerprints with its
//    ring neighbours inside its host (shared memory: microseconds), so nothing moves inside the
//    host before they matched; its inter-host level carries the fingerprint as a header of its
//    own transfers to the neighbouring hosts' ranks of its local index (Group::inter_header), so
//    nothing crosses between hosts before that header matched either;
//  - Broadcast and Reduce, whose levels not every rank runs, keep the round, along this ring.
// Ranks that disagree on the op (a count that makes one rank run flat and another in levels)
// still meet each other's fingerprint first on some edge of the ring, and the one that sees the
// mismatch fails at once (EI0005) and closes its links, as with the plain ring.
// Other layouts (ranks of a host not consecutive, an odd number of hosts) keep rank -+ 1 and
// the round.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithm/collective.h"
#include "algorithm/hierarchical.h"
#include "comm/consistency.h"
#include "comm/op.h"

namespace vigil::comm {

class CheckRing {
 public:
  // The layout of the communicator (once it is known).
  void Init(const alg::HostLayout& layout, uint32_t rank, uint32_t size);
  // prev()/next(): this rank's neighbours on the ring (the snake when snake()).
  bool snake() const { return snake_; }
  uint32_t prev() const { return prev_; }
  uint32_t next() const { return next_; }
  // Whether a hierarchical op of `type` folds its check into its levels.
  bool Folds(OpType type) const {
    return snake_ && (type == OpType::kAllReduce || type == OpType::kAllGather ||
                      type == OpType::kReduceScatter);
  }
  // Before a folding op's algorithm: the exchange inside the host, and group->inter_header. A
  // mismatch (check->mismatch) or a failed transfer.
  HcclResult Start(const OpFingerprint& mine, bool report, alg::Group* group,
                   ConsistencyResult* check);
  // The inter-host level's header: its result() after the algorithm.
  FingerprintHeader& inter() { return inter_; }
  // A flat op's header (FingerprintHeader::Reset) with the ring's neighbours.
  void ResetFlat(FingerprintHeader* header, const OpFingerprint& mine, uint32_t rank, uint32_t size,
                 bool report) const;
  // A round with the ring's neighbours (a hierarchical op that does not fold; a flat op that
  // moved nothing).
  HcclResult Round(const OpFingerprint& mine, const alg::Group& group,
                   ConsistencyResult* check) const;

 private:
  bool snake_ = false;
  uint32_t prev_ = 0, next_ = 0;
  uint32_t host_ = 0, hosts_ = 0;
  std::vector<uint32_t> intra_peers_;    // ring neighbours inside the host (ranks)
  std::vector<uint32_t> neighbours_;     // prev, next (once when the same; none alone)
  std::vector<uint32_t> inter_members_;  // the ranks of this local index, by host
  FingerprintHeader inter_;
};

}  // namespace vigil::comm
