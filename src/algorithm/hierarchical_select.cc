// Hierarchical layout and choice: which ranks share a host, whether an op runs in levels, which
// algorithm each level runs (HCCL_ALGO's "levelN:" entries), and the AlgType string.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <set>

#include "algorithm/alg_context.h"
#include "algorithm/hierarchical.h"
#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::alg {

HostLayout HostLayout::FromHostIds(const std::vector<std::string>& host_of_rank, uint32_t rank) {
  HostLayout layout;
  std::map<std::string, uint32_t> index;
  for (uint32_t r = 0; r < host_of_rank.size(); ++r) {
    auto [it, fresh] = index.emplace(host_of_rank[r], static_cast<uint32_t>(layout.hosts.size()));
    if (fresh) layout.hosts.emplace_back();
    std::vector<uint32_t>& members = layout.hosts[it->second];
    if (r == rank) {
      layout.host = it->second;
      layout.local = static_cast<uint32_t>(members.size());
    }
    members.push_back(r);
  }
  return layout;
}

bool HostLayout::Hierarchical() const {
  if (hosts.size() < 2) return false;
  for (const auto& h : hosts) {
    if (h.size() != hosts[0].size()) return false;
  }
  return true;
}

namespace detail {

Group SubGroup(const Group& g, const std::vector<uint32_t>& members, uint32_t index) {
  Group s;
  s.rank = index;
  s.size = static_cast<uint32_t>(members.size());
  s.links.assign(s.size, nullptr);
  for (uint32_t j = 0; j < s.size; ++j) {
    if (j != index && members[j] < g.links.size()) s.links[j] = g.links[members[j]];
  }
  s.wait = g.wait;
  s.tasks = g.tasks;
  s.algo_spec = g.algo_spec;
  return s;
}

std::vector<uint32_t> SameLocalIndex(const HostLayout& layout, uint32_t i) {
  std::vector<uint32_t> out;
  out.reserve(layout.hosts.size());
  for (const auto& h : layout.hosts) out.push_back(h[i]);
  return out;
}

}  // namespace detail

namespace {

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    out.push_back(
        Trim(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

// One op's HCCL_ALGO: "level0:ring;level1:H-D_R" (levels) or a bare "ring" (flat).
struct Spec {
  bool present = false;
  bool levels = false;  // at least one "levelN:" entry
  std::string name[3];  // per level, lower-case; "" or "na" = automatic
  std::string bare;     // an entry without a level
  std::string value;    // the whole value it was read from (for warnings)
};

Spec ParseSpec(const std::string& text) {
  Spec s;
  s.present = true;
  for (const std::string& entry : Split(text, ';')) {
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) {
      s.bare = Lower(entry);
      continue;
    }
    const std::string level = Lower(Trim(entry.substr(0, colon)));
    const std::string name = Lower(Trim(entry.substr(colon + 1)));
    if (level.size() == 6 && level.rfind("level", 0) == 0 && level[5] >= '0' && level[5] <= '2') {
      s.levels = true;
      s.name[level[5] - '0'] = name;
    }
  }
  return s;
}

const char* OpKey(CollOp op) {
  switch (op) {
    case CollOp::kAllReduce:
      return "allreduce";
    case CollOp::kReduceScatter:
      return "reducescatter";
    case CollOp::kAllGather:
      return "allgather";
    case CollOp::kBroadcast:
      return "broadcast";
    case CollOp::kReduce:
      return "reduce";
    default:
      return "";
  }
}

// The op's own entry ("allreduce=...") if any, else the op-less one.
Spec SpecFor(const std::string& value, CollOp op) {
  Spec generic, specific;
  for (const std::string& part : Split(value, '/')) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      if (!generic.present) generic = ParseSpec(part);
      continue;
    }
    std::string name = Lower(Trim(part.substr(0, eq)));
    name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
    if (name == OpKey(op)) specific = ParseSpec(part.substr(eq + 1));
  }
  Spec& chosen = specific.present ? specific : generic;
  chosen.value = value;
  return chosen;
}

void WarnOnce(const Spec& spec, const std::string& key, const std::string& what) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(spec.value + "#" + key).second) return;
  HCCL_RUN_WARNING("[Algorithm] HCCL_ALGO [{}]: {}; that level is chosen automatically",
                   spec.value, what);
}

// The level's algorithm from HCCL_ALGO when it is one of `allowed`, else kAuto.
Algo LevelAlgo(const Spec& spec, int level, CollOp op, std::initializer_list<Algo> allowed) {
  const std::string& name = spec.name[level];
  if (name.empty() || name == "na" || name == "auto") return Algo::kAuto;
  Algo a;
  if (!ParseAlgoName(name, &a)) {
    WarnOnce(spec, name, fmt::format("level{} algorithm [{}] is unknown", level, name));
    return Algo::kAuto;
  }
  if (std::find(allowed.begin(), allowed.end(), a) == allowed.end()) {
    WarnOnce(spec, fmt::format("{}#{}#{}", OpKey(op), level, name),
             fmt::format("{} has no hierarchical level{} [{}]", OpKey(op), level, name));
    return Algo::kAuto;
  }
  return a;
}

bool IsPow2(uint32_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

constexpr size_t kSmallBlockBytes = 64u << 10;
constexpr uint32_t kMeshMaxHosts = 8;

}  // namespace

bool ChooseHierarchical(CollOp op, const HostLayout& layout, size_t bytes, HierPlan* plan,
                        const std::string* algo_spec) {
  if (!layout.Hierarchical()) return false;
  const char* key = OpKey(op);
  if (*key == '\0') return false;
  Spec spec;
  const std::string& value = AlgoSpec(algo_spec);
  if (!value.empty()) spec = SpecFor(value, op);
  // A bare algorithm name forces that flat algorithm over all ranks (e.g. HCCL_ALGO=ring).
  if (spec.present && !spec.levels && !spec.bare.empty() && spec.bare != "na" &&
      spec.bare != "auto") {
    return false;
  }
  const uint32_t hosts = layout.host_count();
  const uint32_t local = layout.per_host();
  HierPlan p;
  switch (op) {
    case CollOp::kAllReduce: {
      // A tiny one over few ranks goes flat, in one round of the one-shot mesh whose transfers
      // carry the op's fingerprints; in levels it is a round of fingerprints, then an intra-host
      // ReduceScatter, an inter-host AllReduce and an intra-host AllGather (2 hosts x 2 ranks,
      // 8 B: 35-45 us flat against 46-59 in levels, the four ranks and the emulated network on
      // two cores; on idle cores the flat round is one inter-host trip where levels take two).
      if (!spec.levels && bytes <= detail::kOneShotBytes &&
          hosts * local <= detail::kMeshMaxRanks) {
        return false;
      }
      // Level 1 moves one 1/local share of the message per rank.
      const size_t block = bytes / std::max<uint32_t>(local, 1);
      p.level0 = Algo::kRing;
      LevelAlgo(spec, 0, op, {Algo::kRing});
      p.level1 = LevelAlgo(spec, 1, op, {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling});
      if (p.level1 == Algo::kAuto) {
        // A tiny block goes to every other host in one round (mesh's one-shot) rather than in
        // log2(hosts) dependent ones: over 4 hosts, 8 B took two exchanges of 33-38 us each.
        if (hosts <= kMeshMaxHosts && block <= detail::kOneShotBytes) {
          p.level1 = Algo::kMesh;
        } else {
          p.level1 =
              IsPow2(hosts) || block <= kSmallBlockBytes ? Algo::kHalvingDoubling : Algo::kRing;
        }
      }
      break;
    }
    case CollOp::kReduceScatter: {
      p.level0 = Algo::kRing;
      LevelAlgo(spec, 0, op, {Algo::kRing});
      p.level1 = LevelAlgo(spec, 1, op, {Algo::kRing, Algo::kMesh});
      if (p.level1 == Algo::kAuto) {
        // The mesh sends a rank's block for every other host at once (one round); over three
        // or more hosts those blocks all converge on each host's link together, and the
        // competing streams leave it short of its rate, where the ring sends one stream each
        // way (4 hosts x 1 rank at 1 Gbit/s, 4 MiB: 83-88% of the link against 98%). Small
        // blocks keep the mesh's single round.
        const size_t block = bytes / std::max<size_t>(size_t{hosts} * local, 1);
        p.level1 = hosts <= 2 || (hosts <= kMeshMaxHosts && block <= kSmallBlockBytes)
                       ? Algo::kMesh
                       : Algo::kRing;
      }
      break;
    }
    case CollOp::kAllGather:
      p.level0 = Algo::kRing;
      LevelAlgo(spec, 0, op, {Algo::kRing});
      LevelAlgo(spec, 1, op, {Algo::kRing});
      p.level1 = Algo::kRing;
      break;
    case CollOp::kBroadcast:
      // The flat Broadcast picks tree or chain by size (and HCCL_ALGO): name what each level runs.
      p.level0 = ChooseBroadcast(local, bytes, algo_spec);
      p.level1 = ChooseBroadcast(hosts, bytes, algo_spec);
      break;
    case CollOp::kReduce:
      p.level0 = ChooseReduce(local, bytes, algo_spec);
      p.level1 = ChooseReduce(hosts, bytes, algo_spec);
      break;
    default:
      return false;
  }
  if (plan) *plan = p;
  return true;
}

std::vector<uint32_t> HierPeers(const HostLayout& layout, uint32_t rank, uint32_t size) {
  std::vector<uint32_t> peers(layout.hosts[layout.host]);
  const std::vector<uint32_t> same = detail::SameLocalIndex(layout, layout.local);
  peers.insert(peers.end(), same.begin(), same.end());
  if (size > 1) {
    peers.push_back((rank + 1) % size);
    peers.push_back((rank + size - 1) % size);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  peers.erase(std::remove(peers.begin(), peers.end(), rank), peers.end());
  return peers;
}

std::string HierAlgType(const HierPlan& plan) {
  // HCCL spells halving-doubling "HD" inside a server and "H-D" between servers.
  const char* l0 = plan.level0 == Algo::kHalvingDoubling ? "HD" : AlgoName(plan.level0);
  return fmt::format("{}-{}-null", l0, AlgoName(plan.level1));
}

}  // namespace vigil::alg
