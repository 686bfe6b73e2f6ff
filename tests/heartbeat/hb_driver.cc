// Fault driver for the heartbeat tests, run as every rank of `vigil run -n N -- hb_driver ...`.
//
//   hb_driver --out DIR --fault none|kill|killmid|stop|sleep|cut|loop|hold [--victim R] [--peer P]
//             [--warmup W] [--count C] [--op allreduce|broadcast|allgather|reducescatter|reduce|alltoall]
//
// Every rank makes a communicator, runs W AllReduces (links up, heartbeat settled), writes
// DIR/ready-R, then the fault op (--op: AllReduce unless named; C elements a rank, root 0):
//   kill   the victim SIGKILLs itself instead of entering the AllReduce (F1)
//   killmid  every rank runs AllReduces as in `loop`; 300 ms in, a thread of the victim
//          SIGKILLs it wherever its transfers are (with --count large: inside single-copy reads
//          of and by its peers)
//   idlekill  the victim SIGKILLs itself; the others enter no op but poll HcclGetCommAsyncError
//          until it reports the loss (bounded), then record it as their result
//   stop   the victim SIGSTOPs itself (F2); the test SIGCONTs it at the end (DIR/victim-pid)
//   sleep  the victim sleeps in host code until the others have their results (F3)
//   cut    the victim shuts its data link to --peer down (Transport::InjectLinkCut), then enters
//          the AllReduce (F4)
//   loop   every rank runs AllReduces until one fails (the test cuts the network: F4 netns)
//   hold   every rank waits for DIR/release before the AllReduce (vigil health on a live job)
// Each rank that runs the op writes DIR/result-R: "rank=R enqueue=.. sync=.. async=..
// start_us=.. done_us=..". HB_NETNS / HB_IF_IP (comma lists by rank) put a rank into a network
// namespace with its HCCL_IF_IP before anything else runs.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
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
#include "api/hccl_api_util.h"
#include "hccl/hccl.h"
#include "vigil/ext.h"
#include "vigil/launch.h"

namespace {

uint64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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

bool Exists(const std::string& path) {
  return std::filesystem::exists(path);
}

// True once every rank but `skip` has written DIR/<prefix>-R (bounded by timeout_s).
bool WaitForAll(const std::string& dir, const char* prefix, uint32_t n, int64_t skip,
                int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (uint32_t r = 0; r < n && all; ++r) {
      if (static_cast<int64_t>(r) == skip) continue;
      all = Exists(dir + "/" + prefix + "-" + std::to_string(r));
    }
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir, fault = "none";
  int64_t victim = -1, peer = -1;
  int warmup = 3;
  uint64_t count = 64 * 1024;
  std::string op = "allreduce";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--out")
      out_dir = argv[i + 1];
    else if (k == "--fault")
      fault = argv[i + 1];
    else if (k == "--victim")
      victim = std::atoll(argv[i + 1]);
    else if (k == "--peer")
      peer = std::atoll(argv[i + 1]);
    else if (k == "--warmup")
      warmup = std::atoi(argv[i + 1]);
    else if (k == "--count")
      count = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--op")
      op = argv[i + 1];
  }
  uint32_t rank = 0, n = 0;
  if (out_dir.empty() || !VigilLaunchRank(&rank, &n)) {
    std::fprintf(stderr, "hb_driver: run under `vigil run` with --out DIR\n");
    return 2;
  }
  // Network namespace first: every thread made later inherits it.
  const auto nets = SplitComma(std::getenv("HB_NETNS"));
  const auto ips = SplitComma(std::getenv("HB_IF_IP"));
  if (rank < nets.size() && !nets[rank].empty()) {
    const std::string path = "/var/run/netns/" + nets[rank];
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "hb_driver rank %u: cannot enter %s: %s\n", rank, path.c_str(),
                   strerror(errno));
      return 3;
    }
    close(fd);
  }
  if (rank < ips.size() && !ips[rank].empty()) setenv("HCCL_IF_IP", ips[rank].c_str(), 1);

  if (aclrtSetDevice(static_cast<int32_t>(rank % 8)) != ACL_SUCCESS) return 10;
  aclrtStream stream;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 11;
  HcclRootInfo root;
  if (VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) return 12;
  HcclComm comm;
  if (HcclCommInitRootInfo(n, &root, rank, &comm) != HCCL_SUCCESS) return 13;

  // Room for the ops whose other buffer holds a block per rank (AllGather, ReduceScatter,
  // AlltoAll).
  std::vector<float> in(count * n, 1.0f), outv(count * n, 0.0f);
  auto run_op = [&]() -> HcclResult {
    const HcclDataType f = HCCL_DATA_TYPE_FP32;
    if (op == "broadcast") return HcclBroadcast(in.data(), count, f, 0, comm, stream);
    if (op == "allgather") return HcclAllGather(in.data(), outv.data(), count, f, comm, stream);
    if (op == "reducescatter") {
      return HcclReduceScatter(in.data(), outv.data(), count, f, HCCL_REDUCE_SUM, comm, stream);
    }
    if (op == "reduce") {
      return HcclReduce(in.data(), outv.data(), count, f, HCCL_REDUCE_SUM, 0, comm, stream);
    }
    if (op == "alltoall") return HcclAlltoAll(in.data(), count, f, outv.data(), count, f, comm, stream);
    return HcclAllReduce(in.data(), outv.data(), count, f, HCCL_REDUCE_SUM, comm, stream);
  };
  for (int i = 0; i < warmup; ++i) {
    if (HcclAllReduce(in.data(), outv.data(), count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                      stream) != HCCL_SUCCESS ||
        aclrtSynchronizeStream(stream) != ACL_SUCCESS) {
      std::fprintf(stderr, "hb_driver rank %u: warm-up AllReduce %d failed\n", rank, i);
      return 14;
    }
  }
  WriteFile(out_dir + "/ready-" + std::to_string(rank), std::to_string(getpid()));
  // Everyone is past warm-up before the fault, so the fault hits the op below, not warm-up.
  if (!WaitForAll(out_dir, "ready", n, -1, 60)) return 15;

  const bool is_victim = static_cast<int64_t>(rank) == victim;
  if (is_victim && (fault == "kill" || fault == "idlekill")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the others are inside the op
    WriteFile(out_dir + "/victim-time", std::to_string(NowUs()));
    raise(SIGKILL);
  }
  std::thread killer;
  if (is_victim && fault == "killmid") {
    killer = std::thread([&out_dir] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      WriteFile(out_dir + "/victim-time", std::to_string(NowUs()));
      raise(SIGKILL);
    });
  }
  if (is_victim && fault == "stop") {
    WriteFile(out_dir + "/victim-pid", std::to_string(getpid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    WriteFile(out_dir + "/victim-time", std::to_string(NowUs()));
    raise(SIGSTOP);
  }
  if (is_victim && fault == "sleep") {
    // Host code that never reaches the collective while the others wait in it.
    WaitForAll(out_dir, "result", n, victim, 120);
  }
  if (is_victim && fault == "cut") {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto c = vigil::api::LookupComm(comm);
    const bool cut = c && peer >= 0 && c->transport()->InjectLinkCut(static_cast<uint32_t>(peer));
    WriteFile(out_dir + "/victim-time", std::to_string(NowUs()));
    if (!cut)
      std::fprintf(stderr, "hb_driver rank %u: no link to rank %lld to cut\n", rank,
                   static_cast<long long>(peer));
  }
  if (fault == "hold") {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!Exists(out_dir + "/release") && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  HcclResult enq = HCCL_SUCCESS;
  aclError sync = ACL_SUCCESS;
  const uint64_t start_us = NowUs();
  int iterations = 0;
  if (fault == "idlekill") {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    HcclResult async = HCCL_SUCCESS;
    while (HcclGetCommAsyncError(comm, &async) == HCCL_SUCCESS && async == HCCL_SUCCESS &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    fault = "none";
    count = 0;  // no op: go straight to the result
  }
  const auto loop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (count > 0) {
    enq = run_op();
    sync = aclrtSynchronizeStream(stream);
    ++iterations;
    if (!((fault == "loop" || fault == "killmid") && enq == HCCL_SUCCESS && sync == ACL_SUCCESS &&
          std::chrono::steady_clock::now() < loop_deadline)) {
      break;
    }
  }
  if (killer.joinable()) killer.join();  // the victim dies here at the latest
  const uint64_t done_us = NowUs();
  HcclResult async = HCCL_SUCCESS;
  HcclGetCommAsyncError(comm, &async);
  char line[512];
  std::snprintf(line, sizeof(line),
                "rank=%u enqueue=%d sync=%d async=%d start_us=%llu done_us=%llu iterations=%d",
                rank, static_cast<int>(enq), static_cast<int>(sync), static_cast<int>(async),
                static_cast<unsigned long long>(start_us), static_cast<unsigned long long>(done_us),
                iterations);
  std::printf("hb_driver %s\n", line);
  std::fflush(stdout);
  WriteFile(out_dir + "/result-" + std::to_string(rank), line);

  if (fault == "cut") {
    // A rank whose op failed because a peer closed its links can be done within milliseconds of
    // the cut, before the heartbeat's next tick brings the cut link's ERROR CQE report
    // (the tests assert every rank logs one). Stay in the communicator until this rank's
    // heartbeat has an event about a member (bounded), as a user reading the error text would.
    const auto hb_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<char> text(8192);
    while (std::chrono::steady_clock::now() < hb_deadline &&
           (VigilCommGetLastErrorMessage(comm, text.data(), text.size()) != HCCL_SUCCESS ||
            std::strstr(text.data(), "crimer rank") == nullptr)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  const HcclResult destroyed = HcclCommDestroy(comm);
  aclrtDestroyStream(stream);
  aclrtResetDevice(static_cast<int32_t>(rank % 8));
  return destroyed == HCCL_SUCCESS ? 0 : 16;
}
