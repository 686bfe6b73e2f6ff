// HcclRootInfo bytes and the two ways a rendezvous server is started (HcclGetRootInfo, and
// rank 0 of a rank-table job).
//
// Layout of HcclRootInfo.internal (little endian):
//   [0,4) magic "VGRI"  [4,6) version  [6,8) reserved  [8,12) payload length  [12,16) FNV-1a of
//   the payload  [16, 16+len) payload = port u16, host ip, ifname, identifier (u32-length strings)
// The rest is zero. The checksum catches truncated copies and random bytes.
#include <arpa/inet.h>

#include <fmt/format.h>

#include <openssl/crypto.h>

#include <cstring>

#include "bootstrap/rendezvous_server.h"
#include "bootstrap/root_info.h"
#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::bootstrap {

namespace {

constexpr uint32_t kRootMagic = 0x49524756;  // "VGRI"
constexpr uint16_t kRootVersion = 2;  // 2: with the job key
constexpr size_t kRootHeader = 16;
constexpr size_t kMaxIdentifier = 128;  // HCCL's identifier limit
constexpr uint32_t kRootPortRange = 32;  // HCCL_IF_BASE_PORT .. +31

void Encode(const RootInfo& info, HcclRootInfo* out) {
  wire::Writer payload;
  payload.U16(info.port);
  payload.Str(info.host_ip);
  payload.Str(info.ifname);
  payload.Str(info.identifier);
  payload.U8(info.key.given ? 1 : 0);
  payload.Bytes(info.key.bytes.data(), info.key.bytes.size());
  wire::Writer w;
  w.U32(kRootMagic);
  w.U16(kRootVersion);
  w.U16(0);
  w.U32(static_cast<uint32_t>(payload.size()));
  w.U32(wire::Fnv1a(payload.data().data(), payload.size()));
  w.Bytes(payload.data().data(), payload.size());
  std::memset(out->internal, 0, sizeof(out->internal));
  std::memcpy(out->internal, w.data().data(), std::min(w.size(), sizeof(out->internal)));
  OPENSSL_cleanse(payload.data().data(), payload.size());
  OPENSSL_cleanse(w.data().data(), w.size());
}

// Raises EI0019 and logs HCCL's listen-failure line (socket type 2 = host root).
void ReportBindFailure(const std::string& ip, const std::string& ports, const std::string& why) {
  HCCL_ERROR("[InitGroupStage][Listen]socket type[2], listen on ip[{}] port[{}] fail, "
             "reason[{}]",
             ip, ports, why);
  log::ScreenError("EI0019", {fmt::format("listen on ip[{}] port[{}] failed: {}", ip, ports, why)});
}

}  // namespace

HcclResult CreateRootInfo(HcclRootInfo* out, RootInfo* info, const auth::JobKey* key) {
  if (out == nullptr) return HCCL_E_PTR;
  const EnvConfig& env = Env();
  ServerSpec spec;
  std::string error;
  if (key != nullptr) {
    spec.key = *key;
  } else if (!auth::ProcessJobKey(&spec.key, &error)) {
    HCCL_ERROR("[InitGroupStage][Auth]no job key for the root info: {}", error);
    return HCCL_E_PARA;
  }
  spec.ip = net::PickHostIp(&spec.ifname);
  spec.first_port = static_cast<uint16_t>(env.if_base_port);
  spec.port_count = kRootPortRange;
  RootInfo local;
  HcclResult rc = StartRendezvousServer(spec, &local, &error);
  if (rc != HCCL_SUCCESS) {
    std::string ports =
        spec.first_port == 0
            ? std::string("0")
            : fmt::format("{}-{}", spec.first_port,
                          std::min<uint32_t>(65535, spec.first_port + kRootPortRange - 1));
    ReportBindFailure(spec.ip, ports, error);
    return rc;
  }
  Encode(local, out);
  if (info != nullptr) *info = local;
  return HCCL_SUCCESS;
}

HcclResult DecodeRootInfo(const HcclRootInfo& in, RootInfo* info, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = "invalid root info: " + why;
    return HCCL_E_PARA;
  };
  wire::Reader h(in.internal, kRootHeader);
  uint32_t magic = h.U32();
  uint16_t version = h.U16();
  (void)h.U16();
  uint32_t len = h.U32();
  uint32_t sum = h.U32();
  if (magic != kRootMagic) {
    return fail(fmt::format("bad magic [0x{:08x}] (expected [0x{:08x}]); the bytes were not "
                            "produced by HcclGetRootInfo or were corrupted in transit",
                            magic, kRootMagic));
  }
  if (version != kRootVersion) {
    return fail(fmt::format("version [{}] is not supported (expected [{}])", version, kRootVersion));
  }
  if (len > sizeof(in.internal) - kRootHeader) {
    return fail(fmt::format("payload length [{}] exceeds the {} available bytes", len,
                            sizeof(in.internal) - kRootHeader));
  }
  const char* payload = in.internal + kRootHeader;
  if (wire::Fnv1a(payload, len) != sum) {
    return fail("checksum mismatch (the root info was truncated or modified)");
  }
  wire::Reader r(payload, len);
  RootInfo out;
  out.port = r.U16();
  out.host_ip = r.Str(64);
  out.ifname = r.Str(64);
  out.identifier = r.Str(kMaxIdentifier);
  const uint8_t key_flags = r.U8();
  out.key.given = key_flags == 1;
  for (uint8_t& b : out.key.bytes) b = r.U8();
  if (!r.ok() || r.remaining() != 0 || key_flags > 1) return fail("malformed payload");
  in_addr addr;
  if (inet_pton(AF_INET, out.host_ip.c_str(), &addr) != 1) {
    return fail(fmt::format("host ip [{}] is not an IPv4 address", out.host_ip));
  }
  if (out.port == 0) return fail("port [0] is invalid");
  if (out.identifier.empty()) return fail("empty identifier");
  auth::AdoptJobKey(out.key);
  if (info) *info = out;
  return HCCL_SUCCESS;
}

HcclResult RootInfoFromRankTable(const RankTable& table, uint32_t my_rank, RootInfo* root,
                                 std::string* error) {
  if (table.ranks.empty()) {
    if (error) *error = "rank table has no ranks";
    return HCCL_E_PARA;
  }
  if (my_rank >= table.ranks.size()) {
    if (error) {
      *error = fmt::format("rank[{}] is out of range: the rank table has {} ranks", my_rank,
                           table.ranks.size());
    }
    return HCCL_E_PARA;
  }
  const EnvConfig& env = Env();
  if (env.if_base_port == 0) {
    if (error) {
      *error = "HCCL_IF_BASE_PORT=0 (kernel-chosen) cannot be used with a rank table: every rank "
               "must know rank 0's rendezvous port in advance";
    }
    return HCCL_E_PARA;
  }
  const RankTableEntry& first = table.ranks.front();
  in_addr addr;
  if (inet_pton(AF_INET, first.server_id.c_str(), &addr) != 1) {
    if (error) {
      *error = fmt::format("server_id [{}] of rank 0 is not an IPv4 address; Vigil reaches rank 0 "
                           "at its server_id",
                           first.server_id);
    }
    return HCCL_E_PARA;
  }
  RootInfo out;
  out.host_ip = first.server_id;
  out.port = static_cast<uint16_t>(env.if_base_port);
  out.identifier = "hccl_world_group";
  if (!auth::RankTableJobKey(&out.key, error)) return HCCL_E_PARA;
  if (my_rank == 0) {
    ServerSpec spec;
    spec.key = out.key;
    spec.ip = first.server_id;
    spec.first_port = out.port;
    spec.port_count = 1;  // the others only know this one port
    spec.identifier = out.identifier;
    RootInfo started;
    std::string why;
    HcclResult rc = StartRendezvousServer(spec, &started, &why);
    if (rc != HCCL_SUCCESS) {
      ReportBindFailure(spec.ip, std::to_string(spec.first_port), why);
      if (error) *error = fmt::format("rank 0 could not listen on {}:{}: {}", spec.ip, spec.first_port, why);
      return rc;
    }
  }
  if (root) *root = out;
  return HCCL_SUCCESS;
}

}  // namespace vigil::bootstrap
