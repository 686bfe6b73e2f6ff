// The dialing side of a link: shared memory between ranks of one host, else (or when that is
// not possible) TCP with its QP connections.
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
#include "common/hccl_result.h"
#include "log/plog.h"
#include "runtime/device_memory.h"
#include "transport/tcp_link.h"
#include "transport/transport_impl.h"

namespace vigil::transport {

HcclResult TransportImpl::DialSocket(const Endpoint& peer, SteadyClock::time_point attempt,
                                     SteadyClock::time_point deadline, net::Socket* s,
                                     std::string* error) {
  HcclResult rc = net::Connect(peer.host_ip, peer.port, attempt, s, error);
  if (rc != HCCL_SUCCESS) return rc;
  rc = auth::AuthenticateDialer(*s, auth::Purpose::kData, opt_.key, deadline, error);
  if (rc != HCCL_SUCCESS) {
    s->Close();
    if (error) *error = fmt::format("rank[{}]: {}", peer.rank, *error);
    // A peer that answers without the job key is not this job's rank: no retry helps.
    return rc == HCCL_E_TIMEOUT ? rc : rc == HCCL_E_PARA ? HCCL_E_PARA : HCCL_E_TCP_CONNECT;
  }
  return HCCL_SUCCESS;
}

HcclResult TransportImpl::Dial(const Endpoint& peer, const std::string& tag,
                               SteadyClock::time_point attempt, SteadyClock::time_point deadline,
                               std::string* error) {
  const bool same_host = !peer.host_id.empty() && peer.host_id == opt_.self.host_id;
  if (same_host && !opt_.force_tcp) {
    HcclResult rc = DialShm(peer, tag, attempt, deadline, error);
    if (rc != HCCL_E_NOT_SUPPORT) return rc;
    HCCL_RUN_WARNING("[InitChannelStage]shared memory with rank[{}] not possible ({}); using TCP",
                     peer.rank, error ? *error : "");
  }
  return DialTcp(peer, tag, attempt, deadline, error);
}

HcclResult TransportImpl::DialShm(const Endpoint& peer, const std::string& tag,
                                  SteadyClock::time_point attempt,
                                  SteadyClock::time_point deadline, std::string* error) {
  auto segment = std::make_unique<ShmMapping>();
  HcclResult rc = segment->Create("vigil-shm-link", ShmSegmentBytes(ring_bytes_), error);
  if (rc != HCCL_SUCCESS) return rc;
  InitShmSegment(segment->base(), ring_bytes_, opt_.shm_direct_bytes);

  net::Socket ctrl;
  rc = DialSocket(peer, attempt, deadline, &ctrl, error);
  if (rc != HCCL_SUCCESS) return rc == HCCL_E_NOT_SUPPORT ? HCCL_E_TCP_CONNECT : rc;
  Hello h;
  h.kind = kControl;
  h.comm_id = opt_.comm_id;
  h.tag = tag;
  h.src = opt_.self.rank;
  h.dst = peer.rank;
  h.link_type = kWireShm;
  h.from = opt_.self;
  h.notice = dial_notice_;
  h.ring_fd = static_cast<uint32_t>(segment->fd());
  h.ring_bytes = ring_bytes_;
  h.doorbell_fd = static_cast<uint32_t>(doorbell_map_.fd());
  std::vector<uint8_t> bytes = EncodeHello(h);
  rc = ctrl.SendAll(bytes.data(), bytes.size(), deadline, error);
  if (rc != HCCL_SUCCESS) return rc == HCCL_E_TIMEOUT ? rc : HCCL_E_TCP_CONNECT;
  Reply rep;
  rc = ReadReply(ctrl, deadline, &rep, error);
  if (rc != HCCL_SUCCESS) return rc == HCCL_E_TIMEOUT ? rc : HCCL_E_TCP_CONNECT;
  if (rep.status != HCCL_SUCCESS) {
    if (error) *error = fmt::format("rank[{}] refused the link: {}", peer.rank, rep.message);
    return ToHcclResult(rep.status);
  }
  segment->CloseFd();  // the peer has mapped it
  auto peer_db = std::make_unique<ShmMapping>();
  rc = peer_db->Open(rep.pid, static_cast<int>(rep.doorbell_fd), kDoorbellBytes, error);
  if (rc != HCCL_SUCCESS) return HCCL_E_INTERNAL;  // the peer already holds its end; no fallback
  std::unique_ptr<ShmLink> link;
  Endpoint remote = peer;
  remote.pid = rep.pid != 0 ? rep.pid : peer.pid;
  std::string why;
  rc = ShmLink::Make(opt_.self, remote, &ctrl, MakeReporter(), &segment, ring_bytes_,
                     /*dialer=*/true, doorbell_, &peer_db, opt_.device,
                     opt_.shm_direct_bytes, &link, &why);
  if (rc != HCCL_SUCCESS) {
    if (rc == HCCL_E_MEMORY) {
      HCCL_ERROR("[InitChannelStage][Resource]alloc link resources failed: local rank[{}] remote "
                 "rank[{}], link type[SHM]: {}",
                 opt_.self.rank, peer.rank, why);
      if (error) *error = Ei0011Size(ring_bytes_);
    } else if (error) {
      *error = why;
    }
    return rc;
  }
  Publish(std::move(link), tag, "client", dial_notice_.epoch);
  return HCCL_SUCCESS;
}

HcclResult TransportImpl::DialTcp(const Endpoint& peer, const std::string& tag,
                                  SteadyClock::time_point attempt,
                                  SteadyClock::time_point deadline, std::string* error) {
  void* qp_memory = nullptr;
  HcclResult rc = ChargeQps(peer.rank, &qp_memory, error);
  if (rc != HCCL_SUCCESS) return rc;
  auto release = [&] {
    if (qp_memory != nullptr) rt::DeviceMemory::Instance().Free(qp_memory);
    qp_memory = nullptr;
  };
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  const uint64_t nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ NowMicros() ^ ++counter;

  Hello h;
  h.comm_id = opt_.comm_id;
  h.tag = tag;
  h.src = opt_.self.rank;
  h.dst = peer.rank;
  h.link_type = kWireTcp;
  h.qp_count = static_cast<uint16_t>(opt_.qps_per_connection);
  h.nonce = nonce;
  h.from = opt_.self;
  h.notice = dial_notice_;

  auto handshake = [&](uint16_t kind, uint16_t index, net::Socket* s) -> HcclResult {
    // Only the control connection may give up early; the QPs follow an accepted link.
    HcclResult r = DialSocket(peer, kind == kControl ? attempt : deadline, deadline, s, error);
    if (r != HCCL_SUCCESS) return r;
    h.kind = kind;
    h.qp_index = index;
    std::vector<uint8_t> bytes = EncodeHello(h);
    r = s->SendAll(bytes.data(), bytes.size(), deadline, error);
    if (r != HCCL_SUCCESS) return r == HCCL_E_TIMEOUT ? r : HCCL_E_TCP_CONNECT;
    Reply rep;
    r = ReadReply(*s, deadline, &rep, error);
    if (r != HCCL_SUCCESS) return r == HCCL_E_TIMEOUT ? r : HCCL_E_TCP_CONNECT;
    if (rep.status != HCCL_SUCCESS) {
      if (error) *error = fmt::format("rank[{}] refused the link: {}", peer.rank, rep.message);
      return ToHcclResult(rep.status);
    }
    return HCCL_SUCCESS;
  };
  net::Socket ctrl;
  rc = handshake(kControl, 0, &ctrl);
  if (rc != HCCL_SUCCESS) {
    release();
    return rc;
  }
  std::vector<net::Socket> qps(opt_.qps_per_connection);
  for (uint16_t q = 0; q < qps.size(); ++q) {
    rc = handshake(kQp, q, &qps[q]);
    if (rc != HCCL_SUCCESS) {
      release();
      return rc;
    }
  }
  auto link = std::make_unique<TcpLink>(opt_.self, peer, std::move(ctrl), MakeReporter(),
                                        std::move(qps), send_timeout_, qp_memory);
  Publish(std::move(link), tag, "client", dial_notice_.epoch);
  return HCCL_SUCCESS;
}

}  // namespace vigil::transport
