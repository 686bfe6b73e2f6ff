// TCP helpers. Every socket is non-blocking and close-on-exec; blocking behaviour comes from
// poll(2) with the caller's deadline, so nothing here can hang past it.
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "common/env_config.h"

namespace vigil::net {

namespace {

std::string ErrnoText(int err) { return fmt::format("{} (errno {})", strerror(err), err); }

// Milliseconds to the deadline for poll(): at least 0, at most cap.
int PollMs(Deadline deadline, int cap = 1000) {
  if (deadline == Deadline::max()) return cap;
  auto now = SteadyClock::now();
  if (deadline <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
  return static_cast<int>(std::min<int64_t>(ms, cap));
}

bool FillAddr(const std::string& ip, uint16_t port, sockaddr_in* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sin_family = AF_INET;
  addr->sin_port = htons(port);
  return inet_pton(AF_INET, ip.c_str(), &addr->sin_addr) == 1;
}

void SetNoDelay(int fd) {
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Socket::~Socket() { Close(); }

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

int Socket::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void Socket::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void Socket::Shutdown() {
  if (fd_ >= 0) (void)::shutdown(fd_, SHUT_RDWR);
}

HcclResult Socket::SendAll(const void* buf, size_t n, Deadline deadline, std::string* error) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (SteadyClock::now() >= deadline) {
        if (error) *error = fmt::format("send to {} timed out with {} bytes left", PeerAddress(), n);
        return HCCL_E_TIMEOUT;
      }
      pollfd pfd{fd_, POLLOUT, 0};
      (void)::poll(&pfd, 1, PollMs(deadline));
      continue;
    }
    if (error) *error = fmt::format("send to {} failed: {}", PeerAddress(), ErrnoText(errno));
    return HCCL_E_TCP_TRANSFER;
  }
  return HCCL_SUCCESS;
}

HcclResult Socket::RecvAll(void* buf, size_t n, Deadline deadline, std::string* error) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd_, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) {
      if (error) *error = fmt::format("connection closed by {} with {} bytes still expected",
                                      PeerAddress(), n);
      return HCCL_E_TCP_TRANSFER;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (SteadyClock::now() >= deadline) {
        if (error) *error = fmt::format("receive from {} timed out with {} bytes still expected",
                                        PeerAddress(), n);
        return HCCL_E_TIMEOUT;
      }
      pollfd pfd{fd_, POLLIN, 0};
      (void)::poll(&pfd, 1, PollMs(deadline));
      continue;
    }
    if (error) *error = fmt::format("receive from {} failed: {}", PeerAddress(), ErrnoText(errno));
    return HCCL_E_TCP_TRANSFER;
  }
  return HCCL_SUCCESS;
}

std::string Socket::PeerAddress() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char ip[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return fmt::format("{}:{}", ip, ntohs(addr.sin_port));
}

HcclResult Listen(const std::string& ip, uint16_t port, Socket* out, uint16_t* bound_port,
                  std::string* error) {
  sockaddr_in addr;
  if (!FillAddr(ip, port, &addr)) {
    if (error) *error = fmt::format("invalid IPv4 address [{}]", ip);
    return HCCL_E_PARA;
  }
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.valid()) {
    if (error) *error = fmt::format("socket() failed: {}", ErrnoText(errno));
    return HCCL_E_SYSCALL;
  }
  int one = 1;
  (void)setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    if (error) {
      *error = err == EADDRINUSE ? fmt::format("address in use: {}:{}", ip, port)
                                 : fmt::format("bind {}:{} failed: {}", ip, port, ErrnoText(err));
    }
    return HCCL_E_UNAVAIL;
  }
  if (::listen(s.fd(), 1024) != 0) {
    int err = errno;
    if (error) {
      *error = err == EADDRINUSE ? fmt::format("address in use: {}:{}", ip, port)
                                 : fmt::format("listen {}:{} failed: {}", ip, port, ErrnoText(err));
    }
    return HCCL_E_UNAVAIL;
  }
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(&bound), &len);
  if (bound_port) *bound_port = ntohs(bound.sin_port);
  *out = std::move(s);
  return HCCL_SUCCESS;
}

HcclResult Connect(const std::string& ip, uint16_t port, Deadline deadline, Socket* out,
                   std::string* error) {
  sockaddr_in addr;
  if (!FillAddr(ip, port, &addr) || port == 0) {
    if (error) *error = fmt::format("invalid address [{}:{}]", ip, port);
    return HCCL_E_PARA;
  }
  int backoff_ms = 5;
  std::string last = "no attempt before the deadline";
  for (;;) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!s.valid()) {
      if (error) *error = fmt::format("socket() failed: {}", ErrnoText(errno));
      return HCCL_E_SYSCALL;
    }
    int rc = ::connect(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS || err == EINTR) {
      pollfd pfd{s.fd(), POLLOUT, 0};
      int pr = ::poll(&pfd, 1, PollMs(deadline, 60000));
      if (pr == 0) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof(err);
        if (getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      SetNoDelay(s.fd());
      *out = std::move(s);
      return HCCL_SUCCESS;
    }
    last = ErrnoText(err);
    // Refused / unreachable: the peer may not be listening yet; retry until the deadline.
    bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH ||
                 err == ENETUNREACH || err == ECONNRESET || err == EAGAIN;
    if (!retry) {
      if (error) *error = fmt::format("connect to {}:{} failed: {}", ip, port, last);
      return HCCL_E_TCP_CONNECT;
    }
    auto now = SteadyClock::now();
    if (now >= deadline) break;
    auto sleep = std::min<std::chrono::nanoseconds>(std::chrono::milliseconds(backoff_ms),
                                                    deadline - now);
    std::this_thread::sleep_for(sleep);
    backoff_ms = std::min(backoff_ms * 2, 100);
  }
  if (error) *error = fmt::format("connect to {}:{} timed out: {}", ip, port, last);
  return HCCL_E_TIMEOUT;
}

HcclResult Accept(const Socket& listener, Deadline deadline, Socket* out, std::string* error) {
  for (;;) {
    int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      SetNoDelay(fd);
      *out = Socket(fd);
      return HCCL_SUCCESS;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) {
      if (error) *error = fmt::format("accept failed: {}", ErrnoText(err));
      return HCCL_E_TCP_CONNECT;
    }
    if (SteadyClock::now() >= deadline) {
      if (error) *error = "accept timed out";
      return HCCL_E_TIMEOUT;
    }
    pollfd pfd{listener.fd(), POLLIN, 0};
    (void)::poll(&pfd, 1, PollMs(deadline));
  }
}

namespace {

struct Iface {
  std::string name;
  std::string ip;
  bool loopback;
};

std::vector<Iface> ListIpv4Interfaces() {
  std::vector<Iface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    if ((it->ifa_flags & IFF_UP) == 0) continue;
    char ip[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr, ip, sizeof(ip));
    out.push_back({it->ifa_name, ip, (it->ifa_flags & IFF_LOOPBACK) != 0});
  }
  freeifaddrs(list);
  std::stable_sort(out.begin(), out.end(),
                   [](const Iface& a, const Iface& b) { return a.name < b.name; });
  return out;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// HCCL_SOCKET_IFNAME: "eth,enp" (prefixes), "^eth" (exclude prefixes), "=eth0" (exact names).
bool MatchesIfname(const std::string& spec, const std::string& name) {
  if (spec.empty()) return false;
  if (spec[0] == '^') {
    for (const auto& p : SplitComma(spec.substr(1))) {
      if (StartsWith(name, p)) return false;
    }
    return true;
  }
  if (spec[0] == '=') {
    for (const auto& p : SplitComma(spec.substr(1))) {
      if (name == p) return true;
    }
    return false;
  }
  for (const auto& p : SplitComma(spec)) {
    if (StartsWith(name, p)) return true;
  }
  return false;
}

bool IsDocker(const std::string& name) {
  return StartsWith(name, "docker") || StartsWith(name, "veth") || StartsWith(name, "br-");
}

}  // namespace

std::string PickHostIp(std::string* ifname) {
  const EnvConfig& env = Env();
  std::vector<Iface> ifaces = ListIpv4Interfaces();
  auto set_name = [&](const std::string& n) {
    if (ifname) *ifname = n;
  };
  if (!env.if_ip.empty()) {
    set_name("");
    for (const auto& i : ifaces) {
      if (i.ip == env.if_ip) set_name(i.name);
    }
    return env.if_ip;
  }
  if (!env.socket_ifname.empty()) {
    for (const auto& i : ifaces) {
      if (MatchesIfname(env.socket_ifname, i.name)) {
        set_name(i.name);
        return i.ip;
      }
    }
  }
  for (const auto& i : ifaces) {
    if (!i.loopback && !IsDocker(i.name)) {
      set_name(i.name);
      return i.ip;
    }
  }
  for (const auto& i : ifaces) {
    if (!i.loopback) {
      set_name(i.name);
      return i.ip;
    }
  }
  for (const auto& i : ifaces) {
    if (i.loopback) {
      set_name(i.name);
      return i.ip;
    }
  }
  set_name("lo");
  return "127.0.0.1";
}

}  // namespace vigil::net
