// The link handshake's wire format (dialer -> acceptor), framed as magic u32 "VGLK", version u16,
// kind u16, length u32:
//   kind control: comm id, tag, src and dst rank, link type, qp count, nonce, the dialer's
//                 endpoint, and for shm the memfd of the rings and of its doorbell;
//   kind qp:      the same fields naming the control connection (nonce) and the QP index;
//   kind notice:  no link: a retry notice for the acceptor's communicator (link.h).
// Every kind carries the links' epoch and, when it is newer than the acceptor's, the retry
// notice that made it.
// The acceptor answers every message with a reply {status, message, pid, doorbell fd}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "common/time_util.h"
#include "transport/link.h"

namespace vigil::transport {

constexpr uint32_t kLinkMagic = 0x4b4c4756;  // "VGLK"
constexpr uint16_t kLinkVersion = 2;
enum Kind : uint16_t { kControl = 1, kQp = 2, kReply = 3, kNotice = 4 };
enum WireLinkType : uint8_t { kWireShm = 0, kWireTcp = 1 };
constexpr size_t kHeaderBytes = 12;
constexpr uint32_t kMaxHandshake = 16 * 1024;
constexpr uint32_t kMaxQps = 64;
constexpr size_t kDoorbellBytes = 4096;

struct Hello {
  uint16_t kind = kControl;
  std::string comm_id;
  std::string tag;
  uint32_t src = 0;
  uint32_t dst = 0;
  uint8_t link_type = kWireTcp;
  uint16_t qp_index = 0;
  uint16_t qp_count = 0;
  uint64_t nonce = 0;
  Endpoint from;
  uint32_t ring_fd = 0;
  uint64_t ring_bytes = 0;
  uint32_t doorbell_fd = 0;
  RetryNotice notice;  // notice.epoch: the links' epoch
};

struct Reply {
  uint32_t status = HCCL_SUCCESS;
  std::string message;
  uint32_t pid = 0;
  uint32_t doorbell_fd = 0;
};

std::vector<uint8_t> EncodeHello(const Hello& h);
bool DecodeHello(uint16_t kind, const uint8_t* p, size_t n, Hello* h);
std::vector<uint8_t> EncodeReply(const Reply& rep);
// A reply's payload (after the header); false when malformed.
bool DecodeReply(const uint8_t* p, size_t n, Reply* rep);
HcclResult ReadReply(net::Socket& s, SteadyClock::time_point deadline, Reply* rep,
                     std::string* error);

}  // namespace vigil::transport
