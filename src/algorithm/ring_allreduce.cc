// Ring AllReduce: reduce-scatter then allgather around rank -> rank+1, each over nranks blocks.
// Reduce-scatter step s: send block (r-s), receive block (r-s-1) into scratch piece by piece and
// reduce it into recv; after nranks-1 steps rank r owns the full block (r+1). Allgather step s:
// send block (r+1-s), receive block (r-s) straight into recv. Bandwidth-optimal for any count.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult RingAllReduce(Ctx& c, const char* send, char* recv, uint64_t count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  if (p == 1) return c.Copy(recv, send, count * es);
  const uint32_t next = (r + 1) % p;
  const uint32_t prev = (r + p - 1) % p;
  const Blocks blk(count, p);
  const uint64_t piece = c.PieceElems(1);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than one element");
  char* slot = c.Slot(0);

  HcclResult hr = HCCL_SUCCESS;
  c.LendSends();  // every step pairs the send with next's receive of it (shm single copy)
  for (uint32_t s = 0; s + 1 < p; ++s) {
    const uint32_t sb = (r + p - s) % p;          // partial we pass on (our own input at s=0)
    const uint32_t rb = (r + 2 * p - s - 1) % p;  // block we add our input to
    const char* sbase = s == 0 ? send : recv;
    const uint64_t slen = blk.Len(sb), rlen = blk.Len(rb);
    const uint64_t span = std::max(slen, rlen);
    for (uint64_t off = 0; off < span; off += piece) {
      const uint64_t sn = Clip(slen, off, piece), rn = Clip(rlen, off, piece);
      c.Send(next, sbase + (blk.Off(sb) + off) * es, sn * es);
      c.Recv(prev, slot, rn * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
      const uint64_t at = (blk.Off(rb) + off) * es;
      if ((hr = c.Reduce2(recv + at, send + at, slot, rn)) != HCCL_SUCCESS) return hr;
    }
  }
  for (uint32_t s = 0; s + 1 < p; ++s) {
    const uint32_t sb = (r + 1 + p - s) % p;
    const uint32_t rb = (r + p - s) % p;
    c.Send(next, recv + blk.Off(sb) * es, blk.Len(sb) * es);
    c.Recv(prev, recv + blk.Off(rb) * es, blk.Len(rb) * es);
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
