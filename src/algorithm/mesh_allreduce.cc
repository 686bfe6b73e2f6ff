// Full-mesh AllReduce: rank r owns block r. Every rank sends block j to rank j and receives
// everyone's block r into a scratch slot per peer (piece by piece), reduces them into recv in
// one pass, then sends its finished block to all and receives theirs straight into recv. Two
// rounds of all-to-all traffic: the lowest latency for mid-size messages when every pair has a
// link. On shm both rounds are single copy (lent sends: peers read the blocks in place).
//
// Small messages (kOneShotBytes) take one round instead: every rank sends its whole vector to
// every other and reduces all p vectors itself. (p-1)x the bytes, but a single wait, which is
// what small messages cost: each dependent round is a wake-up of a peer that, with more ranks
// than cores, is often not running.
#include "algorithm/alg_context.h"

namespace vigil::alg::detail {

HcclResult MeshReduceScatterBlocks(Ctx& c, const char* send, char* out, const Blocks& blk);

namespace {

// Reduces in rank order (v0 op v1 op ...), so every rank gets bitwise the same result.
HcclResult OneShotAllReduce(Ctx& c, const char* send, char* recv, uint64_t count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t bytes = count * c.esize();
  // Slot j holds rank j's vector (slot r: this rank's own, when in place it must survive).
  const char* own = send;
  if (send == recv) {
    HcclResult hr = c.Copy(c.Slot(r), send, bytes);
    if (hr != HCCL_SUCCESS) return hr;
    own = c.Slot(r);
  }
  // Sends posted before receives, the order the op's first Flush puts them in (Ctx::SendsFirst):
  // nothing to reorder.
  for (uint32_t j = 0; j < p; ++j) {
    if (j != r) c.Send(j, send, bytes);
  }
  for (uint32_t j = 0; j < p; ++j) {
    if (j != r) c.Recv(j, c.Slot(j), bytes);
  }
  HcclResult hr = c.Flush();
  if (hr != HCCL_SUCCESS) return hr;
  auto vec = [&](uint32_t j) -> const char* { return j == r ? own : c.Slot(j); };
  if ((hr = c.Reduce2(recv, vec(0), vec(1), count)) != HCCL_SUCCESS) return hr;
  for (uint32_t j = 2; j < p; ++j) {
    if ((hr = c.ReduceInto(recv, vec(j), count)) != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace

HcclResult MeshAllReduce(Ctx& c, const char* send, char* recv, uint64_t count) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  if (p == 1) return c.Copy(recv, send, count * es);
  if (count * es <= kOneShotBytes && c.PieceElems(p) >= count) {
    return OneShotAllReduce(c, send, recv, count);
  }
  const Blocks blk(count, p);
  HcclResult hr = MeshReduceScatterBlocks(c, send, recv + blk.Off(r) * es, blk);
  if (hr != HCCL_SUCCESS) return hr;
  // The all-gather half is one exchange, lent too (peers read block r in place). In place it
  // overwrites blocks the peers read from this buffer in the reduce-scatter: those reads are
  // over, as a lent send completes only once read.
  for (uint32_t j = 0; j < p; ++j) {
    if (j == r) continue;
    c.Send(j, recv + blk.Off(r) * es, blk.Len(r) * es);
    c.Recv(j, recv + blk.Off(j) * es, blk.Len(j) * es);
  }
  return c.Flush();
}

// The reduce-scatter half, shared with MeshReduceScatter: `out` gets block r of the reduction.
HcclResult MeshReduceScatterBlocks(Ctx& c, const char* send, char* out, const Blocks& blk) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  const size_t es = c.esize();
  uint64_t piece = c.PieceElems(p - 1);
  if (piece == 0) return c.Fail(HCCL_E_PARA, "scratch smaller than one element per peer");
  // On shm, pieces small enough that the slots just read stay in cache for the fold: more
  // rounds, but measured 1.1x faster at 8-16 MiB and 1.3-1.7x at 64 MiB than 1 MiB pieces (equal
  // at 2 MiB). Every rank of a group decides alike (both ends of a link agree on its type).
  if (c.AllLinksShm()) piece = std::max<uint64_t>(1, std::min(piece, kShmMeshPieceBytes / es));
  const char* mine = send + blk.Off(r) * es;
  HcclResult hr = HCCL_SUCCESS;
  // Lent (shm single copy): each peer reads its piece of block j straight from `send` into its
  // slot, one copy instead of two through the ring; every Flush pairs each send with the peer's
  // receive of the same piece.
  c.LendSends();
  for (uint64_t off = 0; off < blk.Len(0); off += piece) {
    const uint64_t rn = Clip(blk.Len(r), off, piece);
    uint32_t slot = 0;
    for (uint32_t j = 0; j < p; ++j) {
      if (j == r) continue;
      c.Send(j, send + (blk.Off(j) + off) * es, Clip(blk.Len(j), off, piece) * es);
      c.Recv(j, c.Slot(slot++), rn * es);
    }
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
    // Peers in index order, so the sum order is the same on every run.
    if ((hr = c.ReduceSlots(out + off * es, mine + off * es, p - 1, rn)) != HCCL_SUCCESS) {
      return hr;
    }
  }
  return HCCL_SUCCESS;
}

HcclResult MeshReduceScatter(Ctx& c, const char* send, char* recv, uint64_t recv_count) {
  if (c.size() == 1) return c.Copy(recv, send, recv_count * c.esize());
  return MeshReduceScatterBlocks(c, send, recv, Blocks(recv_count * c.size(), c.size()));
}

}  // namespace vigil::alg::detail
