// Reduce to root, two shapes (virtual rank v = rank - root, mod p):
//  - binomial tree for small messages: v adds in the partial of v + 2^k for rising k until its
//    bit k is set, then sends its partial to v - 2^k; log2(p) rounds. Partials stay in scratch
//    (slot 0), received ones land in slot 1; the root accumulates straight into recv.
//  - pipelined chain root+p-1 -> .. -> root+1 -> root for large ones: piece k reaches position
//    i at step k + (p-1-i) - 1, gets this rank's input added and moves on at the next step;
//    partials alternate between two scratch slots so receiving and sending overlap.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult TreeReduce(Ctx& c, const char* send, char* recv, uint64_t count, uint32_t root) {
  const uint32_t p = c.size();
  const uint32_t v = (c.rank() + p - root) % p;
  const size_t es = c.esize();
  auto real = [&](uint32_t x) { return (x + root) % p; };
  const uint64_t piece = c.PieceElems(2);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than two elements");
  HcclResult hr = HCCL_SUCCESS;
  for (uint64_t off = 0; off < count; off += piece) {
    const uint64_t n = Clip(count, off, piece);
    const char* partial = send + off * es;  // until a child's partial has been added
    char* acc = v == 0 ? recv + off * es : c.Slot(0);
    for (uint32_t mask = 1; mask < p; mask <<= 1) {
      if (v & mask) {
        c.Send(real(v - mask), partial, n * es);
        if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
        break;
      }
      if (v + mask < p) {
        c.Recv(real(v + mask), c.Slot(1), n * es);
        if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
        if ((hr = c.Reduce2(acc, partial, c.Slot(1), n)) != HCCL_SUCCESS) return hr;
        partial = acc;
      }
    }
    if (v == 0 && (hr = c.Copy(acc, partial, n * es)) != HCCL_SUCCESS) return hr;  // p == 1
  }
  return HCCL_SUCCESS;
}

HcclResult ChainReduce(Ctx& c, const char* send, char* recv, uint64_t count, uint32_t root) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const uint32_t q = (p - 1) - (r + p - root) % p;  // distance from the chain's tail
  const size_t es = c.esize();
  if (p == 1) return c.Copy(recv, send, count * es);
  const uint64_t piece = c.PieceElems(2);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than two elements");
  const uint64_t pieces = (count + piece - 1) / piece;
  const uint32_t toward_root = (r + p - 1) % p;
  const uint32_t from_tail = (r + 1) % p;
  HcclResult hr = HCCL_SUCCESS;
  for (uint64_t t = 0; t + 2 < pieces + p; ++t) {
    // send piece t-q (the tail sends its input; others the partial received last step)
    bool receiving = false;
    uint64_t ks = 0, kr = 0;
    if (q + 1 < p && t >= q && t - q < pieces) {
      ks = t - q;
      const char* src = q == 0 ? send + ks * piece * es : c.Slot(ks & 1);
      c.Send(toward_root, src, Clip(count, ks * piece, piece) * es);
    }
    // receive piece t-q+1 (everyone but the tail)
    if (q >= 1 && t + 1 >= q && t + 1 - q < pieces) {
      kr = t + 1 - q;
      receiving = true;
      c.Recv(from_tail, c.Slot(kr & 1), Clip(count, kr * piece, piece) * es);
    }
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
    if (receiving) {
      const uint64_t n = Clip(count, kr * piece, piece);
      const uint64_t at = kr * piece * es;
      hr = q + 1 == p ? c.Reduce2(recv + at, send + at, c.Slot(kr & 1), n)
                      : c.Reduce2(c.Slot(kr & 1), c.Slot(kr & 1), send + at, n);
      if (hr != HCCL_SUCCESS) return hr;
    }
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
