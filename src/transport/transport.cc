// The links of one communicator: listener + accept/monitor thread, dialing, and the handshake.
//
// Handshake (dialer -> acceptor), framed as magic u32 "VGLK", version u16, kind u16, length u32:
//   kind control: comm id, tag, src and dst rank, link type, qp count, nonce, the dialer's
//                 endpoint, and for shm the memfd of the rings and of its doorbell;
//   kind qp:      the same fields naming the control connection (nonce) and the QP index.
// The acceptor answers every message with a reply {status, message, pid, doorbell fd}. Bytes
// that are not a handshake, or a handshake for another communicator or rank, cost one ERROR
// line and the connection; the listener keeps serving.
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/device_memory.h"
#include "transport/link.h"
#include "transport/shm_link.h"
#include "transport/tcp_link.h"

namespace vigil::transport {

namespace {

using namespace std::chrono_literals;

constexpr uint32_t kLinkMagic = 0x4b4c4756;  // "VGLK"
constexpr uint16_t kLinkVersion = 1;
enum Kind : uint16_t { kControl = 1, kQp = 2, kReply = 3 };
enum WireLinkType : uint8_t { kWireShm = 0, kWireTcp = 1 };
constexpr size_t kHeaderBytes = 12;
constexpr uint32_t kMaxHandshake = 16 * 1024;
constexpr uint32_t kMaxQps = 64;
constexpr size_t kDoorbellBytes = 4096;

struct Hello {
  uint16_t kind = kControl;
  std::string comm_id;
  std::string tag;
  uint32_t src = 0;
  uint32_t dst = 0;
  uint8_t link_type = kWireTcp;
  uint16_t qp_index = 0;
  uint16_t qp_count = 0;
  uint64_t nonce = 0;
  Endpoint from;
  uint32_t ring_fd = 0;
  uint64_t ring_bytes = 0;
  uint32_t doorbell_fd = 0;
};

struct Reply {
  uint32_t status = HCCL_SUCCESS;
  std::string message;
  uint32_t pid = 0;
  uint32_t doorbell_fd = 0;
};

std::vector<uint8_t> Framed(uint16_t kind, const wire::Writer& payload) {
  wire::Writer w;
  w.U32(kLinkMagic);
  w.U16(kLinkVersion);
  w.U16(kind);
  w.U32(static_cast<uint32_t>(payload.size()));
  w.Bytes(payload.data().data(), payload.size());
  return std::move(w.data());
}

std::vector<uint8_t> EncodeHello(const Hello& h) {
  wire::Writer w;
  w.Str(h.comm_id);
  w.Str(h.tag);
  w.U32(h.src);
  w.U32(h.dst);
  w.U8(h.link_type);
  w.U16(h.qp_index);
  w.U16(h.qp_count);
  w.U64(h.nonce);
  w.Str(h.from.host_ip);
  w.Str(h.from.host_id);
  w.U16(h.from.port);
  w.U32(h.from.pid);
  w.I32(h.from.device);
  w.U32(h.ring_fd);
  w.U64(h.ring_bytes);
  w.U32(h.doorbell_fd);
  return Framed(h.kind, w);
}

bool DecodeHello(uint16_t kind, const uint8_t* p, size_t n, Hello* h) {
  wire::Reader r(p, n);
  h->kind = kind;
  h->comm_id = r.Str(1024);
  h->tag = r.Str(1024);
  h->src = r.U32();
  h->dst = r.U32();
  h->link_type = r.U8();
  h->qp_index = r.U16();
  h->qp_count = r.U16();
  h->nonce = r.U64();
  h->from.host_ip = r.Str(64);
  h->from.host_id = r.Str(1024);
  h->from.port = r.U16();
  h->from.pid = r.U32();
  h->from.device = r.I32();
  h->ring_fd = r.U32();
  h->ring_bytes = r.U64();
  h->doorbell_fd = r.U32();
  h->from.rank = h->src;
  return r.ok();
}

std::vector<uint8_t> EncodeReply(const Reply& rep) {
  wire::Writer w;
  w.U32(rep.status);
  w.Str(rep.message);
  w.U32(rep.pid);
  w.U32(rep.doorbell_fd);
  return Framed(kReply, w);
}

HcclResult ReadReply(net::Socket& s, SteadyClock::time_point deadline, Reply* rep,
                     std::string* error) {
  uint8_t hdr[kHeaderBytes];
  HcclResult rc = s.RecvAll(hdr, sizeof(hdr), deadline, error);
  if (rc != HCCL_SUCCESS) return rc;
  wire::Reader h(hdr, sizeof(hdr));
  uint32_t magic = h.U32();
  uint16_t version = h.U16();
  uint16_t kind = h.U16();
  uint32_t len = h.U32();
  if (magic != kLinkMagic || version != kLinkVersion || kind != kReply || len > kMaxHandshake) {
    if (error) *error = fmt::format("invalid handshake reply from {}", s.PeerAddress());
    return HCCL_E_INTERNAL;
  }
  std::vector<uint8_t> payload(len);
  rc = s.RecvAll(payload.data(), len, deadline, error);
  if (rc != HCCL_SUCCESS) return rc;
  wire::Reader r(payload.data(), len);
  rep->status = r.U32();
  rep->message = r.Str(4096);
  rep->pid = r.U32();
  rep->doorbell_fd = r.U32();
  if (!r.ok()) {
    if (error) *error = "malformed handshake reply";
    return HCCL_E_INTERNAL;
  }
  return HCCL_SUCCESS;
}

struct CutFault {
  uint32_t rank = 0;
  uint32_t peer = 0;
  uint64_t after = 0;
};

bool ParseU64(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + (s[i++] - '0');
  if (i == 0) return false;
  if (i < s.size()) {
    char u = static_cast<char>(toupper(static_cast<unsigned char>(s[i])));
    int shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : -1;
    if (shift < 0 || i + 1 != s.size()) return false;
    v <<= shift;
  }
  *out = v;
  return true;
}

// VIGIL_FAULT entries "link_cut:R-P[@N]" (see link.h); other entries belong to other layers.
std::vector<CutFault> ParseCutFaults(const std::string& spec) {
  std::vector<CutFault> out;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(';', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    const std::string prefix = "link_cut:";
    if (item.compare(0, prefix.size(), prefix) != 0) continue;
    std::string body = item.substr(prefix.size());
    std::string after;
    size_t at = body.find('@');
    if (at != std::string::npos) {
      after = body.substr(at + 1);
      body = body.substr(0, at);
    }
    size_t dash = body.find('-');
    uint64_t r = 0, p = 0, a = 0;
    if (dash == std::string::npos || !ParseU64(body.substr(0, dash), &r) ||
        !ParseU64(body.substr(dash + 1), &p) || (!after.empty() && !ParseU64(after, &a))) {
      HCCL_RUN_WARNING("[Fault]VIGIL_FAULT entry [{}] ignored: expected link_cut:R-P[@BYTES]", item);
      continue;
    }
    out.push_back({static_cast<uint32_t>(r), static_cast<uint32_t>(p), a});
  }
  return out;
}

std::string Ei0011Size(size_t bytes) {
  return fmt::format("size: [0.25MB, {}MB], Affected by QP depth configuration.",
                     std::max<size_t>(1, (bytes + (1u << 20) - 1) >> 20));
}

class TransportImpl final : public Transport {
 public:
  explicit TransportImpl(const TransportOptions& options) : opt_(options) {
    const EnvConfig& env = Env();
    if (opt_.self.pid == 0) opt_.self.pid = static_cast<uint32_t>(getpid());  // /proc paths need it
    if (opt_.qps_per_connection == 0) opt_.qps_per_connection = 1;
    opt_.qps_per_connection = std::min(opt_.qps_per_connection, kMaxQps);
    if (opt_.connect_timeout_s == 0) opt_.connect_timeout_s = env.connect_timeout_s;
    send_timeout_ = TcpSendTimeout(opt_.rdma_timeout != 0 ? opt_.rdma_timeout : env.rdma_timeout,
                                   opt_.rdma_retry_cnt != 0 ? opt_.rdma_retry_cnt
                                                            : env.rdma_retry_cnt);
    ring_bytes_ = opt_.shm_ring_bytes != 0 ? opt_.shm_ring_bytes : kShmRingBytes;
    faults_ = ParseCutFaults(env.fault);
  }
  ~TransportImpl() override {
    Close();
    if (monitor_.joinable()) {
      if (monitor_.get_id() == std::this_thread::get_id()) {
        monitor_.detach();  // destroyed from its own observer callback (documented as forbidden)
      } else {
        monitor_.join();
        ReleaseMonitorState();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    links_.clear();
  }

  HcclResult Init(std::string* error);
  uint16_t listen_port() const override { return port_; }
  HcclResult Connect(const std::vector<Endpoint>& peers, const std::string& tag,
                     std::string* error) override;
  Link* link(uint32_t peer_rank) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(peer_rank);
    return it == links_.end() ? nullptr : it->second.get();
  }
  void Close() override;
  void ReportPendingLinkErrors() override {
    // Links are never removed before the transport goes: the pointers outlive the lock, which
    // is not held while the observer runs (it may take a while: a liveness probe).
    std::vector<LinkBase*> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [rank, link] : links_) all.push_back(link.get());
    }
    for (LinkBase* l : all) l->OnControlReadable();  // no-op on a link already broken or closed
    // Then wait for a report the monitor thread may be making right now (all reads first: the
    // observer running it may be waiting for something one of them reports).
    for (LinkBase* l : all) l->AwaitReport();
  }
  void SetLinkErrorObserver(LinkErrorObserver observer) override {
    std::lock_guard<std::mutex> lock(obs_mu_);
    observer_ = std::move(observer);
  }
  bool InjectLinkCut(uint32_t peer_rank) override {
    LinkBase* l = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = links_.find(peer_rank);
      if (it == links_.end()) return false;
      l = it->second.get();
    }
    l->Cut("InjectLinkCut");
    return true;
  }

 private:
  struct Incoming {
    net::Socket sock;
    std::string peer;
    std::vector<uint8_t> in;
    SteadyClock::time_point deadline;
  };
  struct PendingTcp {
    Hello hello;
    net::Socket ctrl;
    std::vector<net::Socket> qps;
    uint32_t have = 0;
    void* qp_memory = nullptr;
    SteadyClock::time_point deadline;
  };

  LinkBase::Reporter MakeReporter() {
    return [this](const LinkError& e) {
      LinkErrorObserver obs;
      {
        std::lock_guard<std::mutex> lock(obs_mu_);
        obs = observer_;
      }
      if (obs) obs(e);
    };
  }
  void Wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
  }
  Endpoint Self() const { return opt_.self; }

  // The listener and what only the monitor thread touches; after the thread has ended.
  void ReleaseMonitorState() {
    listener_.Close();
    incoming_.clear();
    for (auto& [rank, p] : pending_tcp_) {
      if (p.qp_memory != nullptr) rt::DeviceMemory::Instance().Free(p.qp_memory);
    }
    pending_tcp_.clear();
    if (wake_fd_ >= 0) {
      close(wake_fd_);
      wake_fd_ = -1;
    }
  }
  HcclResult ChargeQps(uint32_t peer, void** memory, std::string* error);
  void Publish(std::unique_ptr<LinkBase> link, const std::string& tag, const char* role);
  // `attempt` bounds reaching the peer's listener (refused connections are retried until then);
  // once connected, the handshake may use the whole `deadline` so a slow acceptor is not
  // mistaken for an absent one (a half-made link would break on the other side).
  HcclResult Dial(const Endpoint& peer, const std::string& tag, SteadyClock::time_point attempt,
                  SteadyClock::time_point deadline, std::string* error);
  HcclResult DialShm(const Endpoint& peer, const std::string& tag,
                     SteadyClock::time_point attempt, SteadyClock::time_point deadline,
                     std::string* error);
  HcclResult DialTcp(const Endpoint& peer, const std::string& tag,
                     SteadyClock::time_point attempt, SteadyClock::time_point deadline,
                     std::string* error);

  void Monitor();
  void AcceptAll();
  bool ServiceIncoming(Incoming& c);  // false: finished with it (handed over or dropped)
  void HandleHello(Incoming& c, const Hello& h);
  void Reject(Incoming& c, HcclResult status, const std::string& message, bool log_error);
  void SendReply(net::Socket& s, const Reply& rep) {
    std::vector<uint8_t> bytes = EncodeReply(rep);
    std::string err;
    (void)s.SendAll(bytes.data(), bytes.size(), SteadyClock::now() + 1s, &err);
  }

  TransportOptions opt_;
  std::chrono::milliseconds send_timeout_{30000};
  size_t ring_bytes_ = kShmRingBytes;
  std::vector<CutFault> faults_;

  net::Socket listener_;
  uint16_t port_ = 0;
  int wake_fd_ = -1;
  ShmMapping doorbell_map_;  // declared before links_: shm links point into it
  Doorbell* doorbell_ = nullptr;
  std::thread monitor_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};

  std::mutex connect_mu_;  // one Connect at a time
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::unique_ptr<LinkBase>> links_;
  std::map<uint32_t, std::pair<HcclResult, std::string>> accept_failures_;

  // Monitor thread only.
  std::vector<std::unique_ptr<Incoming>> incoming_;
  std::map<uint32_t, PendingTcp> pending_tcp_;

  std::mutex obs_mu_;
  LinkErrorObserver observer_;
};

HcclResult TransportImpl::Init(std::string* error) {
  std::string why;
  HcclResult rc = net::Listen(opt_.self.host_ip, 0, &listener_, &port_, &why);
  if (rc != HCCL_SUCCESS) {
    HCCL_ERROR("[InitChannelStage][Listen]socket type[1], listen on ip[{}] port[0] fail, "
               "reason[{}]",
               opt_.self.host_ip, why);
    if (error) *error = fmt::format("link listener on {}: {}", opt_.self.host_ip, why);
    return rc;
  }
  opt_.self.port = port_;
  rc = doorbell_map_.Create("vigil-doorbell", kDoorbellBytes, &why);
  if (rc != HCCL_SUCCESS) {
    if (error) *error = "shm doorbell: " + why;
    return rc;
  }
  doorbell_ = new (doorbell_map_.base()) Doorbell();
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    if (error) *error = fmt::format("eventfd failed: {}", strerror(errno));
    return HCCL_E_SYSCALL;
  }
  monitor_ = std::thread([this] {
    std::string name = fmt::format("vgl_link_r{}", opt_.self.rank).substr(0, 15);
    pthread_setname_np(pthread_self(), name.c_str());
    Monitor();
  });
  return HCCL_SUCCESS;
}

void TransportImpl::Close() {
  if (closed_.exchange(true)) return;
  // A peer's EOF already here is the link error it is: an orderly close must not turn it into
  // "closed locally" because the monitor thread has not read it yet (a loaded host, or a close
  // right after the op failed on another link).
  ReportPendingLinkErrors();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [rank, link] : links_) link->CloseLocal();
  }
  stop_.store(true);
  Wake();
  // Called from an observer on the monitor thread itself: the thread ends on its own after
  // this callback, and its state is released by the destructor.
  if (monitor_.joinable() && monitor_.get_id() == std::this_thread::get_id()) {
    cv_.notify_all();
    return;
  }
  if (monitor_.joinable()) monitor_.join();
  ReleaseMonitorState();
  cv_.notify_all();
}

HcclResult TransportImpl::ChargeQps(uint32_t peer, void** memory, std::string* error) {
  const size_t bytes = static_cast<size_t>(opt_.qps_per_connection) * kQpDepthBytes;
  auto& mem = rt::DeviceMemory::Instance();
  if (mem.Alloc(opt_.device, bytes, memory, "QP depth") != ACL_SUCCESS) {
    *memory = nullptr;
    HCCL_ERROR("[InitChannelStage][Resource]alloc link resources failed: local rank[{}] remote "
               "rank[{}], link type[TCP], qps[{}] x QP depth[{}MB] = [{}] bytes, device[{}] used[{}] "
               "budget[{}] bytes",
               opt_.self.rank, peer, opt_.qps_per_connection, kQpDepthBytes >> 20, bytes,
               opt_.device, mem.UsedBytes(opt_.device), mem.Budget());
    if (error) *error = Ei0011Size(bytes);
    return HCCL_E_MEMORY;
  }
  return HCCL_SUCCESS;
}

void TransportImpl::Publish(std::unique_ptr<LinkBase> link, const std::string& tag,
                            const char* role) {
  LinkBase* l = link.get();
  const Endpoint& r = l->remote();
  HCCL_RUN_INFO("[InitChannelStage]link established: tag[{}], local rank[{}] remote rank[{}] "
                "remote ip[{}] port[{}] pid[{}], link type[{}], qps[{}], role[{}]",
                tag, opt_.self.rank, r.rank, r.host_ip, r.port, r.pid, LinkTypeName(l->type()),
                l->type() == LinkType::kTcp ? opt_.qps_per_connection : 0, role);
  const CutFault* cut = nullptr;
  for (const auto& f : faults_) {
    if (f.rank == opt_.self.rank && f.peer == r.rank) cut = &f;
  }
  if (cut != nullptr && cut->after > 0) l->set_cut_after(cut->after);
  {
    std::lock_guard<std::mutex> lock(mu_);
    links_[r.rank] = std::move(link);
  }
  cv_.notify_all();
  Wake();
  if (cut != nullptr && cut->after == 0) l->Cut("VIGIL_FAULT link_cut");
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
  InitShmSegment(segment->base(), ring_bytes_);

  net::Socket ctrl;
  rc = net::Connect(peer.host_ip, peer.port, attempt, &ctrl, error);
  if (rc != HCCL_SUCCESS) return rc == HCCL_E_NOT_SUPPORT ? HCCL_E_TCP_CONNECT : rc;
  Hello h;
  h.kind = kControl;
  h.comm_id = opt_.comm_id;
  h.tag = tag;
  h.src = opt_.self.rank;
  h.dst = peer.rank;
  h.link_type = kWireShm;
  h.from = opt_.self;
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
    return static_cast<HcclResult>(rep.status);
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
                     /*dialer=*/true, doorbell_, &peer_db, opt_.device, &link, &why);
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
  Publish(std::move(link), tag, "client");
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

  auto handshake = [&](uint16_t kind, uint16_t index, net::Socket* s) -> HcclResult {
    // Only the control connection may give up early; the QPs follow an accepted link.
    HcclResult r = net::Connect(peer.host_ip, peer.port, kind == kControl ? attempt : deadline, s,
                                error);
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
      return static_cast<HcclResult>(rep.status);
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
  Publish(std::move(link), tag, "client");
  return HCCL_SUCCESS;
}

HcclResult TransportImpl::Connect(const std::vector<Endpoint>& peers, const std::string& tag,
                                  std::string* error) {
  std::lock_guard<std::mutex> serial(connect_mu_);
  if (closed_.load()) {
    if (error) *error = "transport is closed";
    return HCCL_E_INTERNAL;
  }
  const uint32_t timeout_s = opt_.connect_timeout_s;
  const auto deadline = SteadyClock::now() + std::chrono::seconds(timeout_s);
  std::vector<Endpoint> dial, await;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& p : peers) {
      if (p.rank == opt_.self.rank || links_.count(p.rank) != 0) continue;
      (p.rank > opt_.self.rank ? dial : await).push_back(p);
    }
  }
  // Dial round-robin with short attempts, so one dead peer does not starve the others and the
  // timeout names every peer that is really missing.
  std::map<uint32_t, std::string> last_error;
  while (!dial.empty()) {
    for (size_t i = 0; i < dial.size();) {
      std::string why;
      auto attempt = std::min(deadline, SteadyClock::now() + 500ms);
      HcclResult rc = Dial(dial[i], tag, attempt, deadline, &why);
      if (rc == HCCL_SUCCESS) {
        dial.erase(dial.begin() + static_cast<long>(i));
        continue;
      }
      if (rc != HCCL_E_TIMEOUT && rc != HCCL_E_TCP_CONNECT) {
        if (rc != HCCL_E_MEMORY) {
          HCCL_ERROR("[InitChannelStage][Transport]Transport init error! createLink para: "
                     "rank[{}] remote rank[{}] ip[{}] port[{}], tag[{}]: {}",
                     opt_.self.rank, dial[i].rank, dial[i].host_ip, dial[i].port, tag, why);
        }
        if (error) *error = why;
        return rc;
      }
      last_error[dial[i].rank] = why;
      ++i;
    }
    if (SteadyClock::now() >= deadline) break;
  }
  std::vector<Endpoint> missing_await;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      missing_await.clear();
      for (const auto& p : await) {
        auto f = accept_failures_.find(p.rank);
        if (f != accept_failures_.end()) {
          auto failure = f->second;
          accept_failures_.erase(f);
          if (error) *error = failure.second;
          return failure.first;
        }
        if (links_.count(p.rank) == 0) missing_await.push_back(p);
      }
      if (missing_await.empty() || closed_.load() || SteadyClock::now() >= deadline) break;
      cv_.wait_until(lock, std::min(deadline, SteadyClock::now() + 100ms));
    }
  }
  if (dial.empty() && missing_await.empty()) return HCCL_SUCCESS;

  std::string names;
  auto add = [&](const Endpoint& p, const char* role, const std::string& why) {
    HCCL_ERROR("[InitChannelStage][Timeout]wait socket establish timeout, role[{}] rank[{}] "
               "timeout[{} s], local rank[{}], remote ip[{}] port[{}], tag[{}]",
               role, p.rank, timeout_s, opt_.self.rank, p.host_ip, p.port, tag);
    if (!names.empty()) names += ", ";
    names += fmt::format("rank[{}] ({}:{}, role[{}]{}{})", p.rank, p.host_ip, p.port, role,
                         why.empty() ? "" : ": ", why);
  };
  for (const auto& p : dial) add(p, "client", last_error[p.rank]);
  for (const auto& p : missing_await) add(p, "server", "it never connected");
  if (error) {
    *error = fmt::format("rank[{}] could not establish links within HCCL_CONNECT_TIMEOUT [{}s], "
                         "tag[{}]; missing: {}",
                         opt_.self.rank, timeout_s, tag, names);
  }
  return HCCL_E_TIMEOUT;
}

void TransportImpl::Monitor() {
  std::vector<pollfd> fds;
  std::vector<LinkBase*> watched;
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
    std::vector<bool> ready(n_incoming);
    for (size_t i = 0; i < n_incoming; ++i) ready[i] = fds[2 + i].revents != 0;
    std::vector<std::unique_ptr<Incoming>> keep;
    for (size_t i = 0; i < n_incoming; ++i) {
      auto& c = incoming_[i];
      bool alive = ready[i] ? ServiceIncoming(*c) : true;
      if (alive && SteadyClock::now() >= c->deadline) {
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
    if (version != kLinkVersion || (kind != kControl && kind != kQp) || len > kMaxHandshake) {
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
    pending_tcp_.erase(it);
    Publish(std::move(link), tag, "server");
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = links_.find(h.src);
    if (it != links_.end()) {
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
                                  opt_.device, &link, &why);
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
    Publish(std::move(link), h.tag, "server");
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
  pending_tcp_[h.src] = std::move(p);
}

}  // namespace

HcclResult Transport::Create(const TransportOptions& options, std::unique_ptr<Transport>* out,
                             std::string* error) {
  auto t = std::make_unique<TransportImpl>(options);
  HcclResult rc = t->Init(error);
  if (rc != HCCL_SUCCESS) return rc;
  *out = std::move(t);
  return HCCL_SUCCESS;
}

}  // namespace vigil::transport
