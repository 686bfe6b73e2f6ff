#include "dfx/agreement_msg.h"

#include "bootstrap/wire.h"
#include "dfx/heartbeat_frame.h"
#include "hccl/hccl_types.h"

namespace vigil::dfx {

namespace {

constexpr uint32_t kAgreeMagic = 0x47414756;  // "VGAG"
constexpr uint16_t kAgreeVersion = 1;
constexpr uint32_t kMaxRanks = 1u << 20;

void PutSet(wire::Writer* w, const std::set<uint32_t>& s) {
  w->U32(static_cast<uint32_t>(s.size()));
  for (uint32_t r : s) w->U32(r);
}

bool GetSet(wire::Reader* r, std::set<uint32_t>* s) {
  const uint32_t n = r->U32();
  if (!r->ok() || n > kMaxRanks || n > r->remaining() / 4) return false;
  for (uint32_t i = 0; i < n; ++i) s->insert(r->U32());
  return r->ok();
}

}  // namespace

std::vector<uint8_t> EncodeAgreeMsg(const AgreeMsg& m) {
  wire::Writer w;
  w.U32(kAgreeMagic);
  w.U16(kAgreeVersion);
  w.U8(static_cast<uint8_t>(m.kind));
  w.Str(m.identifier);
  w.U32(m.round);
  w.U32(m.from);
  w.U32(m.to);
  w.U32(m.seq);
  w.U8(m.from_view ? 1 : 0);
  PutSet(&w, m.exclude);
  w.U8(m.ok ? 1 : 0);
  w.Str(m.root);
  w.Str(m.error);
  w.U32(static_cast<uint32_t>(m.views.size()));
  for (const ShrinkView& v : m.views) {
    w.U32(v.rank);
    w.U8(v.from_view ? 1 : 0);
    PutSet(&w, v.exclude);
  }
  return EncodeAgree(w.data());
}

bool DecodeAgreeMsg(const std::vector<uint8_t>& body, AgreeMsg* m) {
  wire::Reader r(body.data(), body.size());
  if (r.U32() != kAgreeMagic || r.U16() != kAgreeVersion) return false;
  const uint8_t kind = r.U8();
  if (kind != static_cast<uint8_t>(AgreeKind::kPropose) && kind != static_cast<uint8_t>(AgreeKind::kDecide)) {
    return false;
  }
  m->kind = static_cast<AgreeKind>(kind);
  m->identifier = r.Str(512);
  m->round = r.U32();
  m->from = r.U32();
  m->to = r.U32();
  m->seq = r.U32();
  m->from_view = r.U8() != 0;
  if (!GetSet(&r, &m->exclude)) return false;
  m->ok = r.U8() != 0;
  m->root = r.Str(HCCL_ROOT_INFO_BYTES);
  m->error = r.Str(64 * 1024);
  const uint32_t nviews = r.U32();
  if (!r.ok() || nviews > kMaxRanks) return false;
  for (uint32_t i = 0; i < nviews && r.ok(); ++i) {
    ShrinkView v;
    v.rank = r.U32();
    v.from_view = r.U8() != 0;
    if (!GetSet(&r, &v.exclude)) return false;
    m->views.push_back(std::move(v));
  }
  return r.ok();
}

}  // namespace vigil::dfx
