// The Transport behind link.h, shared by the files that implement it, one job each:
//   transport.cc  setup, Connect (who dials, who waits, the EI0006 timeout), publishing links
//   dial.cc       the dialing side of a link (shm, then TCP)
//   listener.cc   the listener and monitor thread: accepting links, watching control sockets
// Not for other layers: include link.h.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "transport/handshake.h"
#include "transport/link.h"
#include "transport/link_base.h"
#include "transport/link_faults.h"
#include "transport/shm_link.h"

namespace vigil::transport {

using namespace std::chrono_literals;

// EI0011's argument for link resources of `bytes`.
std::string Ei0011Size(size_t bytes);

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
    retired_.clear();
  }

  HcclResult Init(std::string* error);
  uint16_t listen_port() const override { return port_; }
  HcclResult Connect(const std::vector<Endpoint>& peers, const std::string& tag,
                     std::string* error, const ConnectPolicy& policy) override;
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
  uint32_t epoch() const override { return epoch_.load(std::memory_order_acquire); }
  void SetRetryNoticeObserver(RetryNoticeObserver observer) override {
    std::lock_guard<std::mutex> lock(obs_mu_);
    notice_observer_ = std::move(observer);
  }
  void BeginEpoch(const RetryNotice& notice) override;
  void ReportLinkError(const LinkError& error) override {
    LinkErrorObserver obs;
    {
      std::lock_guard<std::mutex> lock(obs_mu_);
      obs = observer_;
    }
    if (obs) obs(error);
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
    std::unique_ptr<auth::AcceptorAuth> auth;  // null once the job key is proven
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
  // The communicator's answer to a retry notice (kAccept when nobody listens).
  NoticeVerdict OnNotice(const RetryNotice& notice) {
    RetryNoticeObserver obs;
    {
      std::lock_guard<std::mutex> lock(obs_mu_);
      obs = notice_observer_;
    }
    return obs ? obs(notice) : NoticeVerdict::kAccept;
  }
  // Whether VIGIL_FAULT keeps the link with `peer` down now (link_cut ~MS).
  bool FaultKeepsDown(uint32_t peer);
  // A notice connection to `peer` (its reply: HCCL_SUCCESS, or HCCL_E_OPRETRY_FAIL refused).
  HcclResult NotifyPeer(const Endpoint& peer, const RetryNotice& notice, std::string* error);
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
  // Makes `link` the link to its peer at `epoch` (an older link to that peer is retired).
  void Publish(std::unique_ptr<LinkBase> link, const std::string& tag, const char* role,
               uint32_t epoch);
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

  // Connects to the peer's listener (retrying refusals until `attempt`) and proves the job key
  // both ways by `deadline`: every connection this transport makes starts here.
  HcclResult DialSocket(const Endpoint& peer, SteadyClock::time_point attempt,
                        SteadyClock::time_point deadline, net::Socket* s, std::string* error);

  // For the [Auth] line of a refused connection: "rank[3] data-link listener", "ip:port".
  std::string ListenerName() const { return fmt::format("rank[{}] data-link listener", opt_.self.rank); }
  std::string ListenAddress() const { return fmt::format("{}:{}", opt_.self.host_ip, port_); }

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
  RetryNotice dial_notice_;  // what the running Connect's handshakes carry; under connect_mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::unique_ptr<LinkBase>> links_;
  // Links retired by an op retry: closed, kept until the transport goes (raw pointers to them
  // may still be in use: the monitor thread's poll set, ReportPendingLinkErrors).
  std::vector<std::unique_ptr<LinkBase>> retired_;
  std::atomic<uint32_t> epoch_{0};
  // VIGIL_FAULT link_cut entries already applied (by peer) and the link each cut.
  std::map<uint32_t, LinkBase*> cut_links_;
  std::map<uint32_t, uint64_t> cut_down_ms_;
  std::map<uint32_t, std::pair<HcclResult, std::string>> accept_failures_;

  // Monitor thread only.
  std::vector<std::unique_ptr<Incoming>> incoming_;
  std::map<uint32_t, PendingTcp> pending_tcp_;

  std::mutex obs_mu_;
  LinkErrorObserver observer_;
  RetryNoticeObserver notice_observer_;
};

}  // namespace vigil::transport
