// Frames on the heartbeat's maintenance links (TCP, separate from every data link), and the
// `vigil health` query on the same listener.
//
// Wire: u32 body length, u8 type, body (wire.h little-endian encoding). A connection starts
// with kHello (magic, version, the sender's listener address and pid) or kQuery (a health
// client); anything else, or a body over the limit, drops the connection.
//   kBeat   every beat interval: op in/out counters of the sender's communicators (STUCK),
//           then those it heard of other ranks of them (relayed: every rank learns every
//           rank's progress within the graph's diameter, neighbour or not)
//   kEvent  an abnormal event being broadcast: crimer, informer, status, discovery time
//   kBye    the sender closes the link in order (comm destroyed, process exiting): not LOST
//   kQuery  health client asks; kReply carries this process's view as JSON
//   kAgree  a shrink agreement message (dfx/agreement.h), alone on a connection of its own
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::dfx {

enum class FrameType : uint8_t {
  kHello = 1,
  kBeat = 2,
  kEvent = 3,
  kBye = 4,
  kQuery = 5,
  kReply = 6,
  kAgree = 7,
};

// Ordered as HCCL's status values are named in logs; priority is separate (heartbeat_event.h).
enum class HbStatus : uint8_t { kOk = 0, kLost = 1, kStuck = 2, kCqe = 3 };

inline constexpr uint32_t kHbMagic = 0x42484756;  // "VGHB"
inline constexpr uint16_t kHbVersion = 1;
inline constexpr uint32_t kMaxFrameBody = 4u << 20;

struct HelloFrame {
  std::string host_ip;
  uint16_t port = 0;
  uint32_t pid = 0;
};

// One communicator's counters as the sending rank sees them: ops entered (started) and left.
struct CommCounters {
  uint64_t comm_key = 0;  // hash of the identifier
  uint32_t rank = 0;
  uint64_t in = 0;
  uint64_t out = 0;
};
struct BeatFrame {
  std::vector<CommCounters> comms;  // the sender's own ranks
  // Counters of other ranks the sender heard of, first-hand or relayed: the highest it knows
  // (counters only grow, so merging by maximum never brings back a stale value). An optional
  // tail: a frame without it decodes with this empty.
  std::vector<CommCounters> heard;
};

struct EventFrame {
  std::string crimer;
  std::string informer;
  HbStatus status = HbStatus::kOk;
  uint64_t discovered_us = 0;  // wall clock at the informer
};

std::vector<uint8_t> EncodeHello(const HelloFrame& f);
std::vector<uint8_t> EncodeBeat(const BeatFrame& f);
std::vector<uint8_t> EncodeEvent(const EventFrame& f);
std::vector<uint8_t> EncodeBye();
std::vector<uint8_t> EncodeQuery();
std::vector<uint8_t> EncodeReply(const std::string& json);
// A kAgree frame around an agreement message (its body is agreement.cc's).
std::vector<uint8_t> EncodeAgree(const std::vector<uint8_t>& body);

bool DecodeHello(const std::vector<uint8_t>& body, HelloFrame* f);
bool DecodeBeat(const std::vector<uint8_t>& body, BeatFrame* f);
bool DecodeEvent(const std::vector<uint8_t>& body, EventFrame* f);
bool DecodeReply(const std::vector<uint8_t>& body, std::string* json);

// Reassembles frames from a byte stream.
class FrameReader {
 public:
  void Append(const uint8_t* data, size_t n) { buf_.insert(buf_.end(), data, data + n); }
  // True and the next frame when one is complete. *bad when the stream is not ours (oversized
  // length or unknown type): the caller drops the connection.
  bool Next(FrameType* type, std::vector<uint8_t>* body, bool* bad);
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::vector<uint8_t> buf_;
  size_t pos_ = 0;
};

// 64-bit FNV-1a of a communicator identifier (same on every process).
uint64_t CommKey(const std::string& identifier);

}  // namespace vigil::dfx
