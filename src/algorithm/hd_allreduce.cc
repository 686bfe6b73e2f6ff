// Recursive halving-doubling AllReduce ("H-D"). With p ranks and q = the largest power of two
// <= p, the first 2*(p-q) ranks pair up: each even one folds its whole input into its odd
// neighbour and sits out. The q remaining ranks (virtual ranks 0..q-1) then
//  - small messages: recursive doubling — log2(q) exchanges of the whole vector;
//  - otherwise: recursive halving reduce-scatter (exchange half of the current range with the
//    partner at distance q/2, q/4, .., 1) and recursive doubling allgather back.
// Finally each odd folded rank hands the result back to its even neighbour.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {
namespace {

// Up to this size the whole vector is exchanged at every step (latency over bandwidth).
constexpr size_t kDoublingMaxBytes = 64u << 10;

// Sends a[0..sn) and receives b[0..rn) (elements) through scratch pieces, reducing
// recv_at[i] = base_at[i] (op) received[i] for the received range.
HcclResult ExchangeReduce(Ctx& c, uint32_t peer, const char* sendp, uint64_t sn,
                          const char* base_at, char* recv_at, uint64_t rn, uint64_t piece) {
  const size_t es = c.esize();
  HcclResult hr = HCCL_SUCCESS;
  const uint64_t span = std::max(sn, rn);
  for (uint64_t off = 0; off < span; off += piece) {
    const uint64_t s = Clip(sn, off, piece), n = Clip(rn, off, piece);
    c.Send(peer, sendp + off * es, s * es);
    c.Recv(peer, c.Slot(0), n * es);
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
    if ((hr = c.Reduce2(recv_at + off * es, base_at + off * es, c.Slot(0), n)) != HCCL_SUCCESS) {
      return hr;
    }
  }
  return HCCL_SUCCESS;
}

}  // namespace

HcclResult HdAllReduce(Ctx& c, const char* send, char* recv, uint64_t count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  if (p == 1) return c.Copy(recv, send, count * es);
  uint32_t q = 1;
  while (q * 2 <= p) q *= 2;
  const uint32_t extra = p - q;
  const uint64_t piece = c.PieceElems(1);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than one element");
  const size_t bytes = count * es;
  HcclResult hr = HCCL_SUCCESS;

  // Fold the extra ranks in.
  const char* base = send;
  uint32_t vrank;
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      c.Send(r + 1, send, bytes);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
      c.Recv(r + 1, recv, bytes);
      return c.Flush();
    }
    if ((hr = ExchangeReduce(c, r - 1, send, 0, send, recv, count, piece)) != HCCL_SUCCESS) {
      return hr;
    }
    base = recv;
    vrank = r / 2;
  } else {
    vrank = r - extra;
  }
  auto real = [extra](uint32_t v) { return v < extra ? 2 * v + 1 : v + extra; };

  if (bytes <= kDoublingMaxBytes) {
    for (uint32_t d = 1; d < q; d *= 2) {
      const uint32_t peer = real(vrank ^ d);
      if ((hr = ExchangeReduce(c, peer, base, count, base, recv, count, piece)) != HCCL_SUCCESS) {
        return hr;
      }
      base = recv;
    }
  } else {
    const Blocks blk(count, q);
    uint32_t lo = 0, hi = q;  // block range this rank still reduces
    for (uint32_t d = q / 2; d >= 1; d /= 2) {
      const uint32_t peer = real(vrank ^ d);
      const uint32_t mid = lo + (hi - lo) / 2;
      const bool low = (vrank & d) == 0;
      const uint32_t klo = low ? lo : mid, khi = low ? mid : hi;
      const uint32_t slo = low ? mid : lo, shi = low ? hi : mid;
      const uint64_t ko = blk.Off(klo), kn = blk.Off(khi) - ko;
      const uint64_t so = blk.Off(slo), sn = blk.Off(shi) - so;
      hr = ExchangeReduce(c, peer, base + so * es, sn, base + ko * es, recv + ko * es, kn, piece);
      if (hr != HCCL_SUCCESS) return hr;
      base = recv;
      lo = klo;
      hi = khi;
    }
    for (uint32_t d = 1; d < q; d *= 2) {
      const uint32_t peer = real(vrank ^ d);
      const uint32_t plo = (vrank & d) ? lo - d : hi;
      c.Send(peer, recv + blk.Off(lo) * es, (blk.Off(hi) - blk.Off(lo)) * es);
      c.Recv(peer, recv + blk.Off(plo) * es, (blk.Off(plo + d) - blk.Off(plo)) * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
      lo = std::min(lo, plo);
      hi = lo + 2 * d;
    }
  }

  // Fold out: hand the result back to the even neighbour.
  if (r < 2 * extra) {
    c.Send(r - 1, recv, bytes);
    return c.Flush();
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
