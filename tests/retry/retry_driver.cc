// The rank program of the op retry tests (F17), run as every rank of
//   vigil run -n N ... -- retry_driver --out DIR [--ops K] [--count C] [--seconds S]
//                                     [--config-retry L0:1,L1:1]  (HcclCommConfig's retry field)
// Every rank makes a communicator, runs two warm-up AllReduces, writes DIR/ready-R, then runs
// AllReduces (int32 sum, every other one in place) of rank- and op-dependent data and checks
// every element against the exact sum: K ops, or with --seconds S until DIR/stop exists or S
// seconds passed (the test takes a network link down and up meanwhile; the ranks agree on
// stopping by a one-element AllReduce before each op). It stops at the first failed op. One
// line per rank, also written to DIR/result-R:
//   RESULT rank=R pid=P ops=<run> ok=<exact> wrong=<elements wrong> enqueue=<rc> sync=<rc>
//   async=<rc>
// HB_NETNS / HB_IF_IP (comma lists by rank) put a rank into a network namespace with its
// HCCL_IF_IP first (as the heartbeat tests' driver).
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace {

std::vector<std::string> SplitComma(const char* s) {
  std::vector<std::string> out;
  if (s == nullptr) return out;
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || *p == '\0') {
      out.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

void WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

bool AllReady(const std::string& dir, uint32_t n, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (uint32_t r = 0; r < n && all; ++r) {
      all = std::filesystem::exists(dir + "/ready-" + std::to_string(r));
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int32_t Value(uint32_t rank, uint64_t i, int op) {
  return static_cast<int32_t>(rank * 1000 + i % 997 + static_cast<uint64_t>(op) * 7);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir;
  int ops = 4;
  uint64_t count = 1 << 20;
  int seconds = 0;
  std::string config_retry;  // HcclCommConfig.hcclRetryEnable ("" = none: HcclCommInitRootInfo)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--out")
      out_dir = argv[i + 1];
    else if (k == "--ops")
      ops = std::atoi(argv[i + 1]);
    else if (k == "--count")
      count = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--seconds")
      seconds = std::atoi(argv[i + 1]);
    else if (k == "--config-retry")
      config_retry = argv[i + 1];
  }
  uint32_t rank = 0, n = 0;
  if (out_dir.empty() || !VigilLaunchRank(&rank, &n)) {
    std::fprintf(stderr, "retry_driver: run under `vigil run` with --out DIR\n");
    return 2;
  }
  const auto nets = SplitComma(std::getenv("HB_NETNS"));
  const auto ips = SplitComma(std::getenv("HB_IF_IP"));
  if (rank < nets.size() && !nets[rank].empty()) {
    const std::string path = "/var/run/netns/" + nets[rank];
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) return 3;
    close(fd);
  }
  if (rank < ips.size() && !ips[rank].empty()) setenv("HCCL_IF_IP", ips[rank].c_str(), 1);

  if (aclrtSetDevice(static_cast<int32_t>(rank % 8)) != ACL_SUCCESS) return 10;
  aclrtStream stream;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 11;
  HcclRootInfo root;
  if (VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) return 12;
  HcclComm comm;
  if (config_retry.empty()) {
    if (HcclCommInitRootInfo(n, &root, rank, &comm) != HCCL_SUCCESS) return 13;
  } else {
    HcclCommConfig config;
    HcclCommConfigInit(&config);
    std::snprintf(config.hcclRetryEnable, sizeof(config.hcclRetryEnable), "%s",
                  config_retry.c_str());
    if (HcclCommInitRootInfoConfig(n, &root, rank, &config, &comm) != HCCL_SUCCESS) return 13;
  }

  std::vector<int32_t> in(count), out(count);
  auto run = [&](int op, bool inplace, HcclResult* enq, aclError* sync) {
    for (uint64_t i = 0; i < count; ++i) in[i] = Value(rank, i, op);
    int32_t* dst = inplace ? in.data() : out.data();
    *enq =
        HcclAllReduce(in.data(), dst, count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, stream);
    *sync = aclrtSynchronizeStream(stream);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < count; ++i) {
      int64_t want = 0;
      for (uint32_t r = 0; r < n; ++r) want += Value(r, i, op);
      if (dst[i] != static_cast<int32_t>(want)) ++wrong;
    }
    return wrong;
  };
  HcclResult enq = HCCL_SUCCESS;
  aclError sync = ACL_SUCCESS;
  for (int w = 0; w < 2; ++w) {
    if (run(-1 - w, false, &enq, &sync) != 0 || enq != HCCL_SUCCESS || sync != ACL_SUCCESS) {
      std::fprintf(stderr, "retry_driver rank %u: warm-up failed\n", rank);
      return 14;
    }
  }
  WriteFile(out_dir + "/ready-" + std::to_string(rank), std::to_string(getpid()));
  if (!AllReady(out_dir, n, 60)) return 15;

  int done = 0, ok = 0;
  uint64_t wrong = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (int op = 0;; ++op) {
    if (seconds == 0 && op >= ops) break;
    if (seconds > 0) {
      // Every rank must stop after the same op: they agree on the stop file by a reduction.
      int32_t flag =
          std::filesystem::exists(out_dir + "/stop") || std::chrono::steady_clock::now() > deadline;
      int32_t any = 0;
      enq = HcclAllReduce(&flag, &any, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, stream);
      sync = aclrtSynchronizeStream(stream);
      if (enq != HCCL_SUCCESS || sync != ACL_SUCCESS || any != 0) break;
    }
    const uint64_t w = run(op, op % 2 == 1, &enq, &sync);
    ++done;
    if (enq != HCCL_SUCCESS || sync != ACL_SUCCESS) break;
    wrong += w;
    if (w == 0) ++ok;
  }
  HcclResult async = HCCL_SUCCESS;
  HcclGetCommAsyncError(comm, &async);
  char line[256];
  std::snprintf(line, sizeof(line),
                "RESULT rank=%u pid=%d ops=%d ok=%d wrong=%llu enqueue=%d sync=%d async=%d", rank,
                static_cast<int>(getpid()), done, ok, static_cast<unsigned long long>(wrong),
                static_cast<int>(enq), static_cast<int>(sync), static_cast<int>(async));
  std::printf("%s\n", line);
  std::fflush(stdout);
  WriteFile(out_dir + "/result-" + std::to_string(rank), line);
  HcclCommDestroy(comm);
  aclrtDestroyStream(stream);
  aclrtResetDevice(static_cast<int32_t>(rank % 8));
  return 0;
}
