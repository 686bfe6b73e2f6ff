// The chaos campaign's rank program (run under `vigil run -n N -- chaos_job ...`): an HCCL job
// that runs a mix of collectives in a loop, checks every result that reports success against
// the values it must hold, and misbehaves on purpose when the runner (chaos_run.py) tells it to.
// Faults from outside the process (SIGKILL, SIGSTOP, a held port) are the runner's; the ones a
// rank does to itself are here:
//
//   --late-init R          rank R never joins comm init (exits instead)                    F13
//   --late-op R@MS         after MS ms of ops, rank R stays in host code (never enters the
//                          next op for --late-ms ms)                                        F3/F7
//   --late-root ROOT       with --late-op: the late op is the first after MS ms whose root
//                          (op index mod ranks) is ROOT, so a scenario picks the late rank's
//                          place in a rooted op's tree
//   --mismatch R@MS:WHAT   after MS ms, rank R calls its next op with another op type,
//                          count or dtype (WHAT = op|count|dtype)                           F5/F6
//   --cut R-P@MS           after MS ms, rank R shuts its data link to P down for real
//                          (Transport::InjectLinkCut; P = -1: the first peer it has a link to) F4
//                          Repeatable: one per faulty rank.
//   --kill-self R          rank R SIGKILLs itself once it wrote its ready file, before
//                          any op: its peers meet it dead while they make its links         F1
//   --rlimit-as R:MB       rank R caps its address space at its size now + MB before init, so
//                          the CCL buffer's mmap fails for real                             F12
//   --root-info R:PORT     rank R makes the root info with HcclGetRootInfo, HCCL_IF_BASE_PORT
//                          = PORT, and shares it through --dir; the others read it there   F14
//   --env-for R:NAME=VALUE rank R sets NAME before any HCCL call (a device memory budget)  F12
//
// Ops: --ops "allreduce:fp32:1024,allgather:int32:17,..." (op:dtype:count), run in turn until an
// op fails or --loop-ms passes. Every rank prints to stdout, one line each:
//   READY rank=R pid=P                 init done (the runner's clock for op-time faults starts
//                                      when every rank wrote DIR/ready-R)
//   INJECT rank=R kind=K detail=.. t=MS  a fault this rank did to itself, when it did it (MS:
//                                      ms since the epoch)
//   CORRUPT rank=R index=I op=.. elem=J got=X want=Y   a successful op's wrong result
//   FAIL rank=R index=I op=.. stage=init|enqueue|sync rc=C async=A
//   DONE rank=R pid=P ops=N ok=0|1
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "api/hccl_api_util.h"  // LookupComm: the link-cut hook of the communicator's transport
#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace {

using Clock = std::chrono::steady_clock;

struct OpSpec {
  std::string op;  // allreduce allreduce_max allgather reducescatter broadcast reduce alltoall
  HcclDataType dtype = HCCL_DATA_TYPE_FP32;
  uint64_t count = 1;
};

struct Options {
  std::string dir;
  std::vector<OpSpec> ops;
  int loop_ms = 20000;
  int64_t late_init = -1;
  int64_t late_op = -1, late_op_ms = 0, late_root = -1;
  int64_t kill_self = -1;
  int late_ms = 15000;
  int64_t mismatch = -1, mismatch_ms = 0;
  std::string mismatch_what = "op";
  int64_t cut = -1, cut_peer = -1, cut_ms = 0;
  int64_t rlimit = -1, rlimit_mb = 0;
  int64_t root_info = -1;
  std::string root_port;
};

uint32_t g_rank = 0, g_size = 1;

// An INJECT line carries the moment of its fault, t=MS since the epoch: the runner's clock for
// its own SIGKILL/SIGSTOP is the same one, so it judges which fault came first by what happened,
// not by what was planned.
void Line(const std::string& s) {
  if (s.rfind("INJECT ", 0) == 0) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch()).count();
    std::printf("%s t=%lld\n", s.c_str(), static_cast<long long>(now));
  } else {
    std::printf("%s\n", s.c_str());
  }
  std::fflush(stdout);
}

HcclDataType ParseDtype(const std::string& s) {
  if (s == "int32") return HCCL_DATA_TYPE_INT32;
  if (s == "int64") return HCCL_DATA_TYPE_INT64;
  if (s == "fp64") return HCCL_DATA_TYPE_FP64;
  return HCCL_DATA_TYPE_FP32;
}

const char* DtypeName(HcclDataType t) {
  switch (t) {
    case HCCL_DATA_TYPE_INT32: return "int32";
    case HCCL_DATA_TYPE_INT64: return "int64";
    case HCCL_DATA_TYPE_FP64: return "fp64";
    default: return "fp32";
  }
}

size_t DtypeSize(HcclDataType t) {
  return t == HCCL_DATA_TYPE_INT64 || t == HCCL_DATA_TYPE_FP64 ? 8 : 4;
}

// The value rank r puts at element j of op index i (small integers: every sum is exact).
int64_t Val(uint32_t r, uint64_t i, uint64_t j) {
  return static_cast<int64_t>((r * 31 + i * 7 + j * 13) % 101);
}

void Store(HcclDataType t, void* base, uint64_t j, int64_t v) {
  switch (t) {
    case HCCL_DATA_TYPE_INT32: static_cast<int32_t*>(base)[j] = static_cast<int32_t>(v); break;
    case HCCL_DATA_TYPE_INT64: static_cast<int64_t*>(base)[j] = v; break;
    case HCCL_DATA_TYPE_FP64: static_cast<double*>(base)[j] = static_cast<double>(v); break;
    default: static_cast<float*>(base)[j] = static_cast<float>(v); break;
  }
}

double Load(HcclDataType t, const void* base, uint64_t j) {
  switch (t) {
    case HCCL_DATA_TYPE_INT32: return static_cast<const int32_t*>(base)[j];
    case HCCL_DATA_TYPE_INT64: return static_cast<double>(static_cast<const int64_t*>(base)[j]);
    case HCCL_DATA_TYPE_FP64: return static_cast<const double*>(base)[j];
    default: return static_cast<const float*>(base)[j];
  }
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

// "R@MS" -> (R, MS); "R@MS:WHAT" also gives WHAT.
void ParseAt(const std::string& s, int64_t* rank, int64_t* ms, std::string* what = nullptr) {
  const size_t at = s.find('@');
  *rank = std::atoll(s.substr(0, at).c_str());
  if (at == std::string::npos) return;
  std::string rest = s.substr(at + 1);
  const size_t colon = rest.find(':');
  *ms = std::atoll(rest.substr(0, colon).c_str());
  if (what != nullptr && colon != std::string::npos) *what = rest.substr(colon + 1);
}

// The input and expected output element counts of an op on this rank.
void Sizes(const OpSpec& s, uint64_t* in, uint64_t* out) {
  const uint64_t n = g_size, c = s.count;
  if (s.op == "allgather") { *in = c; *out = n * c; }
  else if (s.op == "reducescatter") { *in = n * c; *out = c; }
  else if (s.op == "alltoall") { *in = n * c; *out = n * c; }
  else { *in = c; *out = c; }
}

// What element j of this rank's output must hold after op index i; false: not checked (a
// reduce's non-root output).
bool Want(const OpSpec& s, uint64_t i, uint64_t j, uint32_t root, int64_t* want) {
  const uint64_t c = s.count;
  int64_t acc = 0;
  if (s.op == "allreduce" || (s.op == "reduce" && g_rank == root)) {
    for (uint32_t r = 0; r < g_size; ++r) acc += Val(r, i, j);
  } else if (s.op == "allreduce_max") {
    for (uint32_t r = 0; r < g_size; ++r) acc = std::max(acc, Val(r, i, j));
  } else if (s.op == "allgather") {
    acc = Val(static_cast<uint32_t>(j / c), i, j % c);
  } else if (s.op == "reducescatter") {
    for (uint32_t r = 0; r < g_size; ++r) acc += Val(r, i, g_rank * c + j);
  } else if (s.op == "broadcast") {
    acc = Val(root, i, j);
  } else if (s.op == "alltoall") {
    acc = Val(static_cast<uint32_t>(j / c), i, g_rank * c + j % c);
  } else {
    return false;
  }
  *want = acc;
  return true;
}

HcclResult Enqueue(const OpSpec& s, void* in, void* out, uint32_t root, HcclComm comm,
                   aclrtStream stream) {
  if (s.op == "allreduce")
    return HcclAllReduce(in, out, s.count, s.dtype, HCCL_REDUCE_SUM, comm, stream);
  if (s.op == "allreduce_max")
    return HcclAllReduce(in, out, s.count, s.dtype, HCCL_REDUCE_MAX, comm, stream);
  if (s.op == "allgather") return HcclAllGather(in, out, s.count, s.dtype, comm, stream);
  if (s.op == "reducescatter")
    return HcclReduceScatter(in, out, s.count, s.dtype, HCCL_REDUCE_SUM, comm, stream);
  if (s.op == "broadcast") return HcclBroadcast(out, s.count, s.dtype, root, comm, stream);
  if (s.op == "reduce")
    return HcclReduce(in, out, s.count, s.dtype, HCCL_REDUCE_SUM, root, comm, stream);
  return HcclAlltoAll(in, s.count, s.dtype, out, s.count, s.dtype, comm, stream);
}

void WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

bool WaitAllReady(const Options& o, int timeout_s) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (Clock::now() < deadline) {
    bool all = true;
    for (uint32_t r = 0; r < g_size && all; ++r) {
      all = std::filesystem::exists(o.dir + "/ready-" + std::to_string(r));
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Root info: from the launcher, or (--root-info R) made by rank R and passed through a file.
HcclResult GetRoot(const Options& o, HcclRootInfo* root) {
  if (o.root_info < 0) return VigilLaunchRootInfo(g_rank, root);
  const std::string path = o.dir + "/root_info";
  if (static_cast<int64_t>(g_rank) == o.root_info) {
    Line("INJECT rank=" + std::to_string(g_rank) + " kind=port_taken detail=" + o.root_port);
    HcclResult rc = HcclGetRootInfo(root);
    if (rc != HCCL_SUCCESS) {
      WriteFile(path + ".failed", std::to_string(rc));
      return rc;
    }
    std::ofstream(path + ".tmp", std::ios::binary).write(root->internal, sizeof(root->internal));
    std::rename((path + ".tmp").c_str(), path.c_str());
    return HCCL_SUCCESS;
  }
  for (int waited = 0; waited < 30000; waited += 20) {
    if (std::filesystem::exists(path + ".failed")) return HCCL_E_UNAVAIL;
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(root->internal, sizeof(root->internal))) return HCCL_SUCCESS;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return HCCL_E_TIMEOUT;
}

// Caps this process's address space at its current size + mb MiB.
void CapAddressSpace(int64_t mb) {
  std::ifstream st("/proc/self/statm");
  uint64_t pages = 0;
  st >> pages;
  const uint64_t now = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  rlimit lim{};
  lim.rlim_cur = lim.rlim_max = now + (static_cast<uint64_t>(mb) << 20);
  if (setrlimit(RLIMIT_AS, &lim) == 0) {
    Line("INJECT rank=" + std::to_string(g_rank) + " kind=rlimit_as detail=" +
         std::to_string(lim.rlim_cur));
  }
}

// An AllReduce(max) of `mine` over the communicator; true when some rank voted yes, or when
// the vote itself failed (*ok then false).
bool Agreed(bool mine, HcclComm comm, aclrtStream stream, bool* ok) {
  int32_t in = mine ? 1 : 0, out = -1;
  if (HcclAllReduce(&in, &out, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MAX, comm, stream) != HCCL_SUCCESS ||
      aclrtSynchronizeStream(stream) != ACL_SUCCESS) {
    *ok = false;
    return true;
  }
  return out == 1;
}

int Run(const Options& o) {
  const bool me_late_init = static_cast<int64_t>(g_rank) == o.late_init;
  const std::string rs = std::to_string(g_rank);
  if (me_late_init) {
    Line("INJECT rank=" + rs + " kind=late_init detail=never_joins");
    Line("DONE rank=" + rs + " pid=" + std::to_string(getpid()) + " ops=0 ok=0");
    return 0;
  }
  if (static_cast<int64_t>(g_rank) == o.rlimit) CapAddressSpace(o.rlimit_mb);
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  HcclRootInfo root;
  HcclComm comm = nullptr;
  HcclResult rc = GetRoot(o, &root);
  if (rc == HCCL_SUCCESS) rc = HcclCommInitRootInfo(g_size, &root, g_rank, &comm);
  if (rc != HCCL_SUCCESS) {
    Line("FAIL rank=" + rs + " index=-1 op=init stage=init rc=" + std::to_string(rc) + " async=0");
    Line("DONE rank=" + rs + " pid=" + std::to_string(getpid()) + " ops=0 ok=0");
    aclrtDestroyStream(stream);
    return 0;
  }
  // Buffers big enough for every op of the mix, doubled for a count mismatch.
  uint64_t max_bytes = 64;
  for (const OpSpec& s : o.ops) {
    uint64_t in = 0, out = 0;
    Sizes(s, &in, &out);
    max_bytes = std::max<uint64_t>(max_bytes, 2 * std::max(in, out) * 8 * g_size);
  }
  void *din = nullptr, *dout = nullptr;
  aclrtMalloc(&din, max_bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  aclrtMalloc(&dout, max_bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  std::vector<char> hin(max_bytes), hout(max_bytes);

  Line("READY rank=" + rs + " pid=" + std::to_string(getpid()));
  WriteFile(o.dir + "/ready-" + rs, std::to_string(getpid()));
  if (static_cast<int64_t>(g_rank) == o.kill_self) {
    WaitAllReady(o, 60);  // the others may read every ready file before this rank is gone
    Line("INJECT rank=" + rs + " kind=kill detail=self");
    raise(SIGKILL);
  }
  WaitAllReady(o, 60);
  const auto t0 = Clock::now();
  auto elapsed_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  };
  std::thread cutter;
  if (static_cast<int64_t>(g_rank) == o.cut) {
    cutter = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.cut_ms));
      auto c = vigil::api::LookupComm(comm);
      if (c == nullptr) return;
      // The named peer, else the first peer this rank has a data link to (the algorithms of
      // the mix may not link every pair).
      std::vector<int64_t> order;
      if (o.cut_peer >= 0) order.push_back(o.cut_peer);
      for (uint32_t k = 1; k < g_size; ++k) order.push_back((g_rank + k) % g_size);
      for (int64_t p : order) {
        if (p == static_cast<int64_t>(g_rank)) continue;
        if (c->transport()->InjectLinkCut(static_cast<uint32_t>(p))) {
          Line("INJECT rank=" + rs + " kind=cut detail=" + std::to_string(p));
          return;
        }
      }
      Line("INJECT rank=" + rs + " kind=cut detail=none");
    });
  }
  bool ok = true, late_done = false, mismatch_done = false;
  uint64_t i = 0;
  // The ranks agree when to stop: every kStopEvery ops an AllReduce(max) of "my time is up"
  // (each rank's clock alone would end the loop at different ops, leaving peers waiting).
  constexpr uint64_t kStopEvery = 16;
  for (;; ++i) {
    if (i % kStopEvery == kStopEvery - 1 && Agreed(elapsed_ms() >= o.loop_ms, comm, stream, &ok)) {
      if (!ok) Line("FAIL rank=" + rs + " index=" + std::to_string(i) + " op=stop_vote stage=sync rc=1 async=0");
      break;
    }
    OpSpec s = o.ops[i % o.ops.size()];
    const uint32_t root = static_cast<uint32_t>(i % g_size);
    if (static_cast<int64_t>(g_rank) == o.late_op && !late_done && elapsed_ms() >= o.late_op_ms &&
        (o.late_root < 0 || static_cast<int64_t>(root) == o.late_root)) {
      late_done = true;
      Line("INJECT rank=" + rs + " kind=late_op detail=" + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(o.late_ms));
    }
    OpSpec sent = s;
    if (static_cast<int64_t>(g_rank) == o.mismatch && !mismatch_done &&
        elapsed_ms() >= o.mismatch_ms) {
      mismatch_done = true;
      if (o.mismatch_what == "count") sent.count = s.count * 2;
      else if (o.mismatch_what == "dtype")
        sent.dtype = s.dtype == HCCL_DATA_TYPE_FP32 ? HCCL_DATA_TYPE_INT32
                     : s.dtype == HCCL_DATA_TYPE_INT32 ? HCCL_DATA_TYPE_FP32
                     : s.dtype == HCCL_DATA_TYPE_INT64 ? HCCL_DATA_TYPE_FP64
                                                       : HCCL_DATA_TYPE_INT64;
      else sent.op = s.op == "allreduce" ? "allgather" : "allreduce";
      Line("INJECT rank=" + rs + " kind=mismatch detail=" + std::to_string(i) + ":" +
           o.mismatch_what + ":" + sent.op + ":" + DtypeName(sent.dtype) + ":" +
           std::to_string(sent.count));
    }
    uint64_t nin = 0, nout = 0;
    Sizes(sent, &nin, &nout);
    const size_t es = DtypeSize(sent.dtype);
    for (uint64_t j = 0; j < nin; ++j) Store(sent.dtype, hin.data(), j, Val(g_rank, i, j));
    for (uint64_t j = 0; j < nout; ++j) Store(sent.dtype, hout.data(), j, -1);
    if (sent.op == "broadcast" && g_rank == root) {
      for (uint64_t j = 0; j < nout; ++j) Store(sent.dtype, hout.data(), j, Val(g_rank, i, j));
    }
    aclrtMemcpy(din, max_bytes, hin.data(), nin * es, ACL_MEMCPY_HOST_TO_DEVICE);
    aclrtMemcpy(dout, max_bytes, hout.data(), nout * es, ACL_MEMCPY_HOST_TO_DEVICE);
    HcclResult erc = Enqueue(sent, din, dout, root, comm, stream);
    aclError src = erc == HCCL_SUCCESS ? aclrtSynchronizeStream(stream) : ACL_SUCCESS;
    if (erc != HCCL_SUCCESS || src != ACL_SUCCESS) {
      HcclResult async = HCCL_SUCCESS;
      HcclGetCommAsyncError(comm, &async);
      Line("FAIL rank=" + rs + " index=" + std::to_string(i) + " op=" + sent.op + " stage=" +
           (erc != HCCL_SUCCESS ? "enqueue" : "sync") + " rc=" +
           std::to_string(erc != HCCL_SUCCESS ? static_cast<int>(erc) : static_cast<int>(src)) +
           " async=" + std::to_string(async));
      ok = false;
      break;
    }
    aclrtMemcpy(hout.data(), max_bytes, dout, nout * es, ACL_MEMCPY_DEVICE_TO_HOST);
    // A mismatched op that "succeeded" has no right answer to compare with; it is reported as
    // such by the runner (the fault was not detected), not as corruption.
    if (sent.op != s.op || sent.count != s.count || sent.dtype != s.dtype) {
      Line("UNDETECTED rank=" + rs + " index=" + std::to_string(i) + " op=" + sent.op);
      continue;
    }
    for (uint64_t j = 0; j < nout; ++j) {
      int64_t want = 0;
      if (!Want(s, i, j, root, &want)) break;
      const double got = Load(s.dtype, hout.data(), j);
      if (got != static_cast<double>(want)) {
        Line("CORRUPT rank=" + rs + " index=" + std::to_string(i) + " op=" + s.op + ":" +
             DtypeName(s.dtype) + ":" + std::to_string(s.count) + " elem=" + std::to_string(j) +
             " got=" + std::to_string(got) + " want=" + std::to_string(want));
        break;
      }
    }
  }
  if (cutter.joinable()) cutter.join();
  Line("DONE rank=" + rs + " pid=" + std::to_string(getpid()) + " ops=" + std::to_string(i) +
       " ok=" + (ok ? "1" : "0"));
  HcclCommDestroy(comm);
  aclrtFree(din);
  aclrtFree(dout);
  aclrtDestroyStream(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> env_for, cuts;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") o.dir = v;
    else if (k == "--loop-ms") o.loop_ms = std::atoi(v.c_str());
    else if (k == "--late-ms") o.late_ms = std::atoi(v.c_str());
    else if (k == "--late-init") o.late_init = std::atoll(v.c_str());
    else if (k == "--late-op") ParseAt(v, &o.late_op, &o.late_op_ms);
    else if (k == "--late-root") o.late_root = std::atoll(v.c_str());
    else if (k == "--kill-self") o.kill_self = std::atoll(v.c_str());
    else if (k == "--mismatch") ParseAt(v, &o.mismatch, &o.mismatch_ms, &o.mismatch_what);
    else if (k == "--root-info") {
      const size_t colon = v.find(':');
      o.root_info = std::atoll(v.substr(0, colon).c_str());
      o.root_port = colon == std::string::npos ? "0" : v.substr(colon + 1);
    } else if (k == "--env-for") {
      env_for.push_back(v);
    }
    else if (k == "--rlimit-as") {
      const size_t colon = v.find(':');
      o.rlimit = std::atoll(v.substr(0, colon).c_str());
      o.rlimit_mb = std::atoll(v.substr(colon + 1).c_str());
    } else if (k == "--cut") {
      cuts.push_back(v);  // one per faulty rank: this rank's is picked once its rank is known
    } else if (k == "--ops") {
      for (const std::string& item : Split(v, ',')) {
        const auto f = Split(item, ':');
        if (f.size() != 3) continue;
        o.ops.push_back({f[0], ParseDtype(f[1]), std::strtoull(f[2].c_str(), nullptr, 10)});
      }
    } else {
      std::fprintf(stderr, "chaos_job: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (o.dir.empty() || o.ops.empty() || !VigilLaunchRank(&g_rank, &g_size)) {
    std::fprintf(stderr, "chaos_job: run under `vigil run` with --dir DIR --ops LIST\n");
    return 2;
  }
  for (const std::string& v : cuts) {
    const size_t dash = v.find('-', 1);
    if (std::atoll(v.substr(0, dash).c_str()) != static_cast<int64_t>(g_rank)) continue;
    o.cut = g_rank;
    ParseAt(v.substr(dash + 1), &o.cut_peer, &o.cut_ms);
    break;
  }
  for (const std::string& e : env_for) {
    const size_t colon = e.find(':'), eq = e.find('=');
    if (colon == std::string::npos || eq == std::string::npos) continue;
    if (std::atoll(e.substr(0, colon).c_str()) != static_cast<int64_t>(g_rank)) continue;
    setenv(e.substr(colon + 1, eq - colon - 1).c_str(), e.substr(eq + 1).c_str(), 1);
    Line("INJECT rank=" + std::to_string(g_rank) + " kind=env detail=" + e.substr(colon + 1));
  }
  if (static_cast<int64_t>(g_rank) == o.root_info) {
    // Read once, at the first HCCL/acl call: set before it.
    setenv("HCCL_IF_BASE_PORT", o.root_port.c_str(), 1);
  }
  aclInit(nullptr);
  aclrtSetDevice(static_cast<int32_t>(g_rank % 8));
  const int rc = Run(o);
  aclrtResetDevice(static_cast<int32_t>(g_rank % 8));
  aclFinalize();
  return rc;
}
