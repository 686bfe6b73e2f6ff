// TCP link: HCCL_RDMA_QPS_PER_CONNECTION sockets ("QPs") per link. The byte stream is cut into
// kTcpChunk pieces dealt round-robin over the QPs; both sides count stream offsets, so piece k
// always travels on QP k % qps and is read back in order. Sockets are non-blocking; a send
// that makes no progress for the HCCL_RDMA_TIMEOUT x HCCL_RDMA_RETRY_CNT analogue (4.096 us x
// 2^timeout x retry_cnt, ~30 s by default; also set as TCP_USER_TIMEOUT) breaks the link.
//
// Taking an op back (Link::AbandonOp): bytes in the kernel cannot be recalled, so a rank that
// gives an op up sends "retract from stream offset X" (X: where the op's sends began) over the
// control socket, and the peer's TryRecv delivers nothing from X on. That lets an op's first
// data (kTcpEagerWindow per send) go out with its header, before the peer shows it is in the
// op, as on shm: a late peer still times out, as it would had the data never been sent. Like
// shm's retract, it hides only what the peer has not read when the notice arrives (the monitor
// thread takes it at once; a rank late by more than HCCL_EXEC_TIMEOUT reads nothing).
// VIGIL_TCP_EAGER=0 restores the old way: each op's data waits for the peer's op header (one
// more round trip per op).
//
// A small read (under kTcpStageBytes: an op header, a small body) takes what the socket holds,
// up to kTcpStageBytes, into the link's stage, and the next reads are served from it first: an
// op header and its body arrive together, and now leave the kernel in one recv instead of two.
// An op header's read takes its body and no more (TryRecvHead): what the peer sent after it,
// its next op's message, stays in the socket until this end answers, so that the kernel
// acknowledges it with this end's own next message. The retract notice counts what was
// delivered, not what was staged.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/link_base.h"

namespace vigil::transport {

constexpr size_t kTcpChunk = 256u << 10;
// Body bytes of an op's first send on a link that go out before the peer's op header arrived
// (Link::eager_bytes); the rest follows the header. Sending all of it at once lets a sender fill
// its sockets with bytes the peer copies out cold much later: AllReduce 2-16 MiB, 4 ranks on 2
// cores, ran at 0.90-0.97x of this window's busbw (bench/compare/RESULTS.md, "TCP AllReduce
// 1-16 MiB").
constexpr size_t kTcpEagerWindow = 1u << 20;
constexpr size_t kQpDepthBytes = 1u << 20;  // device memory charged per QP (EI0011)
constexpr size_t kTcpStageBytes = 8u << 10;

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
  HcclResult TrySend2(const void* a, size_t na, const void* b, size_t nb, size_t* moved) override;
  HcclResult TryRecv(void* buf, size_t n, size_t* moved) override {
    return Recv(buf, n, kTcpStageBytes, moved);
  }
  HcclResult TryRecvHead(void* head, size_t n, size_t then, size_t* moved) override {
    return Recv(head, n, then, moved);
  }
  void WaitReady(bool for_send, int timeout_ms) override;
  bool AppendPollFds(bool for_send, std::vector<pollfd>* fds) const override;
  void AppendDataFds(std::vector<int>* fds) const override {
    for (const auto& s : qps_) fds->push_back(s.fd());
  }

  bool can_retract() const override { return eager_; }
  size_t eager_bytes() const override { return eager_ ? kTcpEagerWindow : 0; }
  void MarkOpStart() override { op_start_ = send_off_; }
  void AbandonOp() override;
  bool peer_retracted() const override { return peer_retract_.load() != 0; }

 protected:
  void ShutdownData() override;
  void OnPeerRetract(uint64_t offset) override;

 private:
  bool NothingToWaitFor(bool for_send) const;
  // Bytes of the stream from offset `off` on before the peer's retract offset (UINT64_MAX:
  // no retract).
  uint64_t AllowanceFrom(uint64_t off) const {
    const uint64_t r = peer_retract_.load(std::memory_order_acquire);
    return r == 0 ? UINT64_MAX : (r - 1 > off ? r - 1 - off : 0);
  }
  // Bytes TryRecv may still deliver (from what it delivered, staged bytes included).
  uint64_t RecvAllowance() const { return AllowanceFrom(recv_off_ - (stage_end_ - stage_at_)); }
  // Moves up to n staged bytes to p; returns how many.
  size_t TakeStaged(char* p, size_t n);
  // TryRecv that stages at most `ahead` bytes past the n asked for.
  HcclResult Recv(void* buf, size_t n, size_t ahead, size_t* moved);
  int SendFd() const { return qps_[(send_off_ / kTcpChunk) % qps_.size()].fd(); }
  int RecvFd() const { return qps_[(recv_off_ / kTcpChunk) % qps_.size()].fd(); }
  // The fd a wait polls: -1 (ignored by poll) for a receive stopped at the peer's retract
  // offset, whose socket may hold data that is never delivered.
  int WaitFd(bool for_send) const {
    if (for_send) return SendFd();
    return RecvAllowance() == 0 ? -1 : RecvFd();
  }
  HcclResult SocketError(const char* op, int err);

  std::vector<net::Socket> qps_;
  std::chrono::milliseconds send_timeout_;
  void* qp_memory_;
  uint64_t send_off_ = 0;
  uint64_t recv_off_ = 0;  // stream bytes read from the sockets (delivered or staged)
  // Bytes read ahead of the caller (see the file comment): [stage_at_, stage_end_) of stage_.
  std::unique_ptr<char[]> stage_;
  size_t stage_at_ = 0;
  size_t stage_end_ = 0;
  bool stalled_ = false;
  const bool eager_;
  uint64_t op_start_ = 0;
  bool abandoned_ = false;
  // 0, or 1 + the stream offset from which the peer took its data back (its retract notice).
  std::atomic<uint64_t> peer_retract_{0};
  SteadyClock::time_point stall_since_{};
};

}  // namespace vigil::transport
