#include "dfx/heartbeat.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <thread>

#include "bootstrap/socket.h"
#include "comm/op_observer.h"
#include "common/env_config.h"
#include "dfx/heartbeat_graph.h"
#include "dfx/root_cause.h"
#include "log/plog.h"

namespace vigil::dfx {

namespace {

using namespace std::chrono_literals;

constexpr auto kTick = 50ms;                     // HCCL's loop period
constexpr size_t kMaxEvents = 5000;              // HCCL caps its event queue at 5000
constexpr size_t kMaxPending = 4u << 20;         // bytes queued to one peer before frames drop
constexpr size_t kBeatBackpressure = 64u << 10;  // a peer not reading gets no more beats
constexpr auto kDialRetry = 500ms;
constexpr auto kConnectTimeout = 2s;
constexpr auto kAnonTimeout = 5s;
constexpr auto kProbeTimeout = 300ms;  // PeerExited: a live or dead host answers well within it  // an accepted socket must say hello/query by then
constexpr auto kByeFlush = 300ms;
// After an abnormal event a process keeps its links (and its exit waits) this long, so the
// broadcast completes even when the failed ops make every rank destroy its comm and exit at once.
constexpr auto kLinger = 3s;  // long enough for a broadcast to cross a loaded 2-core host
constexpr uint32_t kCqeStatusRetryExceeded = 12;  // RoCE "retransmit exceeded", as HCCL prints

struct CommEntry {
  std::weak_ptr<comm::Communicator> comm;
  const comm::Communicator* raw = nullptr;
  std::string identifier;
  uint64_t key = 0;
  uint32_t rank = 0;
  uint32_t size = 0;
  uint32_t exec_timeout_s = 0;
  std::vector<std::string> uids;       // per rank
  std::vector<std::string> endpoints;  // per rank: "ip:port" of its heartbeat, "" = none
  std::vector<uint32_t> pids;
  std::vector<std::string> neighbours;  // peer endpoints this entry holds a reference on
  // This rank's op counters: entered (started) and left (finished), and the op inside. The
  // stream worker writes them without mu_ (an op never waits for the heartbeat thread); readers
  // take counts() (out first, so a snapshot never has more ops left than entered).
  std::atomic<uint64_t> in{0};
  std::atomic<uint64_t> out{0};
  std::atomic<bool> detached{false};         // Detach ran: ops of the communicator count no more
  std::weak_ptr<const comm::CommInfo> info;  // its names: the tag of the op inside
  std::atomic<comm::OpType> current_type{comm::OpType::kAllReduce};
  std::atomic<uint64_t> current_index{0};
  std::atomic<SteadyClock::rep> inside_since{0};  // SteadyClock ticks
  struct Counts {
    uint64_t in = 0, out = 0;
  };
  Counts counts() const {
    const uint64_t o = out.load(std::memory_order_acquire);
    return {in.load(std::memory_order_acquire), o};
  }
  // STUCK detection.
  SteadyClock::time_point next_check;
  bool prev_cond = false;
  uint64_t prev_in = 0;
  uint64_t prev_out = 0;
  bool aborted = false;

  const std::string& uid() const { return uids[rank]; }
};

enum class PeerState { kWant, kConnecting, kUp, kLost, kGone };

const char* PeerStateName(PeerState s) {
  switch (s) {
    case PeerState::kWant:
      return "waiting";
    case PeerState::kConnecting:
      return "connecting";
    case PeerState::kUp:
      return "up";
    case PeerState::kLost:
      return "lost";
    case PeerState::kGone:
      return "closed";
  }
  return "?";
}

struct Peer {
  std::string key;  // "ip:port" of its listener
  std::string ip;
  uint16_t port = 0;
  uint32_t pid = 0;
  int fd = -1;
  PeerState state = PeerState::kWant;
  bool dialer = false;  // this side dials (lower listener address)
  bool ever_up = false;
  bool closing = false;  // no communicator needs it any more: bye at bye_at, then close
  bool bye_sent = false;
  SteadyClock::time_point bye_at;
  int refs = 0;
  std::vector<uint8_t> out;
  size_t out_pos = 0;
  FrameReader in;
  SteadyClock::time_point last_rx;
  SteadyClock::time_point want_since;
  SteadyClock::time_point next_dial;
  SteadyClock::time_point connect_started;
};

// An accepted connection before it said who it is (hello: a neighbour; query: vigil health).
struct Anon {
  int fd = -1;
  FrameReader in;
  std::vector<uint8_t> out;
  size_t out_pos = 0;
  bool replied = false;
  SteadyClock::time_point deadline;
};

struct RemoteCounters {
  uint64_t in = 0;
  uint64_t out = 0;
  SteadyClock::time_point at;
};

struct Forward {
  HbEvent event;
  std::string from;  // peer key it came from ("" = discovered here)
};

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void SetNoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// false when the connection is broken.
bool Flush(int fd, std::vector<uint8_t>& out, size_t& pos) {
  while (pos < out.size()) {
    ssize_t n = send(fd, out.data() + pos, out.size() - pos, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
  out.clear();
  pos = 0;
  return true;
}

// Reads what is there. Returns false on EOF or error (*why says which).
bool Drain(int fd, FrameReader& in, std::string* why) {
  uint8_t buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      in.Append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      *why = "connection closed by peer without bye";
      return false;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (errno == EINTR) continue;
    *why = std::string("connection error: ") + strerror(errno);
    return false;
  }
}

}  // namespace

class Heartbeat::Impl : public comm::OpObserver {
 public:
  // ---- setup ----
  uint16_t EnsureListener(const std::string& host_ip) {
    std::call_once(start_once_, [&] { Start(host_ip); });
    return enabled_.load() ? port_ : 0;
  }

  bool enabled() const { return enabled_.load(); }
  std::string listen_address() const { return enabled_.load() ? self_key_ : std::string(); }

  void Attach(const std::shared_ptr<comm::Communicator>& comm) {
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
    HCCL_RUN_INFO(
        "[Heartbeat]attach communicator [{}] rank[{}] uid[{}] neighbours[{}] "
        "maintenance links[{}]",
        e->identifier, me, e->uid(), fmt::join(shown, ","), keys.size());
    Wake();
  }

  void Detach(const comm::Communicator* raw) {
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

  // ---- op counters (stream workers) ----
  void OnEnqueue(const comm::OpRecord&) override {}
  // The communicator's entry comes from its slot, written once by Attach before the
  // communicator's handle (so any op of it) existed; counting needs no lock.
  void OnStart(const comm::OpRecord& op, SteadyClock::time_point now) override {
    CommEntry* e = AttachedEntry(op);
    if (e == nullptr) return;
    e->current_type.store(op.type, std::memory_order_relaxed);
    e->current_index.store(op.index, std::memory_order_relaxed);
    e->inside_since.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    e->in.fetch_add(1, std::memory_order_release);
  }
  void OnFinish(const comm::OpRecord& op, HcclResult, const comm::OpFailure* failure) override {
    // Runs before the task-exception report of the same op: remember a link failure, whose CQE
    // event may still be on its way from the transport's thread.
    if (failure != nullptr && failure->kind == comm::OpFailure::Kind::kLink) {
      std::lock_guard<std::mutex> lock(mu_);
      link_failed_ops_.insert({op.identifier(), op.index});
      if (link_failed_ops_.size() > 1024) link_failed_ops_.erase(link_failed_ops_.begin());
    }
    if (CommEntry* e = AttachedEntry(op)) e->out.fetch_add(1, std::memory_order_release);
  }

  // ---- task exception ----
  // Whether the process behind `uid` has exited: its maintenance listener refuses a connection
  // (the kernel answers RST for a closed port on a live host). A link that broke because its
  // peer died is that peer's LOST, not a network fault; an answer, or silence (a blackholed or
  // downed network), leaves it a link fault. The answer is kept: a dead process stays dead.
  bool PeerExited(const std::string& uid) {
    std::string ep;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (exited_.count(uid) != 0) return true;
      auto it = endpoint_of_uid_.find(uid);
      if (it == endpoint_of_uid_.end()) return false;
      ep = it->second;
    }
    const size_t colon = ep.rfind(':');
    if (colon == std::string::npos) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(ep.c_str() + colon + 1)));
    if (inet_pton(AF_INET, ep.substr(0, colon).c_str(), &addr.sin_addr) != 1) return false;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    // A dying process may close its data sockets before its listener, so a connection that is
    // accepted proves nothing yet: ask for its health view. A live process answers; a dying one's
    // kernel resets the queued connection when the listener goes; a frozen one stays silent
    // (unknown: not called exited).
    // Exited: refused, reset, or closed without an answer. Not exited: an answer, silence, or an
    // unreachable network (a cut link says nothing about the process behind it).
    auto gone = [](int err) { return err == ECONNREFUSED || err == ECONNRESET || err == EPIPE; };
    std::string how;
    bool refused = false;
    bool connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (!connected && errno != EINPROGRESS) {
      refused = gone(errno);
      how = fmt::format("connect: {}", std::strerror(errno));
    } else if (!connected) {
      pollfd pfd{fd, POLLOUT, 0};
      if (poll(&pfd, 1, static_cast<int>(kProbeTimeout.count())) == 1) {
        int so = 0;
        socklen_t len = sizeof(so);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len) == 0) {
          refused = gone(so);
          connected = so == 0;
          if (so != 0) how = fmt::format("connect: {}", std::strerror(so));
        }
      } else {
        how = "connect: no answer";
      }
    }
    if (connected) {
      const std::vector<uint8_t> q = EncodeQuery();
      if (send(fd, q.data(), q.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(q.size())) {
        pollfd pfd{fd, POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(kProbeTimeout.count())) == 1) {
          char b = 0;
          const ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
          refused = r == 0 || (r < 0 && gone(errno));
          how = r > 0 ? "answered" : r == 0 ? "closed" : fmt::format("recv: {}", std::strerror(errno));
        } else {
          how = "query: no answer";
        }
      } else {
        refused = gone(errno);
        how = fmt::format("send: {}", std::strerror(errno));
      }
    }
    HCCL_RUN_INFO("[Heartbeat]liveness probe of [{}] at [{}]: {} ({})", uid, ep,
                  refused ? "exited" : "not known to have exited", how);
    close(fd);
    if (refused) {
      std::lock_guard<std::mutex> lock(mu_);
      exited_.insert(uid);
    }
    return refused;
  }

  bool PeerExited(const std::string& identifier, uint32_t rank) {
    std::string uid;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::find_if(comms_.begin(), comms_.end(),
                             [&](const auto& c) { return c->identifier == identifier; });
      if (it == comms_.end() || rank >= (*it)->size) return false;
      uid = (*it)->uids[rank];
    }
    return PeerExited(uid);
  }

  std::vector<HbEvent> ReportClusterException(const comm::OpRecord& op) {
    std::vector<HbEvent> key = KeyEvents(op);
    for (size_t i = 0; i < key.size(); ++i) {
      const std::string line = FormatClusterExceptionLine(key[i]);
      if (i < 3) HCCL_ERROR("{}", line);
      HCCL_RUN_INFO("{}", line);
    }
    if (key.size() > 3) {
      HCCL_ERROR(
          "[TaskExecStage][HeartbeatAbnormal]there are {} abnormal device(s), only the "
          "first 3 are printed; all heartbeat events are in run/plog (HeartbeatAbnormal)",
          key.size());
    }
    return key;
  }

  std::vector<HbEvent> KeyEvents(const comm::OpRecord& op) {
    std::vector<HbEvent> key;
    if (!enabled_.load()) return key;
    // A data link's error reaches the op (on the stream worker) and the observer (on the
    // transport's thread) at about the same time; give its event a moment to be recorded.
    for (int attempt = 0;; ++attempt) {
      bool link_failed = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::vector<HbEvent> all(events_.begin(), events_.end());
        auto it = members_of_.find(op.identifier());
        key = SelectKeyEvents(all, it == members_of_.end() ? std::set<std::string>() : it->second,
                              op.enqueue_time);
        link_failed = link_failed_ops_.count({op.identifier(), op.index}) != 0;
      }
      if (!key.empty() || !link_failed || attempt >= 10) break;
      std::this_thread::sleep_for(kTick);
    }
    return key;
  }

  bool Locate(const std::string& identifier, const std::string& uid, std::string* in,
              uint32_t* rank, uint32_t* pid) {
    std::lock_guard<std::mutex> lock(mu_);
    const CommEntry* found = nullptr;
    uint32_t at = 0;
    for (const auto& c : comms_) {
      auto it = std::find(c->uids.begin(), c->uids.end(), uid);
      if (it == c->uids.end() || (found != nullptr && c->identifier != identifier)) continue;
      found = c.get();
      at = static_cast<uint32_t>(it - c->uids.begin());
      if (c->identifier == identifier) break;
    }
    if (found == nullptr) return false;
    *in = found->identifier;
    *rank = at;
    *pid = found->pids[at];
    return true;
  }

  std::vector<HbEvent> Events() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::vector<HbEvent>(events_.begin(), events_.end());
  }

  std::string ViewJson() {
    std::lock_guard<std::mutex> lock(mu_);
    return ViewJsonLocked();
  }

  void Stop() {
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

 private:
  void Start(const std::string& host_ip) {
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
  CommEntry* AttachedEntry(const comm::OpRecord& op) const {
    auto* e = static_cast<CommEntry*>(State(op).get());
    return e != nullptr && !e->detached.load(std::memory_order_relaxed) ? e : nullptr;
  }

  std::chrono::milliseconds StuckPeriod(const CommEntry& e) const {
    // HCCL checks every max(exec/3, 60 s); a third of the exec timeout, at least 1 s, lets tests
    // shorten it.
    return std::max<std::chrono::milliseconds>(
        1000ms, std::chrono::milliseconds(uint64_t{e.exec_timeout_s} * 1000 / 3));
  }

  void Wake() {
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
  }

  Peer& PeerLocked(const std::string& key) {
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

  // ---- events ----
  std::vector<std::string> LocalUidsLocked() const {
    std::vector<std::string> out;
    for (const auto& e : comms_) {
      if (std::find(out.begin(), out.end(), e->uid()) == out.end()) out.push_back(e->uid());
    }
    if (out.empty() && !last_local_uid_.empty()) out.push_back(last_local_uid_);
    return out;
  }

  // SetStatus: records and forwards an event once per (crimer, status).
  bool RaiseLocked(const std::string& crimer, const std::string& informer, HbStatus status,
                   const std::string& from, uint64_t discovered_us) {
    if (!seen_[crimer].insert(status).second) return false;
    linger_until_ = SteadyClock::now() + kLinger;
    HbEvent e;
    e.crimer = crimer;
    e.informer = informer;
    e.status = status;
    e.arrival = WallClock::now();
    e.discovered_us = discovered_us != 0 ? discovered_us : NowMicros();
    events_.push_back(e);
    if (events_.size() > kMaxEvents) events_.pop_front();
    for (const std::string& local : LocalUidsLocked()) {
      HCCL_RUN_INFO("{}", FormatAbnormalLine(local, e));
    }
    forward_.push_back({e, from});
    if (status == HbStatus::kLost || status == HbStatus::kCqe) {
      for (const auto& c : comms_) {
        if (std::find(c->uids.begin(), c->uids.end(), crimer) != c->uids.end()) {
          AbortEntryLocked(*c, e);
        }
      }
    }
    Wake();
    return true;
  }

  void AbortEntryLocked(CommEntry& c, const HbEvent& e) {
    if (c.aborted) return;
    auto comm = c.comm.lock();
    if (!comm) return;
    c.aborted = true;
    const HcclResult code = e.status == HbStatus::kCqe ? HCCL_E_REMOTE : HCCL_E_NETWORK;
    comm->Abort(code);
    HCCL_RUN_WARNING(
        "[Heartbeat]communicator [{}] rank[{}] aborted with {}: rank [{}] status[{}] "
        "(informer [{}]); ops waiting on it end now",
        c.identifier, c.rank, code == HCCL_E_REMOTE ? "HCCL_E_REMOTE" : "HCCL_E_NETWORK", e.crimer,
        HbStatusName(e.status), e.informer);
  }

  void OnLinkError(const std::weak_ptr<CommEntry>& weak, const transport::LinkError& err) {
    std::string local_uid, remote_uid, identifier;
    uint32_t remote_pid = 0;
    bool far_end_reported = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto e = weak.lock();
      if (!e || err.remote.rank >= e->size) return;
      local_uid = e->uid();
      remote_uid = e->uids[err.remote.rank];
      remote_pid = e->pids[err.remote.rank];
      identifier = e->identifier;
      far_end_reported = CqeBetweenLocked(local_uid, remote_uid);
    }
    // The far end reported this very link as an error CQE: it was alive after the link failed,
    // so the failure is the link's even if that process has exited in order since (its listener
    // then refuses the probe). Both ends name each other whichever noticed first.
    if (!far_end_reported && PeerExited(remote_uid)) {
      HCCL_RUN_WARNING("[Heartbeat]data link of communicator [{}] rank[{}] to rank[{}] failed: {}; "
                       "the peer's process has exited (its maintenance listener refuses "
                       "connections): LOST, not a link fault",
                       identifier, err.local.rank, err.remote.rank, err.reason);
      std::lock_guard<std::mutex> lock(mu_);
      RaiseLocked(remote_uid, local_uid, HbStatus::kLost, "", 0);
      return;
    }
    const CqeEnd local{err.local.host_ip, std::to_string(err.local.device), err.local.host_ip};
    const CqeEnd remote{err.remote.host_ip, std::to_string(err.remote.device), err.remote.host_ip};
    HCCL_ERROR("{}", FormatCqeLine(kCqeStatusRetryExceeded, WallClock::now(), local, remote));
    HCCL_RUN_WARNING("[Heartbeat]data link of communicator [{}] rank[{}] to rank[{}] failed: {}",
                     identifier, err.local.rank, err.remote.rank, err.reason);
    std::call_once(cqe_screen_once_, [&] {
      // Beside HCCL's line, the event it raises: the peer's rank and the class of the fault.
      RootCause cause;
      cause.event = HbEvent{remote_uid, local_uid, HbStatus::kCqe, WallClock::now(), NowMicros()};
      cause.rank = err.remote.rank;
      cause.pid = remote_pid;
      cause.informer_rank = err.local.rank;
      log::ScreenError("EI0013",
                       {local.server, local.device_id, local.device_ip, remote.server,
                        remote.device_id, remote.device_ip},
                       {FormatRootCauseLine(cause, kb::Get(), WallClock::now())});
    });
    std::lock_guard<std::mutex> lock(mu_);
    RaiseLocked(remote_uid, local_uid, HbStatus::kCqe, "", 0);
  }

  // Whether an ERROR CQE event names the link between a and b (either end as the crimer).
  bool CqeBetweenLocked(const std::string& a, const std::string& b) const {
    return std::any_of(events_.begin(), events_.end(), [&](const HbEvent& ev) {
      return ev.status == HbStatus::kCqe &&
             ((ev.crimer == a && ev.informer == b) || (ev.crimer == b && ev.informer == a));
    });
  }

  // keep_link: the neighbour fell silent but its socket is fine (a stopped process): keep it, so
  // it hears our bye at exit rather than taking our close for our death when it resumes.
  void PeerLostLocked(Peer& p, const std::string& why, bool keep_link = false) {
    if (p.fd >= 0 && !keep_link) {
      close(p.fd);
      p.fd = -1;
      p.out.clear();
      p.out_pos = 0;
    }
    p.state = PeerState::kLost;
    HCCL_RUN_WARNING("[Heartbeat]neighbour [{}] pid[{}] lost: {}", p.key, p.pid, why);
    for (const auto& c : comms_) {
      for (uint32_t r = 0; r < c->size; ++r) {
        if (c->endpoints[r] == p.key) RaiseLocked(c->uids[r], c->uid(), HbStatus::kLost, "", 0);
      }
    }
  }

  // ---- I/O ----
  void QueueLocked(Peer& p, const std::vector<uint8_t>& frame, bool is_beat) {
    if (p.fd < 0) return;
    const size_t pending = p.out.size() - p.out_pos;
    if ((is_beat && pending > kBeatBackpressure) || pending > kMaxPending) return;
    p.out.insert(p.out.end(), frame.begin(), frame.end());
  }

  void ConnectedLocked(Peer& p, SteadyClock::time_point now) {
    p.state = PeerState::kUp;
    p.ever_up = true;
    p.last_rx = now;
    HCCL_RUN_INFO("[Heartbeat]maintenance link to [{}] up ({})", p.key,
                  p.dialer ? "dialed" : "accepted");
  }

  void DialLocked(Peer& p, SteadyClock::time_point now) {
    p.next_dial = now + kDialRetry;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(p.port);
    if (inet_pton(AF_INET, p.ip.c_str(), &addr.sin_addr) != 1) {
      close(fd);
      return;
    }
    SetNoDelay(fd);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    if (rc != 0 && errno != EINPROGRESS) {
      close(fd);
      return;
    }
    p.fd = fd;
    p.state = PeerState::kConnecting;
    p.connect_started = now;
    p.in = FrameReader();
    p.out.clear();
    p.out_pos = 0;
    HelloFrame h{self_ip(), port_, static_cast<uint32_t>(getpid())};
    p.out = EncodeHello(h);
    if (rc == 0) ConnectedLocked(p, now);
  }

  std::string self_ip() const { return self_key_.substr(0, self_key_.rfind(':')); }

  void HandleFrameLocked(Peer& p, FrameType type, const std::vector<uint8_t>& body,
                         SteadyClock::time_point now) {
    p.last_rx = now;
    switch (type) {
      case FrameType::kBeat: {
        BeatFrame b;
        if (!DecodeBeat(body, &b)) return;
        for (const CommCounters& c : b.comms) {
          remote_[{c.comm_key, c.rank}] = RemoteCounters{c.in, c.out, now};
        }
        break;
      }
      case FrameType::kEvent: {
        EventFrame f;
        if (!DecodeEvent(body, &f)) return;
        RaiseLocked(f.crimer, f.informer, f.status, p.key, f.discovered_us);
        break;
      }
      case FrameType::kBye:
        if (p.fd >= 0) close(p.fd);
        p.fd = -1;
        p.out.clear();
        p.out_pos = 0;
        if (p.state != PeerState::kLost) p.state = PeerState::kGone;
        HCCL_RUN_INFO("[Heartbeat]neighbour [{}] closed its maintenance link in order", p.key);
        break;
      default:
        break;
    }
  }

  void ServicePeerLocked(Peer& p, short revents, SteadyClock::time_point now) {
    if (p.fd < 0) return;
    if (p.state == PeerState::kConnecting) {
      if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        close(p.fd);
        p.fd = -1;
        p.state = PeerState::kWant;
        return;
      }
      ConnectedLocked(p, now);
    }
    if (revents & POLLIN || revents & (POLLERR | POLLHUP)) {
      std::string why;
      const bool alive = Drain(p.fd, p.in, &why);
      FrameType type;
      std::vector<uint8_t> body;
      bool bad = false;
      while (p.fd >= 0 && p.in.Next(&type, &body, &bad)) HandleFrameLocked(p, type, body, now);
      if (p.fd < 0) return;  // bye
      if (bad) {
        why = "malformed frame";
      } else if (alive) {
        return;
      }
      if (p.state == PeerState::kUp && !p.closing) {
        PeerLostLocked(p, why);
      } else {
        close(p.fd);
        p.fd = -1;
        if (p.state != PeerState::kLost) p.state = p.closing ? PeerState::kGone : PeerState::kWant;
      }
    }
  }

  void ServiceAnonLocked(Anon& a, SteadyClock::time_point now) {
    std::string why;
    const bool alive = Drain(a.fd, a.in, &why);
    FrameType type;
    std::vector<uint8_t> body;
    bool bad = false;
    if (!a.replied && a.in.Next(&type, &body, &bad)) {
      if (type == FrameType::kHello) {
        HelloFrame h;
        if (!DecodeHello(body, &h)) {
          CloseAnon(a);
          return;
        }
        const std::string key = fmt::format("{}:{}", h.host_ip, h.port);
        Peer& p = PeerLocked(key);
        if (p.fd >= 0) close(p.fd);  // a newer connection replaces an older one
        p.fd = a.fd;
        p.pid = h.pid;
        p.in = std::move(a.in);
        p.out.clear();
        p.out_pos = 0;
        a.fd = -1;
        if (p.state != PeerState::kLost) ConnectedLocked(p, now);
        // Frames that came with the hello.
        while (p.fd >= 0 && p.in.Next(&type, &body, &bad)) HandleFrameLocked(p, type, body, now);
        return;
      }
      if (type == FrameType::kQuery) {
        a.out = EncodeReply(ViewJsonLocked());
        a.replied = true;
      } else {
        CloseAnon(a);
        return;
      }
    }
    if (bad || (!alive && !a.replied)) CloseAnon(a);
  }

  void CloseAnon(Anon& a) {
    if (a.fd >= 0) close(a.fd);
    a.fd = -1;
  }

  void AcceptLocked(SteadyClock::time_point now) {
    for (;;) {
      int fd = accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      SetNoDelay(fd);
      Anon a;
      a.fd = fd;
      a.deadline = now + kAnonTimeout;
      anon_.push_back(std::move(a));
    }
  }

  // ---- periodic work ----
  void BeatLocked() {
    BeatFrame b;
    for (const auto& c : comms_) {
      const CommEntry::Counts n = c->counts();
      b.comms.push_back({c->key, c->rank, n.in, n.out});
    }
    const std::vector<uint8_t> frame = EncodeBeat(b);
    for (auto& [key, p] : peers_) {
      if (p.state == PeerState::kUp && !p.bye_sent) QueueLocked(p, frame, true);
    }
  }

  void TimersLocked(SteadyClock::time_point now) {
    for (auto& [key, p] : peers_) {
      const bool open = p.fd >= 0 && (p.state == PeerState::kUp || p.state == PeerState::kLost);
      if (p.closing && open && !p.bye_sent && now >= std::max(p.bye_at, linger_until_)) {
        QueueLocked(p, EncodeBye(), false);
        p.bye_sent = true;
      }
      switch (p.state) {
        case PeerState::kWant:
          if (p.refs > 0 && p.dialer && now >= p.next_dial) DialLocked(p, now);
          break;
        case PeerState::kConnecting:
          if (now - p.connect_started > kConnectTimeout) {
            close(p.fd);
            p.fd = -1;
            p.state = PeerState::kWant;
          }
          break;
        case PeerState::kUp:
          if (!p.closing && now - p.last_rx > lost_timeout_) {
            PeerLostLocked(p,
                           fmt::format("no heartbeat for {}s (VIGIL_HEARTBEAT_LOST_TIMEOUT)",
                                       lost_timeout_.count()),
                           true);
          }
          break;
        default:
          break;
      }
      if ((p.state == PeerState::kWant || p.state == PeerState::kConnecting) && p.refs > 0 &&
          !p.ever_up && now - p.want_since > lost_timeout_) {
        PeerLostLocked(p, fmt::format("no maintenance link within {}s", lost_timeout_.count()));
      }
    }
    for (Anon& a : anon_) {
      if (a.fd >= 0 && now > a.deadline) CloseAnon(a);
    }
  }

  void StuckLocked(SteadyClock::time_point now) {
    const auto fresh = lost_timeout_ + 2 * beat_interval_;
    for (const auto& cp : comms_) {
      CommEntry& e = *cp;
      if (!stuck_detection_ || e.exec_timeout_s == 0 || now < e.next_check) continue;
      e.next_check = now + StuckPeriod(e);
      bool not_entered = false, never_leaves = false;
      const CommEntry::Counts mine = e.counts();
      auto judge = [&](uint64_t in, uint64_t out) {
        // A peer is inside an op I never entered, or it left the op I am inside.
        if (in > out && in > mine.in) not_entered = true;
        if (mine.in > mine.out && out >= mine.in) never_leaves = true;
      };
      for (const auto& [k, c] : remote_) {
        if (k.first == e.key && k.second != e.rank && now - c.at < fresh) judge(c.in, c.out);
      }
      for (const auto& other : comms_) {  // ranks of the same communicator in this process
        if (other.get() == &e || other->key != e.key) continue;
        const CommEntry::Counts theirs = other->counts();
        judge(theirs.in, theirs.out);
      }
      const bool cond = not_entered || never_leaves;
      const bool still = mine.in == e.prev_in && mine.out == e.prev_out;
      if (cond && e.prev_cond && still) {
        HCCL_RUN_INFO("[HCCL_TRACE]rank:{}, count of currently executed operators:{}", e.uid(),
                      mine.in);
        HCCL_RUN_WARNING("[Heartbeat]rank [{}] of communicator [{}] is stuck: {} (op in/out {}/{})",
                         e.uid(), e.identifier,
                         not_entered ? "it has not entered an op its peers are inside"
                                     : "it is inside an op its peers have left",
                         mine.in, mine.out);
        RaiseLocked(e.uid(), e.uid(), HbStatus::kStuck, "", 0);
      }
      e.prev_cond = cond;
      e.prev_in = mine.in;
      e.prev_out = mine.out;
    }
  }

  void ForwardLocked() {
    while (!forward_.empty()) {
      Forward f = std::move(forward_.front());
      forward_.pop_front();
      EventFrame frame{f.event.crimer, f.event.informer, f.event.status, f.event.discovered_us};
      const std::vector<uint8_t> bytes = EncodeEvent(frame);
      auto inf = endpoint_of_uid_.find(f.event.informer);
      const std::string informer_ep = inf == endpoint_of_uid_.end() ? "" : inf->second;
      for (auto& [key, p] : peers_) {
        if (p.state != PeerState::kUp || p.bye_sent || key == f.from || key == informer_ep) {
          continue;
        }
        QueueLocked(p, bytes, false);
      }
    }
  }

  void FlushAllLocked() {
    for (auto& [key, p] : peers_) {
      if (p.fd < 0 || p.state == PeerState::kConnecting || p.out_pos >= p.out.size()) continue;
      if (!Flush(p.fd, p.out, p.out_pos)) {
        p.out.clear();
        p.out_pos = 0;  // the read side reports the break
      }
    }
    for (Anon& a : anon_) {
      if (a.fd < 0 || a.out.empty()) continue;
      if (!Flush(a.fd, a.out, a.out_pos) || (a.replied && a.out.empty())) CloseAnon(a);
    }
  }

  void CleanupLocked() {
    for (auto it = peers_.begin(); it != peers_.end();) {
      Peer& p = it->second;
      const bool open = p.fd >= 0 && (p.state == PeerState::kUp || p.state == PeerState::kLost);
      if (p.closing && p.refs == 0 && (p.bye_sent || !open) && p.out_pos >= p.out.size()) {
        if (p.fd >= 0) close(p.fd);
        it = peers_.erase(it);
        continue;
      }
      ++it;
    }
    anon_.erase(std::remove_if(anon_.begin(), anon_.end(), [](const Anon& a) { return a.fd < 0; }),
                anon_.end());
  }

  void Loop() {
    pthread_setname_np(pthread_self(), "Hccl_HeartBeat");
    auto last = SteadyClock::now();
    auto next_beat = last;
    std::vector<pollfd> fds;
    struct Slot {
      bool peer;
      std::string key;
    };
    std::vector<Slot> slots;
    while (!stop_.load()) {
      fds.clear();
      slots.clear();
      {
        std::lock_guard<std::mutex> lock(mu_);
        fds.push_back({wake_fd_, POLLIN, 0});
        fds.push_back({listener_.fd(), POLLIN, 0});
        for (auto& [key, p] : peers_) {
          if (p.fd < 0) continue;
          short ev = POLLIN;
          if (p.state == PeerState::kConnecting || p.out_pos < p.out.size()) ev |= POLLOUT;
          fds.push_back({p.fd, ev, 0});
          slots.push_back({true, key});
        }
        for (Anon& a : anon_) {
          if (a.fd < 0) continue;
          fds.push_back({a.fd, static_cast<short>(POLLIN | (a.out.empty() ? 0 : POLLOUT)), 0});
          slots.push_back({false, std::string()});
        }
      }
      (void)poll(fds.data(), fds.size(), static_cast<int>(kTick.count()));
      std::lock_guard<std::mutex> lock(mu_);
      const auto now = SteadyClock::now();
      // This thread did not run for a long while (the process was stopped, or starved): the
      // silence was ours, not the neighbours'.
      if (now - last > std::max<SteadyClock::duration>(2s, lost_timeout_ / 2)) {
        HCCL_RUN_WARNING(
            "[Heartbeat]heartbeat thread was not scheduled for {} ms; neighbours' "
            "silence in that time is not counted",
            std::chrono::duration_cast<std::chrono::milliseconds>(now - last).count());
        for (auto& [key, p] : peers_) p.last_rx = now;
        for (const auto& c : comms_) c->prev_cond = false;
      }
      last = now;
      if (fds[0].revents & POLLIN) {
        uint64_t v;
        (void)!read(wake_fd_, &v, sizeof(v));
      }
      if (fds[1].revents & POLLIN) AcceptLocked(now);
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        const Slot& s = slots[i - 2];
        if (s.peer) {
          auto it = peers_.find(s.key);
          if (it != peers_.end() && it->second.fd == fds[i].fd) {
            ServicePeerLocked(it->second, fds[i].revents, now);
          }
        } else {
          for (Anon& a : anon_) {
            if (a.fd == fds[i].fd) {
              ServiceAnonLocked(a, now);
              break;
            }
          }
        }
      }
      TimersLocked(now);
      if (now >= next_beat) {
        BeatLocked();
        next_beat = now + beat_interval_;
      }
      StuckLocked(now);
      ForwardLocked();
      FlushAllLocked();
      CleanupLocked();
    }
    ShutdownLinks();
  }

  // Orderly close: a bye to every neighbour (so none reports this process LOST), bounded flush.
  void ShutdownLinks() {
    std::lock_guard<std::mutex> lock(mu_);
    auto open = [](const Peer& p) {
      return p.fd >= 0 && (p.state == PeerState::kUp || p.state == PeerState::kLost);
    };
    for (auto& [key, p] : peers_) {
      if (open(p) && !p.bye_sent) QueueLocked(p, EncodeBye(), false);
    }
    const auto deadline = SteadyClock::now() + kByeFlush;
    for (;;) {
      bool pending = false;
      for (auto& [key, p] : peers_) {
        if (!open(p) || p.out_pos >= p.out.size()) continue;
        if (Flush(p.fd, p.out, p.out_pos) && p.out_pos < p.out.size()) pending = true;
      }
      if (!pending || SteadyClock::now() > deadline) break;
      std::this_thread::sleep_for(5ms);
    }
    for (auto& [key, p] : peers_) {
      if (p.fd >= 0) close(p.fd);
      p.fd = -1;
    }
    for (Anon& a : anon_) CloseAnon(a);
    listener_.Close();
  }

  std::string ViewJsonLocked() const {
    using nlohmann::json;
    json v;
    v["pid"] = getpid();
    v["listen"] = self_key_;
    v["lost_timeout_s"] = lost_timeout_.count();
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    v["host"] = host;
    const auto now = SteadyClock::now();
    json members = json::array(), ranks = json::array();
    for (const auto& c : comms_) {
      json m;
      m["uid"] = c->uid();
      m["comm"] = c->identifier;
      m["rank"] = c->rank;
      m["size"] = c->size;
      const CommEntry::Counts n = c->counts();
      m["in"] = n.in;
      m["out"] = n.out;
      m["exec_timeout_s"] = c->exec_timeout_s;
      m["aborted"] = c->aborted;
      if (n.in > n.out) {
        if (auto info = c->info.lock()) {
          m["op"] = info->tags[static_cast<size_t>(c->current_type.load())];
        }
        m["index"] = c->current_index.load();
        const SteadyClock::time_point since(SteadyClock::duration(c->inside_since.load()));
        m["inside_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count();
      }
      members.push_back(m);
      for (uint32_t r = 0; r < c->size; ++r) {
        ranks.push_back({{"comm", c->identifier},
                         {"rank", r},
                         {"uid", c->uids[r]},
                         {"endpoint", c->endpoints[r]},
                         {"pid", c->pids[r]}});
      }
    }
    v["members"] = members;
    v["ranks"] = ranks;
    json peers = json::array();
    for (const auto& [key, p] : peers_) {
      peers.push_back(
          {{"endpoint", key},
           {"state", PeerStateName(p.state)},
           {"last_rx_ms",
            std::chrono::duration_cast<std::chrono::milliseconds>(now - p.last_rx).count()}});
    }
    v["peers"] = peers;
    json events = json::array();
    for (const HbEvent& e : events_) {
      events.push_back({{"crimer", e.crimer},
                        {"informer", e.informer},
                        {"status", HbStatusName(e.status)},
                        {"arrival", FormatCTime(e.arrival)},
                        {"discovered_us", e.discovered_us}});
    }
    v["events"] = events;
    return v.dump();
  }

  std::once_flag start_once_;
  std::once_flag cqe_screen_once_;
  std::atomic<bool> enabled_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> stopped_{false};
  std::thread thread_;
  int wake_fd_ = -1;
  net::Socket listener_;
  uint16_t port_ = 0;
  std::string self_key_;
  std::chrono::seconds lost_timeout_{30};
  std::chrono::milliseconds beat_interval_{1000};
  SteadyClock::time_point linger_until_{};
  bool stuck_detection_ = true;  // HCCL_DFS_CONFIG stuck_detection
  pid_t start_pid_ = 0;

  std::mutex mu_;
  std::vector<std::shared_ptr<CommEntry>> comms_;
  std::map<std::string, std::set<std::string>> members_of_;  // identifier -> uids (kept)
  std::map<std::string, std::string> endpoint_of_uid_;
  std::set<std::string> exited_;  // uids whose process is known gone (PeerExited)
  std::string last_local_uid_;
  std::map<std::string, Peer> peers_;
  std::vector<Anon> anon_;
  std::map<std::pair<uint64_t, uint32_t>, RemoteCounters> remote_;
  std::map<std::string, std::set<HbStatus>> seen_;
  std::set<std::pair<std::string, uint64_t>> link_failed_ops_;  // (identifier, op index)
  std::deque<HbEvent> events_;
  std::deque<Forward> forward_;
};

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
std::vector<HbEvent> Heartbeat::Events() {
  return impl_->Events();
}
void Heartbeat::Stop() {
  impl_->Stop();
}

}  // namespace vigil::dfx
