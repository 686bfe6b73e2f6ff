// The job-key check every Vigil connection opens with: a mutual challenge-response over
// HMAC-SHA256 (OpenSSL libcrypto), before either side reads anything else from the other.
//
//   dialer -> acceptor  hello:  "VGAU" u32, version u8, purpose u8, flags u16, key id u64,
//                               dialer nonce (16 random bytes)                       32 bytes
//   acceptor -> dialer  answer: "VGAU" u32, version u8, 0 u8, 0 u16, acceptor nonce (16 random
//                               bytes), MAC("acceptor")                              56 bytes
//   dialer -> acceptor  proof:  MAC("dialer")                                        32 bytes
//   MAC(role) = HMAC-SHA256(job key, "vigil-auth-1" 0 role 0 purpose-label 0 dialer nonce
//                           acceptor nonce)
// Both nonces are fresh per connection, so a recorded exchange does not replay; the role in the
// MAC stops a reflected one (an acceptor's answer is never a dialer's proof); the purpose label
// (rendezvous, data, heartbeat, health) stops one kind of connection standing in for another.
// MACs are compared in constant time (CRYPTO_memcmp). The dialer checks the acceptor before it
// proves itself, so neither side talks to a peer without the key. The key never goes on the
// wire; its id does (job_key.h). An acceptor that does not know the id (or serve the purpose)
// answers the 8-byte header alone with a non-zero status and closes, so a dialer of another job
// fails at once instead of dialing again until its timeout.
//
// The exchange is written once, sans I/O (AcceptorAuth / DialerAuth take bytes in and give bytes
// out), for the poll loops of the listeners; Authenticate* run it on a socket with a deadline.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/job_key.h"
#include "bootstrap/socket.h"
#include "hccl/hccl_types.h"

namespace vigil::auth {

enum class Purpose : uint8_t { kRendezvous = 1, kData = 2, kHeartbeat = 3, kHealth = 4 };
// Initialises libcrypto without its atexit cleanup (once; also done when the library loads).
void InitCrypto();

const char* PurposeName(Purpose p);  // "rendezvous", "data", "heartbeat", "health"
constexpr uint32_t PurposeBit(Purpose p) { return 1u << static_cast<uint32_t>(p); }

constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 32;
constexpr size_t kHelloBytes = 16 + kNonceBytes;
constexpr size_t kAnswerBytes = 8 + kNonceBytes + kMacBytes;
constexpr size_t kProofBytes = kMacBytes;

enum class Step { kMore, kDone, kFailed };

// The acceptor's side. Feed it what arrived (it takes its bytes from the front of *in and leaves
// what follows the exchange there) and send what it appends to *out.
class AcceptorAuth {
 public:
  // allowed: PurposeBit()s this port serves; keys: the keys it accepts (chosen by key id).
  AcceptorAuth(uint32_t allowed, std::vector<JobKey> keys);
  Step Feed(std::vector<uint8_t>* in, std::vector<uint8_t>* out);
  // Once kDone: what the dialer came for. Once kFailed: why, for the log line.
  Purpose purpose() const { return purpose_; }
  const std::string& why() const { return why_; }
  // Where the exchange stopped (for "silent" / "closed" lines): 0 hello, 1 proof, 2 done.
  int stage() const { return stage_; }

 private:
  Step Fail(std::string why);
  Step Refuse(std::string why, std::vector<uint8_t>* out);
  uint32_t allowed_;
  std::vector<JobKey> keys_;
  JobKey key_;
  Purpose purpose_ = Purpose::kData;
  std::array<uint8_t, kNonceBytes> dialer_nonce_{};
  std::array<uint8_t, kNonceBytes> my_nonce_{};
  int stage_ = 0;
  std::string why_;
};

// The dialer's side: Start() gives the hello; feed the acceptor's answer to get the proof. Once
// kFailed, every later Feed is kFailed too (bytes after a wrong answer are never read).
class DialerAuth {
 public:
  DialerAuth(Purpose purpose, const JobKey& key);
  std::vector<uint8_t> Start();
  Step Feed(std::vector<uint8_t>* in, std::vector<uint8_t>* out);
  const std::string& why() const { return why_; }

 private:
  Purpose purpose_;
  JobKey key_;
  std::array<uint8_t, kNonceBytes> my_nonce_{};
  bool started_ = false;
  bool done_ = false;
  std::string why_;
};

// Dialer side on a connected socket, bounded by the deadline. HCCL_E_TIMEOUT when the acceptor
// is silent, HCCL_E_TCP_TRANSFER when it closes, HCCL_E_PARA when it refuses our key or its
// answer does not prove the key; *error says which, naming the peer.
HcclResult AuthenticateDialer(net::Socket& s, Purpose purpose, const JobKey& key,
                              net::Deadline deadline, std::string* error);
// Acceptor side on an accepted socket (for acceptors without a poll loop, and tests).
// Bytes that followed the proof are appended to *rest.
HcclResult AuthenticateAcceptor(net::Socket& s, uint32_t allowed, const std::vector<JobKey>& keys,
                                net::Deadline deadline, Purpose* purpose,
                                std::vector<uint8_t>* rest, std::string* error);

// The one log line of a connection that failed the check (run log, WARNING): "[Auth]<service>
// <listen address> rejected connection from <peer>: <why>; the job key was not proven".
void LogRejected(const std::string& service, const std::string& listen_address,
                 const std::string& peer, const std::string& why);

}  // namespace vigil::auth
