// What every link of a Transport shares: the endpoints, the control socket (the TCP connection
// the link was made over, kept open so the peer's death or a cut is noticed at once), the
// broken/closed state, and the once-only error report.
//
// Control socket protocol after the handshake: one byte 'B' ("bye"), sent by a rank that closes
// its links on purpose; "R<offset>;" (decimal), sent by a rank that gave an op up: it takes
// back what it sent on the link's data stream from that offset on (Link::AbandonOp on links
// whose data travels elsewhere, TCP); and "X<epoch>,<seq>,<attempt>,<origin>,<a>,<b>;", a
// retry notice (link.h), sent before the bye of a link retired for an op retry. Everything
// before a bye is read before the bye is acted on. EOF or reset without a bye means the peer
// process died or the connection was cut: a link error, reported once through the observer.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "transport/link.h"

namespace vigil::transport {

class LinkBase : public Link {
 public:
  using Reporter = std::function<void(const LinkError&)>;

  LinkBase(LinkType type, Endpoint local, Endpoint remote, net::Socket ctrl, Reporter reporter);
  ~LinkBase() override = default;

  LinkType type() const override { return type_; }
  const Endpoint& remote() const override { return remote_; }
  const Endpoint& local() const { return local_; }
  bool broken() const override { return state_.load(std::memory_order_acquire) != kOk; }

  int ctrl_fd() const { return ctrl_.fd(); }
  // Reads the control socket without blocking: a retract notice goes to OnPeerRetract, a bye
  // marks the link closed by the peer, EOF or an error without a bye breaks it (reported). The
  // monitor thread calls this when the socket is readable or hung up;
  // Transport::ReportPendingLinkErrors from any thread (first cause wins).
  void OnControlReadable();
  // Local, orderly close: tells the peer (bye), then shuts the sockets down. No report.
  void CloseLocal();
  // Fault injection: shuts the sockets down without a bye, so both ends see a link error.
  void Cut(const std::string& why);
  // Marks the link broken; `report` sends the LinkError to the observer (once per link).
  void Break(const std::string& reason, bool report);
  // Returns once a Break in progress on another thread has delivered its report: the link's
  // state changes before the report goes out, so a thread that finds the link broken and is
  // about to remove the observer must wait for it (or the report would find no observer).
  void AwaitReport() const;
  std::string reason() const;

  // VIGIL_FAULT link_cut: cut once this many bytes have moved (0 = never).
  void set_cut_after(uint64_t bytes) { cut_after_.store(bytes); }
  // When Cut ran (steady clock ticks; 0 = never).
  SteadyClock::rep cut_at() const { return cut_at_.load(std::memory_order_acquire); }

  // Op retry: the epoch the link was made at, and where retry notices read from the control
  // socket go (set before the link is published; called on the reading thread).
  uint32_t epoch() const { return epoch_; }
  void set_epoch(uint32_t epoch) { epoch_ = epoch; }
  void set_notice_handler(std::function<void(const RetryNotice&)> handler) {
    notice_handler_ = std::move(handler);
  }
  // Sends a retry notice on the control socket (nothing when the link is not healthy).
  void SendNotice(const RetryNotice& notice);

  // The data sockets the monitor thread watches for errors (TCP QPs): a socket whose sent
  // bytes go unacknowledged past its timeout (TCP_USER_TIMEOUT) fails with nobody waiting on
  // it, and the link must break then, not when an op next touches it.
  virtual void AppendDataFds(std::vector<int>* fds) const { (void)fds; }
  // The monitor thread saw an error on data socket `fd` (after reading the control socket).
  void OnDataSocketError(int fd);

 protected:
  enum State : int { kOk = 0, kBroken = 1, kPeerClosed = 2, kClosed = 3 };
  // Wakes threads blocked in WaitReady (so they notice the state change).
  virtual void WakeWaiters() {}
  // Shuts down any data sockets (TCP QPs).
  virtual void ShutdownData() {}
  // Counts moved bytes for fault injection; cheap when no fault is armed.
  void Account(size_t n) {
    uint64_t limit = cut_after_.load(std::memory_order_relaxed);
    if (limit == 0) return;
    if (moved_.fetch_add(n) + n >= limit && cut_after_.exchange(0) != 0) {
      Cut("VIGIL_FAULT link_cut");
    }
  }
  // The peer's EOF on a data path: orderly if its bye arrives shortly, else a link error.
  void OnDataEof(const std::string& what);
  // Tells the peer (control socket) that this rank takes back its data from stream offset on.
  void SendRetract(uint64_t offset);
  // The peer's retract notice arrived (on the thread reading the control socket: the monitor
  // thread, or one in Transport::ReportPendingLinkErrors).
  virtual void OnPeerRetract(uint64_t offset) { (void)offset; }
  State state() const { return static_cast<State>(state_.load(std::memory_order_acquire)); }

  const LinkType type_;
  const Endpoint local_;
  const Endpoint remote_;
  net::Socket ctrl_;

 private:
  Reporter reporter_;
  mutable std::recursive_mutex report_mu_;  // held by Break through its report
  std::atomic<int> state_{kOk};
  std::atomic<bool> reported_{false};
  mutable std::mutex mu_;
  std::string reason_;
  std::atomic<uint64_t> cut_after_{0};
  std::atomic<uint64_t> moved_{0};
  std::atomic<SteadyClock::rep> cut_at_{0};
  uint32_t epoch_ = 0;
  std::function<void(const RetryNotice&)> notice_handler_;
  // Reads of the control socket (OnControlReadable), and a message ("R...;" / "X...;") split
  // across them.
  std::mutex ctrl_mu_;
  char msg_kind_ = 0;  // 0: between messages
  std::string msg_;
  void OnMessage(char kind, const std::string& body);
};

}  // namespace vigil::transport
