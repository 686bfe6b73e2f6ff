// Plog lines naming a rank's identity and the peer it waits for (see rank_lines.h for the forms).
#include "diagnose/rank_lines.h"

#include <cctype>
#include <optional>
#include <string>

#include "diagnose/text_util.h"

namespace vigil::diagnose {
namespace {

bool Has(std::string_view s, std::string_view k) { return s.find(k) != std::string_view::npos; }

std::string Str(std::optional<std::string_view> v) { return v ? std::string(Trim(*v)) : std::string(); }

int64_t Int(std::optional<std::string_view> v) {
  if (!v) return -1;
  auto x = ToInt(*v);
  return x ? *x : -1;
}

// The first of several keys that is present as "key[value]".
std::optional<std::string_view> AnyField(std::string_view s, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys)
    if (auto v = Field(s, k)) return v;
  return std::nullopt;
}

// "key:value" up to ',' (AICPU task-exception lines).
std::string ColonValue(std::string_view s, std::string_view key) {
  size_t from = 0;
  while (true) {
    size_t k = s.find(key, from);
    if (k == std::string_view::npos) return {};
    bool left_ok = k == 0 || !std::isalnum(static_cast<unsigned char>(s[k - 1]));
    size_t p = k + key.size();
    if (left_ok && p < s.size() && s[p] == ':') {
      size_t e = s.find(',', p + 1);
      return std::string(Trim(s.substr(p + 1, e == std::string_view::npos ? std::string_view::npos : e - p - 1)));
    }
    from = k + 1;
  }
}

// "51.38.67.141%enp189s0f0" → "51.38.67.141".
std::string HostOf(std::string v) {
  size_t pc = v.find('%');
  if (pc != std::string::npos) v.resize(pc);
  return v;
}

// "124.0.0.21(0)" → ip, rank.
bool IpRankCell(std::string_view cell, std::string* ip, int64_t* rank) {
  cell = Trim(cell);
  size_t o = cell.find('(');
  if (o == std::string_view::npos || o == 0 || cell.back() != ')') return false;
  std::string_view a = cell.substr(0, o);
  for (char ch : a)
    if (!(std::isxdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == ':')) return false;
  auto r = ToInt(cell.substr(o + 1, cell.size() - o - 2));
  if (!r) return false;
  *ip = std::string(a);
  *rank = *r;
  return true;
}

bool Identity(std::string_view c, Event* ev) {
  bool setup = Has(c, "SetupAgent rankNum");
  bool init_info = Has(c, "hcclCommInitInfo:");
  bool hcom = Has(c, "hcom init by file success");
  bool root_info = Has(c, "HcclCommInitRootInfo success") || Has(c, "HcclCommInitRootInfo failed");
  if (!setup && !init_info && !hcom && !root_info) return false;
  ev->kind = EventKind::kRankInfo;
  ev->name = setup ? "setup" : init_info ? "init_info" : hcom ? "hcom_init" : "root_info";
  ev->rank_size = Int(AnyField(c, {"rankNum", "totalRanks", "nRanks", "ranks"}));
  ev->rank = Int(Field(c, "rank"));
  ev->group = Str(AnyField(c, {"rootInfo identifier", "identifier"}));
  if (ev->group.empty() && hcom && Has(c, "hccl_world_group")) ev->group = "hccl_world_group";
  ev->device = Int(AnyField(c, {"logicDevId", "deviceLogicId"}));
  if (ev->device < 0 && hcom) ev->device = Int(Field(c, "device"));
  if (ev->device < 0) ev->device = -1;
  auto phy = Field(c, "phydevId");
  if (phy) ev->local_device = Str(phy);
  if (hcom && ev->local_device.empty() && ev->device >= 0) ev->local_device = std::to_string(ev->device);
  std::string ip = Str(Field(c, "deviceIp"));
  if (ip != "0.0.0.0") ev->local_ip = ip;
  ev->local_server = HostOf(Str(AnyField(c, {"server", "serverId"})));
  ev->detail = Has(c, "failed") ? "failed" : "";
  return true;
}

bool RootAndVnic(std::string_view c, Event* ev) {
  if (Has(c, "HcclGetRootInfo success")) {
    ev->kind = EventKind::kRankInfo;
    ev->name = "root";
    ev->group = Str(Field(c, "identifier"));
    return !ev->group.empty();
  }
  if (Has(c, "[Vnic]Listen on ip")) {
    ev->kind = EventKind::kRankInfo;
    ev->name = "vnic";
    ev->ip = Str(Field(c, "Listen on ip"));
    ev->local_device = Str(Field(c, "devPhyId"));
    ev->device = Int(Field(c, "devLogicId"));
    return !ev->ip.empty();
  }
  return false;
}

bool ConnectTimeout(std::string_view c, Event* ev) {
  if (!Has(c, "HCCL_CONNECT_TIMEOUT")) return false;
  std::string v;
  size_t k = c.find("HCCL_CONNECT_TIMEOUT set by");
  if (k != std::string_view::npos) {
    std::string_view x = c.substr(k);
    size_t b = x.find('[');
    if (b == std::string_view::npos) return false;
    v = std::string(x.substr(b + 1, x.find(']', b) - b - 1));
    ev->from_env = Has(x, "environment");
  } else if (Has(c, "is set, timeOut[")) {
    v = Str(Field(c, "timeOut"));
    ev->from_env = true;
  } else {
    return false;
  }
  size_t dot = v.find('.');
  if (dot != std::string::npos) v.resize(dot);
  if (!ToInt(v)) return false;
  ev->kind = EventKind::kEnv;
  ev->name = "HCCL_CONNECT_TIMEOUT";
  ev->value = v;
  return true;
}

bool Waits(std::string_view c, Event* ev) {
  // LINK_ERROR_INFO rows: | dest(rank) | [port |] src(rank) | [port |] role | status |
  if (c.find('|') != std::string_view::npos && (Has(c, "| no connect") || Has(c, "| time out"))) {
    std::string ips[2];
    int64_t ranks[2] = {-1, -1};
    int n = 0;
    size_t p = c.find('|');
    while (p != std::string_view::npos && n < 2) {
      size_t q = c.find('|', p + 1);
      if (q == std::string_view::npos) break;
      if (IpRankCell(c.substr(p + 1, q - p - 1), &ips[n], &ranks[n])) ++n;
      p = q;
    }
    if (n == 2) {
      ev->kind = EventKind::kWaitPeer;
      ev->detail = "socket";
      ev->remote_ip = ips[0];
      ev->dst_rank = ranks[0];
      ev->local_ip = ips[1];
      ev->src_rank = ranks[1];
      ev->status = Has(c, "| no connect") ? "no connect" : "time out";
      return true;
    }
    return false;
  }
  if (Has(c, "connected p2p timeout") && Has(c, "remote physic id:")) {
    ev->kind = EventKind::kWaitPeer;
    ev->detail = "p2p";
    size_t k = c.find("remote physic id:") + 17;
    std::string_view x = c.substr(k);
    size_t e = 0;
    while (e < x.size() && std::isdigit(static_cast<unsigned char>(x[e]))) ++e;
    ev->remote_device = std::string(x.substr(0, e));
    return !ev->remote_device.empty();
  }
  if (Has(c, "[TaskException]base information is") && Has(c, "NOTIFY WAIT")) {
    ev->kind = EventKind::kWaitPeer;
    ev->detail = "aicpu";
    ev->rank = Int(ColonValue(c, "localRank"));
    ev->remote_rank = Int(ColonValue(c, "remoteRank"));
    if (ev->remote_rank >= 0xFFFFFFFFll) ev->remote_rank = -1;  // "unknown"
    return true;
  }
  if (Has(c, "[TaskException]opData information is")) {
    ev->kind = EventKind::kWaitPeer;
    ev->detail = "aicpu_op";
    ev->group = ColonValue(c, "group");
    ev->tag = ColonValue(c, "tag");
    ev->index = Int(ColonValue(c, "opIndex"));
    return true;
  }
  return false;
}

bool RootInfo(std::string_view c, Event* ev) {
  if (Has(c, "receive msg length from fdhandle failed") || Has(c, "receive from fdhandle failed")) {
    ev->kind = EventKind::kRootInfoFail;
    ev->detail = "recv";
    return true;
  }
  size_t k = c.find("connected rankinfo[");
  if (k != std::string_view::npos) {
    size_t colon = c.find(':', k);
    if (colon == std::string_view::npos) return false;
    ev->kind = EventKind::kConnectedRanks;
    ev->ranks = AllInts(c.substr(colon + 1));
    return true;
  }
  return false;
}

bool Cqe(std::string_view c, Event* ev) {
  size_t k = c.find("cqe err status[");
  if (k == std::string_view::npos) k = c.find("cqe error status[");
  if (k == std::string_view::npos || Has(c, "CQE ERROR]")) return false;
  std::string_view x = c.substr(k);
  ev->kind = EventKind::kCqeDetail;
  ev->status = Str(Field(x, "status"));
  ev->aux_time = ParseAnyTime(Field(x, "time:").value_or(std::string_view()));
  std::string_view braced;
  size_t b = x.find("remoteIP{");
  if (b != std::string_view::npos) {
    braced = x.substr(b + 9, x.find('}', b) == std::string_view::npos ? std::string_view::npos : x.find('}', b) - b - 9);
    ev->remote_ip = Str(Field(braced, "deviceIp"));
    ev->remote_device = Str(Field(braced, "deviceId"));
  }
  if (ev->remote_ip.empty()) ev->remote_ip = Str(AnyField(x, {"remoteIP:", "ip:"}));
  return true;
}

}  // namespace

bool MayBeRankLine(std::string_view c) {
  return Has(c, "SetupAgent") || Has(c, "hcclCommInitInfo") || Has(c, "hcom init by file") ||
         Has(c, "HcclGetRootInfo success") || Has(c, "HcclCommInitRootInfo") || Has(c, "Listen on ip") ||
         Has(c, "HCCL_CONNECT_TIMEOUT");
}

bool ParseRankLine(const Record& r, Event* ev) {
  std::string_view c = r.content;
  bool is_error = r.level == Level::kError;
  if (!is_error && !MayBeRankLine(c)) return false;
  if (Identity(c, ev) || RootAndVnic(c, ev) || ConnectTimeout(c, ev)) return true;
  if (!is_error) return false;
  return Waits(c, ev) || RootInfo(c, ev) || Cqe(c, ev);
}

}  // namespace vigil::diagnose
