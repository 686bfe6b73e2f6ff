// Batched point-to-point (HcclSend/HcclRecv/HcclBatchSendRecv). Items to one peer in one
// direction form a queue; round i moves the i-th item of every queue at once. The i-th send
// from A to B and the i-th receive at B from A fall in the same round on both sides, so any valid
// batch (e.g. everyone sends to next and receives from prev) completes without deadlock, and
// items on one queue complete in order. Items to self are matched in order and copied.
#include <vector>

#include "algorithm/alg_context.h"
#include "common/dtype.h"

namespace vigil::alg::detail {

HcclResult BatchSendRecv(Ctx& c, const std::vector<P2pItem>& items) {
  const uint32_t p = c.size();
  const uint32_t r = c.rank();
  std::vector<std::vector<const P2pItem*>> sends(p), recvs(p);
  for (const P2pItem& it : items) {
    if (it.peer >= p) return c.Fail(HCCL_E_PARA, "send/recv peer out of range");
    if (DataTypeSize(it.type) == 0) return c.Fail(HCCL_E_NOT_SUPPORT, "send/recv data type");
    HcclResult hr = c.CheckUser(it.buf, it.count * DataTypeSize(it.type), !it.send);
    if (hr != HCCL_SUCCESS) return hr;
    (it.send ? sends : recvs)[it.peer].push_back(&it);
  }
  HcclResult hr = HCCL_SUCCESS;
  // To self: pair the queues in order.
  if (sends[r].size() != recvs[r].size()) return c.Fail(HCCL_E_PARA, "unmatched send/recv to self");
  for (size_t i = 0; i < sends[r].size(); ++i) {
    const P2pItem& s = *sends[r][i];
    const P2pItem& d = *recvs[r][i];
    const size_t bytes = s.count * DataTypeSize(s.type);
    if (bytes != d.count * DataTypeSize(d.type))
      return c.Fail(HCCL_E_PARA, "send/recv to self size");
    if ((hr = c.Copy(d.buf, s.buf, bytes)) != HCCL_SUCCESS) return hr;
  }
  size_t rounds = 0;
  for (uint32_t j = 0; j < p; ++j) {
    if (j == r) continue;
    rounds = std::max({rounds, sends[j].size(), recvs[j].size()});
  }
  for (size_t i = 0; i < rounds; ++i) {
    for (uint32_t j = 0; j < p; ++j) {
      if (j == r) continue;
      if (i < sends[j].size()) {
        const P2pItem& it = *sends[j][i];
        c.Send(j, it.buf, it.count * DataTypeSize(it.type));
      }
      if (i < recvs[j].size()) {
        const P2pItem& it = *recvs[j][i];
        c.Recv(j, it.buf, it.count * DataTypeSize(it.type));
      }
    }
    if ((hr = c.Flush()) != HCCL_SUCCESS) return hr;
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::alg::detail
