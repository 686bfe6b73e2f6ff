// The shrink agreement (agreement.h): its messages, the mailbox the heartbeat's listener fills,
// and one round of propose / decide / wait.
#include "dfx/agreement.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "bootstrap/auth.h"
#include "bootstrap/root_info.h"
#include "bootstrap/wire.h"
#include "common/time_util.h"
#include "dfx/agreement_msg.h"
#include "dfx/heartbeat_frame.h"
#include "log/plog.h"

namespace vigil::dfx {

namespace {

constexpr auto kTick = 20ms;
constexpr auto kSendTimeout = 500ms;  // connect, then write: a live listener answers at once
constexpr auto kMailboxKeep = std::chrono::minutes(10);
constexpr size_t kMailboxMax = 4096;  // messages kept at most (a stranger cannot fill memory)

using Msg = AgreeMsg;
using Kind = AgreeKind;
std::vector<uint8_t> Encode(const Msg& m) { return EncodeAgreeMsg(m); }
bool Decode(const std::vector<uint8_t>& body, Msg* m) { return DecodeAgreeMsg(body, m); }

// Messages waiting for their rank's call, by (communicator, round, addressee).
class Mailbox {
 public:
  using Key = std::tuple<std::string, uint32_t, uint32_t>;

  static Mailbox& Instance() {
    static auto* box = new Mailbox();  // never destroyed: the heartbeat thread may deliver at exit
    return *box;
  }

  void Put(Msg m) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = SteadyClock::now();
    for (auto it = box_.begin(); it != box_.end();) {
      it = now - it->second.touched > kMailboxKeep ? box_.erase(it) : std::next(it);
    }
    if (count_ >= kMailboxMax) return;
    Slot& s = box_[Key{m.identifier, m.round, m.to}];
    s.touched = now;
    s.msgs.push_back(std::move(m));
    ++count_;
    cv_.notify_all();
  }

  // The messages for `key` that arrived so far (taken), waiting until `until` for one.
  std::vector<Msg> Take(const Key& key, SteadyClock::time_point until) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, until, [&] {
      auto it = box_.find(key);
      return it != box_.end() && !it->second.msgs.empty();
    });
    std::vector<Msg> out;
    auto it = box_.find(key);
    if (it == box_.end()) return out;
    for (Msg& m : it->second.msgs) out.push_back(std::move(m));
    count_ -= it->second.msgs.size();
    it->second.msgs.clear();
    return out;
  }

  void Drop(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = box_.find(key);
    if (it == box_.end()) return;
    count_ -= it->second.msgs.size();
    box_.erase(it);
  }

  uint32_t NextRound(const std::string& identifier, uint32_t rank) {
    std::lock_guard<std::mutex> lock(mu_);
    return ++rounds_[{identifier, rank}];
  }

 private:
  struct Slot {
    SteadyClock::time_point touched;
    std::deque<Msg> msgs;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Slot> box_;
  size_t count_ = 0;
  std::map<std::pair<std::string, uint32_t>, uint32_t> rounds_;
};

// One message on a connection of its own to a heartbeat listener: connect (not retried: a
// refused connection is a process gone), write, close. False (and *why) when it did not go.
bool SendTo(const std::string& endpoint, const auth::JobKey& key, const std::vector<uint8_t>& frame,
            std::string* why) {
  const size_t colon = endpoint.rfind(':');
  if (endpoint.empty() || colon == std::string::npos) {
    *why = "no heartbeat listener";
    return false;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(endpoint.c_str() + colon + 1)));
  if (inet_pton(AF_INET, endpoint.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    *why = "bad address";
    return false;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const auto deadline = SteadyClock::now() + kSendTimeout;
  auto wait = [&](short events) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    return poll(&p, 1, static_cast<int>(left.count())) == 1;
  };
  bool sent = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    *why = fmt::format("connect: {}", std::strerror(errno));
  } else if (!wait(POLLOUT)) {
    *why = "connect: no answer";
  } else {
    int so = 0;
    socklen_t len = sizeof(so);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
    net::Socket view(fd);
    std::string err;
    const bool proven =
        so == 0 && auth::AuthenticateDialer(view, auth::Purpose::kHeartbeat, key, deadline, &err) ==
                       HCCL_SUCCESS;
    (void)view.Release();
    if (so != 0) {
      *why = fmt::format("connect: {}", std::strerror(so));
    } else if (!proven) {
      *why = err;
    } else {
      size_t pos = 0;
      while (pos < frame.size()) {
        const ssize_t n = send(fd, frame.data() + pos, frame.size() - pos, MSG_NOSIGNAL);
        if (n > 0) {
          pos += static_cast<size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          if (!wait(POLLOUT)) break;
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          break;
        }
      }
      sent = pos == frame.size();
      if (!sent) *why = "write did not complete";
    }
  }
  close(fd);
  return sent;
}

uint32_t CoordinatorOf(const std::set<uint32_t>& exclude, uint32_t size) {
  for (uint32_t r = 0; r < size; ++r) {
    if (exclude.count(r) == 0) return r;
  }
  return size;
}

const char* HowText(bool from_view) {
  return from_view ? "heartbeat view" : "given";
}

class Round {
 public:
  explicit Round(const AgreementInput& in) : in_(in) {}

  AgreementOutcome Run();

 private:
  void Send(uint32_t to, Msg m) {
    m.identifier = in_.identifier;
    m.round = out_.round;
    m.from = in_.rank;
    m.to = to;
    std::string why;
    if (!SendTo(to < in_.endpoints.size() ? in_.endpoints[to] : std::string(), in_.key, Encode(m),
                &why)) {
      HCCL_RUN_INFO("[Shrink]communicator[{}] round[{}]: message to rank[{}] not sent: {}",
                    in_.identifier, out_.round, to, why);
    }
  }
  void Propose() {
    const uint32_t c = CoordinatorOf(mine_, in_.size);
    Msg m;
    m.kind = Kind::kPropose;
    m.seq = ++seq_;
    m.from_view = in_.from_view;
    m.exclude = mine_;
    std::vector<uint32_t> to;
    for (uint32_t r = 0; r <= c && r < in_.size; ++r) {
      if (r != in_.rank) to.push_back(r);
    }
    HCCL_RUN_INFO(
        "[Shrink]communicator[{}] rank[{}] round[{}]: proposes to exclude ranks{} ({}), "
        "coordinator rank[{}], sent to ranks[{}]",
        in_.identifier, in_.rank, out_.round, RankSetText(mine_), HowText(in_.from_view), c,
        fmt::join(to, ","));
    for (uint32_t r : to) Send(r, m);
  }
  std::vector<ShrinkView> Views() const {
    std::vector<ShrinkView> v;
    v.push_back(ShrinkView{in_.rank, in_.from_view, mine_});
    for (const auto& [r, view] : heard_) {
      if (r != in_.rank) v.push_back(view);
    }
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    return v;
  }
  // Fails this round on every rank it concerns, naming why.
  AgreementOutcome FailAll(const std::string& why) {
    Msg m;
    m.kind = Kind::kDecide;
    m.ok = false;
    m.error = why;
    m.views = Views();
    std::set<uint32_t> to;
    for (uint32_t r = 0; r < in_.size; ++r) {
      if (mine_.count(r) == 0) to.insert(r);
    }
    for (const auto& [r, view] : heard_) to.insert(r);
    to.erase(in_.rank);
    for (uint32_t r : to) Send(r, m);
    return Fail(why, m.views);
  }
  AgreementOutcome Fail(const std::string& why, std::vector<ShrinkView> views) {
    out_.ok = false;
    out_.error = why;
    out_.views = std::move(views);
    return out_;
  }
  std::optional<AgreementOutcome> Coordinate(SteadyClock::time_point now, bool differs);

  const AgreementInput& in_;
  AgreementOutcome out_;
  std::set<uint32_t> mine_;
  uint32_t seq_ = 0;
  std::map<uint32_t, ShrinkView> heard_;
  std::map<uint32_t, uint32_t> heard_seq_;
  SteadyClock::time_point start_;
};

// The coordinator's turn (this rank is the lowest not in its set): decide when it can.
std::optional<AgreementOutcome> Round::Coordinate(SteadyClock::time_point now, bool differs) {
  std::vector<uint32_t> pending;
  for (uint32_t r = 0; r < in_.size; ++r) {
    if (r != in_.rank && mine_.count(r) == 0 && heard_.count(r) == 0) pending.push_back(r);
  }
  if (pending.empty() && !differs) {
    HcclRootInfo root{};
    bootstrap::RootInfo made;
    if (bootstrap::CreateRootInfo(&root, &made, &in_.key) != HCCL_SUCCESS) {
      return FailAll(
          fmt::format("coordinator rank[{}] could not make the new communicator's root "
                      "info (see its log)",
                      in_.rank));
    }
    HCCL_RUN_INFO(
        "[Shrink]communicator[{}] rank[{}] round[{}]: coordinator; every survivor "
        "agrees to exclude ranks{}; new root info host ip[{}] port[{}] identifier[{}]",
        in_.identifier, in_.rank, out_.round, RankSetText(mine_), made.host_ip, made.port,
        made.identifier);
    Msg m;
    m.kind = Kind::kDecide;
    m.ok = true;
    m.exclude = mine_;
    m.root.assign(reinterpret_cast<const char*>(&root), sizeof(root));
    for (uint32_t r = 0; r < in_.size; ++r) {
      if (r != in_.rank && mine_.count(r) == 0) Send(r, m);
    }
    out_.ok = true;
    out_.coordinated = true;
    out_.coordinator = in_.rank;
    out_.excluded = mine_;
    out_.root = root;
    out_.views = Views();
    return out_;
  }
  if (now - start_ >= in_.timeout) {
    std::string why = fmt::format(
        "no agreement within {} s (HCCL_CONNECT_TIMEOUT) at coordinator rank[{}]",
        std::chrono::duration_cast<std::chrono::seconds>(in_.timeout).count(), in_.rank);
    if (!pending.empty()) {
      why += fmt::format(
          ": ranks[{}] never called VigilCommShrink (they are not in the exclude "
          "set{} of rank[{}])",
          fmt::join(pending, ","), RankSetText(mine_), in_.rank);
    }
    if (differs) why += "; the views differ: " + ViewsText(Views());
    return FailAll(why);
  }
  return std::nullopt;
}

AgreementOutcome Round::Run() {
  start_ = SteadyClock::now();
  out_.round = Mailbox::Instance().NextRound(in_.identifier, in_.rank);
  const Mailbox::Key key{in_.identifier, out_.round, in_.rank};
  struct DropAtEnd {
    Mailbox::Key key;
    ~DropAtEnd() { Mailbox::Instance().Drop(key); }
  } drop{key};
  mine_ = in_.from_view ? in_.lost() : in_.exclude;
  if (mine_.count(in_.rank) != 0) {
    return Fail(fmt::format("rank[{}] is in its own exclude set{}: an excluded rank does not call",
                            in_.rank, RankSetText(mine_)),
                {ShrinkView{in_.rank, in_.from_view, mine_}});
  }
  Propose();
  bool differing = false;
  SteadyClock::time_point differs_since{};
  for (;;) {
    const auto now = SteadyClock::now();
    for (Msg& m : Mailbox::Instance().Take(key, now + kTick)) {
      if (m.from >= in_.size) continue;
      if (m.kind == Kind::kPropose) {
        if (heard_seq_.count(m.from) != 0 && heard_seq_[m.from] >= m.seq) continue;
        heard_seq_[m.from] = m.seq;
        heard_[m.from] = ShrinkView{m.from, m.from_view, m.exclude};
        continue;
      }
      out_.coordinator = m.from;
      if (!m.ok) {
        HCCL_RUN_WARNING(
            "[Shrink]communicator[{}] rank[{}] round[{}]: rank[{}] ended the "
            "agreement: {}",
            in_.identifier, in_.rank, out_.round, m.from, m.error);
        std::vector<ShrinkView> views = m.views;
        if (std::none_of(views.begin(), views.end(),
                         [&](const ShrinkView& v) { return v.rank == in_.rank; })) {
          views.push_back(ShrinkView{in_.rank, in_.from_view, mine_});
          std::sort(views.begin(), views.end(),
                    [](const auto& a, const auto& b) { return a.rank < b.rank; });
        }
        return Fail(fmt::format("rank[{}] reports: {}", m.from, m.error), std::move(views));
      }
      if (m.root.size() != sizeof(HcclRootInfo)) continue;
      out_.ok = true;
      out_.excluded = m.exclude;
      std::memcpy(&out_.root, m.root.data(), sizeof(HcclRootInfo));
      out_.views = Views();
      if (m.exclude != mine_) {
        HCCL_RUN_WARNING(
            "[Shrink]communicator[{}] rank[{}] round[{}]: agreed set{} differs from "
            "this rank's view{} that changed since it proposed; the new communicator "
            "follows the agreement",
            in_.identifier, in_.rank, out_.round, RankSetText(m.exclude), RankSetText(mine_));
      }
      return out_;
    }
    const auto t = SteadyClock::now();
    // The view follows the heartbeat: a caller whose LOST events are still arriving catches up.
    const std::set<uint32_t> lost = in_.lost();
    if (in_.from_view) {
      std::set<uint32_t> grown = mine_;
      grown.insert(lost.begin(), lost.end());
      grown.erase(in_.rank);
      if (grown != mine_) {
        mine_ = std::move(grown);
        Propose();
      }
    } else {
      for (uint32_t r : lost) {
        if (mine_.count(r) == 0 && r != in_.rank) {
          return FailAll(
              fmt::format("rank[{}], not in excludeRanks{}, was lost during the "
                          "agreement; call VigilCommShrink again excluding it",
                          r, RankSetText(mine_)));
        }
      }
    }
    // A different set heard (from a caller, or from a rank this rank excludes that still calls).
    bool differs = false, both_given = false;
    for (const auto& [r, view] : heard_) {
      if (view.exclude != mine_ || mine_.count(r) != 0) {
        differs = true;
        both_given = both_given || (!view.from_view && !in_.from_view);
      }
    }
    if (differs && !differing) differs_since = t;
    differing = differs;
    if (differs && (both_given || t - differs_since >= kSettle)) {
      return FailAll("the survivors' exclude sets differ: " + ViewsText(Views()));
    }
    if (CoordinatorOf(mine_, in_.size) == in_.rank) {
      if (auto done = Coordinate(t, differs)) return *done;
    } else if (t - start_ >= in_.timeout + kDecisionGrace) {
      return Fail(
          fmt::format("no decision from coordinator rank[{}] within {} s: it did not call "
                      "VigilCommShrink, or it failed (see its log)",
                      CoordinatorOf(mine_, in_.size),
                      std::chrono::duration_cast<std::chrono::seconds>(in_.timeout + kDecisionGrace)
                          .count()),
          Views());
    }
  }
}

}  // namespace

std::string RankSetText(const std::set<uint32_t>& ranks) {
  return fmt::format("[{}]", fmt::join(ranks, ","));
}

std::string ViewsText(const std::vector<ShrinkView>& views) {
  std::vector<std::string> parts;
  for (const ShrinkView& v : views) {
    parts.push_back(fmt::format("rank {} excludes {} ({})", v.rank, RankSetText(v.exclude),
                                HowText(v.from_view)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

AgreementOutcome Agree(const AgreementInput& in) {
  const auto start = SteadyClock::now();
  Round round(in);
  AgreementOutcome out = round.Run();
  out.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
  return out;
}

void DeliverAgreementFrame(const std::vector<uint8_t>& body) {
  Msg m;
  if (!Decode(body, &m)) {
    HCCL_RUN_WARNING("[Shrink]a malformed agreement message ({} bytes) was dropped", body.size());
    return;
  }
  Mailbox::Instance().Put(std::move(m));
}

}  // namespace vigil::dfx
