// Full-mesh AllGather: one round in which every rank sends its block to every other rank and
// receives theirs straight into recv. Out of place, the block goes out from send and its copy
// into recv is made while the transfers wait on their links (over TCP the copy of a 16 MiB
// block, ~3 ms, otherwise held the wire idle: 2 hosts at 5 Gbit/s moved 0.50 GB/s of 0.60).
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult MeshAllGather(Ctx& c, const char* send, char* recv, uint64_t send_count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t bytes = send_count * c.esize();
  // send overlapping recv other than as block r (no valid layout, but defined here): copied
  // first and sent from recv, as the blocks then are.
  const bool apart = RangesApart(send, bytes, recv, p * bytes);
  const char* mine = apart ? send : recv + r * bytes;
  if (p == 1 || !apart) {
    HcclResult hr = c.Copy(recv + r * bytes, send, bytes);
    if (hr != HCCL_SUCCESS || p == 1) return hr;
  } else {
    c.CopyDuringFlush(recv + r * bytes, send, bytes);
  }
  c.LendSends();  // peers read block r in place (shm single copy)
  for (uint32_t j = 0; j < p; ++j) {
    if (j == r) continue;
    c.Send(j, mine, bytes);
    c.Recv(j, recv + j * bytes, bytes);
  }
  return c.Flush();
}

}  // namespace vigil::alg::detail
