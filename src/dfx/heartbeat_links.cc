// The heartbeat's maintenance links: dialing and accepting, hello, beat, event and bye frames in
// and out, timers, and the poll loop of thread "Hccl_HeartBeat".
#include "dfx/heartbeat_impl.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dfx/agreement.h"
#include "log/plog.h"

namespace vigil::dfx {

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

void Heartbeat::Impl::QueueLocked(Peer& p, const std::vector<uint8_t>& frame, bool is_beat) {
  if (p.fd < 0) return;
  const size_t pending = p.out.size() - p.out_pos;
  if ((is_beat && pending > kBeatBackpressure) || pending > kMaxPending) return;
  p.out.insert(p.out.end(), frame.begin(), frame.end());
}

void Heartbeat::Impl::ConnectedLocked(Peer& p, SteadyClock::time_point now) {
  p.state = PeerState::kUp;
  p.ever_up = true;
  p.last_rx = now;
  HCCL_RUN_INFO("[Heartbeat]maintenance link to [{}] up ({})", p.key,
                p.dialer ? "dialed" : "accepted");
}

void Heartbeat::Impl::DialLocked(Peer& p, SteadyClock::time_point now) {
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
  // The job-key check first; the heartbeat hello follows the proof (AuthStepLocked).
  p.auth = std::make_unique<auth::DialerAuth>(auth::Purpose::kHeartbeat, p.job_key);
  p.out = p.auth->Start();
  p.auth_in.clear();
  HelloFrame h{self_ip(), port_, static_cast<uint32_t>(getpid())};
  p.after_auth = EncodeHello(h);
  p.tcp_connected = rc == 0;
  if (p.tcp_connected && !Flush(p.fd, p.out, p.out_pos)) DialFailedLocked(p, "send failed");
}

void Heartbeat::Impl::DialFailedLocked(Peer& p, const std::string& why) {
  if (p.auth != nullptr && p.tcp_connected && !p.auth_warned) {
    p.auth_warned = true;
    HCCL_RUN_WARNING("[Auth]maintenance link to [{}]: the job-key check failed: {}; dialing "
                     "again every {} ms",
                     p.key, why, kDialRetry.count());
  }
  if (p.fd >= 0) close(p.fd);
  p.fd = -1;
  p.auth.reset();
  p.auth_in.clear();
  p.out.clear();
  p.out_pos = 0;
  p.tcp_connected = false;
  p.state = PeerState::kWant;
}

// A dialed connection's job-key check: reads the answer, sends the proof and the hello.
void Heartbeat::Impl::AuthStepLocked(Peer& p, SteadyClock::time_point now) {
  uint8_t buf[256];
  bool eof = false;
  for (;;) {
    ssize_t n = recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      p.auth_in.insert(p.auth_in.end(), buf, buf + n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  std::vector<uint8_t> out;
  const auth::Step step = p.auth->Feed(&p.auth_in, &out);
  if (step == auth::Step::kFailed) return DialFailedLocked(p, p.auth->why());
  if (step == auth::Step::kMore) {
    if (eof) DialFailedLocked(p, "closed by the neighbour during the check");
    return;
  }
  p.auth.reset();
  p.auth_warned = false;
  p.out = std::move(out);
  p.out_pos = 0;
  p.out.insert(p.out.end(), p.after_auth.begin(), p.after_auth.end());
  p.after_auth.clear();
  if (!p.auth_in.empty()) p.in.Append(p.auth_in.data(), p.auth_in.size());
  p.auth_in.clear();
  ConnectedLocked(p, now);
}

void Heartbeat::Impl::HandleFrameLocked(Peer& p, FrameType type, const std::vector<uint8_t>& body,
                       SteadyClock::time_point now) {
  p.last_rx = now;
  switch (type) {
    case FrameType::kBeat: {
      BeatFrame b;
      if (!DecodeBeat(body, &b)) return;
      for (const CommCounters& c : b.comms) {
        remote_[{c.comm_key, c.rank}] = RemoteCounters{c.in, c.out, now};
        HeardLocked(c);
      }
      for (const CommCounters& c : b.heard) HeardLocked(c);
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

void Heartbeat::Impl::ServicePeerLocked(Peer& p, short revents, SteadyClock::time_point now) {
  if (p.fd < 0) return;
  if (p.state == PeerState::kConnecting) {
    if (!p.tcp_connected) {
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
      p.tcp_connected = true;
      if (!Flush(p.fd, p.out, p.out_pos)) return DialFailedLocked(p, "send failed");
    }
    if (p.auth == nullptr || (revents & (POLLIN | POLLERR | POLLHUP)) == 0) return;
    AuthStepLocked(p, now);
    if (p.state != PeerState::kUp) return;
    FrameType type;
    std::vector<uint8_t> body;
    bool bad = false;
    while (p.fd >= 0 && p.in.Next(&type, &body, &bad)) HandleFrameLocked(p, type, body, now);
    return;
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

// The job-key check of an accepted connection; false when it failed (logged, closed).
bool Heartbeat::Impl::AnonAuthLocked(Anon& a) {
  uint8_t buf[256];
  bool eof = false;
  for (;;) {
    ssize_t n = recv(a.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      a.auth_in.insert(a.auth_in.end(), buf, buf + n);
      if (a.auth_in.size() > 4096) break;  // the check needs 64 bytes; the rest waits
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
    break;
  }
  const auth::Step step = a.auth->Feed(&a.auth_in, &a.out);
  if (!a.out.empty() && !Flush(a.fd, a.out, a.out_pos)) {
    auth::LogRejected("heartbeat listener", self_key_, a.peer, "send failed");
    CloseAnon(a);
    return false;
  }
  if (step == auth::Step::kFailed) {
    auth::LogRejected("heartbeat listener", self_key_, a.peer, a.auth->why());
    CloseAnon(a);
    return false;
  }
  if (step == auth::Step::kMore) {
    if (eof) {
      auth::LogRejected("heartbeat listener", self_key_, a.peer,
                        fmt::format("closed during the job-key check ({} bytes pending)",
                                    a.auth_in.size()));
      CloseAnon(a);
      return false;
    }
    return true;
  }
  a.purpose = a.auth->purpose();
  a.auth.reset();
  if (!a.auth_in.empty()) a.in.Append(a.auth_in.data(), a.auth_in.size());
  a.auth_in.clear();
  return true;
}

void Heartbeat::Impl::ServiceAnonLocked(Anon& a, SteadyClock::time_point now) {
  if (a.auth != nullptr) {
    if (!AnonAuthLocked(a) || a.auth != nullptr) return;
  }
  std::string why;
  const bool alive = Drain(a.fd, a.in, &why);
  FrameType type;
  std::vector<uint8_t> body;
  bool bad = false;
  if (!a.replied && a.in.Next(&type, &body, &bad)) {
    // A health connection may only ask; links and agreement messages are the ranks'.
    if (a.purpose == auth::Purpose::kHealth && type != FrameType::kQuery) {
      CloseAnon(a);
      return;
    }
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
    } else if (type == FrameType::kAgree) {
      DeliverAgreementFrame(body);  // one message per connection (agreement.h)
      CloseAnon(a);
      return;
    } else {
      CloseAnon(a);
      return;
    }
  }
  if (bad || (!alive && !a.replied)) CloseAnon(a);
}

void Heartbeat::Impl::CloseAnon(Anon& a) {
  if (a.fd >= 0) close(a.fd);
  a.fd = -1;
}

void Heartbeat::Impl::AcceptLocked(SteadyClock::time_point now) {
  for (;;) {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    int fd = accept4(listener_.fd(), reinterpret_cast<sockaddr*>(&addr), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    SetNoDelay(fd);
    char ip[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
    Anon a;
    a.fd = fd;
    a.peer = fmt::format("{}:{}", ip, ntohs(addr.sin_port));
    a.deadline = now + kAnonTimeout;
    // Keys of every communicator this process joined: the listener is the process's.
    a.auth = std::make_unique<auth::AcceptorAuth>(
        auth::PurposeBit(auth::Purpose::kHeartbeat) | auth::PurposeBit(auth::Purpose::kHealth),
        auth::KnownJobKeys());
    anon_.push_back(std::move(a));
  }
}

// What a beat says of a rank of a communicator attached here (not one of this process's own
// ranks: it knows those better): kept by maximum, as counters only grow.
void Heartbeat::Impl::HeardLocked(const CommCounters& c) {
  bool attached = false;
  for (const auto& e : comms_) {
    if (e->key != c.comm_key) continue;
    if (e->rank == c.rank) return;
    attached = true;
  }
  if (!attached) return;
  CommEntry::Counts& h = heard_[{c.comm_key, c.rank}];
  h.in = std::max(h.in, c.in);
  h.out = std::max(h.out, c.out);
}

void Heartbeat::Impl::BeatLocked() {
  BeatFrame b;
  for (const auto& c : comms_) {
    const CommEntry::Counts n = c->counts();
    b.comms.push_back({c->key, c->rank, n.in, n.out});
  }
  // Relay what this process heard of other ranks, so a rank learns of one behind it in an op
  // though it is no neighbour of it (STUCK, heartbeat_detect.cc). Over kMaxRelayed a slice
  // starting where the last beat stopped.
  const size_t total = heard_.size();
  const size_t take = std::min(total, kMaxRelayed);
  if (take > 0) {
    const size_t start = total > take ? relay_cursor_ % total : 0;
    auto it = std::next(heard_.begin(), static_cast<std::ptrdiff_t>(start));
    for (size_t i = 0; i < take; ++i, ++it) {
      if (it == heard_.end()) it = heard_.begin();
      b.heard.push_back({it->first.first, it->first.second, it->second.in, it->second.out});
    }
    relay_cursor_ = start + take;
  }
  const std::vector<uint8_t> frame = EncodeBeat(b);
  for (auto& [key, p] : peers_) {
    if (p.state == PeerState::kUp && !p.bye_sent) QueueLocked(p, frame, true);
  }
}

void Heartbeat::Impl::TimersLocked(SteadyClock::time_point now) {
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
          DialFailedLocked(p, p.tcp_connected ? "no answer to the job-key hello" : "connect timed out");
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
    if (a.fd >= 0 && now > a.deadline) {
      if (a.auth != nullptr) {
        auth::LogRejected("heartbeat listener", self_key_, a.peer,
                          fmt::format("no job-key proof within the deadline ({} bytes received)",
                                      a.auth_in.size()));
      }
      CloseAnon(a);
    }
  }
}

void Heartbeat::Impl::ForwardLocked() {
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

void Heartbeat::Impl::FlushAllLocked() {
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

void Heartbeat::Impl::CleanupLocked() {
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

void Heartbeat::Impl::Loop() {
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
        if ((p.state == PeerState::kConnecting && !p.tcp_connected) ||
            (p.state != PeerState::kConnecting && p.out_pos < p.out.size())) {
          ev |= POLLOUT;
        }
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
void Heartbeat::Impl::ShutdownLinks() {
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

}  // namespace vigil::dfx
