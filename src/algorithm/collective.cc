// The collective entry points: argument checks, the device-memory check of the user ranges,
// algorithm choice (with HCCL_ALGO), then the one algorithm file that does the work.
#include "algorithm/collective.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "algorithm/alg_context.h"
#include "common/dtype.h"
#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::alg {

using detail::Ctx;
using namespace detail;  // the algorithm bodies

const char* AlgoName(Algo algo) {
  switch (algo) {
    case Algo::kRing:
      return "ring";
    case Algo::kMesh:
      return "fullmesh";
    case Algo::kHalvingDoubling:
      return "H-D";
    case Algo::kPairwise:
      return "pairwise";
    case Algo::kStar:
      return "star";
    case Algo::kHierarchical:
      return "hierarchical";
    case Algo::kAuto:
      break;
  }
  return "auto";
}

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
  while (true) {
    const size_t pos = s.find(sep, start);
    out.push_back(
        Trim(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

// What HCCL_ALGO says for one op: kAuto when nothing applies; `bad` when it could not be read.
struct Forced {
  Algo algo = Algo::kAuto;
  bool bad = false;
};

// `spec` is one op's part: "level0:ring;level1:H-D_R", "ring", "level0:NA;level1:ring".
Forced ParseLevels(const std::string& spec) {
  Forced f;
  for (const std::string& entry : Split(spec, ';')) {
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    const std::string name = Trim(colon == std::string::npos ? entry : entry.substr(colon + 1));
    if (colon != std::string::npos) {
      const std::string level = Lower(Trim(entry.substr(0, colon)));
      if (level.rfind("level", 0) != 0) f.bad = true;
    }
    if (Lower(name) == "na" || name.empty()) continue;
    Algo a;
    if (!ParseAlgoName(name, &a)) {
      f.bad = true;
      continue;
    }
    if (f.algo == Algo::kAuto) f.algo = a;  // the lowest level that names one
  }
  return f;
}

// Whole HCCL_ALGO for `op` ("allreduce", "allgather", "reducescatter", "broadcast", "reduce").
Forced ParseHcclAlgo(const std::string& value, const char* op) {
  Forced generic, specific;
  bool have_specific = false;
  for (const std::string& part : Split(value, '/')) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    if (eq == std::string::npos) {
      Forced f = ParseLevels(part);
      generic.bad |= f.bad;
      if (generic.algo == Algo::kAuto) generic.algo = f.algo;
      continue;
    }
    std::string name = Lower(Trim(part.substr(0, eq)));
    name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
    Forced f = ParseLevels(part.substr(eq + 1));
    if (name == op) {
      specific = f;
      have_specific = true;
    } else {
      generic.bad |= f.bad;  // a typo anywhere in the value is worth the one warning
    }
  }
  if (have_specific) {
    specific.bad |= generic.bad;
    return specific;
  }
  return generic;
}

void WarnOnce(const std::string& value, const char* why) {
  static std::mutex mu;
  static std::vector<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (std::find(warned.begin(), warned.end(), value) != warned.end()) return;
  warned.push_back(value);
  HCCL_RUN_WARNING("[Algorithm] HCCL_ALGO [{}] {}; choosing the algorithm automatically", value,
                   why);
}

// The algorithm the spec in force (hcclAlgo, else HCCL_ALGO) forces for `op`, if any and if
// `allowed`.
Algo ForcedFor(const char* op, std::initializer_list<Algo> allowed, const std::string* spec) {
  const std::string& value = AlgoSpec(spec);
  if (value.empty()) return Algo::kAuto;
  const Forced f = ParseHcclAlgo(value, op);
  if (f.bad) WarnOnce(value, "has values Vigil does not know");
  if (f.algo == Algo::kAuto) return Algo::kAuto;
  if (std::find(allowed.begin(), allowed.end(), f.algo) == allowed.end()) {
    WarnOnce(value + "#" + op, "names an algorithm this op does not have");
    return Algo::kAuto;
  }
  return f.algo;
}

bool IsPow2(uint32_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

constexpr size_t kSmallBytes = 64u << 10;
constexpr size_t kHdMaxBytes = 16u << 20;

// AllGather/ReduceScatter H-D exist only for power-of-two rank counts; elsewhere ring.
Algo Resolve(Algo algo, bool hd_ok) {
  return algo == Algo::kHalvingDoubling && !hd_ok ? Algo::kRing : algo;
}

uint64_t Span(const uint64_t* counts, const uint64_t* displs, uint32_t n) {
  uint64_t end = 0;
  for (uint32_t i = 0; i < n; ++i) end = std::max(end, displs[i] + counts[i]);
  return end;
}

}  // namespace

bool ParseAlgoName(const std::string& name, Algo* out) {
  const std::string n = Lower(Trim(name));
  if (n == "ring" || n == "pipeline") {
    *out = Algo::kRing;
  } else if (n == "fullmesh" || n == "mesh") {
    *out = Algo::kMesh;
  } else if (n == "h-d" || n == "hd" || n == "h-d_r" || n == "rhd" || n == "nhr" || n == "nhr_v1" ||
             n == "nb" || n == "ahc" || n == "ahc_broke") {
    *out = Algo::kHalvingDoubling;
  } else if (n == "pairwise") {
    *out = Algo::kPairwise;
  } else if (n == "star") {
    *out = Algo::kStar;
  } else if (n == "auto") {
    *out = Algo::kAuto;
  } else {
    return false;
  }
  return true;
}

const std::string& AlgoSpec(const std::string* spec) {
  return spec != nullptr && !spec->empty() ? *spec : Env().algo;
}

Algo ChooseAllReduce(uint32_t nranks, size_t bytes, const std::string* spec) {
  const Algo forced =
      ForcedFor("allreduce", {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling, Algo::kStar}, spec);
  if (forced != Algo::kAuto) return forced;
  if (nranks <= 1) return Algo::kRing;
  // One round (mesh_allreduce.cc) beats log2(p) dependent rounds while the message is tiny.
  if (nranks <= detail::kMeshMaxRanks && bytes <= detail::kOneShotBytes) return Algo::kMesh;
  if (bytes <= kSmallBytes) return Algo::kHalvingDoubling;
  if (nranks <= detail::kMeshMaxRanks) return Algo::kMesh;
  if (IsPow2(nranks) && bytes <= kHdMaxBytes) return Algo::kHalvingDoubling;
  return Algo::kRing;
}

Algo ChooseAllGather(uint32_t nranks, size_t bytes, const std::string* spec) {
  const Algo forced = ForcedFor("allgather", {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling}, spec);
  if (forced != Algo::kAuto) return Resolve(forced, IsPow2(nranks));
  if (nranks <= 1) return Algo::kRing;
  if (nranks <= detail::kMeshMaxRanks) return Algo::kMesh;
  if (IsPow2(nranks) && bytes <= kHdMaxBytes) return Algo::kHalvingDoubling;
  return Algo::kRing;
}

Algo ChooseReduceScatter(uint32_t nranks, size_t /*bytes*/, const std::string* spec) {
  const Algo forced =
      ForcedFor("reducescatter", {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling}, spec);
  if (forced != Algo::kAuto) return Resolve(forced, false);
  if (nranks <= 1) return Algo::kRing;
  if (nranks <= detail::kMeshMaxRanks) return Algo::kMesh;
  return Algo::kRing;
}

Algo ChooseBroadcast(uint32_t /*nranks*/, size_t bytes, const std::string* spec) {
  const Algo forced = ForcedFor("broadcast", {Algo::kRing, Algo::kHalvingDoubling}, spec);
  if (forced != Algo::kAuto) return forced;
  return bytes <= detail::kTreeMaxBytes ? Algo::kHalvingDoubling : Algo::kRing;
}

Algo ChooseReduce(uint32_t /*nranks*/, size_t bytes, const std::string* spec) {
  const Algo forced = ForcedFor("reduce", {Algo::kRing, Algo::kHalvingDoubling}, spec);
  if (forced != Algo::kAuto) return forced;
  return bytes <= detail::kTreeMaxBytes ? Algo::kHalvingDoubling : Algo::kRing;
}

std::vector<uint32_t> PeersFor(CollOp op, Algo algo, uint32_t rank, uint32_t size) {
  std::vector<uint32_t> peers;
  auto add = [&](uint32_t peer) {
    if (peer != rank && peer < size) peers.push_back(peer);
  };
  const bool ring_like =
      op == CollOp::kAllGatherV || op == CollOp::kReduceScatterV ||
      (algo == Algo::kRing &&
       (op == CollOp::kAllReduce || op == CollOp::kAllGather || op == CollOp::kReduceScatter));
  if (size <= 1) return peers;
  if (ring_like) {
    add((rank + 1) % size);
    add((rank + size - 1) % size);
  } else if (op == CollOp::kBarrier) {
    for (uint32_t d = 1; d < size; d *= 2) {
      add((rank + d) % size);
      add((rank + size - d) % size);
    }
  } else if (op == CollOp::kAllReduce && algo == Algo::kHalvingDoubling) {
    uint32_t q = 1;
    while (q * 2 <= size) q *= 2;
    const uint32_t extra = size - q;
    if (rank < 2 * extra) add(rank % 2 == 0 ? rank + 1 : rank - 1);
    if (rank >= 2 * extra || rank % 2 == 1) {
      const uint32_t v = rank < 2 * extra ? rank / 2 : rank - extra;
      for (uint32_t d = 1; d < q; d *= 2) {
        const uint32_t pv = v ^ d;
        add(pv < extra ? 2 * pv + 1 : pv + extra);
      }
    }
  } else if (op == CollOp::kAllGather && algo == Algo::kHalvingDoubling && IsPow2(size)) {
    for (uint32_t d = 1; d < size; d *= 2) add(rank ^ d);
  } else if (op == CollOp::kAllReduce && algo == Algo::kStar && rank != 0) {
    add(0);
  } else {
    for (uint32_t j = 0; j < size; ++j) add(j);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

HcclResult AllReduce(Algo algo, Group& g, const void* send, void* recv, uint64_t count,
                     HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type, op);
  HcclResult hr = c.Begin(true);
  if (hr != HCCL_SUCCESS || count == 0) return hr;
  if (send == nullptr || recv == nullptr) return c.Fail(HCCL_E_PTR, "null buffer");
  const size_t bytes = count * c.esize();
  if ((hr = c.CheckUser(send, bytes, false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, bytes, true)) != HCCL_SUCCESS) return hr;
  if (algo == Algo::kAuto) algo = ChooseAllReduce(g.size, bytes, g.algo_spec);
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  switch (algo) {
    case Algo::kMesh:
      return MeshAllReduce(c, s, d, count);
    case Algo::kHalvingDoubling:
      return HdAllReduce(c, s, d, count);
    case Algo::kStar:
      return StarAllReduce(c, s, d, count);
    default:
      return RingAllReduce(c, s, d, count);
  }
}

HcclResult ReduceScatter(Algo algo, Group& g, const void* send, void* recv, uint64_t recv_count,
                         HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type, op);
  HcclResult hr = c.Begin(true);
  if (hr != HCCL_SUCCESS || recv_count == 0) return hr;
  if (send == nullptr || recv == nullptr) return c.Fail(HCCL_E_PTR, "null buffer");
  const size_t bytes = recv_count * c.esize();
  if ((hr = c.CheckUser(send, bytes * g.size, false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, bytes, true)) != HCCL_SUCCESS) return hr;
  if (algo == Algo::kAuto) algo = ChooseReduceScatter(g.size, bytes * g.size, g.algo_spec);
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  if (algo == Algo::kMesh) return MeshReduceScatter(c, s, d, recv_count);
  std::vector<uint64_t> counts(g.size, recv_count), displs(g.size);
  for (uint32_t j = 0; j < g.size; ++j) displs[j] = j * recv_count;
  return RingReduceScatterV(c, s, counts.data(), displs.data(), d);
}

HcclResult AllGather(Algo algo, Group& g, const void* send, void* recv, uint64_t send_count,
                     HcclDataType type, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS || send_count == 0) return hr;
  if (send == nullptr || recv == nullptr) return c.Fail(HCCL_E_PTR, "null buffer");
  const size_t bytes = send_count * c.esize();
  if ((hr = c.CheckUser(send, bytes, false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, bytes * g.size, true)) != HCCL_SUCCESS) return hr;
  if (algo == Algo::kAuto) algo = ChooseAllGather(g.size, bytes * g.size, g.algo_spec);
  algo = Resolve(algo, IsPow2(g.size));
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  if (algo == Algo::kMesh) return MeshAllGather(c, s, d, send_count);
  if (algo == Algo::kHalvingDoubling) return HdAllGather(c, s, d, send_count);
  std::vector<uint64_t> counts(g.size, send_count), displs(g.size);
  for (uint32_t j = 0; j < g.size; ++j) displs[j] = j * send_count;
  return RingAllGatherV(c, s, d, counts.data(), displs.data());
}

HcclResult Broadcast(Group& g, void* buf, uint64_t count, HcclDataType type, uint32_t root,
                     Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS) return hr;
  if (root >= g.size) return c.Fail(HCCL_E_PARA, "root out of range");
  if (count == 0 || g.size == 1) return HCCL_SUCCESS;
  if (buf == nullptr) return c.Fail(HCCL_E_PTR, "null buffer");
  const size_t bytes = count * c.esize();
  if ((hr = c.CheckUser(buf, bytes, g.rank != root)) != HCCL_SUCCESS) return hr;
  char* b = static_cast<char*>(buf);
  if (ChooseBroadcast(g.size, bytes, g.algo_spec) == Algo::kHalvingDoubling) {
    return TreeBroadcast(c, b, count, root);
  }
  if (c.AllLinksShm()) return StarBroadcast(c, b, count, root);
  return ChainBroadcast(c, b, count, root);
}

HcclResult Reduce(Group& g, const void* send, void* recv, uint64_t count, HcclDataType type,
                  HcclReduceOp op, uint32_t root, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type, op);
  HcclResult hr = c.Begin(true);
  if (hr != HCCL_SUCCESS) return hr;
  if (root >= g.size) return c.Fail(HCCL_E_PARA, "root out of range");
  if (count == 0) return HCCL_SUCCESS;
  if (send == nullptr || (g.rank == root && recv == nullptr)) {
    return c.Fail(HCCL_E_PTR, "null buffer");
  }
  const size_t bytes = count * c.esize();
  if ((hr = c.CheckUser(send, bytes, false)) != HCCL_SUCCESS) return hr;
  if (g.rank == root && (hr = c.CheckUser(recv, bytes, true)) != HCCL_SUCCESS) return hr;
  const char* s = static_cast<const char*>(send);
  char* d = static_cast<char*>(recv);
  if (ChooseReduce(g.size, bytes, g.algo_spec) == Algo::kHalvingDoubling) {
    return TreeReduce(c, s, d, count, root);
  }
  return ChainReduce(c, s, d, count, root);
}

HcclResult Scatter(Group& g, const void* send, void* recv, uint64_t recv_count, HcclDataType type,
                   uint32_t root, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS) return hr;
  if (root >= g.size) return c.Fail(HCCL_E_PARA, "root out of range");
  if (recv_count == 0) return HCCL_SUCCESS;
  if (recv == nullptr || (g.rank == root && send == nullptr)) {
    return c.Fail(HCCL_E_PTR, "null buffer");
  }
  const size_t bytes = recv_count * c.esize();
  if (g.rank == root && (hr = c.CheckUser(send, bytes * g.size, false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, bytes, true)) != HCCL_SUCCESS) return hr;
  return StarScatter(c, static_cast<const char*>(send), static_cast<char*>(recv), recv_count, root);
}

HcclResult AllGatherV(Group& g, const void* send, uint64_t send_count, void* recv,
                      const uint64_t* recv_counts, const uint64_t* recv_displs, HcclDataType type,
                      Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS) return hr;
  if (recv_counts == nullptr || recv_displs == nullptr) return c.Fail(HCCL_E_PTR, "null counts");
  if (recv_counts[g.rank] != send_count) {
    return c.Fail(HCCL_E_PARA, "allgatherv: send count differs from this rank's receive count");
  }
  const uint64_t span = Span(recv_counts, recv_displs, g.size);
  if (span == 0) return HCCL_SUCCESS;
  if (recv == nullptr || (send_count != 0 && send == nullptr)) {
    return c.Fail(HCCL_E_PTR, "null buffer");
  }
  if ((hr = c.CheckUser(send, send_count * c.esize(), false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, span * c.esize(), true)) != HCCL_SUCCESS) return hr;
  return RingAllGatherV(c, static_cast<const char*>(send), static_cast<char*>(recv), recv_counts,
                        recv_displs);
}

HcclResult ReduceScatterV(Group& g, const void* send, const uint64_t* send_counts,
                          const uint64_t* send_displs, void* recv, uint64_t recv_count,
                          HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, type, op);
  HcclResult hr = c.Begin(true);
  if (hr != HCCL_SUCCESS) return hr;
  if (send_counts == nullptr || send_displs == nullptr) return c.Fail(HCCL_E_PTR, "null counts");
  if (send_counts[g.rank] != recv_count) {
    return c.Fail(HCCL_E_PARA, "reducescatterv: receive count differs from this rank's block");
  }
  const uint64_t span = Span(send_counts, send_displs, g.size);
  if (span == 0) return HCCL_SUCCESS;
  if (send == nullptr || (recv_count != 0 && recv == nullptr)) {
    return c.Fail(HCCL_E_PTR, "null buffer");
  }
  if ((hr = c.CheckUser(send, span * c.esize(), false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, recv_count * c.esize(), true)) != HCCL_SUCCESS) return hr;
  return RingReduceScatterV(c, static_cast<const char*>(send), send_counts, send_displs,
                            static_cast<char*>(recv));
}

HcclResult AlltoAllV(Group& g, const void* send, const uint64_t* send_counts,
                     const uint64_t* send_displs, HcclDataType send_type, void* recv,
                     const uint64_t* recv_counts, const uint64_t* recv_displs,
                     HcclDataType recv_type, Scratch scratch, AlgResult* result) {
  Ctx c(g, scratch, result, send_type);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS) return hr;
  const size_t res = DataTypeSize(recv_type);
  if (!IsSupportedDataType(recv_type) || res == 0) return c.Fail(HCCL_E_NOT_SUPPORT, "data type");
  if (!send_counts || !send_displs || !recv_counts || !recv_displs) {
    return c.Fail(HCCL_E_PTR, "null counts");
  }
  const uint64_t sspan = Span(send_counts, send_displs, g.size);
  const uint64_t rspan = Span(recv_counts, recv_displs, g.size);
  if ((sspan != 0 && send == nullptr) || (rspan != 0 && recv == nullptr)) {
    return c.Fail(HCCL_E_PTR, "null buffer");
  }
  if ((hr = c.CheckUser(send, sspan * c.esize(), false)) != HCCL_SUCCESS) return hr;
  if ((hr = c.CheckUser(recv, rspan * res, true)) != HCCL_SUCCESS) return hr;
  return PairwiseAlltoAllV(c, static_cast<const char*>(send), send_counts, send_displs, c.esize(),
                           static_cast<char*>(recv), recv_counts, recv_displs, res);
}

HcclResult Barrier(Group& g, AlgResult* result) {
  Ctx c(g, Scratch{}, result, HCCL_DATA_TYPE_INT8);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS) return hr;
  return DisseminationBarrier(c);
}

HcclResult SendRecv(Group& g, const std::vector<P2pItem>& items, Scratch scratch,
                    AlgResult* result) {
  Ctx c(g, scratch, result, HCCL_DATA_TYPE_INT8);
  HcclResult hr = c.Begin(false);
  if (hr != HCCL_SUCCESS) return hr;
  return BatchSendRecv(c, items);
}

}  // namespace vigil::alg
