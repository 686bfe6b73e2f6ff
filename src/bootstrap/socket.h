// Small TCP socket helpers shared by the rendezvous and the transports: listen, connect with a
// deadline, whole-buffer send/recv with a deadline. All calls return HcclResult and fill *error
// with a one-line reason (errno text, peer address) on failure; none throws or blocks forever.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/time_util.h"
#include "hccl/hccl_types.h"

namespace vigil::net {

using Deadline = SteadyClock::time_point;

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Close();
  // shutdown(SHUT_RDWR): wakes any thread blocked on this socket.
  void Shutdown();

  HcclResult SendAll(const void* buf, size_t n, Deadline deadline, std::string* error);
  HcclResult RecvAll(void* buf, size_t n, Deadline deadline, std::string* error);
  std::string PeerAddress() const;  // "ip:port"

 private:
  int fd_ = -1;
};

// Binds ip:port (port 0 = kernel-chosen) and listens. HCCL_E_UNAVAIL with "address in use" in
// *error when the port is taken (the caller raises EI0019).
HcclResult Listen(const std::string& ip, uint16_t port, Socket* out, uint16_t* bound_port,
                  std::string* error);
// Retries refused connections until the deadline (the peer may not be listening yet).
HcclResult Connect(const std::string& ip, uint16_t port, Deadline deadline, Socket* out,
                   std::string* error);
// Accepts one connection; HCCL_E_TIMEOUT at the deadline.
HcclResult Accept(const Socket& listener, Deadline deadline, Socket* out, std::string* error);

// The host IP to advertise: HCCL_IF_IP, else the first interface matching HCCL_SOCKET_IFNAME,
// else the first non-loopback, non-docker IPv4 interface, else 127.0.0.1. *ifname gets its name.
std::string PickHostIp(std::string* ifname);

}  // namespace vigil::net
