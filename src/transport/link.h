// Links between ranks of one communicator, and the progress engine the algorithms drive.
//
// Every link starts as a TCP connection made through the peer's listener (handshake: comm
// identifier, source and destination rank, protocol magic); a stranger's bytes are rejected and
// logged without harming the listener. Between two ranks on one host (same host_id) the link
// then carries its data through a pair of shared-memory rings (memfd, mapped by both sides),
// keeping the TCP socket only to notice at once that the peer process died. Between hosts, or
// when VIGIL_TRANSPORT=tcp, data goes over HCCL_RDMA_QPS_PER_CONNECTION sockets ("QPs").
//
// A link failure (reset, EOF, send timeout past HCCL_RDMA_TIMEOUT x HCCL_RDMA_RETRY_CNT) is
// reported once through the LinkErrorObserver as a CQE-style event naming both ends, and every
// later use of the link fails fast with HCCL_E_REMOTE. A peer that closes its transport in
// order (Close) says so first, so its peers' links fail with HCCL_E_REMOTE but are not
// reported as errors.
//
// Who dials: for each pair the lower rank dials the higher rank's listener and the higher rank
// accepts (its accept thread completes the handshake whenever it arrives, even before that rank
// calls Connect). The accept thread also watches every link's control socket, so a peer's death
// (EOF/reset without a bye) breaks the link at once, shm links included.
//
// Op retry (comm/op_retry.h): links carry an epoch, agreed in the handshake. BeginEpoch tells
// every peer over the control sockets (a retry notice), then retires the links of older epochs
// (closed in order, never reported); Connect then re-makes them at the new epoch, and the
// acceptor rejects a handshake of an older epoch, so nothing of the failed attempt (bytes in
// flight, a late dial) reaches the new links. A handshake of a newer epoch, or a notice
// connection (a dialer's way to reach a peer that waits for it to dial), tells the acceptor's
// communicator of the retry too.
//
// Fault injection: Transport::InjectLinkCut(peer) shuts the link's sockets down for real (both
// ends see a link error). VIGIL_FAULT is a ';'-separated list; the transport reads the entries
//   link_cut:R-P        cut the link between rank R and rank P as soon as it exists
//   link_cut:R-P@N      ... once N bytes (suffix K/M/G allowed) have moved over it
//   link_cut:R-P@N~MS   ... and keep it down MS milliseconds: rank R refuses to re-make it
//                       (its dials to P fail, P's handshakes are dropped) until then
// in the process of rank R, and ignores every other entry (other layers own them). Each entry
// cuts once: a link re-made after the cut is left alone.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/job_key.h"
#include "common/time_util.h"
#include "hccl/hccl_types.h"

namespace vigil::transport {

enum class LinkType { kShm, kTcp };
const char* LinkTypeName(LinkType type);  // "SHM" / "TCP" (logs print link type[..])

struct Endpoint {
  uint32_t rank = 0;
  std::string host_ip;
  std::string host_id;
  uint16_t port = 0;  // the rank's listener
  uint32_t pid = 0;
  int32_t device = 0;
};

struct LinkError {
  Endpoint local;
  Endpoint remote;
  HcclResult code = HCCL_E_REMOTE;
  std::string reason;  // "connection reset by peer", "send timeout after 30s", ...
  uint32_t epoch = 0;  // the link's epoch (op retry)
};
using LinkErrorObserver = std::function<void(const LinkError&)>;

// A rank gives the current attempt of a collective up and re-makes its links at `epoch`
// (comm/op_retry.h). Travels on control sockets ("X...;"), in handshakes of a newer epoch and
// in notice connections.
struct RetryNotice {
  uint32_t epoch = 0;    // the links' new epoch
  uint64_t seq = 0;      // the collective: its sequence number on the communicator, from 1
  uint32_t attempt = 0;  // the attempt that failed (1 = the first run)
  uint32_t origin = 0;   // the rank that started the retry
  uint32_t end_a = 0;    // the broken link's ends (as the origin saw them)
  uint32_t end_b = 0;
  uint32_t from = 0;     // the rank it came from (set by the receiving transport)
};
// What the communicator answers to a notice: kRefuse when it cannot take part because it
// finished that op already, kBehind because it still moves an earlier op's data (the asker went
// on without it); a handshake or notice connection is then answered HCCL_E_OPRETRY_FAIL.
enum class NoticeVerdict { kAccept, kRefuse, kBehind };
using RetryNoticeObserver = std::function<NoticeVerdict(const RetryNotice&)>;

class Link {
 public:
  virtual ~Link() = default;
  virtual LinkType type() const = 0;
  virtual const Endpoint& remote() const = 0;
  // Non-blocking: move up to n bytes; *moved gets how many (may be 0). HCCL_E_REMOTE once broken.
  virtual HcclResult TrySend(const void* buf, size_t n, size_t* moved) = 0;
  virtual HcclResult TryRecv(void* buf, size_t n, size_t* moved) = 0;
  // TryRecv of an op header that `then` body bytes follow: a link that reads ahead may take
  // those with it, but nothing past them (the next message is left where it is: on TCP, a read
  // that emptied the socket of two messages the peer sent before this end answered made the
  // kernel acknowledge at once, a segment of its own for each).
  virtual HcclResult TryRecvHead(void* head, size_t n, size_t then, size_t* moved) {
    (void)then;
    return TryRecv(head, n, moved);
  }
  // TrySend of a then b as one stream, so a small header and its data go out together (one
  // publish on shm, one sendmsg on TCP). *moved counts bytes of both.
  virtual HcclResult TrySend2(const void* a, size_t na, const void* b, size_t nb, size_t* moved);
  // Blocks until TrySend/TryRecv may make progress, or timeout_ms passes (spurious wakeups ok).
  virtual void WaitReady(bool for_send, int timeout_ms) = 0;
  virtual bool broken() const = 0;

  // Op boundaries, so that a rank that gives an op up (timeout, abort) can take back what it
  // sent for it: a late peer must then time out too, as it would had the data never been sent,
  // instead of completing with data its sender abandoned. MarkOpStart notes where this rank's
  // sends of the next op begin; AbandonOp hides everything from there on that the peer has not
  // read yet (the peer's reads of this link stall from then on: the communicator is finished).
  // Links that can (shm) say so, so the first transfers of an op may go out before the peer
  // shows it is in the op too; others (TCP) must wait for it.
  virtual bool can_retract() const { return false; }
  virtual void MarkOpStart() {}
  virtual void AbandonOp() {}
  // Body bytes of an op's first send on this link that may go out before the peer's op header
  // arrived (the rest waits for it): none where data cannot be taken back; on TCP a window, so
  // a sender does not fill the socket with bytes its peer will copy out cold much later.
  virtual size_t eager_bytes() const { return can_retract() ? SIZE_MAX : 0; }
  // Direct exchange of small messages (shm; comm/communicator_direct.cc): besides its byte
  // rings, a link may hold one cache-line-aligned slot pair per direction, and a message of up
  // to direct_max_bytes() goes through a slot whole: the sender writes it and its number, the
  // receiver sees the number change and reads it there (shm_link.h: the layout). No ring, no
  // header frame, no wake-up unless the peer sleeps. Message numbers are the senders' (from 1,
  // increasing by at least 1, the same on both ends for one op); slot seq & 1 holds message
  // seq, so a sender may post message seq + 2 only once the peer posted seq + 1 (it has then
  // read seq).
  // The largest message both ends exchange this way (agreed when the link was made; 0: none).
  virtual size_t direct_max_bytes() const { return 0; }
  // Posts message `seq`: its check word (what the receiver compares with its own), a 64-byte
  // head (read only when the check words differ) and n <= direct_max_bytes() bytes of data.
  // AbandonOp takes the last message posted back (the peer never sees it).
  virtual void DirectPost(uint64_t seq, uint64_t check, const void* head, const void* data,
                          size_t n) {
    (void)seq, (void)check, (void)head, (void)data, (void)n;
  }
  // The peer's message `seq` once posted: its data (*bytes long; valid until the next call)
  // and check word; nullptr until then (or when the peer took it back). `expect`: the length
  // this end expects (any length is still read whole).
  virtual const void* DirectPeek(uint64_t seq, size_t expect, uint64_t* check,
                                 size_t* bytes) const {
    (void)seq, (void)expect, (void)check, (void)bytes;
    return nullptr;
  }
  // After reading what DirectPeek gave: whether it is still message `seq` (not taken back).
  virtual bool DirectStillPosted(uint64_t seq) const {
    (void)seq;
    return false;
  }
  // The head of the peer's message `seq` (as posted), and the newest message number the peer
  // posted (0: none), to name a peer that runs another op.
  virtual const void* DirectPeerHead(uint64_t seq) const {
    (void)seq;
    return nullptr;
  }
  virtual uint64_t DirectPeerLatest() const { return 0; }
  // Whether the peer, when it last posted (the message before `seq`), ran on the CPU this
  // thread runs on now: it then cannot post while this thread spins there.
  virtual bool DirectPeerOnThisCpu(uint64_t seq) const {
    (void)seq;
    return false;
  }
  // Tells the peer this thread's CPU now (after it moved), in the slots it already posted.
  virtual void DirectNoteCpu() {}
  // Blocks until the peer's message `seq` may be there, the link breaks, the peer sends ring
  // bytes, or timeout_ms (bounded; spurious returns are fine).
  virtual void DirectSleep(uint64_t seq, int timeout_ms) {
    (void)seq;
    (void)timeout_ms;
  }
  // Whether the peer sent ring bytes this end has not read yet (it runs an op that does not go
  // through the slots).
  virtual bool ring_pending() const { return false; }
  // True once the peer took data back (its AbandonOp) and this end knows it.
  virtual bool peer_retracted() const { return false; }

  // Single copy ("lending"): TrySend2 where the link may let the peer read b in place, straight
  // from this process's memory, instead of copying it into the link (shm: process_vm_readv by
  // the receiver). b must then stay valid and unchanged until the link reports it moved, and it
  // moves only as fast as the peer takes it (a rendezvous: no eager buffering). Links that
  // cannot, or messages below their threshold, behave as TrySend2. RecallLent ends a lend that
  // will not be finished (Progress giving up): after it returns the peer reads nothing more of
  // b, and what it has not read of it never arrives (as with data never sent).
  virtual HcclResult TrySendLent(const void* a, size_t na, const void* b, size_t nb,
                                 size_t* moved) {
    return na > 0 ? TrySend2(a, na, b, nb, moved) : TrySend(b, nb, moved);
  }
  virtual void RecallLent() {}
  // True when a send of `bytes` on this link would be lent (the peer reads it in place).
  virtual bool lends(size_t bytes) const {
    (void)bytes;
    return false;
  }

  // Optional hooks that let Progress block on many links at once (defaults suit any Link):
  // links returning the same non-zero domain wake each other's WaitReady (shm links of one
  // Transport share a doorbell futex), so waiting on any one of them covers all.
  virtual uintptr_t wait_domain() const { return 0; }
  // Fds to poll (POLLIN for recv, POLLOUT for send); false = this link cannot be polled, use
  // WaitReady.
  virtual bool AppendPollFds(bool for_send, std::vector<pollfd>* fds) const {
    (void)for_send;
    (void)fds;
    return false;
  }
};

// Runs when the head of a receive has fully arrived, before any byte of its body is taken
// (the comm layer's op-consistency check). kAccept: go on with the body; kHold: never take the
// body (the transfer stays pending until the link breaks, the deadline or an abort); kFail: end
// Progress with HCCL_E_PARA (the hook's own state says why).
enum class HeadVerdict { kAccept, kHold, kFail };
struct HeadHook {
  // `arg` is the transfer's hook_arg (the algorithm's member index), `head` its head.
  HeadVerdict (*on_head)(void* ctx, uint32_t arg, const void* head) = nullptr;
  void* ctx = nullptr;
};

// One transfer of a Progress call: `head_bytes` of `head` (an optional op header), then `bytes`
// of `buf`, as one byte stream on the link.
struct Xfer {
  Link* link = nullptr;
  bool send = false;
  void* buf = nullptr;
  size_t bytes = 0;
  void* head = nullptr;
  size_t head_bytes = 0;
  const HeadHook* hook = nullptr;  // receives with a head only
  uint32_t hook_arg = 0;
  // A send whose body may not start before *gate is true (its head goes at once): set by a
  // HeadHook when the peer's own header has arrived, or when every header it waits for passed.
  const bool* gate = nullptr;
  size_t eager = 0;  // body bytes that may go while *gate is false (Link::eager_bytes)
  // Out, written only when Progress fails: the bytes (head and body) moved by then, so that
  // task-level tracking (HCCL_DIAGNOSE_ENABLE) can say how far each transfer got.
  size_t done = 0;
  // Sends only: the body may be lent (Link::TrySendLent). Only for transfers whose receiver
  // posts the matching receive in the same step: a lent send completes only as it is read.
  bool lend = false;
};

// Work a rank may do while its transfers wait on their links (Progress): a local copy the
// algorithm would otherwise make before or after them.
class IdleWork {
 public:
  virtual ~IdleWork() = default;
  // Does a bounded piece of the work (tens of microseconds); false once none is left.
  virtual bool Step() = 0;
};

struct WaitPolicy {
  SteadyClock::time_point deadline = SteadyClock::time_point::max();  // HCCL_EXEC_TIMEOUT
  const std::atomic<int>* abort = nullptr;  // non-zero: give up with that HcclResult
  const std::atomic<int>* abort2 = nullptr;  // the same, a second flag (an op retry's request)
  // Spin briefly before yielding when idle. Off when this host runs more ranks than it has
  // cores: the peer we wait for then usually needs our core, and spinning only delays it.
  bool spin = true;
  // Done a piece at a time whenever a sweep of the links moved nothing, before any wait.
  IdleWork* idle = nullptr;
};

struct ProgressError {
  HcclResult code = HCCL_SUCCESS;
  Link* link = nullptr;  // the transfer that failed or was still pending at timeout/abort
  bool timed_out = false;
  std::string reason;
};

// Moves every transfer to completion, all links at once (no ordering between them, so a ring
// step that sends and receives never deadlocks). HCCL_E_TIMEOUT at the deadline, the abort code
// when *abort becomes non-zero, HCCL_E_REMOTE when a link breaks.
HcclResult Progress(std::vector<Xfer>& xfers, const WaitPolicy& wait, ProgressError* error);

struct TransportOptions {
  std::string comm_id;          // communicator identifier, checked in the handshake
  Endpoint self;
  bool force_tcp = false;           // VIGIL_TRANSPORT=tcp
  uint32_t qps_per_connection = 1;  // HCCL_RDMA_QPS_PER_CONNECTION
  uint32_t connect_timeout_s = 120; // HCCL_CONNECT_TIMEOUT
  int32_t device = 0;               // link resources are charged to this device's memory budget
  // The send timeout of TCP links (HCCL_RDMA_TIMEOUT / HCCL_RDMA_RETRY_CNT); 0 = from Env().
  uint32_t rdma_timeout = 0;
  uint32_t rdma_retry_cnt = 0;
  // Ring bytes per direction of shm links (power of two); 0 = default (4 MiB).
  size_t shm_ring_bytes = 0;
  // The largest message this end exchanges through an shm link's direct slots (Link::DirectPost;
  // 0: none, capped at kShmDirectBytes); a link uses the smaller of its two ends' values.
  size_t shm_direct_bytes = 0;
  // The communicator's job key: every connection to or from this transport's listener proves
  // it first (bootstrap/auth.h). Default: no key (all zero), as on both ends of a keyless job.
  auth::JobKey key;
};

// How Connect waits. The default: HCCL_CONNECT_TIMEOUT, dialing again at once, EI0006 lines
// on timeout. Re-making links for an op retry: HoldTime, every IntervalTime, quiet.
struct ConnectPolicy {
  SteadyClock::time_point deadline = SteadyClock::time_point::max();  // max: the timeout
  std::chrono::milliseconds interval{0};  // spacing of dial rounds and notices; 0 = at once
  const std::atomic<int>* abort = nullptr;    // non-zero: give up with that code
  const std::atomic<int>* abort2 = nullptr;   // the same, a second flag
  const RetryNotice* notice = nullptr;  // sent every interval to the peers it waits for
  bool quiet = false;  // no "wait socket establish timeout" lines (the caller reports)
};

// The links of one communicator. Links are made lazily (Connect) and shared by all ops.
class Transport {
 public:
  // Opens the listener (kernel-chosen port on self.host_ip) and its accept thread.
  static HcclResult Create(const TransportOptions& options, std::unique_ptr<Transport>* out,
                           std::string* error);
  virtual ~Transport() = default;
  virtual uint16_t listen_port() const = 0;
  // Peers this rank needs; ensures a link to each exists. Both sides of a pair must call it
  // (either order). HCCL_E_TIMEOUT (EI0006) after HCCL_CONNECT_TIMEOUT naming the missing
  // peers (*error is the EI0006 reason; the "wait socket establish timeout" lines are logged
  // here, the caller raises the screen error); HCCL_E_MEMORY (EI0011) when link resources
  // exceed the device budget: *error is then exactly the EI0011 argument, e.g.
  // "size: [0.25MB, 3MB], Affected by QP depth configuration." (details in an ERROR line).
  // Thread-safe; one RUN_INFO line per link established.
  HcclResult Connect(const std::vector<Endpoint>& peers, const std::string& tag,
                     std::string* error) {
    return Connect(peers, tag, error, ConnectPolicy{});
  }
  // As above under `policy`; HCCL_E_OPRETRY_FAIL when a peer refused the retry (*error names
  // it), the abort code when a flag was raised.
  virtual HcclResult Connect(const std::vector<Endpoint>& peers, const std::string& tag,
                             std::string* error, const ConnectPolicy& policy) = 0;
  virtual Link* link(uint32_t peer_rank) = 0;  // nullptr until connected
  // Closes every link in order (peers see a bye, not a link error). Safe to call twice. A link
  // error that arrived before (the peer's EOF or reset already in the control socket, not yet
  // read by the monitor thread) is reported first, not hidden by the close.
  virtual void Close() = 0;
  // Reads every healthy link's control socket now, on the caller's thread, reports a link error
  // found there through the observer (on this thread), and returns once a report the monitor
  // thread is making has reached the observer too. An owner about to remove its observer calls
  // it first, so that an error which already happened reaches it whether or not the monitor
  // thread has run since.
  virtual void ReportPendingLinkErrors() {}
  // The observer runs on the transport's accept thread or on the thread that hit the error; it
  // must not call Close() or destroy the Transport.
  virtual void SetLinkErrorObserver(LinkErrorObserver observer) = 0;
  // ---- op retry ----
  // The epoch of the links Connect makes (0 until a retry).
  virtual uint32_t epoch() const { return 0; }
  // Called (on the monitor thread, or the thread reading a control socket) for every retry
  // notice that arrives; must be quick and must not call back into the transport.
  virtual void SetRetryNoticeObserver(RetryNoticeObserver observer) { (void)observer; }
  // Sends `notice` on every current link's control socket, then retires the links older than
  // notice.epoch (closed in order: the peer sees the notice, then a bye); epoch() becomes
  // notice.epoch. Links of that epoch already accepted stay. link() is nullptr for the retired
  // peers until Connect re-makes them. Nothing when notice.epoch <= epoch().
  virtual void BeginEpoch(const RetryNotice& notice) { (void)notice; }
  // Hands a link error to the observer as a link would (a retry that gave up reports the error
  // it held).
  virtual void ReportLinkError(const LinkError& error) { (void)error; }

  // Fault injection: cuts the link to peer_rank (shutdown(2) of its sockets, no bye), so both
  // ends see a real link error. False when there is no such link.
  virtual bool InjectLinkCut(uint32_t peer_rank) {
    (void)peer_rank;
    return false;
  }
};

}  // namespace vigil::transport
