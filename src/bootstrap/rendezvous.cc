// The rank side of the rendezvous: connect to the root (retrying while it is not listening yet),
// send our RankInfo, wait for the table or an error. Bounded by HCCL_CONNECT_TIMEOUT to reach
// the root, plus a grace period for its answer (the root's own wait starts at the first arrival
// and it answers with the reason, so ranks should hear that rather than time out themselves).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "bootstrap/auth.h"
#include "bootstrap/rendezvous_server.h"
#include "bootstrap/root_info.h"
#include "bootstrap/socket.h"
#include "common/env_config.h"
#include "common/error_codes.h"
#include "log/plog.h"

namespace vigil::bootstrap {

namespace {

std::atomic<MaintenancePortProvider> g_maint_port_provider{nullptr};

HcclResult Fail(HcclResult code, const std::string& message, const std::string& screen_code,
                const std::vector<std::string>& screen_args, std::string* error) {
  const char* stage = screen_code == "EI0005"   ? "[InitChannelStage][ParameterConflict]"
                      : screen_code == "EI0006" ? "[InitGroupStage][Timeout]"
                                                : "[InitGroupStage][RanktableDetect]";
  HCCL_ERROR("{}{}", stage, message);
  if (screen_code == "EI0005" && screen_args.size() >= 5 && screen_args[2] == "buffsize") {
    // HCCL's own line for it, in bytes as HCCL prints cclbufferSize.
    auto bytes = [](const std::string& mb) {
      return std::to_string(std::strtoull(mb.c_str(), nullptr, 10) * 1024 * 1024);
    };
    HCCL_ERROR("{}{}", kCmdCheckFailStage,
               RenderCmdCheckFail("cclbufferSize", bytes(screen_args[3]), bytes(screen_args[4])));
  }
  if (!screen_code.empty()) log::ScreenError(screen_code, screen_args);
  if (error) *error = message;
  return code;
}

}  // namespace

void SetMaintenancePortProvider(MaintenancePortProvider provider) {
  g_maint_port_provider.store(provider);
}

HcclResult Rendezvous(const RootInfo& root, const RankInfo& self_in, std::vector<RankInfo>* all,
                      std::string* error) {
  RankInfo self = self_in;
  if (self.maint_port == 0) {
    if (MaintenancePortProvider provider = g_maint_port_provider.load()) {
      self.maint_port = provider(self.host_ip);
    }
  }
  if (self.nranks == 0 || self.rank >= self.nranks) {
    return Fail(HCCL_E_PARA,
                fmt::format("rank[{}] is out of range for rankSize[{}]", self.rank, self.nranks),
                "", {}, error);
  }
  const uint32_t timeout_s = Env().connect_timeout_s;
  const auto start = SteadyClock::now();
  const auto connect_deadline = start + std::chrono::seconds(timeout_s);
  const auto answer_deadline =
      connect_deadline + std::chrono::seconds(std::clamp<uint32_t>(timeout_s, 2, 20));

  net::Socket sock;
  std::string why;
  HcclResult rc = net::Connect(root.host_ip, root.port, connect_deadline, &sock, &why);
  if (rc != HCCL_SUCCESS) {
    std::string reason = fmt::format(
        "rank[{}] could not reach the root of communicator [{}] at {}:{} within "
        "HCCL_CONNECT_TIMEOUT [{}s]: {}",
        self.rank, root.identifier, root.host_ip, root.port, timeout_s, why);
    return Fail(rc == HCCL_E_TIMEOUT ? HCCL_E_TIMEOUT : HCCL_E_TCP_CONNECT,
                "topo exchange agent get socket timeout: " + reason, "EI0006", {reason}, error);
  }

  rc = auth::AuthenticateDialer(sock, auth::Purpose::kRendezvous, root.key, connect_deadline, &why);
  if (rc != HCCL_SUCCESS) {
    std::string reason = fmt::format(
        "rank[{}] and the root of communicator [{}] at {}:{} did not prove one job key to each "
        "other (do all ranks have the same root info, or VIGIL_JOB_KEY?): {}",
        self.rank, root.identifier, root.host_ip, root.port, why);
    if (rc == HCCL_E_TIMEOUT) {
      return Fail(HCCL_E_TIMEOUT, "topo exchange agent get socket timeout: " + reason, "EI0006",
                  {reason}, error);
    }
    return Fail(HCCL_E_PARA, reason, "", {}, error);
  }

  wire::Writer hello;
  hello.Str(root.identifier);
  rdv::PutRankInfo(&hello, self);
  std::vector<uint8_t> frame = rdv::Frame(rdv::kHello, hello);
  rc = sock.SendAll(frame.data(), frame.size(), connect_deadline, &why);
  if (rc != HCCL_SUCCESS) {
    return Fail(HCCL_E_TCP_TRANSFER,
                fmt::format("rank[{}] could not send its information to the root {}:{}: {}",
                            self.rank, root.host_ip, root.port, why),
                "", {}, error);
  }

  uint8_t header[rdv::kHeaderBytes];
  rc = sock.RecvAll(header, sizeof(header), answer_deadline, &why);
  if (rc != HCCL_SUCCESS) {
    std::string reason = fmt::format(
        "rank[{}] got no answer from the root of communicator [{}] at {}:{} within "
        "HCCL_CONNECT_TIMEOUT [{}s]: {}",
        self.rank, root.identifier, root.host_ip, root.port, timeout_s, why);
    return Fail(rc == HCCL_E_TIMEOUT ? HCCL_E_TIMEOUT : HCCL_E_TCP_TRANSFER,
                "topo exchange agent get socket timeout: " + reason, "EI0006", {reason}, error);
  }
  wire::Reader h(header, sizeof(header));
  uint32_t magic = h.U32();
  uint16_t version = h.U16();
  uint16_t type = h.U16();
  uint32_t len = h.U32();
  if (magic != rdv::kMagic || version != rdv::kVersion ||
      (type != rdv::kTable && type != rdv::kError) || len > rdv::kMaxTable) {
    return Fail(HCCL_E_INTERNAL,
                fmt::format("the root {}:{} answered with an invalid message (magic[0x{:08x}] "
                            "version[{}] type[{}] length[{}]); is it a Vigil root?",
                            root.host_ip, root.port, magic, version, type, len),
                "", {}, error);
  }
  std::vector<uint8_t> payload(len);
  rc = sock.RecvAll(payload.data(), len, answer_deadline, &why);
  if (rc != HCCL_SUCCESS) {
    return Fail(rc, fmt::format("reading the root's answer failed: {}", why), "", {}, error);
  }
  wire::Reader r(payload.data(), payload.size());
  if (type == rdv::kError) {
    rdv::ErrorReply e = rdv::GetError(&r);
    if (!r.ok()) return Fail(HCCL_E_INTERNAL, "malformed error answer from the root", "", {}, error);
    return Fail(e.code == HCCL_SUCCESS ? HCCL_E_INTERNAL : e.code,
                fmt::format("rank[{}] of communicator [{}]: {}", self.rank, root.identifier,
                            e.message),
                e.screen_code, e.screen_args, error);
  }
  if (!rdv::DecodeTable(payload.data(), payload.size(), self.nranks, all)) {
    return Fail(HCCL_E_INTERNAL,
                fmt::format("malformed rank table from the root ({} entries for rankSize[{}])",
                            wire::Reader(payload.data(), payload.size()).U32(), self.nranks),
                "", {}, error);
  }
  return HCCL_SUCCESS;
}

}  // namespace vigil::bootstrap
