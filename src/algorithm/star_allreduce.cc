// Star AllReduce: every rank sends its input to rank 0, which reduces and sends the result back.
// Two hops whatever the rank count; meant for tiny messages (and as a simple reference).
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult StarAllReduce(Ctx& c, const char* send, char* recv, uint64_t count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  if (p == 1) return c.Copy(recv, send, count * es);
  const uint64_t piece = c.PieceElems(p - 1);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than one element per peer");
  HcclResult hr = HCCL_SUCCESS;
  for (uint64_t off = 0; off < count; off += piece) {
    const uint64_t n = Clip(count, off, piece);
    const uint64_t at = off * es;
    if (r == 0) {
      for (uint32_t j = 1; j < p; ++j) c.Recv(j, c.Slot(j - 1), n * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
      if ((hr = c.Reduce2(recv + at, send + at, c.Slot(0), n)) != HCCL_SUCCESS) return hr;
      for (uint32_t j = 2; j < p; ++j) {
        if ((hr = c.ReduceInto(recv + at, c.Slot(j - 1), n)) != HCCL_SUCCESS) return hr;
      }
      for (uint32_t j = 1; j < p; ++j) c.Send(j, recv + at, n * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
    } else {
      c.Send(0, send + at, n * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
      c.Recv(0, recv + at, n * es);
      if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
    }
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
