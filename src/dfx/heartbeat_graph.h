// The heartbeat's neighbour graph over the ranks of one communicator, and an in-process
// simulation of how one abnormal event floods over it.
//
// Graph: a ring (i-1, i+1) plus the generalized de Bruijn graph of degree 2 (Reddy, Pradhan and
// Kuhl: i -> 2i mod N and 2i+1 mod N), all edges taken both ways. Every rank has at most 6
// neighbours whatever N (2 ring + 2 out + 2 in), and the diameter is at most ceil(log2 N)
// (de Bruijn routing shifts in one bit of the destination per hop), so an event reaches 10,000
// ranks in about 14 hops with 6 sockets per rank. The ring keeps the graph connected when any
// one rank dies (a ring minus one node is still a path). HCCL's own graph (two ring planes, a
// 2-D torus) has diameter ~sqrt(N); this one stays logarithmic.
#pragma once

#include <cstdint>
#include <vector>

namespace vigil::dfx {

// Neighbours of `rank` among `nranks` ranks, sorted, without `rank` itself.
std::vector<uint32_t> HeartbeatNeighbours(uint32_t rank, uint32_t nranks);

struct PropagationStats {
  uint32_t nranks = 0;
  uint32_t discoverers = 0;  // ranks that detected the event themselves (hop 0)
  uint32_t hops = 0;         // forwarding rounds until every live rank knew
  uint64_t messages = 0;     // event frames sent in all, duplicates included
  uint32_t reached = 0;      // live ranks that knew at the end (must be nranks - dead)
  uint32_t max_degree = 0;
  double mean_degree = 0;
};

// Floods one event in synchronous rounds with the heartbeat's rules: a rank that learns of the
// event for the first time records it and forwards it to every live neighbour except the one it
// came from and the original informer; later copies are dropped (de-dup). `crimer_dead` = LOST:
// the crimer is gone and each of its live neighbours discovers the event on its own (each is an
// informer); otherwise (STUCK, a self-discovered event) the crimer alone discovers it.
PropagationStats SimulatePropagation(uint32_t nranks, uint32_t crimer, bool crimer_dead);

}  // namespace vigil::dfx
