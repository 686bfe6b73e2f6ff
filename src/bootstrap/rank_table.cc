// Rank table JSON (HcclCommInitClusterInfo).
//   1.0: {status:"completed", version:"1.0", server_count, server_list:[{server_id,
//         device:[{device_id, device_ip, rank_id}]}]}
//   2.0: the 1.0 form (extra per-device fields such as level_list are accepted), or
//        {status, version:"2.0", rank_count, rank_list:[{rank_id, device_id, server_id (or
//        host_ip), device_ip?, level_list?}]}.
// Numbers may be JSON numbers or decimal strings (HCCL's own files quote them). Every error names
// the file and the JSON path of the field; nlohmann is used in its non-throwing mode and a
// catch-all guards the rest, so no exception leaves this file.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "bootstrap/root_info.h"
#include "log/plog.h"

namespace vigil::bootstrap {

namespace {

using nlohmann::json;

struct Ctx {
  std::string path;
  HostResolver resolve = nullptr;  // nullptr: getaddrinfo
  std::string error;
  // Each server_id as written, with the JSON path of its first use (resolved after parsing).
  std::map<std::string, std::string> servers;
  bool Fail(const std::string& field, const std::string& why) {
    error = fmt::format("rank table [{}]: field [{}] {}", path, field, why);
    return false;
  }
};

bool IsIpv4(const std::string& text) {
  in_addr addr;
  return inet_pton(AF_INET, text.c_str(), &addr) == 1;
}

// A server_id may name its host instead of giving its address: the rest of the bootstrap reaches
// a server at its server_id, so a name becomes the IPv4 address it resolves to. A table of one
// server may give it any name (HCCL's own samples say "SERVER_ID_SV1"): that server is this host.
bool ResolveServers(Ctx& ctx, RankTable* table) {
  std::map<std::string, std::string> address;  // as written -> IPv4
  for (const auto& [name, field] : ctx.servers) {
    if (IsIpv4(name)) {
      address[name] = name;
      continue;
    }
    std::string resolved;
    if (ctx.resolve != nullptr) {
      if (ctx.resolve(name, &resolved) && IsIpv4(resolved)) {
        address[name] = resolved;
        continue;
      }
      if (ctx.servers.size() == 1) {
        address[name] = "127.0.0.1";
        continue;
      }
      return ctx.Fail(field, fmt::format("value [{}] is neither an IPv4 address nor a host name "
                                         "that resolves to one", name));
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(name.c_str(), nullptr, &hints, &found);
    if (rc == 0 && found != nullptr) {
      char text[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
                sizeof(text));
      freeaddrinfo(found);
      HCCL_RUN_INFO("[RanktableConfig]rank table [{}]: server_id [{}] resolved to [{}]", ctx.path,
                    name, text);
      address[name] = text;
    } else if (ctx.servers.size() == 1) {
      HCCL_RUN_INFO("[RanktableConfig]rank table [{}]: server_id [{}] is not a resolvable host; "
                    "the table has one server, so every rank is on this host (127.0.0.1)",
                    ctx.path, name);
      address[name] = "127.0.0.1";
    } else {
      return ctx.Fail(field, fmt::format("value [{}] is neither an IPv4 address nor a host name "
                                         "that resolves to one ({}): with {} servers in the "
                                         "table, give each server's IPv4 address, or make the "
                                         "name resolvable on every node (/etc/hosts or DNS)",
                                         name, rc != 0 ? gai_strerror(rc) : "no address",
                                         ctx.servers.size()));
    }
  }
  for (RankTableEntry& e : table->ranks) e.server_id = address[e.server_id];
  return true;
}

bool GetString(Ctx& ctx, const json& obj, const std::string& key, const std::string& where,
               std::string* out, bool required = true) {
  auto it = obj.find(key);
  std::string field = where.empty() ? key : where + "." + key;
  if (it == obj.end()) {
    if (!required) return true;
    return ctx.Fail(field, "is missing");
  }
  if (!it->is_string()) return ctx.Fail(field, fmt::format("must be a string, got {}", it->dump()));
  *out = it->get<std::string>();
  if (required && out->empty()) return ctx.Fail(field, "is empty");
  return true;
}

bool GetUint(Ctx& ctx, const json& obj, const std::string& key, const std::string& where,
             uint64_t max, uint64_t* out, bool required = true) {
  auto it = obj.find(key);
  std::string field = where.empty() ? key : where + "." + key;
  if (it == obj.end()) {
    if (!required) return true;
    return ctx.Fail(field, "is missing");
  }
  uint64_t v = 0;
  if (it->is_number_unsigned()) {
    v = it->get<uint64_t>();
  } else if (it->is_number_integer()) {
    int64_t s = it->get<int64_t>();
    if (s < 0) return ctx.Fail(field, fmt::format("value [{}] must not be negative", s));
    v = static_cast<uint64_t>(s);
  } else if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
      return ctx.Fail(field, fmt::format("value [{}] is not a non-negative integer", s));
    }
    v = std::stoull(s);
  } else {
    return ctx.Fail(field, fmt::format("must be an integer, got {}", it->dump()));
  }
  if (v > max) return ctx.Fail(field, fmt::format("value [{}] is out of range [0, {}]", v, max));
  *out = v;
  return true;
}

bool ParseServerList(Ctx& ctx, const json& root, RankTable* table) {
  auto it = root.find("server_list");
  if (!it->is_array() || it->empty()) return ctx.Fail("server_list", "must be a non-empty array");
  uint64_t server_count = 0;
  if (!GetUint(ctx, root, "server_count", "", 1u << 20, &server_count, false)) return false;
  if (root.contains("server_count") && server_count != it->size()) {
    return ctx.Fail("server_count", fmt::format("value [{}] does not match the {} entries of "
                                                "server_list",
                                                server_count, it->size()));
  }
  for (size_t s = 0; s < it->size(); ++s) {
    const json& server = (*it)[s];
    std::string where = fmt::format("server_list[{}]", s);
    if (!server.is_object()) return ctx.Fail(where, "must be an object");
    std::string server_id;
    if (!GetString(ctx, server, "server_id", where, &server_id)) return false;
    ctx.servers.emplace(server_id, where + ".server_id");
    auto dev = server.find("device");
    if (dev == server.end()) return ctx.Fail(where + ".device", "is missing");
    if (!dev->is_array() || dev->empty()) {
      return ctx.Fail(where + ".device", "must be a non-empty array");
    }
    for (size_t d = 0; d < dev->size(); ++d) {
      const json& device = (*dev)[d];
      std::string dwhere = fmt::format("{}.device[{}]", where, d);
      if (!device.is_object()) return ctx.Fail(dwhere, "must be an object");
      RankTableEntry e;
      e.server_id = server_id;
      uint64_t v = 0;
      if (!GetUint(ctx, device, "device_id", dwhere, 1023, &v)) return false;
      e.device_id = static_cast<int32_t>(v);
      if (!GetUint(ctx, device, "rank_id", dwhere, (1u << 20) - 1, &v)) return false;
      e.rank = static_cast<uint32_t>(v);
      if (!GetString(ctx, device, "device_ip", dwhere, &e.device_ip, false)) return false;
      table->ranks.push_back(e);
    }
  }
  return true;
}

bool ParseRankList(Ctx& ctx, const json& root, RankTable* table) {
  auto it = root.find("rank_list");
  if (!it->is_array() || it->empty()) return ctx.Fail("rank_list", "must be a non-empty array");
  uint64_t rank_count = 0;
  if (!GetUint(ctx, root, "rank_count", "", 1u << 20, &rank_count, false)) return false;
  if (root.contains("rank_count") && rank_count != it->size()) {
    return ctx.Fail("rank_count", fmt::format("value [{}] does not match the {} entries of "
                                              "rank_list",
                                              rank_count, it->size()));
  }
  std::string unnamed;  // the first rank that names no server
  for (size_t i = 0; i < it->size(); ++i) {
    const json& r = (*it)[i];
    std::string where = fmt::format("rank_list[{}]", i);
    if (!r.is_object()) return ctx.Fail(where, "must be an object");
    RankTableEntry e;
    uint64_t v = 0;
    if (!GetUint(ctx, r, "rank_id", where, (1u << 20) - 1, &v)) return false;
    e.rank = static_cast<uint32_t>(v);
    if (!GetUint(ctx, r, "device_id", where, 1023, &v)) return false;
    e.device_id = static_cast<int32_t>(v);
    std::string host_ip;
    if (!GetString(ctx, r, "host_ip", where, &host_ip, false)) return false;
    if (r.contains("server_id")) {
      if (!GetString(ctx, r, "server_id", where, &e.server_id)) return false;
      // A named server with its address beside it: the address, no lookup.
      if (!IsIpv4(e.server_id) && IsIpv4(host_ip)) e.server_id = host_ip;
    } else if (!host_ip.empty()) {
      e.server_id = host_ip;
    }
    // No server named: fine only when no rank names one (one server, this host; below).
    if (!e.server_id.empty()) ctx.servers.emplace(e.server_id, where + ".server_id");
    if (unnamed.empty() && e.server_id.empty()) unnamed = where;
    if (!GetString(ctx, r, "device_ip", where, &e.device_ip, false)) return false;
    if (r.contains("level_list") && !r["level_list"].is_array()) {
      return ctx.Fail(where + ".level_list", "must be an array");
    }
    table->ranks.push_back(e);
  }
  if (!unnamed.empty()) {
    if (!ctx.servers.empty()) {
      return ctx.Fail(unnamed + ".server_id",
                      "is missing while other ranks name their server (Vigil needs the host of "
                      "every rank: server_id or host_ip)");
    }
    HCCL_RUN_INFO("[RanktableConfig]rank table [{}]: no rank names its server, so every rank is "
                  "on this host (127.0.0.1)",
                  ctx.path);
    for (RankTableEntry& e : table->ranks) e.server_id = "127.0.0.1";
    ctx.servers.emplace("127.0.0.1", "rank_list");
  }
  return true;
}

bool Parse(Ctx& ctx, const std::string& text, RankTable* table) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return ctx.Fail("(document)", "is not valid JSON");
  if (!root.is_object()) return ctx.Fail("(document)", "must be a JSON object");
  std::string status;
  if (!GetString(ctx, root, "status", "", &status)) return false;
  if (status != "completed") {
    return ctx.Fail("status", fmt::format("value [{}] must be [completed]", status));
  }
  if (!GetString(ctx, root, "version", "", &table->version)) return false;
  if (table->version != "1.0" && table->version != "2.0") {
    return ctx.Fail("version", fmt::format("value [{}] is not supported (1.0 or 2.0)",
                                           table->version));
  }
  bool ok;
  if (root.contains("server_list")) {
    ok = ParseServerList(ctx, root, table);
  } else if (table->version == "2.0" && root.contains("rank_list")) {
    ok = ParseRankList(ctx, root, table);
  } else {
    return ctx.Fail(table->version == "2.0" ? "server_list/rank_list" : "server_list",
                    "is missing");
  }
  if (!ok || !ResolveServers(ctx, table)) return false;
  std::sort(table->ranks.begin(), table->ranks.end(),
            [](const RankTableEntry& a, const RankTableEntry& b) { return a.rank < b.rank; });
  for (size_t i = 0; i < table->ranks.size(); ++i) {
    if (i > 0 && table->ranks[i].rank == table->ranks[i - 1].rank) {
      return ctx.Fail("rank_id", fmt::format("value [{}] appears more than once",
                                             table->ranks[i].rank));
    }
    if (table->ranks[i].rank != i) {
      return ctx.Fail("rank_id", fmt::format("ranks must be numbered 0..{} without gaps; rank [{}] "
                                             "is missing",
                                             table->ranks.size() - 1, i));
    }
  }
  return true;
}

}  // namespace

std::string RankTableSelfIp(const RankTable& table, uint32_t rank) {
  if (rank >= table.ranks.size()) return "";
  const std::string& ip = table.ranks[rank].server_id;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) return "";
  // Binding port 0 succeeds only for an address of this host (of this network namespace).
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  const bool local = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return local ? ip : "";
}

HcclResult ParseRankTable(const std::string& text, const std::string& path, RankTable* table,
                          std::string* error, HostResolver resolve) {
  Ctx ctx{path, resolve, {}, {}};
  try {
    RankTable out;
    if (!Parse(ctx, text, &out)) {
      if (error) *error = ctx.error;
      return HCCL_E_PARA;
    }
    *table = std::move(out);
    return HCCL_SUCCESS;
  } catch (const std::exception& e) {
    if (error) *error = fmt::format("rank table [{}]: {}", path, e.what());
    return HCCL_E_PARA;
  }
}

HcclResult LoadRankTable(const std::string& path, RankTable* table, std::string* error) {
  std::string text;
  try {
    std::ifstream in(path);
    if (!in) {
      if (error) *error = fmt::format("rank table [{}]: cannot open the file", path);
      return HCCL_E_PARA;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } catch (const std::exception& e) {
    if (error) *error = fmt::format("rank table [{}]: {}", path, e.what());
    return HCCL_E_PARA;
  }
  return ParseRankTable(text, path, table, error);
}

}  // namespace vigil::bootstrap
