// The cluster heartbeat: setup, communicators attaching and detaching, the op counters the
// stream workers keep, and stop. See heartbeat.h.
#include "dfx/heartbeat_impl.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/env_config.h"
#include "dfx/heartbeat_graph.h"
#include "log/plog.h"

namespace vigil::dfx {

uint16_t Heartbeat::Impl::EnsureListener(const std::string& host_ip) {
  std::call_once(start_once_, [&] { Start(host_ip); });
  return enabled_.load() ? port_ : 0;
}

void Heartbeat::Impl::Attach(const std::shared_ptr<comm::Communicator>& comm) {
  if (!enabled_.load() || !comm) return;
  const auto& ranks = comm->ranks();
  const uint32_t me = comm->rank();
  if (me >= ranks.size()) return;
  if (ranks[me].maint_port == 0) {
    HCCL_RUN_WARNING(
        "[Heartbeat]communicator [{}] rank[{}] advertised no heartbeat listener; "
        "not monitored",
        comm->identifier(), me);
    return;
  }
  auto e = std::make_shared<CommEntry>();
  e->comm = comm;
  e->raw = comm.get();
  e->identifier = comm->identifier();
  e->info = comm->info();
  e->key = CommKey(e->identifier);
  e->job_key = comm->job_key();
  e->rank = me;
  e->size = comm->size();
  e->exec_timeout_s = ranks[me].exec_timeout_s;
  std::map<std::pair<std::string, int32_t>, int> same;
  for (const auto& r : ranks) ++same[{r.host_ip, r.device}];
  for (const auto& r : ranks) {
    e->uids.push_back(RankUid(r.host_ip, r.device, r.pid, same[{r.host_ip, r.device}] > 1));
    e->endpoints.push_back(r.maint_port == 0 ? std::string()
                                             : fmt::format("{}:{}", r.host_ip, r.maint_port));
    e->pids.push_back(r.pid);
  }
  std::map<std::string, uint32_t> keys;  // neighbour endpoint -> its pid
  std::vector<std::string> shown;
  for (uint32_t n : HeartbeatNeighbours(me, e->size)) {
    const std::string& ep = e->endpoints[n];
    shown.push_back(fmt::format("{}({})", n, e->uids[n]));
    if (ep.empty() || ep == self_key_) continue;  // no heartbeat, or a rank of this process
    keys[ep] = e->pids[n];
  }
  const auto now = SteadyClock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    e->next_check = now + StuckPeriod(*e);
    for (const auto& [ep, pid] : keys) {
      Peer& p = PeerLocked(ep);
      p.pid = pid;
      if (p.refs == 0) p.job_key = e->job_key;  // the key its dials prove
      ++p.refs;
      if (p.closing && p.bye_sent) {  // the neighbour was told goodbye: start over
        if (p.fd >= 0) close(p.fd);
        p.fd = -1;
        if (p.state != PeerState::kLost) p.state = PeerState::kGone;
      }
      p.closing = false;
      p.bye_sent = false;
      if (p.state == PeerState::kGone) {
        p.state = PeerState::kWant;
        p.ever_up = false;
        p.want_since = now;
        p.next_dial = now;
      }
      e->neighbours.push_back(ep);
    }
    for (uint32_t r = 0; r < e->size; ++r) {
      if (!e->endpoints[r].empty()) endpoint_of_uid_[e->uids[r]] = e->endpoints[r];
    }
    comms_.push_back(e);
    // The op counters find the entry through the communicator's slot, without a lookup.
    if (slot() < comm::kMaxOpObservers) StateOf(*comm->info()) = e;
    members_of_[e->identifier] = std::set<std::string>(e->uids.begin(), e->uids.end());
    last_local_uid_ = e->uid();
    // Events that arrived before this communicator existed still concern it.
    for (const HbEvent& ev : events_) {
      if (ev.status != HbStatus::kStuck && members_of_[e->identifier].count(ev.crimer) != 0) {
        AbortEntryLocked(*e, ev);
      }
    }
  }
  std::weak_ptr<CommEntry> weak = e;
  comm->transport()->SetLinkErrorObserver(
      [this, weak](const transport::LinkError& err) { OnLinkError(weak, err); });
  // Op retry asks whether a broken link's peer lives before it holds the op (comm/op_retry.h).
  comm->set_peer_exited_probe(
      [this, id = e->identifier](uint32_t r) { return PeerExited(id, r); });
  HCCL_RUN_INFO(
      "[Heartbeat]attach communicator [{}] rank[{}] uid[{}] neighbours[{}] "
      "maintenance links[{}]",
      e->identifier, me, e->uid(), fmt::join(shown, ","), keys.size());
  Wake();
}

void Heartbeat::Impl::Detach(const comm::Communicator* raw) {
  if (!enabled_.load() || raw == nullptr) return;
  std::shared_ptr<CommEntry> e;
  std::shared_ptr<comm::Communicator> attached;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it =
        std::find_if(comms_.begin(), comms_.end(), [&](const auto& c) { return c->raw == raw; });
    if (it != comms_.end()) attached = (*it)->comm.lock();
  }
  // A link error already received but not yet read (the transport's monitor thread had no
  // turn before the op failed on an abort and the user destroyed the communicator) is still
  // this rank's CQE: report it while the observer is attached, or its end of the link would
  // never say so.
  if (attached) attached->transport()->ReportPendingLinkErrors();
  attached.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it =
        std::find_if(comms_.begin(), comms_.end(), [&](const auto& c) { return c->raw == raw; });
    if (it == comms_.end()) return;
    e = *it;
    e->detached.store(true);
    comms_.erase(it);
    if (std::none_of(comms_.begin(), comms_.end(), [&](const auto& c) { return c->key == e->key; })) {
      auto first = heard_.lower_bound({e->key, 0});
      heard_.erase(first, heard_.upper_bound({e->key, UINT32_MAX}));
    }
    const CommEntry::Counts n = e->counts();
    previous_.push_back({e->identifier, e->rank, e->size, n.in, n.out, e->aborted, WallClock::now()});
    if (previous_.size() > kMaxPrevious) previous_.pop_front();
    for (const std::string& ep : e->neighbours) {
      auto pit = peers_.find(ep);
      if (pit == peers_.end()) continue;
      Peer& p = pit->second;
      if (--p.refs <= 0) {
        p.refs = 0;
        p.closing = true;
        p.bye_at = std::max(SteadyClock::now(), linger_until_);
      }
    }
  }
  if (auto c = e->comm.lock()) c->transport()->SetLinkErrorObserver(nullptr);
  Wake();
}

// The communicator's entry comes from its slot, written once by Attach before the
// communicator's handle (so any op of it) existed; counting needs no lock.
void Heartbeat::Impl::OnStart(const comm::OpRecord& op, SteadyClock::time_point now) {
  CommEntry* e = AttachedEntry(op);
  if (e == nullptr) return;
  e->current_type.store(op.type, std::memory_order_relaxed);
  e->current_index.store(op.index, std::memory_order_relaxed);
  e->inside_since.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  e->in.fetch_add(1, std::memory_order_release);
}

void Heartbeat::Impl::OnFinish(const comm::OpRecord& op, HcclResult, const comm::OpFailure* failure,
                               SteadyClock::time_point) {
  // Runs before the task-exception report of the same op: remember a link failure, whose CQE
  // event may still be on its way from the transport's thread.
  if (failure != nullptr && failure->kind == comm::OpFailure::Kind::kLink) {
    std::lock_guard<std::mutex> lock(mu_);
    link_failed_ops_.insert({op.identifier(), op.index});
    if (link_failed_ops_.size() > 1024) link_failed_ops_.erase(link_failed_ops_.begin());
  }
  if (CommEntry* e = AttachedEntry(op)) e->out.fetch_add(1, std::memory_order_release);
}

void Heartbeat::Impl::Stop() {
  // A forked child inherits the atexit hook but not the thread: nothing to stop there.
  if (!enabled_.load() || getpid() != start_pid_ || stopped_.exchange(true)) return;
  // Let a broadcast in flight finish (bounded): the process may be exiting because of it.
  const auto bound = SteadyClock::now() + 2 * kLinger;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (SteadyClock::now() >= linger_until_) break;
    }
    if (SteadyClock::now() >= bound) break;
    std::this_thread::sleep_for(20ms);
  }
  stop_.store(true);
  Wake();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::Impl::Start(const std::string& host_ip) {
  const EnvConfig& env = Env();
  if (!env.heartbeat_enable || !env.cluster_heartbeat) {
    HCCL_RUN_INFO(
        "[Heartbeat]cluster heartbeat disabled by {}",
        env.heartbeat_enable ? "HCCL_DFS_CONFIG cluster_heartbeat:off" : "VIGIL_HEARTBEAT=0");
    return;
  }
  stuck_detection_ = env.stuck_detection;
  net::Socket listener;
  uint16_t port = 0;
  std::string why;
  if (net::Listen(host_ip, 0, &listener, &port, &why) != HCCL_SUCCESS) {
    HCCL_RUN_WARNING(
        "[Heartbeat]cannot open the maintenance listener on [{}]: {}; cluster "
        "heartbeat off",
        host_ip, why);
    return;
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    HCCL_RUN_WARNING("[Heartbeat]eventfd failed: {}; cluster heartbeat off", strerror(errno));
    return;
  }
  SetNonBlocking(listener.fd());
  listener_ = std::move(listener);
  port_ = port;
  self_key_ = fmt::format("{}:{}", host_ip, port);
  lost_timeout_ = std::chrono::seconds(env.heartbeat_lost_s);
  beat_interval_ = std::clamp<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(lost_timeout_) / 3, 100ms, 1000ms);
  start_pid_ = getpid();
  enabled_.store(true);
  comm::AddOpObserver(this);
  thread_ = std::thread([this] { Loop(); });
  std::atexit([] { Heartbeat::Instance().Stop(); });
  HCCL_RUN_INFO(
      "[Heartbeat]maintenance listener [{}], pid[{}], lost timeout[{}]s, beat "
      "interval[{}]ms, stuck detection[{}], neighbour graph[ring + de Bruijn degree 2]",
      self_key_, getpid(), env.heartbeat_lost_s, beat_interval_.count(),
      stuck_detection_ ? "on" : "off");
}

// The attached entry of the op's communicator (null: not monitored, or detached).
CommEntry* Heartbeat::Impl::AttachedEntry(const comm::OpRecord& op) const {
  auto* e = static_cast<CommEntry*>(State(op).get());
  return e != nullptr && !e->detached.load(std::memory_order_relaxed) ? e : nullptr;
}

std::chrono::milliseconds Heartbeat::Impl::StuckPeriod(const CommEntry& e) const {
  // HCCL checks every max(exec/3, 60 s); a third of the exec timeout, at least 1 s, lets tests
  // shorten it.
  return std::max<std::chrono::milliseconds>(
      1000ms, std::chrono::milliseconds(uint64_t{e.exec_timeout_s} * 1000 / 3));
}

void Heartbeat::Impl::Wake() {
  uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
}

Peer& Heartbeat::Impl::PeerLocked(const std::string& key) {
  auto it = peers_.find(key);
  if (it != peers_.end()) return it->second;
  Peer& p = peers_[key];
  p.key = key;
  const size_t colon = key.rfind(':');
  p.ip = key.substr(0, colon);
  p.port = static_cast<uint16_t>(std::atoi(key.c_str() + colon + 1));
  p.dialer = self_key_ < key;
  const auto now = SteadyClock::now();
  p.want_since = now;
  p.next_dial = now;
  p.last_rx = now;
  return p;
}

Heartbeat::Heartbeat() : impl_(new Impl()) {}

Heartbeat& Heartbeat::Instance() {
  static Heartbeat* instance = new Heartbeat();  // never destroyed: callbacks may run at exit
  return *instance;
}

bool Heartbeat::enabled() const {
  return impl_->enabled();
}
uint16_t Heartbeat::EnsureListener(const std::string& host_ip) {
  return impl_->EnsureListener(host_ip);
}
std::string Heartbeat::listen_address() const {
  return impl_->listen_address();
}
void Heartbeat::Attach(const std::shared_ptr<comm::Communicator>& comm) {
  impl_->Attach(comm);
}
void Heartbeat::Detach(const comm::Communicator* comm) {
  impl_->Detach(comm);
}
std::vector<HbEvent> Heartbeat::ReportClusterException(const comm::OpRecord& op) {
  return impl_->ReportClusterException(op);
}
std::vector<HbEvent> Heartbeat::KeyEvents(const comm::OpRecord& op) {
  return impl_->KeyEvents(op);
}
std::string Heartbeat::ViewJson() {
  return impl_->ViewJson();
}
bool Heartbeat::Locate(const std::string& identifier, const std::string& uid, std::string* in,
                       uint32_t* rank, uint32_t* pid) {
  return enabled() && impl_->Locate(identifier, uid, in, rank, pid);
}
bool Heartbeat::PeerExited(const std::string& identifier, uint32_t rank) {
  return enabled() && impl_->PeerExited(identifier, rank);
}
std::set<uint32_t> Heartbeat::LostRanks(const std::string& identifier) {
  return enabled() ? impl_->LostRanks(identifier) : std::set<uint32_t>();
}
void Heartbeat::NoteShrink(const ShrinkNote& note) {
  if (enabled()) impl_->NoteShrink(note);
}
std::vector<HbEvent> Heartbeat::Events() {
  return impl_->Events();
}
void Heartbeat::Stop() {
  impl_->Stop();
}

}  // namespace vigil::dfx
