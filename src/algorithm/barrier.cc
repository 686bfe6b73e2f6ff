// Barrier (dissemination): in round k every rank sends one byte to rank+2^k and waits for one
// from rank-2^k; after ceil(log2 p) rounds every rank has heard, transitively, from all.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult DisseminationBarrier(Ctx& c) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  char out = 1;
  char in = 0;
  for (uint32_t d = 1; d < p; d *= 2) {
    c.Send((r + d) % p, &out, 1);
    c.Recv((r + p - d) % p, &in, 1);
    HcclResult hr = c.Flush();
    if (hr != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
