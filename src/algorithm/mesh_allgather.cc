// Full-mesh AllGather: one round in which every rank sends its block to every other rank and
// receives theirs straight into recv.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult MeshAllGather(Ctx& c, const char* send, char* recv, uint64_t send_count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t bytes = send_count * c.esize();
  HcclResult hr = c.Copy(recv + r * bytes, send, bytes);
  if (hr != HCCL_SUCCESS || p == 1) return hr;
  c.LendSends();  // peers read block r straight from recv (shm single copy)
  for (uint32_t j = 0; j < p; ++j) {
    if (j == r) continue;
    c.Send(j, recv + r * bytes, bytes);
    c.Recv(j, recv + j * bytes, bytes);
  }
  return c.Flush();
}

}  // namespace vigil::alg::detail
