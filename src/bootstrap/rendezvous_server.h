// The root's rendezvous server (internal to bootstrap/): one thread per root info, owned by a
// process-wide registry that joins it when it is done or at exit. Wire protocol shared with the
// client side (rendezvous.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/root_info.h"
#include "bootstrap/wire.h"
#include "common/hccl_result.h"
#include "hccl/hccl_types.h"

namespace vigil::bootstrap {

struct ServerSpec {
  std::string ip;
  std::string ifname;
  uint16_t first_port = 0;  // 0 = kernel-chosen
  uint32_t port_count = 1;  // tries first_port .. first_port + port_count - 1
  std::string identifier;   // empty: HCCL's "IP%IFNAME_PORT_0_TIMESTAMPus" with the bound port
  auth::JobKey key;         // every rank proves it before its hello is read
};

// Binds, starts the server thread and fills *info. HCCL_E_UNAVAIL with *error naming the
// ports tried when none could be bound (the caller raises EI0019).
HcclResult StartRendezvousServer(const ServerSpec& spec, RootInfo* info, std::string* error);

// Test hook: how many server threads are still registered (running or not yet joined).
size_t RendezvousServersForTesting();

namespace rdv {

constexpr uint32_t kMagic = 0x56524456;  // "VDRV"
constexpr uint16_t kVersion = 1;
enum MsgType : uint16_t { kHello = 1, kTable = 2, kError = 3 };
constexpr size_t kHeaderBytes = 12;  // magic u32, version u16, type u16, payload length u32
constexpr uint32_t kMaxHello = 64 * 1024;
constexpr uint32_t kMaxTable = 64 * 1024 * 1024;

inline std::vector<uint8_t> Frame(MsgType type, const wire::Writer& payload) {
  wire::Writer w;
  w.U32(kMagic);
  w.U16(kVersion);
  w.U16(type);
  w.U32(static_cast<uint32_t>(payload.size()));
  w.Bytes(payload.data().data(), payload.size());
  return std::move(w.data());
}

inline void PutRankInfo(wire::Writer* w, const RankInfo& r) {
  w->U32(r.rank);
  w->U32(r.nranks);
  w->Str(r.host_ip);
  w->Str(r.host_id);
  w->U16(r.data_port);
  w->U32(r.pid);
  w->I32(r.device);
  w->U32(r.buffsize_mb);
  w->U32(r.exec_timeout_s);
  w->Str(r.transport);
  w->Str(r.op_check);
  w->U16(r.maint_port);
}

inline RankInfo GetRankInfo(wire::Reader* r) {
  RankInfo i;
  i.rank = r->U32();
  i.nranks = r->U32();
  i.host_ip = r->Str(256);
  i.host_id = r->Str(1024);
  i.data_port = r->U16();
  i.pid = r->U32();
  i.device = r->I32();
  i.buffsize_mb = r->U32();
  i.exec_timeout_s = r->U32();
  i.transport = r->Str(64);
  i.op_check = r->Str(16);
  i.maint_port = r->U16();
  return i;
}

// An error reply: the code, the text for the rank's ERROR line, and the screen error to raise
// (code empty = none).
struct ErrorReply {
  HcclResult code = HCCL_E_INTERNAL;
  std::string message;
  std::string screen_code;
  std::vector<std::string> screen_args;
};

inline void PutError(wire::Writer* w, const ErrorReply& e) {
  w->U32(static_cast<uint32_t>(e.code));
  w->Str(e.message);
  w->Str(e.screen_code);
  w->U32(static_cast<uint32_t>(e.screen_args.size()));
  for (const auto& a : e.screen_args) w->Str(a);
}

inline ErrorReply GetError(wire::Reader* r) {
  ErrorReply e;
  // A value HcclResult cannot hold (a stranger's bytes) would be undefined behaviour as an enum.
  const uint32_t code = r->U32();
  e.code = ToHcclResult(code);
  e.message = r->Str(64 * 1024);
  e.screen_code = r->Str(64);
  uint32_t n = r->U32();
  for (uint32_t i = 0; i < n && i < 16 && r->ok(); ++i) e.screen_args.push_back(r->Str(64 * 1024));
  return e;
}

// A rank's hello payload: the root info's identifier, then its RankInfo. False when malformed.
inline bool DecodeHello(const uint8_t* p, size_t n, std::string* identifier, RankInfo* info) {
  wire::Reader r(p, n);
  *identifier = r.Str(1024);
  *info = GetRankInfo(&r);
  return r.ok();
}

// The root's table payload: a count, then that many RankInfo. False when malformed, when the
// count is not `nranks` or an entry is out of order (entry i must be rank i).
inline bool DecodeTable(const uint8_t* p, size_t n, uint32_t nranks, std::vector<RankInfo>* all) {
  wire::Reader r(p, n);
  const uint32_t count = r.U32();
  std::vector<RankInfo> table;
  for (uint32_t i = 0; i < count && r.ok(); ++i) table.push_back(GetRankInfo(&r));
  bool ok = r.ok() && count == nranks;
  for (uint32_t i = 0; ok && i < count; ++i) ok = table[i].rank == i;
  if (ok) *all = std::move(table);
  return ok;
}

}  // namespace rdv
}  // namespace vigil::bootstrap
