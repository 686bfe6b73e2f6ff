// Ring AllGather(V): rank r's block goes to recv at displs[r] on every rank. Step s: send block
// (r-s) to r+1, receive block (r-s-1) from r-1 straight into recv (no reduction, no staging).
// Out of place, step 0 sends the own block from send and copies it into recv while its
// transfers wait on their links (mesh_allgather.cc).
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult RingAllGatherV(Ctx& c, const char* send, char* recv, const uint64_t* counts,
                          const uint64_t* displs) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  const size_t own = counts[r] * es;
  const bool apart = p > 1 && RangesApart(send, own, recv, ByteExtent(counts, displs, p, es));
  HcclResult hr = HCCL_SUCCESS;
  if (apart) {
    c.CopyDuringFlush(recv + displs[r] * es, send, own);
  } else if ((hr = c.Copy(recv + displs[r] * es, send, own)) != HCCL_SUCCESS || p == 1) {
    return hr;
  }
  c.LendSends();  // every step pairs the send with the neighbour's receive
  const uint32_t next = (r + 1) % p;
  const uint32_t prev = (r + p - 1) % p;
  for (uint32_t s = 0; s + 1 < p; ++s) {
    const uint32_t sb = (r + p - s) % p;
    const uint32_t rb = (r + 2 * p - s - 1) % p;
    c.Send(next, s == 0 && apart ? send : recv + displs[sb] * es, counts[sb] * es);
    c.Recv(prev, recv + displs[rb] * es, counts[rb] * es);
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
