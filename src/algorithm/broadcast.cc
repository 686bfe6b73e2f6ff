// Broadcast, three shapes (virtual rank v = rank - root, mod p):
//  - binomial tree for small messages: v receives from v - 2^k (its lowest set bit) and then
//    sends to v + 2^j for every smaller j, log2(p) rounds;
//  - pipelined chain root -> root+1 -> .. for large ones: the message moves in pieces, and at
//    step t position i receives piece t-i+1 while forwarding piece t-i, so every link is busy.
//  - star for large ones when every link is shared memory: the root lends its buffer and every
//    rank reads it in place at once (shm single copy: p-1 copies in all, in parallel, one
//    wait; a chain needs a rendezvous per piece and hop, which with more ranks than cores costs
//    a scheduling round each). Over rings (no single copy) it moves as many bytes as the chain.
// Data goes straight into the user's buffer; no scratch is needed.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult TreeBroadcast(Ctx& c, char* buf, uint64_t count, uint32_t root) {
  const uint32_t p = c.size();
  const uint32_t v = (c.rank() + p - root) % p;
  const size_t bytes = count * c.esize();
  auto real = [&](uint32_t x) { return (x + root) % p; };
  uint32_t mask = 1;
  while (mask < p) {
    if (v & mask) {
      c.Recv(real(v - mask), buf, bytes);
      HcclResult hr = c.Flush();
      if (hr != HCCL_SUCCESS) return hr;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < p) c.Send(real(v + mask), buf, bytes);
  }
  return c.Flush();
}

HcclResult StarBroadcast(Ctx& c, char* buf, uint64_t count, uint32_t root) {
  const size_t bytes = count * c.esize();
  c.LendSends();  // every receive is in the same (only) step
  if (c.rank() != root) {
    c.Recv(root, buf, bytes);
  } else {
    for (uint32_t j = 0; j < c.size(); ++j) {
      if (j != root) c.Send(j, buf, bytes);
    }
  }
  return c.Flush();
}

HcclResult ChainBroadcast(Ctx& c, char* buf, uint64_t count, uint32_t root) {
  const uint32_t p = c.size();
  const uint32_t i = (c.rank() + p - root) % p;  // position in the chain
  const size_t es = c.esize();
  const uint64_t piece = std::max<uint64_t>(1, kChainPieceBytes / es);
  const uint64_t pieces = (count + piece - 1) / piece;
  const uint32_t prev = (c.rank() + p - 1) % p;
  const uint32_t next = (c.rank() + 1) % p;
  c.LendSends();  // step t's send is the next rank's receive of step t
  for (uint64_t t = 0; t + 2 < pieces + p; ++t) {
    // receive piece t-i+1 (not the root), forward piece t-i (not the tail)
    if (i >= 1 && t + 1 >= i && t + 1 - i < pieces) {
      const uint64_t k = t + 1 - i;
      c.Recv(prev, buf + k * piece * es, Clip(count, k * piece, piece) * es);
    }
    if (i + 1 < p && t >= i && t - i < pieces) {
      const uint64_t k = t - i;
      c.Send(next, buf + k * piece * es, Clip(count, k * piece, piece) * es);
    }
    HcclResult hr = c.Flush();
    if (hr != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
