// Recursive doubling AllGather ("H-D") for a power-of-two rank count: at distance d = 1, 2, 4..
// exchange the contiguous run of d blocks gathered so far with rank r^d. log2(p) steps.
// Other rank counts use the ring (the caller checks).
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult HdAllGather(Ctx& c, const char* send, char* recv, uint64_t send_count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t bytes = send_count * c.esize();
  HcclResult hr = c.Copy(recv + r * bytes, send, bytes);
  if (hr != HCCL_SUCCESS) return hr;
  c.LendSends();    // every step is a pairwise exchange
  uint32_t lo = r;  // first block of the run this rank holds; the run is d blocks long
  for (uint32_t d = 1; d < p; d *= 2) {
    const uint32_t peer = r ^ d;
    const uint32_t plo = (r & d) ? lo - d : lo + d;
    c.Send(peer, recv + lo * bytes, d * bytes);
    c.Recv(peer, recv + plo * bytes, d * bytes);
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
    lo = std::min(lo, plo);
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
