// Heartbeat detection: LOST (silence, a broken link, a process that exited), STUCK (op counters
// against the peers'), ERROR CQE (a data link's error); events raised once, the communicators
// they abort, and the Cluster Exception report of a failed op.
#include "bootstrap/auth.h"
#include "dfx/heartbeat_impl.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/knowledge_base.h"
#include "dfx/root_cause.h"
#include "log/plog.h"

namespace vigil::dfx {

// Whether the process behind `uid` has exited: its maintenance listener refuses a connection
// (the kernel answers RST for a closed port on a live host). A link that broke because its
// peer died is that peer's LOST, not a network fault; an answer, or silence (a blackholed or
// downed network), leaves it a link fault. The answer is kept: a dead process stays dead.
bool Heartbeat::Impl::PeerExited(const std::string& uid) {
  std::string ep;
  auth::JobKey key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (exited_.count(uid) != 0) return true;
    auto it = endpoint_of_uid_.find(uid);
    if (it == endpoint_of_uid_.end()) return false;
    ep = it->second;
    for (const auto& c : comms_) {
      if (std::find(c->uids.begin(), c->uids.end(), uid) != c->uids.end()) {
        key = c->job_key;
        break;
      }
    }
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
    // The job-key check is the question: a live listener answers it (or refuses a key it does
    // not know, which is an answer too); a dying one resets or closes.
    net::Socket view(fd);
    std::string err;
    const HcclResult rc = auth::AuthenticateDialer(view, auth::Purpose::kHealth, key,
                                                   SteadyClock::now() + kProbeTimeout, &err);
    (void)view.Release();
    if (rc == HCCL_SUCCESS || rc == HCCL_E_PARA) {
      how = "answered";
    } else {
      refused = rc == HCCL_E_TCP_TRANSFER;  // closed or reset
      how = rc == HCCL_E_TIMEOUT ? std::string("query: no answer") : err;
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

bool Heartbeat::Impl::PeerExited(const std::string& identifier, uint32_t rank) {
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

std::vector<HbEvent> Heartbeat::Impl::ReportClusterException(const comm::OpRecord& op) {
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

std::vector<HbEvent> Heartbeat::Impl::KeyEvents(const comm::OpRecord& op) {
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

std::vector<std::string> Heartbeat::Impl::LocalUidsLocked() const {
  std::vector<std::string> out;
  for (const auto& e : comms_) {
    if (std::find(out.begin(), out.end(), e->uid()) == out.end()) out.push_back(e->uid());
  }
  if (out.empty() && !last_local_uid_.empty()) out.push_back(last_local_uid_);
  return out;
}

// SetStatus: records and forwards an event once per (crimer, status).
bool Heartbeat::Impl::RaiseLocked(const std::string& crimer, const std::string& informer, HbStatus status,
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

void Heartbeat::Impl::AbortEntryLocked(CommEntry& c, const HbEvent& e) {
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

void Heartbeat::Impl::OnLinkError(const std::weak_ptr<CommEntry>& weak, const transport::LinkError& err) {
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
  // An op retry takes it over (comm/op_retry.h): ERROR CQE only if the retry gives up.
  if (auto e = weak.lock(); e != nullptr) {
    if (auto c = e->comm.lock(); c != nullptr && c->HoldLinkErrorForRetry(err)) {
      HCCL_RUN_INFO("[Heartbeat]data link of communicator [{}] rank[{}] to rank[{}] failed: {}; "
                    "the peer lives: held for op retry (HCCL_OP_RETRY_ENABLE)",
                    identifier, err.local.rank, err.remote.rank, err.reason);
      return;
    }
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
bool Heartbeat::Impl::CqeBetweenLocked(const std::string& a, const std::string& b) const {
  return std::any_of(events_.begin(), events_.end(), [&](const HbEvent& ev) {
    return ev.status == HbStatus::kCqe &&
           ((ev.crimer == a && ev.informer == b) || (ev.crimer == b && ev.informer == a));
  });
}

// keep_link: the neighbour fell silent but its socket is fine (a stopped process): keep it, so
// it hears our bye at exit rather than taking our close for our death when it resumes.
void Heartbeat::Impl::PeerLostLocked(Peer& p, const std::string& why, bool keep_link) {
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

void Heartbeat::Impl::StuckLocked(SteadyClock::time_point now) {
  const auto fresh = lost_timeout_ + 2 * beat_interval_;
  for (const auto& cp : comms_) {
    CommEntry& e = *cp;
    if (!stuck_detection_ || e.exec_timeout_s == 0 || now < e.next_check) continue;
    e.next_check = now + StuckPeriod(e);
    // Aborted for a member LOST or a link's ERROR CQE: that is the fault, its ops end on it.
    if (e.aborted) {
      e.prev_cond = false;
      continue;
    }
    bool not_entered = false, never_leaves = false, waits_on_other = false;
    const CommEntry::Counts mine = e.counts();
    const bool inside = mine.in > mine.out;
    auto judge = [&](uint64_t in, uint64_t out) {
      // A peer is inside an op I never entered, or it left the op I am inside.
      if (in > out && in > mine.in) not_entered = true;
      if (inside && out >= mine.in) never_leaves = true;
    };
    // A rank that has not entered the op I am inside: I may be waiting for it, directly or
    // through the ranks between us (Broadcast and Reduce let some ranks leave, and go on to
    // the next op, while others still wait for a late one). Any rank counts, neighbour or not:
    // heard_ holds what the beats relayed of every rank.
    auto behind = [&](uint64_t in) {
      if (inside && in < mine.in) waits_on_other = true;
    };
    for (const auto& [k, c] : remote_) {
      if (k.first != e.key || k.second == e.rank) continue;
      if (now - c.at < fresh) {
        judge(c.in, c.out);
        behind(c.in);
      } else if (inside) {
        waits_on_other = true;  // a silent peer (stopped, gone): it may be the one I wait for
      }
    }
    for (auto it = heard_.lower_bound({e.key, 0}); it != heard_.end() && it->first.first == e.key;
         ++it) {
      if (it->first.second != e.rank) behind(it->second.in);
    }
    for (const auto& other : comms_) {  // ranks of the same communicator in this process
      if (other.get() == &e || other->key != e.key) continue;
      const CommEntry::Counts theirs = other->counts();
      judge(theirs.in, theirs.out);
      behind(theirs.in);
    }
    // Inside an op while some rank has not entered it: that rank is behind (it says so
    // itself, as not entered), not me, whether peers have left my op or gone on to the next.
    const bool cond = (not_entered || never_leaves) && !waits_on_other;
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

}  // namespace vigil::dfx
