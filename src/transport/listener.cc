// The accepting side: the listener and the monitor thread, which completes handshakes whenever
// they arrive, rejects strangers (one line, the listener keeps serving), and watches every
// link's control socket. A connection proves the job key (bootstrap/auth.h) before its handshake
// is read.
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/device_memory.h"
#include "transport/tcp_link.h"
#include "transport/transport_impl.h"

namespace vigil::transport {

void TransportImpl::Monitor() {
  std::vector<pollfd> fds;
  std::vector<LinkBase*> watched;
  std::vector<std::pair<LinkBase*, int>> data;  // data sockets watched for errors only
  std::vector<int> data_fds;
  while (!stop_.load()) {
    auto now = SteadyClock::now();
    auto wake_at = now + 1s;
    for (auto& c : incoming_) wake_at = std::min(wake_at, c->deadline);
    for (auto& [rank, p] : pending_tcp_) wake_at = std::min(wake_at, p.deadline);
    fds.clear();
    watched.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listener_.fd(), POLLIN, 0});
    for (auto& c : incoming_) fds.push_back({c->sock.fd(), POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [rank, link] : links_) {
        if (link->broken()) continue;
        fds.push_back({link->ctrl_fd(), POLLIN | POLLRDHUP, 0});
        watched.push_back(link.get());
      }
    }
    data.clear();
    for (LinkBase* l : watched) {
      data_fds.clear();
      l->AppendDataFds(&data_fds);
      for (int fd : data_fds) {
        fds.push_back({fd, 0, 0});  // POLLERR / POLLHUP only
        data.push_back({l, fd});
      }
    }
    int timeout_ms = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count() + 1));
    (void)poll(fds.data(), fds.size(), timeout_ms);
    if (stop_.load()) break;
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      (void)!read(wake_fd_, &v, sizeof(v));
    }
    const size_t n_incoming = incoming_.size();
    for (size_t i = 0; i < watched.size(); ++i) {
      if (fds[2 + n_incoming + i].revents != 0) watched[i]->OnControlReadable();
    }
    for (size_t i = 0; i < data.size(); ++i) {
      if (fds[2 + n_incoming + watched.size() + i].revents & POLLERR) {
        data[i].first->OnDataSocketError(data[i].second);
      }
    }
    std::vector<bool> ready(n_incoming);
    for (size_t i = 0; i < n_incoming; ++i) ready[i] = fds[2 + i].revents != 0;
    std::vector<std::unique_ptr<Incoming>> keep;
    for (size_t i = 0; i < n_incoming; ++i) {
      auto& c = incoming_[i];
      bool alive = ready[i] ? ServiceIncoming(*c) : true;
      if (alive && c->auth && SteadyClock::now() >= c->deadline) {
        auth::LogRejected(ListenerName(), ListenAddress(), c->peer,
                          fmt::format("no job-key proof within the deadline ({} bytes received)",
                                      c->in.size()));
        alive = false;
      } else if (alive && SteadyClock::now() >= c->deadline) {
        HCCL_ERROR("[InitChannelStage][Transport]rank[{}] link listener dropped connection from "
                   "{}: no valid handshake within the deadline ({} bytes received)",
                   opt_.self.rank, c->peer, c->in.size());
        alive = false;
      }
      if (alive) keep.push_back(std::move(c));
    }
    incoming_ = std::move(keep);
    if (fds[1].revents & POLLIN) AcceptAll();
    for (auto it = pending_tcp_.begin(); it != pending_tcp_.end();) {
      if (SteadyClock::now() < it->second.deadline) {
        ++it;
        continue;
      }
      HCCL_ERROR("[InitChannelStage][Transport]rank[{}] dropped incomplete TCP link from rank[{}]: "
                 "{} of {} QP connections arrived",
                 opt_.self.rank, it->first, it->second.have, it->second.hello.qp_count);
      if (it->second.qp_memory != nullptr) rt::DeviceMemory::Instance().Free(it->second.qp_memory);
      it = pending_tcp_.erase(it);
    }
  }
}

void TransportImpl::AcceptAll() {
  for (;;) {
    net::Socket s;
    std::string err;
    if (net::Accept(listener_, SteadyClock::now(), &s, &err) != HCCL_SUCCESS) return;
    auto c = std::make_unique<Incoming>();
    c->peer = s.PeerAddress();
    c->sock = std::move(s);
    c->deadline = SteadyClock::now() + std::min<std::chrono::seconds>(
                                           5s, std::chrono::seconds(opt_.connect_timeout_s));
    c->auth = std::make_unique<auth::AcceptorAuth>(auth::PurposeBit(auth::Purpose::kData),
                                                   std::vector<auth::JobKey>{opt_.key});
    incoming_.push_back(std::move(c));
  }
}

bool TransportImpl::ServiceIncoming(Incoming& c) {
  uint8_t buf[4096];
  bool eof = false;
  for (;;) {
    ssize_t r = recv(c.sock.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      c.in.insert(c.in.end(), buf, buf + r);
      if (c.in.size() > kHeaderBytes + kMaxHandshake) break;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
    break;
  }
  if (c.auth) {
    std::vector<uint8_t> out;
    const auth::Step step = c.auth->Feed(&c.in, &out);
    std::string err;
    if (!out.empty() &&
        c.sock.SendAll(out.data(), out.size(), SteadyClock::now() + 1s, &err) != HCCL_SUCCESS) {
      auth::LogRejected(ListenerName(), ListenAddress(), c.peer, err);
      return false;
    }
    if (step == auth::Step::kFailed) {
      auth::LogRejected(ListenerName(), ListenAddress(), c.peer, c.auth->why());
      return false;
    }
    if (step == auth::Step::kMore) {
      if (eof) {
        auth::LogRejected(ListenerName(), ListenAddress(), c.peer,
                          fmt::format("closed during the job-key check ({} bytes pending)",
                                      c.in.size()));
        return false;
      }
      return true;
    }
    c.auth.reset();
  }
  if (c.in.size() >= kHeaderBytes) {
    wire::Reader h(c.in.data(), kHeaderBytes);
    uint32_t magic = h.U32();
    uint16_t version = h.U16();
    uint16_t kind = h.U16();
    uint32_t len = h.U32();
    if (magic != kLinkMagic) {
      HCCL_ERROR("[InitChannelStage][Transport]rank[{}] link listener rejected connection from "
                 "{}: bad magic [0x{:08x}], not a Vigil link",
                 opt_.self.rank, c.peer, magic);
      return false;
    }
    if (version != kLinkVersion || (kind != kControl && kind != kQp && kind != kNotice) ||
        len > kMaxHandshake) {
      HCCL_ERROR("[InitChannelStage][Transport]rank[{}] link listener rejected connection from "
                 "{}: bad handshake (version[{}] expected[{}], kind[{}], length[{}])",
                 opt_.self.rank, c.peer, version, kLinkVersion, kind, len);
      return false;
    }
    if (c.in.size() >= kHeaderBytes + len) {
      Hello hello;
      if (!DecodeHello(kind, c.in.data() + kHeaderBytes, len, &hello)) {
        HCCL_ERROR("[InitChannelStage][Transport]rank[{}] link listener rejected connection from "
                   "{}: malformed handshake",
                   opt_.self.rank, c.peer);
        return false;
      }
      HandleHello(c, hello);
      return false;  // handed over to a link, or rejected
    }
  }
  if (eof) {
    HCCL_ERROR("[InitChannelStage][Transport]rank[{}] link listener dropped connection from {}: "
               "closed after {} bytes, before a complete handshake",
               opt_.self.rank, c.peer, c.in.size());
    return false;
  }
  return true;
}

void TransportImpl::Reject(Incoming& c, HcclResult status, const std::string& message,
                           bool log_error) {
  if (log_error) {
    HCCL_ERROR("[InitChannelStage][Transport]rank[{}] link listener rejected connection from {}: "
               "{}",
               opt_.self.rank, c.peer, message);
  }
  Reply rep;
  rep.status = status;
  rep.message = message;
  SendReply(c.sock, rep);
}

void TransportImpl::HandleHello(Incoming& c, const Hello& h) {
  if (h.comm_id != opt_.comm_id) {
    return Reject(c, HCCL_E_PARA,
                  fmt::format("handshake for communicator [{}] reached communicator [{}]",
                              h.comm_id, opt_.comm_id),
                  true);
  }
  if (h.dst != opt_.self.rank || h.src == opt_.self.rank) {
    return Reject(c, HCCL_E_PARA,
                  fmt::format("handshake from rank[{}] addressed to rank[{}] reached rank[{}]",
                              h.src, h.dst, opt_.self.rank),
                  true);
  }
  Endpoint remote = h.from;
  remote.rank = h.src;
  if (FaultKeepsDown(h.src)) {
    // VIGIL_FAULT keeps this link down: the peer's handshake is lost, as on a dead network.
    HCCL_RUN_INFO("[Fault]rank[{}] dropped a handshake from rank[{}]: the link is down "
                  "(VIGIL_FAULT link_cut)",
                  opt_.self.rank, h.src);
    return;
  }
  const uint32_t epoch = epoch_.load();
  const bool retrying = h.notice.epoch > epoch || h.notice.seq != 0;
  if (h.kind == kNotice || (h.kind == kControl && retrying)) {
    // The peer retries an op (seq: which): this rank's communicator must know before it
    // answers, and refuses when it has completed that op already.
    const NoticeVerdict verdict = retrying ? OnNotice(h.notice) : NoticeVerdict::kAccept;
    if (verdict == NoticeVerdict::kRefuse) {
      return Reject(c, HCCL_E_OPRETRY_FAIL,
                    fmt::format("rank[{}] can not retry op seq[{}]: it has completed it (or a "
                                "later one)",
                                opt_.self.rank, h.notice.seq),
                    false);
    }
    if (verdict == NoticeVerdict::kBehind) {
      return Reject(c, HCCL_E_OPRETRY_FAIL,
                    fmt::format("rank[{}] can not run op seq[{}]: it still runs an earlier op",
                                opt_.self.rank, h.notice.seq),
                    false);
    }
    if (h.kind == kNotice) return SendReply(c.sock, Reply{});
  }
  if (h.kind == kControl && h.notice.epoch < epoch) {
    HCCL_RUN_INFO("[OpRetry]rank[{}] rejected a link from rank[{}] of epoch[{}]: links are at "
                  "epoch[{}] now",
                  opt_.self.rank, h.src, h.notice.epoch, epoch);
    // HCCL_E_AGAIN: the dialer is behind a retry; it moves on to a newer epoch and dials again.
    return Reject(c, HCCL_E_AGAIN,
                  fmt::format("stale link of epoch[{}] (now [{}])", h.notice.epoch, epoch), false);
  }
  if (h.kind == kQp) {
    auto it = pending_tcp_.find(h.src);
    if (it == pending_tcp_.end() || it->second.hello.nonce != h.nonce ||
        h.qp_index >= it->second.qps.size() || it->second.qps[h.qp_index].valid()) {
      return Reject(c, HCCL_E_PARA,
                    fmt::format("QP connection {} from rank[{}] matches no pending link",
                                h.qp_index, h.src),
                    true);
    }
    PendingTcp& p = it->second;
    SendReply(c.sock, Reply{});
    p.qps[h.qp_index] = std::move(c.sock);
    if (++p.have < p.qps.size()) return;
    auto link = std::make_unique<TcpLink>(opt_.self, remote, std::move(p.ctrl), MakeReporter(),
                                          std::move(p.qps), send_timeout_, p.qp_memory);
    std::string tag = p.hello.tag;
    const uint32_t link_epoch = p.hello.notice.epoch;
    pending_tcp_.erase(it);
    Publish(std::move(link), tag, "server", link_epoch);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(h.src);
    if (it != links_.end() && it->second->epoch() >= h.notice.epoch) {
      return Reject(c, HCCL_E_INTERNAL,
                    fmt::format("a link from rank[{}] already exists", h.src), true);
    }
  }
  if (h.link_type == kWireShm) {
    auto segment = std::make_unique<ShmMapping>();
    auto peer_db = std::make_unique<ShmMapping>();
    std::string why;
    if (h.ring_bytes == 0 || h.ring_bytes > (1ull << 30) ||
        segment->Open(h.from.pid, static_cast<int>(h.ring_fd), ShmSegmentBytes(h.ring_bytes),
                      &why) != HCCL_SUCCESS ||
        !CheckShmSegment(segment->base(), segment->size(), h.ring_bytes, &why) ||
        peer_db->Open(h.from.pid, static_cast<int>(h.doorbell_fd), kDoorbellBytes, &why) !=
            HCCL_SUCCESS) {
      return Reject(c, HCCL_E_NOT_SUPPORT, why, false);  // the dialer falls back to TCP
    }
    // Answer first from a copy of the fd: the socket moves into the link on success.
    const int fd = c.sock.fd();
    std::unique_ptr<ShmLink> link;
    HcclResult rc = ShmLink::Make(opt_.self, remote, &c.sock, MakeReporter(), &segment,
                                  h.ring_bytes, /*dialer=*/false, doorbell_, &peer_db,
                                  opt_.device, opt_.shm_direct_bytes, &link, &why);
    if (rc != HCCL_SUCCESS) {
      HCCL_ERROR("[InitChannelStage][Resource]alloc link resources failed: local rank[{}] remote "
                 "rank[{}], link type[SHM]: {}",
                 opt_.self.rank, h.src, why);
      {
        std::lock_guard<std::mutex> lock(mu_);
        accept_failures_[h.src] = {rc, rc == HCCL_E_MEMORY ? Ei0011Size(h.ring_bytes) : why};
      }
      cv_.notify_all();
      return Reject(c, rc, fmt::format("rank[{}] could not allocate its end of the link: {}",
                                       opt_.self.rank, why),
                    false);
    }
    Reply rep;
    rep.pid = opt_.self.pid != 0 ? opt_.self.pid : static_cast<uint32_t>(getpid());
    rep.doorbell_fd = static_cast<uint32_t>(doorbell_map_.fd());
    net::Socket view(fd);  // non-owning: released right after the reply
    SendReply(view, rep);
    (void)view.Release();
    Publish(std::move(link), h.tag, "server", h.notice.epoch);
    return;
  }
  if (h.qp_count == 0 || h.qp_count > kMaxQps) {
    return Reject(c, HCCL_E_PARA, fmt::format("invalid QP count [{}]", h.qp_count), true);
  }
  void* qp_memory = nullptr;
  std::string why;
  HcclResult rc = ChargeQps(h.src, &qp_memory, &why);
  if (rc != HCCL_SUCCESS) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      accept_failures_[h.src] = {rc, why};
    }
    cv_.notify_all();
    return Reject(c, rc, fmt::format("rank[{}] could not allocate its QPs: {}", opt_.self.rank, why),
                  false);
  }
  SendReply(c.sock, Reply{});
  PendingTcp p;
  p.hello = h;
  p.ctrl = std::move(c.sock);
  p.qps.resize(h.qp_count);
  p.qp_memory = qp_memory;
  p.deadline = SteadyClock::now() + std::chrono::seconds(opt_.connect_timeout_s);
  auto old = pending_tcp_.find(h.src);
  if (old != pending_tcp_.end() && old->second.qp_memory != nullptr) {
    rt::DeviceMemory::Instance().Free(old->second.qp_memory);  // a dial given up for a new one
  }
  pending_tcp_[h.src] = std::move(p);
}

}  // namespace vigil::transport
