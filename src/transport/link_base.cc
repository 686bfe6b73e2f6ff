#include "transport/link_base.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "log/plog.h"

namespace vigil::transport {

LinkBase::LinkBase(LinkType type, Endpoint local, Endpoint remote, net::Socket ctrl,
                   Reporter reporter)
    : type_(type),
      local_(std::move(local)),
      remote_(std::move(remote)),
      ctrl_(std::move(ctrl)),
      reporter_(std::move(reporter)) {}

std::string LinkBase::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

void LinkBase::Break(const std::string& reason, bool report) {
  // Held until the report is delivered, so AwaitReport can wait for a report another thread
  // is making. Recursive: an observer may itself lead to a Break or AwaitReport of this link.
  std::lock_guard<std::recursive_mutex> report_lock(report_mu_);
  int expected = kOk;
  State next = report ? kBroken : kPeerClosed;
  if (!state_.compare_exchange_strong(expected, next)) return;  // first cause wins
  {
    std::lock_guard<std::mutex> lock(mu_);
    reason_ = reason;
  }
  WakeWaiters();
  if (!report) {
    HCCL_INFO("link to rank[{}] closed: {}", remote_.rank, reason);
    return;
  }
  if (reported_.exchange(true)) return;
  HCCL_ERROR(
      "[TaskExecStage][Link]link error: local rank[{}] ip[{}] port[{}] <-> remote rank[{}] "
      "ip[{}] port[{}] pid[{}], link type[{}], reason[{}]",
      local_.rank, local_.host_ip, local_.port, remote_.rank, remote_.host_ip, remote_.port,
      remote_.pid, LinkTypeName(type_), reason);
  if (reporter_) {
    LinkError e;
    e.local = local_;
    e.remote = remote_;
    e.code = HCCL_E_REMOTE;
    e.reason = reason;
    e.epoch = epoch_;
    reporter_(e);
  }
}

void LinkBase::AwaitReport() const {
  std::lock_guard<std::recursive_mutex> lock(report_mu_);
}

void LinkBase::OnControlReadable() {
  ssize_t r = 0;
  int err = 0;
  bool bye = false;
  {
    // The monitor thread and ReportPendingLinkErrors (any thread) may both read: one at a time,
    // so a retract notice is parsed once and in order.
    std::lock_guard<std::mutex> lock(ctrl_mu_);
    if (state() != kOk) return;
    char buf[64];
    // Peek, and take only what comes before a bye: the bye stays in the socket ahead of the EOF
    // for every reader. The stream thread that meets the peer's data EOF (OnDataEof) looks for
    // it too; had this thread taken it, the other could see the control socket's EOF with no
    // bye before it, in the window before the Break below, and report an orderly close as a
    // link error.
    r = recv(ctrl_.fd(), buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    err = errno;
    if (r > 0) {
      ssize_t used = 0;  // bytes before the bye, if any
      for (; used < r; ++used) {
        const char c = buf[used];
        if (msg_kind_ != 0) {
          if ((c >= '0' && c <= '9') || c == ',') {
            if (msg_.size() < 128) msg_ += c;
          } else {
            const char kind = msg_kind_;
            msg_kind_ = 0;
            if (c == ';') OnMessage(kind, msg_);
          }
        } else if (c == 'R' || c == 'X') {
          msg_kind_ = c;
          msg_.clear();
        } else if (c == 'B') {
          bye = true;
          break;
        }
      }
      if (used > 0) (void)!recv(ctrl_.fd(), buf, static_cast<size_t>(used), MSG_DONTWAIT);
    }
  }
  if (bye) {
    Break("the peer closed the link", false);  // the link is watched no more: no busy loop
    return;
  }
  if (r > 0) return;
  if (r < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) return;
  if (r == 0) {
    Break(fmt::format("connection closed by remote rank[{}] pid[{}] without a bye (process "
                      "exited or link cut)",
                      remote_.rank, remote_.pid),
          true);
  } else {
    Break(fmt::format("control connection to remote rank[{}] failed: {}", remote_.rank,
                      strerror(err)),
          true);
  }
}

void LinkBase::OnMessage(char kind, const std::string& body) {
  std::vector<uint64_t> v;
  uint64_t cur = 0;
  for (char c : body) {
    if (c == ',') {
      v.push_back(cur);
      cur = 0;
    } else {
      cur = cur * 10 + static_cast<uint64_t>(c - '0');
    }
  }
  v.push_back(cur);
  if (kind == 'R') {
    OnPeerRetract(v[0]);
    return;
  }
  if (v.size() < 6 || !notice_handler_) return;
  RetryNotice n;
  n.epoch = static_cast<uint32_t>(v[0]);
  n.seq = v[1];
  n.attempt = static_cast<uint32_t>(v[2]);
  n.origin = static_cast<uint32_t>(v[3]);
  n.end_a = static_cast<uint32_t>(v[4]);
  n.end_b = static_cast<uint32_t>(v[5]);
  n.from = remote_.rank;
  notice_handler_(n);
}

void LinkBase::SendNotice(const RetryNotice& n) {
  if (!ctrl_.valid() || state() != kOk) return;
  const std::string msg =
      fmt::format("X{},{},{},{},{},{};", n.epoch, n.seq, n.attempt, n.origin, n.end_a, n.end_b);
  (void)send(ctrl_.fd(), msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void LinkBase::OnDataSocketError(int fd) {
  OnControlReadable();  // a bye or a notice read first: an orderly close is no link error
  if (state() != kOk) return;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err == 0) return;
  Break(fmt::format("data connection to remote rank[{}] failed: {}", remote_.rank, strerror(err)),
        true);
}

void LinkBase::SendRetract(uint64_t offset) {
  if (!ctrl_.valid() || state() != kOk) return;
  const std::string msg = fmt::format("R{};", offset);
  (void)send(ctrl_.fd(), msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void LinkBase::OnDataEof(const std::string& what) {
  // The peer sends its bye on the control socket before shutting its data sockets; give it a
  // moment to arrive (the monitor thread may be reading it right now).
  for (int i = 0; i < 20 && state() == kOk; ++i) {
    char buf[64];  // a retract or retry notice may come before the bye
    ssize_t r = recv(ctrl_.fd(), buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    if (r > 0 && std::memchr(buf, 'X', static_cast<size_t>(r)) != nullptr) {
      // Read it (and the bye behind it) as the monitor thread would: the notice must reach the
      // communicator before the link shows closed.
      OnControlReadable();
      if (state() != kOk) break;
      continue;
    }
    if (r > 0 && std::memchr(buf, 'B', static_cast<size_t>(r)) != nullptr) {
      Break("the peer closed the link", false);
      break;
    }
    if (r == 0) break;
    pollfd pfd{ctrl_.fd(), POLLIN, 0};
    (void)poll(&pfd, 1, 10);
  }
  Break(what, true);
}

void LinkBase::CloseLocal() {
  int expected = kOk;
  bool was_ok = state_.compare_exchange_strong(expected, kClosed);
  if (!was_ok) state_.store(kClosed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (reason_.empty()) reason_ = "closed locally";
  }
  if (was_ok && ctrl_.valid()) {
    char bye = 'B';
    (void)send(ctrl_.fd(), &bye, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  ctrl_.Shutdown();
  ShutdownData();
  WakeWaiters();
}

void LinkBase::Cut(const std::string& why) {
  cut_at_.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_release);
  HCCL_RUN_WARNING("[Fault]cutting link local rank[{}] <-> remote rank[{}] ({})", local_.rank,
                   remote_.rank, why);
  ctrl_.Shutdown();
  ShutdownData();
  Break(fmt::format("link cut ({})", why), true);
}

}  // namespace vigil::transport
