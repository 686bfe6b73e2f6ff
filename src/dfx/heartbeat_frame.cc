#include "dfx/heartbeat_frame.h"

#include <algorithm>

#include "bootstrap/wire.h"

namespace vigil::dfx {

namespace {

constexpr size_t kHeaderBytes = 5;
constexpr size_t kMaxComms = 1024;

std::vector<uint8_t> Frame(FrameType type, const wire::Writer& body) {
  wire::Writer w;
  w.U32(static_cast<uint32_t>(body.size()));
  w.U8(static_cast<uint8_t>(type));
  w.Bytes(body.data().data(), body.size());
  return std::move(w.data());
}

void PutCounters(wire::Writer& w, const std::vector<CommCounters>& v) {
  const size_t n = std::min(v.size(), kMaxComms);
  w.U32(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.U64(v[i].comm_key);
    w.U32(v[i].rank);
    w.U64(v[i].in);
    w.U64(v[i].out);
  }
}

bool GetCounters(wire::Reader& r, std::vector<CommCounters>* v) {
  const uint32_t n = r.U32();
  if (!r.ok() || n > kMaxComms) return false;
  v->clear();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    CommCounters c;
    c.comm_key = r.U64();
    c.rank = r.U32();
    c.in = r.U64();
    c.out = r.U64();
    v->push_back(c);
  }
  return r.ok();
}

}  // namespace

std::vector<uint8_t> EncodeHello(const HelloFrame& f) {
  wire::Writer w;
  w.U32(kHbMagic);
  w.U16(kHbVersion);
  w.Str(f.host_ip);
  w.U16(f.port);
  w.U32(f.pid);
  return Frame(FrameType::kHello, w);
}

std::vector<uint8_t> EncodeBeat(const BeatFrame& f) {
  wire::Writer w;
  PutCounters(w, f.comms);
  if (!f.heard.empty()) PutCounters(w, f.heard);
  return Frame(FrameType::kBeat, w);
}

std::vector<uint8_t> EncodeEvent(const EventFrame& f) {
  wire::Writer w;
  w.Str(f.crimer);
  w.Str(f.informer);
  w.U8(static_cast<uint8_t>(f.status));
  w.U64(f.discovered_us);
  return Frame(FrameType::kEvent, w);
}

std::vector<uint8_t> EncodeBye() {
  return Frame(FrameType::kBye, wire::Writer());
}

std::vector<uint8_t> EncodeQuery() {
  wire::Writer w;
  w.U32(kHbMagic);
  w.U16(kHbVersion);
  return Frame(FrameType::kQuery, w);
}

std::vector<uint8_t> EncodeReply(const std::string& json) {
  wire::Writer w;
  w.Str(json);
  return Frame(FrameType::kReply, w);
}

std::vector<uint8_t> EncodeAgree(const std::vector<uint8_t>& body) {
  wire::Writer w;
  w.Bytes(body.data(), body.size());
  return Frame(FrameType::kAgree, w);
}

bool DecodeHello(const std::vector<uint8_t>& body, HelloFrame* f) {
  wire::Reader r(body.data(), body.size());
  if (r.U32() != kHbMagic || r.U16() != kHbVersion) return false;
  f->host_ip = r.Str(256);
  f->port = r.U16();
  f->pid = r.U32();
  return r.ok();
}

bool DecodeBeat(const std::vector<uint8_t>& body, BeatFrame* f) {
  wire::Reader r(body.data(), body.size());
  f->heard.clear();
  if (!GetCounters(r, &f->comms)) return false;
  return r.remaining() == 0 || GetCounters(r, &f->heard);
}

bool DecodeEvent(const std::vector<uint8_t>& body, EventFrame* f) {
  wire::Reader r(body.data(), body.size());
  f->crimer = r.Str(512);
  f->informer = r.Str(512);
  const uint8_t st = r.U8();
  f->discovered_us = r.U64();
  if (!r.ok() || st == 0 || st > static_cast<uint8_t>(HbStatus::kCqe)) return false;
  f->status = static_cast<HbStatus>(st);
  return true;
}

bool DecodeReply(const std::vector<uint8_t>& body, std::string* json) {
  wire::Reader r(body.data(), body.size());
  *json = r.Str(kMaxFrameBody);
  return r.ok();
}

bool FrameReader::Next(FrameType* type, std::vector<uint8_t>* body, bool* bad) {
  *bad = false;
  const size_t avail = buf_.size() - pos_;
  if (avail < kHeaderBytes) return false;
  wire::Reader r(buf_.data() + pos_, kHeaderBytes);
  const uint32_t len = r.U32();
  const uint8_t t = r.U8();
  if (len > kMaxFrameBody || t < static_cast<uint8_t>(FrameType::kHello) ||
      t > static_cast<uint8_t>(FrameType::kAgree)) {
    *bad = true;
    return false;
  }
  if (avail < kHeaderBytes + len) return false;
  *type = static_cast<FrameType>(t);
  body->assign(buf_.begin() + static_cast<std::ptrdiff_t>(pos_ + kHeaderBytes),
               buf_.begin() + static_cast<std::ptrdiff_t>(pos_ + kHeaderBytes + len));
  pos_ += kHeaderBytes + len;
  // Compact once the consumed prefix dominates, so the buffer does not grow forever.
  if (pos_ > 4096 && pos_ * 2 > buf_.size()) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
    pos_ = 0;
  }
  return true;
}

uint64_t CommKey(const std::string& identifier) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : identifier) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace vigil::dfx
