#include "transport/tcp_link.h"

#include <errno.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/env_config.h"
#include "runtime/device_memory.h"

namespace vigil::transport {

std::chrono::milliseconds TcpSendTimeout(uint32_t rdma_timeout, uint32_t retry_cnt) {
  double us = 4.096 * std::ldexp(1.0, static_cast<int>(std::min<uint32_t>(rdma_timeout, 30))) *
              std::max<uint32_t>(retry_cnt, 1);
  return std::chrono::milliseconds(std::max<int64_t>(1000, static_cast<int64_t>(us / 1000.0)));
}

// Over loopback the kernel copies every byte twice (into the socket on send, out of it on
// receive), and those copies are most of what a TCP collective costs on one host. With the
// kernel's autotuned buffers (MiBs per socket) a sender runs far ahead of its receiver, which
// then copies bytes that left the cache long ago; with 128 KiB buffers the receiver takes them
// while they are still in L2 (perf, 4 ranks on 2 cores: kernel copy time per op -25..40% for
// AllReduce 8-64 MiB, AllGather and Broadcast 8 MiB). But a small window also takes the slack
// out of pipelines whose next rank is off its core (4 ranks on 2 cores): in paired wall-clock
// runs AllReduce gained 5-14% at 16-64 MiB while Broadcast lost ~20% at 16-64 MiB and AllReduce
// ~8% at 2 MiB. So autotuning stays the default; the knob is for measuring.
// Between hosts the window must cover the path's bandwidth-delay product: always autotune.
int LoopbackSockBuf(const Endpoint& local, const Endpoint& remote) {
  if (local.host_id.empty() || local.host_id != remote.host_id) return 0;
  const uint64_t v = Env().tcp_loopback_sockbuf;
  if (v == 0) return 0;
  // A loopback segment carries up to 64 KiB: a smaller window stalls the stream on zero-window
  // probes (a 1 KiB buffer moved 3 MiB in more than 30 s).
  return static_cast<int>(std::clamp<uint64_t>(v, 64u << 10, INT32_MAX / 2));
}

TcpLink::TcpLink(Endpoint local, Endpoint remote, net::Socket ctrl, Reporter reporter,
                 std::vector<net::Socket> qps, std::chrono::milliseconds send_timeout,
                 void* qp_memory)
    : LinkBase(LinkType::kTcp, std::move(local), std::move(remote), std::move(ctrl),
               std::move(reporter)),
      qps_(std::move(qps)),
      send_timeout_(send_timeout),
      qp_memory_(qp_memory),
      eager_(Env().tcp_eager) {
  unsigned int user_timeout = static_cast<unsigned int>(send_timeout_.count());
  const int buf = LoopbackSockBuf(local_, remote_);
  for (auto& s : qps_) {
    (void)setsockopt(s.fd(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
    if (buf > 0) {
      (void)setsockopt(s.fd(), SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
      (void)setsockopt(s.fd(), SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    }
  }
}

TcpLink::~TcpLink() {
  if (qp_memory_ != nullptr) rt::DeviceMemory::Instance().Free(qp_memory_);
}

void TcpLink::ShutdownData() {
  for (auto& s : qps_) s.Shutdown();
}

void TcpLink::AbandonOp() {
  // The first abandon wins: a later op's start must not uncover this one's data. Without
  // eager sends there is nothing to take back: a body left only once the peer's header came.
  if (!eager_ || abandoned_) return;
  abandoned_ = true;
  SendRetract(op_start_);
}

void TcpLink::OnPeerRetract(uint64_t offset) {
  uint64_t none = 0;
  peer_retract_.compare_exchange_strong(none, offset + 1, std::memory_order_acq_rel);
}

HcclResult TcpLink::SocketError(const char* op, int err) {
  std::string what =
      err == 0 ? fmt::format("connection closed by remote rank[{}] pid[{}] during {}", remote_.rank,
                             remote_.pid, op)
               : fmt::format("{} to remote rank[{}] failed: {}", op, remote_.rank, strerror(err));
  if (err == 0 || err == ECONNRESET || err == EPIPE) {
    OnDataEof(what);  // an orderly close by the peer is not a link error
  } else {
    Break(what, true);
  }
  return HCCL_E_REMOTE;
}

HcclResult TcpLink::TrySend(const void* buf, size_t n, size_t* moved) {
  return TrySend2(nullptr, 0, buf, n, moved);
}

// A head (an op header) and its body leave in one sendmsg: one segment for a small message
// instead of two, and each segment costs a pass through both hosts' network stacks (4 ranks
// on 4 hosts, 8 B AllReduce: sendto and the softirq work it triggers took ~half the CPU).
// Each sendmsg stays within one kTcpChunk (a chunk's bytes go to one QP).
HcclResult TcpLink::TrySend2(const void* a, size_t na, const void* b, size_t nb, size_t* moved) {
  *moved = 0;
  if (broken()) return HCCL_E_REMOTE;
  const size_t n = na + nb;
  size_t done = 0;
  while (done < n) {
    size_t room = kTcpChunk - static_cast<size_t>(send_off_ % kTcpChunk);
    iovec iov[2];
    int parts = 0;
    if (done < na) {
      const size_t len = std::min(na - done, room);
      iov[parts++] = {const_cast<char*>(static_cast<const char*>(a) + done), len};
      room -= len;
    }
    const size_t body_done = done > na ? done - na : 0;
    if (room > 0 && body_done < nb) {
      iov[parts++] = {const_cast<char*>(static_cast<const char*>(b) + body_done),
                      std::min(nb - body_done, room)};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(parts);
    ssize_t r = sendmsg(SendFd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (r > 0) {
      done += static_cast<size_t>(r);
      send_off_ += static_cast<uint64_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    *moved = done;
    return SocketError("send", r < 0 ? errno : 0);
  }
  *moved = done;
  if (done > 0) {
    stalled_ = false;
    Account(done);
  } else if (n > 0) {
    auto now = SteadyClock::now();
    if (!stalled_) {
      stalled_ = true;
      stall_since_ = now;
    } else if (now - stall_since_ > send_timeout_) {
      Break(fmt::format("send timeout after {}s: remote rank[{}] stopped receiving "
                        "(HCCL_RDMA_TIMEOUT x HCCL_RDMA_RETRY_CNT)",
                        send_timeout_.count() / 1000.0, remote_.rank),
            true);
      return HCCL_E_REMOTE;
    }
  }
  return HCCL_SUCCESS;
}

size_t TcpLink::TakeStaged(char* p, size_t n) {
  const size_t k = std::min(n, stage_end_ - stage_at_);
  if (k == 0) return 0;
  std::memcpy(p, stage_.get() + stage_at_, k);
  stage_at_ += k;
  if (stage_at_ == stage_end_) stage_at_ = stage_end_ = 0;
  return k;
}

HcclResult TcpLink::Recv(void* buf, size_t n, size_t ahead, size_t* moved) {
  *moved = 0;
  if (state() == kClosed || state() == kBroken) return HCCL_E_REMOTE;
  const uint64_t allowed = RecvAllowance();
  if (allowed < n) {
    // The peer took the rest back: it never arrives (the link is done once the peer closes).
    if (allowed == 0) return state() == kOk ? HCCL_SUCCESS : HCCL_E_REMOTE;
    n = static_cast<size_t>(allowed);
  }
  char* p = static_cast<char*>(buf);
  size_t done = TakeStaged(p, n);
  while (done < n) {
    // The stage is empty here. A small read takes what is there (up to the stage's size, and
    // never past the peer's retract offset) into the stage; a large one reads in place.
    const size_t chunk_left = kTcpChunk - static_cast<size_t>(recv_off_ % kTcpChunk);
    const bool stage = n - done < kTcpStageBytes;
    if (stage && !stage_) stage_.reset(new char[kTcpStageBytes]);
    char* into = stage ? stage_.get() : p + done;
    const size_t len = stage ? static_cast<size_t>(std::min<uint64_t>(
                                   {kTcpStageBytes, n - done + std::min(ahead, kTcpStageBytes),
                                    chunk_left, AllowanceFrom(recv_off_)}))
                             : std::min(n - done, chunk_left);
    ssize_t r = recv(RecvFd(), into, len, MSG_DONTWAIT);
    if (r > 0) {
      recv_off_ += static_cast<uint64_t>(r);
      if (stage) {
        stage_end_ = static_cast<size_t>(r);
        done += TakeStaged(p + done, n - done);
      } else {
        done += static_cast<size_t>(r);
      }
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    *moved = done;
    if (done > 0) return HCCL_SUCCESS;  // report the bytes; the error shows on the next call
    return SocketError("recv", r < 0 ? errno : 0);
  }
  *moved = done;
  if (done > 0) Account(done);
  // A peer that closed in order (its bye on the control socket) may still have data on its way
  // on this data socket, which has no ordering with the control socket: the end of the stream
  // is this socket's own EOF (the peer shuts its data sockets after sending), seen above.
  return HCCL_SUCCESS;
}

// A receive from a peer that closed in order still waits on its data socket: what it sent is
// on the way, and the socket's EOF follows it (no busy loop until then).
// A receive stopped at the peer's retract offset waits for nothing but the link's end.
bool TcpLink::NothingToWaitFor(bool for_send) const {
  return broken() && (for_send || (state() != kPeerClosed || RecvAllowance() == 0));
}

void TcpLink::WaitReady(bool for_send, int timeout_ms) {
  if (NothingToWaitFor(for_send)) return;
  pollfd pfd{WaitFd(for_send), static_cast<short>(for_send ? POLLOUT : POLLIN), 0};
  (void)poll(&pfd, 1, std::min(timeout_ms, 100));
}

bool TcpLink::AppendPollFds(bool for_send, std::vector<pollfd>* fds) const {
  if (NothingToWaitFor(for_send)) {
    // Nothing to wait for: make the poll return at once so Progress sees the error.
    fds->push_back({ctrl_fd(), POLLIN | POLLOUT, 0});
    return true;
  }
  fds->push_back({WaitFd(for_send), static_cast<short>(for_send ? POLLOUT : POLLIN), 0});
  return true;
}

}  // namespace vigil::transport
