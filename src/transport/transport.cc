// The links of one communicator: setup, Connect and publishing links (transport_impl.h says
// which file holds the rest).
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <thread>

#include "common/env_config.h"
#include "common/hccl_result.h"
#include "log/plog.h"
#include "runtime/device_memory.h"
#include "transport/tcp_link.h"
#include "transport/transport_impl.h"

namespace vigil::transport {

std::string Ei0011Size(size_t bytes) {
  return fmt::format("size: [0.25MB, {}MB], Affected by QP depth configuration.",
                     std::max<size_t>(1, (bytes + (1u << 20) - 1) >> 20));
}

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
                            const char* role, uint32_t epoch) {
  LinkBase* l = link.get();
  const Endpoint& r = l->remote();
  HCCL_RUN_INFO("[InitChannelStage]link established: tag[{}], local rank[{}] remote rank[{}] "
                "remote ip[{}] port[{}] pid[{}], link type[{}], qps[{}], role[{}]{}",
                tag, opt_.self.rank, r.rank, r.host_ip, r.port, r.pid, LinkTypeName(l->type()),
                l->type() == LinkType::kTcp ? opt_.qps_per_connection : 0, role,
                epoch == 0 ? std::string() : fmt::format(", epoch[{}]", epoch));
  l->set_epoch(epoch);
  l->set_notice_handler([this](const RetryNotice& n) { (void)OnNotice(n); });
  const CutFault* cut = nullptr;
  LinkBase* older = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& f : faults_) {
      if (f.rank == opt_.self.rank && f.peer == r.rank && cut_links_.count(r.rank) == 0) cut = &f;
    }
    if (cut != nullptr) {
      cut_links_[r.rank] = l;
      cut_down_ms_[r.rank] = cut->down_ms;
      if (cut->after > 0) l->set_cut_after(cut->after);
    }
    auto it = links_.find(r.rank);
    if (it != links_.end()) {  // an older epoch's link: the peer has moved on
      older = it->second.get();
      retired_.push_back(std::move(it->second));
    }
    links_[r.rank] = std::move(link);
  }
  if (older != nullptr) older->CloseLocal();
  cv_.notify_all();
  Wake();
  if (cut != nullptr && cut->after == 0) l->Cut("VIGIL_FAULT link_cut");
}

void TransportImpl::BeginEpoch(const RetryNotice& notice) {
  std::vector<LinkBase*> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (notice.epoch <= epoch_.load()) return;
    epoch_.store(notice.epoch, std::memory_order_release);
    for (auto it = links_.begin(); it != links_.end();) {
      if (it->second->epoch() >= notice.epoch) {
        ++it;
        continue;
      }
      old.push_back(it->second.get());
      retired_.push_back(std::move(it->second));
      it = links_.erase(it);
    }
  }
  // The notice first, then the bye: the peer reads the notice before it sees the link closed.
  for (LinkBase* l : old) l->SendNotice(notice);
  for (LinkBase* l : old) l->CloseLocal();
  HCCL_RUN_INFO("[OpRetry]rank[{}] retired {} link(s): links are made at epoch[{}] from now on",
                opt_.self.rank, old.size(), notice.epoch);
  cv_.notify_all();
  Wake();
}

bool TransportImpl::FaultKeepsDown(uint32_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cut_links_.find(peer);
  if (it == cut_links_.end() || cut_down_ms_[peer] == 0) return false;
  const SteadyClock::rep at = it->second->cut_at();
  if (at == 0) return false;
  const auto until = SteadyClock::time_point(SteadyClock::duration(at)) +
                     std::chrono::milliseconds(cut_down_ms_[peer]);
  return SteadyClock::now() < until;
}

HcclResult TransportImpl::NotifyPeer(const Endpoint& peer, const RetryNotice& notice,
                                     std::string* error) {
  if (FaultKeepsDown(peer.rank)) {
    if (error) *error = "the link is down (VIGIL_FAULT link_cut)";
    return HCCL_E_TCP_CONNECT;
  }
  const auto deadline = SteadyClock::now() + 500ms;
  net::Socket s;
  HcclResult rc = DialSocket(peer, deadline, deadline, &s, error);
  if (rc != HCCL_SUCCESS) return HCCL_E_TCP_CONNECT;
  Hello h;
  h.kind = kNotice;
  h.comm_id = opt_.comm_id;
  h.src = opt_.self.rank;
  h.dst = peer.rank;
  h.from = opt_.self;
  h.notice = notice;
  std::vector<uint8_t> bytes = EncodeHello(h);
  rc = s.SendAll(bytes.data(), bytes.size(), deadline, error);
  if (rc != HCCL_SUCCESS) return HCCL_E_TCP_CONNECT;
  Reply rep;
  rc = ReadReply(s, deadline, &rep, error);
  if (rc != HCCL_SUCCESS) return HCCL_E_TCP_CONNECT;
  if (rep.status != HCCL_SUCCESS && error) *error = rep.message;
  return ToHcclResult(rep.status);
}

HcclResult TransportImpl::Connect(const std::vector<Endpoint>& peers, const std::string& tag,
                                  std::string* error, const ConnectPolicy& policy) {
  std::lock_guard<std::mutex> serial(connect_mu_);
  if (closed_.load()) {
    if (error) *error = "transport is closed";
    return HCCL_E_INTERNAL;
  }
  const uint32_t timeout_s = opt_.connect_timeout_s;
  const auto deadline = policy.deadline != SteadyClock::time_point::max()
                            ? policy.deadline
                            : SteadyClock::now() + std::chrono::seconds(timeout_s);
  // What this rank's handshakes carry: the links' epoch, and the retry that made it.
  dial_notice_ = policy.notice != nullptr ? *policy.notice : RetryNotice{};
  dial_notice_.epoch = epoch_.load();
  auto aborted = [&]() -> int {
    for (const std::atomic<int>* flag : {policy.abort, policy.abort2}) {
      const int code = flag != nullptr ? flag->load() : 0;
      if (code != 0) return code;
    }
    return 0;
  };
  auto abort_with = [&](int code) {
    if (error) *error = fmt::format("aborted (code {}) while making links", code);
    return ToHcclResult(code);
  };
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
    const auto round = SteadyClock::now();
    for (size_t i = 0; i < dial.size();) {
      if (const int code = aborted()) return abort_with(code);
      std::string why;
      auto attempt = std::min(deadline, SteadyClock::now() + 500ms);
      HcclResult rc = HCCL_E_TCP_CONNECT;
      if (FaultKeepsDown(dial[i].rank)) {
        why = "the link is down (VIGIL_FAULT link_cut)";
      } else {
        rc = Dial(dial[i], tag, attempt, deadline, &why);
      }
      if (rc == HCCL_SUCCESS) {
        dial.erase(dial.begin() + static_cast<long>(i));
        continue;
      }
      if (rc != HCCL_E_TIMEOUT && rc != HCCL_E_TCP_CONNECT) {
        if (rc != HCCL_E_MEMORY && rc != HCCL_E_OPRETRY_FAIL && rc != HCCL_E_AGAIN) {
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
    // Re-made links (op retry) are tried every IntervalTime, not in a busy loop.
    while (!dial.empty() && SteadyClock::now() < std::min(deadline, round + policy.interval)) {
      if (const int code = aborted()) return abort_with(code);
      std::this_thread::sleep_for(std::min<SteadyClock::duration>(
          50ms, std::min(deadline, round + policy.interval) - SteadyClock::now()));
    }
  }
  std::vector<Endpoint> missing_await;
  auto next_notice = SteadyClock::now();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
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
      if (policy.notice == nullptr || SteadyClock::now() < next_notice) {
        cv_.wait_until(lock, std::min(deadline, SteadyClock::now() + 100ms));
      }
    }
    if (const int code = aborted()) return abort_with(code);
    if (policy.notice != nullptr && SteadyClock::now() >= next_notice) {
      // A peer that should dial this rank may not know of the retry yet (it waits on a link
      // that is still healthy to it): tell it directly.
      next_notice =
          SteadyClock::now() + std::max<std::chrono::milliseconds>(policy.interval, 100ms);
      for (const auto& p : missing_await) {
        std::string why;
        if (NotifyPeer(p, dial_notice_, &why) == HCCL_E_OPRETRY_FAIL) {
          if (error) *error = why;
          return HCCL_E_OPRETRY_FAIL;
        }
      }
    }
  }
  if (dial.empty() && missing_await.empty()) return HCCL_SUCCESS;

  std::string names;
  auto add = [&](const Endpoint& p, const char* role, const std::string& why) {
    if (!policy.quiet) {
      HCCL_ERROR("[InitChannelStage][Timeout]wait socket establish timeout, role[{}] rank[{}] "
                 "timeout[{} s], local rank[{}], remote ip[{}] port[{}], tag[{}]",
                 role, p.rank, timeout_s, opt_.self.rank, p.host_ip, p.port, tag);
    }
    if (!names.empty()) names += ", ";
    names += fmt::format("rank[{}] ({}:{}, role[{}]{}{})", p.rank, p.host_ip, p.port, role,
                         why.empty() ? "" : ": ", why);
  };
  for (const auto& p : dial) add(p, "client", last_error[p.rank]);
  for (const auto& p : missing_await) add(p, "server", "it never connected");
  if (error && policy.quiet) {
    *error = names;
  } else if (error) {
    *error = fmt::format("rank[{}] could not establish links within HCCL_CONNECT_TIMEOUT [{}s], "
                         "tag[{}]; missing: {}",
                         opt_.self.rank, timeout_s, tag, names);
  }
  return HCCL_E_TIMEOUT;
}

HcclResult Transport::Create(const TransportOptions& options, std::unique_ptr<Transport>* out,
                             std::string* error) {
  auto t = std::make_unique<TransportImpl>(options);
  HcclResult rc = t->Init(error);
  if (rc != HCCL_SUCCESS) return rc;
  *out = std::move(t);
  return HCCL_SUCCESS;
}

}  // namespace vigil::transport
