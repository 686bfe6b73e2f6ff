// TCP link: HCCL_RDMA_QPS_PER_CONNECTION sockets ("QPs") per link. The byte stream is cut into
// kTcpChunk pieces dealt round-robin over the QPs; both sides count stream offsets, so piece k
// always travels on QP k % qps and is read back in order. Sockets are non-blocking; a send
// that makes no progress for the HCCL_RDMA_TIMEOUT x HCCL_RDMA_RETRY_CNT analogue (4.096 us x
// 2^timeout x retry_cnt, ~30 s by default; also set as TCP_USER_TIMEOUT) breaks the link.
#pragma once

#include <chrono>
#include <vector>

#include "transport/link_base.h"

namespace vigil::transport {

constexpr size_t kTcpChunk = 256u << 10;
constexpr size_t kQpDepthBytes = 1u << 20;  // device memory charged per QP (EI0011)

// SO_SNDBUF/SO_RCVBUF for a link's data sockets: VIGIL_TCP_LOOPBACK_SOCKBUF when both ends share a
// host, else 0 (the kernel's autotuning).
int LoopbackSockBuf(const Endpoint& local, const Endpoint& remote);

// The send timeout derived from HCCL_RDMA_TIMEOUT / HCCL_RDMA_RETRY_CNT.
std::chrono::milliseconds TcpSendTimeout(uint32_t rdma_timeout, uint32_t retry_cnt);

class TcpLink : public LinkBase {
 public:
  // `qp_memory` is the device allocation charged for the QPs; freed with the link.
  TcpLink(Endpoint local, Endpoint remote, net::Socket ctrl, Reporter reporter,
          std::vector<net::Socket> qps, std::chrono::milliseconds send_timeout, void* qp_memory);
  ~TcpLink() override;

  HcclResult TrySend(const void* buf, size_t n, size_t* moved) override;
  HcclResult TryRecv(void* buf, size_t n, size_t* moved) override;
  void WaitReady(bool for_send, int timeout_ms) override;
  bool AppendPollFds(bool for_send, std::vector<pollfd>* fds) const override;

 protected:
  void ShutdownData() override;

 private:
  bool NothingToWaitFor(bool for_send) const;
  int SendFd() const { return qps_[(send_off_ / kTcpChunk) % qps_.size()].fd(); }
  int RecvFd() const { return qps_[(recv_off_ / kTcpChunk) % qps_.size()].fd(); }
  HcclResult SocketError(const char* op, int err);

  std::vector<net::Socket> qps_;
  std::chrono::milliseconds send_timeout_;
  void* qp_memory_;
  uint64_t send_off_ = 0;
  uint64_t recv_off_ = 0;
  bool stalled_ = false;
  SteadyClock::time_point stall_since_{};
};

}  // namespace vigil::transport
