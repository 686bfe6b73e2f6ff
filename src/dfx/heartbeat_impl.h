// The cluster heartbeat's inside (see heartbeat.h for what it does), shared by the files that
// implement it, one job each:
//   heartbeat.cc         setup, communicators attaching and detaching, op counters, stop
//   heartbeat_links.cc   the maintenance links: dial, accept, frames in and out, the poll loop
//   heartbeat_detect.cc  LOST, STUCK and ERROR CQE detection, events raised and their aborts,
//                        the Cluster Exception report of a failed op
//   heartbeat_view.cc    the process's view (vigil health) and lookups of ranks by identity
// Not for other layers: include heartbeat.h.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "comm/communicator.h"
#include "comm/op.h"
#include "comm/op_observer.h"
#include "common/time_util.h"
#include "dfx/heartbeat.h"
#include "dfx/heartbeat_event.h"
#include "dfx/heartbeat_frame.h"
#include "transport/link.h"

namespace vigil::dfx {

using namespace std::chrono_literals;

inline constexpr auto kTick = 50ms;                     // HCCL's loop period
inline constexpr size_t kMaxEvents = 5000;              // HCCL caps its event queue at 5000
inline constexpr size_t kMaxPending = 4u << 20;         // bytes queued to one peer before frames drop
inline constexpr size_t kBeatBackpressure = 64u << 10;  // a peer not reading gets no more beats
inline constexpr auto kDialRetry = 500ms;
inline constexpr auto kConnectTimeout = 2s;
inline constexpr auto kAnonTimeout = 5s;      // an accepted socket must say hello/query by then
inline constexpr auto kProbeTimeout = 300ms;  // PeerExited: a live or dead host answers within it
inline constexpr auto kByeFlush = 300ms;
// After an abnormal event a process keeps its links (and its exit waits) this long, so the
// broadcast completes even when the failed ops make every rank destroy its comm and exit at once.
inline constexpr auto kLinger = 3s;  // long enough for a broadcast to cross a loaded 2-core host
inline constexpr uint32_t kCqeStatusRetryExceeded = 12;
// Relayed counters per beat at most (BeatFrame::heard): past it a rotating slice, so every rank
// of a large communicator is still relayed within a few beats.
inline constexpr size_t kMaxRelayed = 512;  // RoCE "retransmit exceeded", as HCCL prints

struct CommEntry {
  std::weak_ptr<comm::Communicator> comm;
  const comm::Communicator* raw = nullptr;
  std::string identifier;
  uint64_t key = 0;
  auth::JobKey job_key;  // its connections prove it (bootstrap/auth.h); never logged
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
  // Dialing: the job key of the first communicator that wanted this neighbour, and the check
  // in progress on a connected socket (the peer is kConnecting until it passes).
  auth::JobKey job_key;
  std::unique_ptr<auth::DialerAuth> auth;
  std::vector<uint8_t> auth_in;
  std::vector<uint8_t> after_auth;  // the heartbeat hello, sent with the proof
  bool tcp_connected = false;
  bool auth_warned = false;  // one line per neighbour for failed checks, not one per redial
};

// An accepted connection before it said who it is (hello: a neighbour; query: vigil health).
// It proves the job key first (purpose heartbeat: hello or agreement; health: query only).
struct Anon {
  int fd = -1;
  std::string peer;  // "ip:port"
  std::unique_ptr<auth::AcceptorAuth> auth;  // null once proven
  std::vector<uint8_t> auth_in;
  auth::Purpose purpose = auth::Purpose::kHealth;
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

// Socket helpers of the maintenance links (heartbeat_links.cc).
void SetNonBlocking(int fd);
void SetNoDelay(int fd);
// Sends what is queued; false when the connection is broken.
bool Flush(int fd, std::vector<uint8_t>& out, size_t& pos);
// Reads what is there. Returns false on EOF or error (*why says which).
bool Drain(int fd, FrameReader& in, std::string* why);
const char* PeerStateName(PeerState s);

class Heartbeat::Impl : public comm::OpObserver {
 public:
  // ---- setup ----
  uint16_t EnsureListener(const std::string& host_ip);
  bool enabled() const { return enabled_.load(); }
  std::string listen_address() const { return enabled_.load() ? self_key_ : std::string(); }
  void Attach(const std::shared_ptr<comm::Communicator>& comm);
  void Detach(const comm::Communicator* raw);

  // ---- op counters (stream workers) ----
  void OnEnqueue(const comm::OpRecord&) override {}
  void OnStart(const comm::OpRecord& op, SteadyClock::time_point now) override;
  void OnFinish(const comm::OpRecord& op, HcclResult, const comm::OpFailure* failure,
                SteadyClock::time_point) override;

  // ---- task exception ----
  bool PeerExited(const std::string& uid);
  bool PeerExited(const std::string& identifier, uint32_t rank);
  std::vector<HbEvent> ReportClusterException(const comm::OpRecord& op);
  std::vector<HbEvent> KeyEvents(const comm::OpRecord& op);
  bool Locate(const std::string& identifier, const std::string& uid, std::string* in,
              uint32_t* rank, uint32_t* pid);
  std::vector<HbEvent> Events();
  std::set<uint32_t> LostRanks(const std::string& identifier);
  void NoteShrink(const Heartbeat::ShrinkNote& note);
  std::string ViewJson();
  void Stop();

 private:
  void Start(const std::string& host_ip);
  CommEntry* AttachedEntry(const comm::OpRecord& op) const;
  std::chrono::milliseconds StuckPeriod(const CommEntry& e) const;
  void Wake();
  Peer& PeerLocked(const std::string& key);

  // ---- events ----
  std::vector<std::string> LocalUidsLocked() const;
  bool RaiseLocked(const std::string& crimer, const std::string& informer, HbStatus status,
                   const std::string& from, uint64_t discovered_us);
  void AbortEntryLocked(CommEntry& c, const HbEvent& e);
  void OnLinkError(const std::weak_ptr<CommEntry>& weak, const transport::LinkError& err);
  bool CqeBetweenLocked(const std::string& a, const std::string& b) const;
  void PeerLostLocked(Peer& p, const std::string& why, bool keep_link = false);

  // ---- I/O ----
  void QueueLocked(Peer& p, const std::vector<uint8_t>& frame, bool is_beat);
  void ConnectedLocked(Peer& p, SteadyClock::time_point now);
  void DialLocked(Peer& p, SteadyClock::time_point now);
  void DialFailedLocked(Peer& p, const std::string& why);
  void AuthStepLocked(Peer& p, SteadyClock::time_point now);
  bool AnonAuthLocked(Anon& a);
  std::string self_ip() const { return self_key_.substr(0, self_key_.rfind(':')); }
  void HandleFrameLocked(Peer& p, FrameType type, const std::vector<uint8_t>& body,
                         SteadyClock::time_point now);
  void ServicePeerLocked(Peer& p, short revents, SteadyClock::time_point now);
  void ServiceAnonLocked(Anon& a, SteadyClock::time_point now);
  void CloseAnon(Anon& a);
  void AcceptLocked(SteadyClock::time_point now);

  // ---- periodic work ----
  void BeatLocked();
  void HeardLocked(const CommCounters& c);
  void TimersLocked(SteadyClock::time_point now);
  void StuckLocked(SteadyClock::time_point now);
  void ForwardLocked();
  void FlushAllLocked();
  void CleanupLocked();
  void Loop();
  void ShutdownLinks();
  std::string ViewJsonLocked() const;

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
  std::map<std::pair<uint64_t, uint32_t>, RemoteCounters> remote_;  // neighbours, first-hand
  // Every rank's counters this process heard of, first-hand or relayed (BeatFrame::heard): the
  // highest values seen. STUCK reads it to know whether any rank, neighbour or not, is behind.
  std::map<std::pair<uint64_t, uint32_t>, CommEntry::Counts> heard_;
  size_t relay_cursor_ = 0;
  std::map<std::string, std::set<HbStatus>> seen_;
  std::set<std::pair<std::string, uint64_t>> link_failed_ops_;  // (identifier, op index)
  std::deque<HbEvent> events_;
  std::deque<Forward> forward_;
  // For vigil health: the communicators detached last (kMaxPrevious), and this process's shrinks.
  struct Previous {
    std::string identifier;
    uint32_t rank = 0, size = 0;
    uint64_t in = 0, out = 0;
    bool aborted = false;
    WallClock::time_point detached;
  };
  std::deque<Previous> previous_;
  std::deque<Heartbeat::ShrinkNote> shrinks_;
};

inline constexpr size_t kMaxPrevious = 16;

}  // namespace vigil::dfx
