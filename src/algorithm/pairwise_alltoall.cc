// Pairwise AlltoAllV: step k = 1..p-1 sends this rank's block for rank+k and receives the block
// from rank-k, so each rank talks to one peer per direction at a time (no incast). The block to
// itself is a local copy. Everything lands straight in recv. Over links that lend (shm single
// copy) all steps run as one.
#include "algorithm/alg_context.h"
#include "common/dtype.h"

namespace vigil::alg::detail {

HcclResult PairwiseAlltoAllV(Ctx& c, const char* send, const uint64_t* send_counts,
                             const uint64_t* send_displs, size_t send_es, char* recv,
                             const uint64_t* recv_counts, const uint64_t* recv_displs,
                             size_t recv_es) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t self_bytes = send_counts[r] * send_es;
  if (self_bytes != recv_counts[r] * recv_es) {
    return c.Fail(HCCL_E_PARA, "alltoallv: send and receive sizes to self differ");
  }
  // The block to itself: copied while the first step's transfers wait on their links (over
  // TCP its copy otherwise held the wire idle), unless the two buffers overlap.
  char* self_dst = recv + recv_displs[r] * recv_es;
  const char* self_src = send + send_displs[r] * send_es;
  HcclResult hr = HCCL_SUCCESS;
  if (p > 1 && RangesApart(send, ByteExtent(send_counts, send_displs, p, send_es), recv,
                           ByteExtent(recv_counts, recv_displs, p, recv_es))) {
    c.CopyDuringFlush(self_dst, self_src, self_bytes);
  } else if ((hr = c.Copy(self_dst, self_src, self_bytes)) != HCCL_SUCCESS) {
    return hr;
  }
  c.LendSends();  // step k's send is rank r+k's receive of step k
  // When every link lends (shm single copy), peers read the blocks in place and there is no
  // incast to avoid: one step for all. Each link carries the same bytes either way, so ranks
  // whose links differ (one lends, one does not) still agree.
  const bool one_step = c.AllLinksLend(SIZE_MAX);  // capability, whatever the sizes
  for (uint32_t k = 1; k < p; ++k) {
    const uint32_t to = (r + k) % p;
    const uint32_t from = (r + p - k) % p;
    c.Send(to, send + send_displs[to] * send_es, send_counts[to] * send_es);
    c.Recv(from, recv + recv_displs[from] * recv_es, recv_counts[from] * recv_es);
    if (one_step && k + 1 < p) continue;
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
