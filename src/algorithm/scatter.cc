// Scatter (star): the root sends block j to rank j, all at once; the others receive straight
// into recv. One round; the root's links carry everything, as in HCCL's small-scale scatter.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult StarScatter(Ctx& c, const char* send, char* recv, uint64_t recv_count, uint32_t root) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t bytes = recv_count * c.esize();
  if (r != root) {
    c.Recv(root, recv, bytes);
    return c.Flush();
  }
  for (uint32_t j = 0; j < p; ++j) {
    if (j != r) c.Send(j, send + j * bytes, bytes);
  }
  HcclResult hr = c.Flush();
  if (hr != HCCL_SUCCESS) return hr;
  return c.Copy(recv, send + r * bytes, bytes);
}

}  // namespace vigil::alg::detail
