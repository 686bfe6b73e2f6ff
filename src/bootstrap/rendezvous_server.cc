// The rendezvous server. One poll loop over the listener and every connection: handshakes are
// read incrementally, so a stranger that sends nothing (or garbage) costs one log line and
// never delays the ranks. Each connection first proves the job key (bootstrap/auth.h); nothing
// else it sends is looked at before that. Checks happen as ranks arrive; the first problem (duplicate rank id,
// a comm-wide parameter that differs) fails the whole communicator and every rank, present or
// arriving later, gets an error that names it. The wait for all ranks starts at the first
// arrival and lasts HCCL_CONNECT_TIMEOUT.
#include "bootstrap/rendezvous_server.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "common/env_config.h"
#include "common/time_util.h"
#include "log/plog.h"

namespace vigil::bootstrap {

namespace {

using namespace std::chrono_literals;

std::string RankList(const std::vector<uint32_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 64) {
      s += fmt::format(",...({} more)", ranks.size() - i);
      break;
    }
    if (i > 0) s += ",";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string Who(const RankInfo& r) {
  return fmt::format("rank[{}] host[{}] pid[{}] device[{}]", r.rank, r.host_ip, r.pid, r.device);
}

struct Param {
  const char* name;
  std::string (*get)(const RankInfo&);
};

const Param kParams[] = {
    {"rankSize", [](const RankInfo& r) { return std::to_string(r.nranks); }},
    {"buffsize", [](const RankInfo& r) { return std::to_string(r.buffsize_mb); }},
    {"execTimeout", [](const RankInfo& r) { return std::to_string(r.exec_timeout_s); }},
    {"transport",
     [](const RankInfo& r) { return r.transport.empty() ? std::string("auto") : r.transport; }},
    {"inconsistent_check",
     [](const RankInfo& r) { return r.op_check.empty() ? std::string("on") : r.op_check; }},
};

class Server {
 public:
  Server(net::Socket listener, RootInfo info) : listener_(std::move(listener)), info_(std::move(info)) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }
  ~Server() {
    if (wake_fd_ >= 0) close(wake_fd_);
  }

  void Start() {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "vgl_rendezvous");
      Run();
      done_.store(true);
    });
  }
  void Stop() {
    stop_.store(true);
    uint64_t one = 1;
    if (wake_fd_ >= 0) (void)!write(wake_fd_, &one, sizeof(one));
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_.load(); }

 private:
  struct Conn {
    net::Socket sock;
    std::string peer;
    std::vector<uint8_t> in;
    SteadyClock::time_point hs_deadline;
    std::unique_ptr<auth::AcceptorAuth> auth;
    bool authed = false;
    bool hello = false;
    bool drop = false;  // answered; close without further logging
    RankInfo info;
  };
  enum class Failure { kNone, kParam, kDuplicate };

  std::string Where() const { return fmt::format("{}:{}", info_.host_ip, info_.port); }

  void Run();
  void AcceptAll();
  // Reads what is available; false when the connection is finished (closed or rejected).
  bool Service(Conn& c);
  bool OnHello(Conn& c, const uint8_t* payload, size_t len);
  void Reply(Conn& c, rdv::MsgType type, const wire::Writer& payload);
  void ReplyError(Conn& c, const rdv::ErrorReply& e) {
    wire::Writer w;
    rdv::PutError(&w, e);
    Reply(c, rdv::kError, w);
  }
  rdv::ErrorReply FailureFor(const RankInfo& r) const;
  void FailAll();
  void SendTables();
  void TimeOut();

  net::Socket listener_;
  RootInfo info_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};

  std::vector<std::unique_ptr<Conn>> conns_;
  bool have_ref_ = false;
  RankInfo ref_;
  uint32_t timeout_s_ = 0;
  SteadyClock::time_point deadline_ = SteadyClock::time_point::max();
  std::map<uint32_t, Conn*> arrived_;
  bool finished_ = false;
  uint32_t responded_ = 0;
  Failure failure_ = Failure::kNone;
  const Param* failed_param_ = nullptr;
  RankInfo odd_;    // the rank that disagreed with ref_, or the second claimant of a rank id
  RankInfo first_;  // the first claimant of a duplicated rank id
};

void Server::Run() {
  std::vector<pollfd> fds;
  while (!stop_.load()) {
    auto now = SteadyClock::now();
    auto wake_at = now + 1s;
    if (!finished_ && deadline_ < wake_at) wake_at = deadline_;
    for (auto& c : conns_) {
      if (!c->hello && c->hs_deadline < wake_at) wake_at = c->hs_deadline;
    }
    int timeout_ms = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now).count() + 1));
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listener_.fd(), POLLIN, 0});
    for (auto& c : conns_) fds.push_back({c->sock.fd(), POLLIN, 0});
    (void)poll(fds.data(), fds.size(), timeout_ms);
    if (stop_.load()) break;  // process exit: leave quietly

    if (fds[1].revents & POLLIN) AcceptAll();
    const size_t polled = fds.size() - 2;
    for (size_t i = 0; i < conns_.size();) {
      bool ready = i < polled && fds[i + 2].revents != 0;
      bool keep = !conns_[i]->drop;
      if (keep && ready) keep = Service(*conns_[i]);
      if (keep && !conns_[i]->authed && SteadyClock::now() >= conns_[i]->hs_deadline) {
        auth::LogRejected("rendezvous server", Where(), conns_[i]->peer,
                          fmt::format("no job-key proof within the deadline ({} bytes received)",
                                      conns_[i]->in.size()));
        keep = false;
      } else if (keep && !conns_[i]->hello && !conns_[i]->drop &&
                 SteadyClock::now() >= conns_[i]->hs_deadline) {
        HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous server {} dropped connection from "
                   "{}: no valid handshake within the deadline ({} bytes received)",
                   Where(), conns_[i]->peer, conns_[i]->in.size());
        keep = false;
      }
      if (keep) {
        ++i;
        continue;
      }
      for (auto it = arrived_.begin(); it != arrived_.end(); ++it) {
        if (it->second == conns_[i].get()) {
          arrived_.erase(it);
          break;
        }
      }
      conns_.erase(conns_.begin() + static_cast<long>(i));
      // erase shifts the pollfd correspondence; rescan next loop.
      if (i < polled) break;
    }
    if (!finished_ && have_ref_ && failure_ == Failure::kNone &&
        arrived_.size() == ref_.nranks) {
      SendTables();
    }
    if (!finished_ && have_ref_ && SteadyClock::now() >= deadline_) {
      if (failure_ == Failure::kNone) TimeOut();
      finished_ = true;
    }
    if (finished_) break;
    if (failure_ != Failure::kNone && have_ref_ && responded_ >= ref_.nranks) break;
  }
  conns_.clear();
  listener_.Close();
}

void Server::AcceptAll() {
  for (;;) {
    net::Socket s;
    std::string err;
    if (net::Accept(listener_, SteadyClock::now(), &s, &err) != HCCL_SUCCESS) return;
    auto c = std::make_unique<Conn>();
    c->peer = s.PeerAddress();
    c->sock = std::move(s);
    c->hs_deadline = SteadyClock::now() + 5s;
    c->auth = std::make_unique<auth::AcceptorAuth>(auth::PurposeBit(auth::Purpose::kRendezvous),
                                                   std::vector<auth::JobKey>{info_.key});
    conns_.push_back(std::move(c));
  }
}

bool Server::Service(Conn& c) {
  uint8_t buf[64 * 1024];
  bool eof = false;
  for (;;) {
    ssize_t r = recv(c.sock.fd(), buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      if (!c.hello) c.in.insert(c.in.end(), buf, buf + r);
      if (c.in.size() > rdv::kHeaderBytes + rdv::kMaxHello) break;
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof = true;
    if (r < 0 && errno == EINTR) continue;
    break;
  }
  if (c.hello) {
    if (eof && !finished_) {
      HCCL_RUN_WARNING("[InitGroupStage][RanktableDetect]rendezvous {}: {} disconnected before "
                       "the rank table was sent",
                       info_.identifier, Who(c.info));
      return false;
    }
    return !eof;
  }
  if (!c.authed) {
    std::vector<uint8_t> out;
    const auth::Step step = c.auth->Feed(&c.in, &out);
    std::string err;
    if (!out.empty() &&
        c.sock.SendAll(out.data(), out.size(), SteadyClock::now() + 1s, &err) != HCCL_SUCCESS) {
      auth::LogRejected("rendezvous server", Where(), c.peer, err);
      return false;
    }
    if (step == auth::Step::kFailed) {
      auth::LogRejected("rendezvous server", Where(), c.peer, c.auth->why());
      return false;
    }
    if (step == auth::Step::kMore) {
      if (eof) {
        auth::LogRejected("rendezvous server", Where(), c.peer,
                          fmt::format("closed during the job-key check ({} bytes pending)",
                                      c.in.size()));
        return false;
      }
      return true;
    }
    c.authed = true;
    c.auth.reset();
  }
  if (c.in.size() >= rdv::kHeaderBytes) {
    wire::Reader h(c.in.data(), rdv::kHeaderBytes);
    uint32_t magic = h.U32();
    uint16_t version = h.U16();
    uint16_t type = h.U16();
    uint32_t len = h.U32();
    if (magic != rdv::kMagic) {
      HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous server {} rejected connection from "
                 "{}: bad magic [0x{:08x}], not a Vigil rank",
                 Where(), c.peer, magic);
      return false;
    }
    if (version != rdv::kVersion || type != rdv::kHello || len > rdv::kMaxHello) {
      HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous server {} rejected connection from "
                 "{}: bad handshake (version[{}] expected[{}], type[{}], length[{}])",
                 Where(), c.peer, version, rdv::kVersion, type, len);
      return false;
    }
    if (c.in.size() >= rdv::kHeaderBytes + len) {
      return OnHello(c, c.in.data() + rdv::kHeaderBytes, len);
    }
  }
  if (eof) {
    HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous server {} dropped connection from {}: "
               "closed after {} bytes, before a complete handshake",
               Where(), c.peer, c.in.size());
    return false;
  }
  return true;
}

bool Server::OnHello(Conn& c, const uint8_t* payload, size_t len) {
  std::string identifier;
  RankInfo info;
  if (!rdv::DecodeHello(payload, len, &identifier, &info)) {
    HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous server {} rejected connection from "
               "{}: malformed rank information",
               Where(), c.peer);
    return false;
  }
  c.in.clear();
  c.in.shrink_to_fit();
  if (identifier != info_.identifier) {
    rdv::ErrorReply e{HCCL_E_PARA,
                      fmt::format("root info mismatch: the rank presented identifier[{}] but the "
                                  "rendezvous server at {} serves identifier[{}]",
                                  identifier, Where(), info_.identifier),
                      "", {}};
    HCCL_ERROR("[InitGroupStage][RanktableDetect]{} from {}: {}", Who(info), c.peer, e.message);
    ReplyError(c, e);
    return false;
  }
  if (info.nranks == 0 || info.rank >= info.nranks) {
    rdv::ErrorReply e{HCCL_E_PARA,
                      fmt::format("rank[{}] is out of range for rankSize[{}]", info.rank,
                                  info.nranks),
                      "", {}};
    HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous {}: {}", info_.identifier, e.message);
    ReplyError(c, e);
    return false;
  }
  c.hello = true;
  c.info = info;
  if (!have_ref_) {
    have_ref_ = true;
    ref_ = info;
    timeout_s_ = Env().connect_timeout_s;
    deadline_ = SteadyClock::now() + std::chrono::seconds(timeout_s_);
  }
  if (failure_ != Failure::kNone) {
    ReplyError(c, FailureFor(info));
    ++responded_;
    return false;
  }
  for (const Param& p : kParams) {
    if (p.get(info) != p.get(ref_)) {
      failure_ = Failure::kParam;
      failed_param_ = &p;
      odd_ = info;
      HCCL_ERROR("[InitChannelStage][ParameterConflict]rendezvous identifier[{}]: {} {}[{}] "
                 "differs from {} {}[{}]",
                 info_.identifier, Who(info), p.name, p.get(info), Who(ref_), p.name,
                 p.get(ref_));
      FailAll();
      return false;
    }
  }
  auto dup = arrived_.find(info.rank);
  if (dup != arrived_.end()) {
    failure_ = Failure::kDuplicate;
    first_ = dup->second->info;
    odd_ = info;
    HCCL_ERROR("[InitGroupStage][RanktableDetect]rendezvous identifier[{}]: rank id[{}] is "
               "claimed twice: {} and {}",
               info_.identifier, info.rank, Who(first_), Who(odd_));
    FailAll();
    return false;
  }
  arrived_[info.rank] = &c;
  return true;
}

rdv::ErrorReply Server::FailureFor(const RankInfo& r) const {
  rdv::ErrorReply e;
  e.code = HCCL_E_PARA;
  if (failure_ == Failure::kDuplicate) {
    bool claimant = r.rank == first_.rank;
    e.message = fmt::format("{}rank id[{}] is claimed by two ranks: {} and {} (identifier[{}])",
                            claimant ? "" : "communicator init failed: ", first_.rank,
                            Who(first_), Who(odd_), info_.identifier);
    return e;
  }
  const Param& p = *failed_param_;
  // The value that differs from the recipient's own, and a rank that holds it.
  std::string local = p.get(r);
  const RankInfo& other = local != p.get(ref_) ? ref_ : odd_;
  std::string remote = p.get(other);
  e.message = fmt::format("comm-wide parameter {} is inconsistent: {} local[{}] remote[{}] "
                          "(remote {}), identifier[{}]",
                          p.name, p.name, local, remote, Who(other), info_.identifier);
  e.screen_code = "EI0005";
  e.screen_args = {"CommInit", info_.identifier, p.name, local, remote};
  return e;
}

void Server::FailAll() {
  for (auto& c : conns_) {
    if (!c->hello || c->drop) continue;
    ReplyError(*c, FailureFor(c->info));
    ++responded_;
    c->drop = true;
  }
  arrived_.clear();
}

void Server::SendTables() {
  wire::Writer w;
  w.U32(static_cast<uint32_t>(arrived_.size()));
  for (auto& [rank, conn] : arrived_) rdv::PutRankInfo(&w, conn->info);
  for (auto& [rank, conn] : arrived_) Reply(*conn, rdv::kTable, w);
  HCCL_RUN_INFO("[InitGroupStage]rendezvous identifier[{}] at {} complete: rankNum[{}]",
                info_.identifier, Where(), arrived_.size());
  finished_ = true;
}

void Server::TimeOut() {
  std::vector<uint32_t> missing;
  for (uint32_t r = 0; r < ref_.nranks; ++r) {
    if (arrived_.count(r) == 0) missing.push_back(r);
  }
  HCCL_ERROR("[InitGroupStage][Timeout]topo exchange server get socket timeout! timeout[{}s], "
             "identifier[{}], listen ip[{}] port[{}]",
             timeout_s_, info_.identifier, info_.host_ip, info_.port);
  HCCL_ERROR("[InitGroupStage][Timeout]total connected num is [{}], need connect rankNum is [{}], "
             "rank ids that never connected[{}]",
             arrived_.size(), ref_.nranks, RankList(missing));
  rdv::ErrorReply e;
  e.code = HCCL_E_TIMEOUT;
  std::string reason = fmt::format(
      "ranks [{}] of rankSize[{}] did not join communicator [{}] at root {} within "
      "HCCL_CONNECT_TIMEOUT [{}s] (connected {})",
      RankList(missing), ref_.nranks, info_.identifier, Where(), timeout_s_, arrived_.size());
  e.message = fmt::format("topo exchange agent get socket timeout: {}; TopoDetect ERROR "
                          "fault_info[\"Failed to connect agent[{}]\"]",
                          reason, RankList(missing));
  e.screen_code = "EI0006";
  e.screen_args = {reason};
  for (auto& [rank, conn] : arrived_) ReplyError(*conn, e);
}

void Server::Reply(Conn& c, rdv::MsgType type, const wire::Writer& payload) {
  std::vector<uint8_t> frame = rdv::Frame(type, payload);
  std::string err;
  if (c.sock.SendAll(frame.data(), frame.size(), SteadyClock::now() + 5s, &err) != HCCL_SUCCESS) {
    HCCL_WARNING("rendezvous {}: reply to {} failed: {}", info_.identifier, c.peer, err);
  }
}

// Owns every server thread of the process; joins finished ones as new ones start, and the
// rest at exit. In a forked child the threads do not exist, so it only forgets them.
class Registry {
 public:
  static Registry& Get() {
    static Registry registry;
    return registry;
  }
  void Add(std::unique_ptr<Server> s) {
    std::lock_guard<std::mutex> lock(mu_);
    Reap();
    servers_.push_back(std::move(s));
  }
  size_t Count() {
    std::lock_guard<std::mutex> lock(mu_);
    Reap();
    return servers_.size();
  }
  ~Registry() {
    std::lock_guard<std::mutex> lock(mu_);
    if (getpid() != owner_) {
      for (auto& s : servers_) (void)s.release();
      return;
    }
    for (auto& s : servers_) s->Stop();
    for (auto& s : servers_) s->Join();
    servers_.clear();
  }

 private:
  Registry() : owner_(getpid()) {}
  void Reap() {
    if (getpid() != owner_) return;
    for (auto it = servers_.begin(); it != servers_.end();) {
      if ((*it)->done()) {
        (*it)->Join();
        it = servers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::mutex mu_;
  pid_t owner_;
  std::vector<std::unique_ptr<Server>> servers_;
};

}  // namespace

HcclResult StartRendezvousServer(const ServerSpec& spec, RootInfo* info, std::string* error) {
  net::Socket listener;
  uint16_t bound = 0;
  std::string last;
  HcclResult rc = HCCL_E_UNAVAIL;
  const uint32_t count = spec.first_port == 0 ? 1 : std::max<uint32_t>(spec.port_count, 1);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t port = spec.first_port == 0 ? 0 : spec.first_port + i;
    if (port > 65535) break;
    rc = net::Listen(spec.ip, static_cast<uint16_t>(port), &listener, &bound, &last);
    if (rc == HCCL_SUCCESS) break;
  }
  if (rc != HCCL_SUCCESS) {
    if (error) {
      *error = count == 1 ? last
                          : fmt::format("no port in [{}, {}] could be bound, last: {}",
                                        spec.first_port, spec.first_port + count - 1, last);
    }
    return rc == HCCL_E_PARA ? HCCL_E_PARA : HCCL_E_UNAVAIL;
  }
  RootInfo out;
  out.host_ip = spec.ip;
  out.ifname = spec.ifname;
  out.port = bound;
  out.key = spec.key;
  out.identifier = !spec.identifier.empty()
                       ? spec.identifier
                       : fmt::format("{}%{}_{}_0_{}", spec.ip,
                                     spec.ifname.empty() ? "unknown" : spec.ifname, bound,
                                     NowMicros());
  // The first log line also makes sure the logger outlives the registry (static order).
  HCCL_RUN_INFO("[InitGroupStage]rendezvous server listening on ip[{}] port[{}], identifier[{}]",
                out.host_ip, out.port, out.identifier);
  auto server = std::make_unique<Server>(std::move(listener), out);
  server->Start();
  Registry::Get().Add(std::move(server));
  *info = out;
  return HCCL_SUCCESS;
}

size_t RendezvousServersForTesting() { return Registry::Get().Count(); }

}  // namespace vigil::bootstrap
