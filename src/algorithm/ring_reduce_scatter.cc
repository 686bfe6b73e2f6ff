// Ring ReduceScatter(V): block j (counts[j] elements at displs[j] of send) ends, fully reduced,
// on rank j. Moved piece by piece (a piece = half the scratch): for each piece offset the partial
// travels r-1 -> r around the ring, each rank adding its own input, and the last hop adds into
// recv. Partials live in two alternating scratch slots (receive into one, send the other), so
// recv is written only once per piece and in-place (recv inside send) works.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult RingReduceScatterV(Ctx& c, const char* send, const uint64_t* counts,
                              const uint64_t* displs, char* recv) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  if (p == 1) return c.Copy(recv, send + displs[0] * es, counts[0] * es);
  const uint32_t next = (r + 1) % p;
  const uint32_t prev = (r + p - 1) % p;
  const uint64_t piece = c.PieceElems(2);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than two elements");
  uint64_t span = 0;
  for (uint32_t j = 0; j < p; ++j) span = std::max(span, counts[j]);

  HcclResult hr = HCCL_SUCCESS;
  // Every step pairs the send with next's receive of it: lent (shm single copy), next reads the
  // partial in place. The slot lent at step s is received into at step s+1, after the read.
  c.LendSends();
  for (uint64_t off = 0; off < span; off += piece) {
    for (uint32_t s = 0; s + 1 < p; ++s) {
      // Step s: pass on the partial of block (r-s-1), receive the partial of block (r-s-2).
      const uint32_t sb = (r + 2 * p - s - 1) % p;
      const uint32_t rb = (r + 2 * p - s - 2) % p;
      const uint64_t sn = Clip(counts[sb], off, piece), rn = Clip(counts[rb], off, piece);
      const char* src = s == 0 ? send + (displs[sb] + off) * es : c.Slot((s - 1) & 1);
      char* in = c.Slot(s & 1);
      c.Send(next, src, sn * es);
      c.Recv(prev, in, rn * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
      const char* mine = send + (displs[rb] + off) * es;
      if (s + 2 < p) {
        hr = c.Reduce2(in, in, mine, rn);
      } else {
        hr = c.Reduce2(recv + off * es, mine, in, rn);  // rb == r: the last hop
      }
      if (hr != HCCL_SUCCESS) return hr;
    }
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
