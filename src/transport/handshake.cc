#include "transport/handshake.h"

#include <fmt/format.h>

#include "common/hccl_result.h"

namespace vigil::transport {

namespace {

std::vector<uint8_t> Framed(uint16_t kind, const wire::Writer& payload) {
  wire::Writer w;
  w.U32(kLinkMagic);
  w.U16(kLinkVersion);
  w.U16(kind);
  w.U32(static_cast<uint32_t>(payload.size()));
  w.Bytes(payload.data().data(), payload.size());
  return std::move(w.data());
}


}  // namespace

std::vector<uint8_t> EncodeHello(const Hello& h) {
  wire::Writer w;
  w.Str(h.comm_id);
  w.Str(h.tag);
  w.U32(h.src);
  w.U32(h.dst);
  w.U8(h.link_type);
  w.U16(h.qp_index);
  w.U16(h.qp_count);
  w.U64(h.nonce);
  w.Str(h.from.host_ip);
  w.Str(h.from.host_id);
  w.U16(h.from.port);
  w.U32(h.from.pid);
  w.I32(h.from.device);
  w.U32(h.ring_fd);
  w.U64(h.ring_bytes);
  w.U32(h.doorbell_fd);
  w.U32(h.notice.epoch);
  w.U64(h.notice.seq);
  w.U32(h.notice.attempt);
  w.U32(h.notice.origin);
  w.U32(h.notice.end_a);
  w.U32(h.notice.end_b);
  return Framed(h.kind, w);
}

bool DecodeHello(uint16_t kind, const uint8_t* p, size_t n, Hello* h) {
  wire::Reader r(p, n);
  h->kind = kind;
  h->comm_id = r.Str(1024);
  h->tag = r.Str(1024);
  h->src = r.U32();
  h->dst = r.U32();
  h->link_type = r.U8();
  h->qp_index = r.U16();
  h->qp_count = r.U16();
  h->nonce = r.U64();
  h->from.host_ip = r.Str(64);
  h->from.host_id = r.Str(1024);
  h->from.port = r.U16();
  h->from.pid = r.U32();
  h->from.device = r.I32();
  h->ring_fd = r.U32();
  h->ring_bytes = r.U64();
  h->doorbell_fd = r.U32();
  h->notice.epoch = r.U32();
  h->notice.seq = r.U64();
  h->notice.attempt = r.U32();
  h->notice.origin = r.U32();
  h->notice.end_a = r.U32();
  h->notice.end_b = r.U32();
  h->notice.from = h->src;
  h->from.rank = h->src;
  return r.ok();
}

std::vector<uint8_t> EncodeReply(const Reply& rep) {
  wire::Writer w;
  w.U32(rep.status);
  w.Str(rep.message);
  w.U32(rep.pid);
  w.U32(rep.doorbell_fd);
  return Framed(kReply, w);
}

bool DecodeReply(const uint8_t* p, size_t n, Reply* rep) {
  wire::Reader r(p, n);
  // The dialer returns the status as an HcclResult: a value the enum cannot hold (a stranger's
  // bytes) reads as HCCL_E_INTERNAL (common/hccl_result.h).
  rep->status = static_cast<uint32_t>(ToHcclResult(r.U32()));
  rep->message = r.Str(4096);
  rep->pid = r.U32();
  rep->doorbell_fd = r.U32();
  return r.ok();
}

HcclResult ReadReply(net::Socket& s, SteadyClock::time_point deadline, Reply* rep,
                     std::string* error) {
  uint8_t hdr[kHeaderBytes];
  HcclResult rc = s.RecvAll(hdr, sizeof(hdr), deadline, error);
  if (rc != HCCL_SUCCESS) return rc;
  wire::Reader h(hdr, sizeof(hdr));
  uint32_t magic = h.U32();
  uint16_t version = h.U16();
  uint16_t kind = h.U16();
  uint32_t len = h.U32();
  if (magic != kLinkMagic || version != kLinkVersion || kind != kReply || len > kMaxHandshake) {
    if (error) *error = fmt::format("invalid handshake reply from {}", s.PeerAddress());
    return HCCL_E_INTERNAL;
  }
  std::vector<uint8_t> payload(len);
  rc = s.RecvAll(payload.data(), len, deadline, error);
  if (rc != HCCL_SUCCESS) return rc;
  if (!DecodeReply(payload.data(), len, rep)) {
    if (error) *error = "malformed handshake reply";
    return HCCL_E_INTERNAL;
  }
  return HCCL_SUCCESS;
}


}  // namespace vigil::transport
