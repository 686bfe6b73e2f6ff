// Generates a synthetic CANN log set for `vigil diagnose` speed runs: N ranks on N/8 nodes, each
// with run/plog (env echoes, init, one Entry line per op, heartbeat events) and debug/plog (INFO
// noise from several modules, rotated into two files, and the task-exception lines at the end).
// The fault: rank `--stuck` stops issuing ops at op `--stop`; the others time out there.
//
//   gen_diagnose_logs OUT_DIR [--ranks 1024] [--mib-per-rank 2] [--stuck 517]
#include <sys/stat.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

namespace {

std::string Stamp(long long us) {
  long long s = us / 1000000, frac = us % 1000000;
  long long day_s = s % 86400;
  char b[64];
  std::snprintf(b, sizeof(b), "2025-10-24-%02lld:%02lld:%02lld.%03lld.%03lld", day_s / 3600, day_s / 60 % 60,
                day_s % 60, frac / 1000, frac % 1000);
  return b;
}

struct Out {
  FILE* f = nullptr;
  size_t bytes = 0;
  void Open(const std::string& path) {
    bytes = 0;  // per file: the debug Out is reused for both rotated parts
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
      std::perror(path.c_str());
      std::exit(1);
    }
    std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  }
  void Line(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    int n = std::vfprintf(f, fmt, ap);
    va_end(ap);
    std::fputc('\n', f);
    bytes += static_cast<size_t>(n) + 1;
  }
  void Close() {
    if (f != nullptr) std::fclose(f);
    f = nullptr;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [--ranks N] [--mib-per-rank M] [--stuck R]\n", argv[0]);
    return 2;
  }
  std::string out = argv[1];
  int ranks = 1024, stuck = 517;
  double mib = 2.0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--mib-per-rank")) mib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--stuck")) stuck = std::atoi(argv[i + 1]);
  }
  const std::string group = "127.20.0.1%eth0_60000_0_1761275812718970";
  const size_t budget = static_cast<size_t>(mib * 1024 * 1024);
  const long long t0 = (11LL * 3600 + 16 * 60) * 1000000LL;
  size_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    int node = r / 8, dev = r % 8;
    int pid = 100000 + r;
    std::string host = "127.20." + std::to_string(node / 250) + "." + std::to_string(node % 250 + 1);
    std::string root = out + "/node" + std::to_string(node);
    std::mt19937 rng(static_cast<unsigned>(r));
    Out run, dbg;
    run.Open(root + "/run/plog/plog-" + std::to_string(pid) + "_20251024111600000.log");
    run.Line("[INFO] HCCL(%d,python):%s [externalinput.cc:210] [%d][HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [600]",
             pid, Stamp(t0).c_str(), pid);
    run.Line("[INFO] HCCL(%d,python):%s [externalinput.cc:211] [%d][HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M",
             pid, Stamp(t0).c_str(), pid);
    run.Line("[INFO] HCCL(%d,python):%s [op_base.cc:1292] [%d]Entry-HcclCommInitRootInfoInner:ranks[%d], rank[%d], "
             "rootinfo: host ip[127.20.0.1] port[60000] nicDeploy[1] identifier[%s], deviceLogicId[%d]",
             pid, Stamp(t0 + 1000).c_str(), pid, ranks, r, group.c_str(), dev);
    // Half the budget in run logs (Entry lines), half in debug noise.
    long long t = t0 + 2000000;
    int op = 0;
    // The same op count on every rank (an Entry line is about 330 bytes); the stuck rank stops
    // at `stop`, the index every other rank times out on.
    const int ops = static_cast<int>(budget / 2 / 330);
    const int stop = ops - 1;
    while (op < ops) {
      if (r == stuck && op >= stop) break;
      t += 20000 + rng() % 1000;
      run.Line("[INFO] HCCL(%d,python):%s [hccl_opbase_atrace_info.cc:56][%d]Entry-HcclAllReduce: tag[AllReduce_%s], "
               "sendBuf[0x12c0c00%05x], recvBuf[0x12c0c10%05x], count[%d], dataType[float32], op[sum], localRank[%d], "
               "streamId[2],comm[0xfffe380078d0], deviceLogicId[%d]",
               pid, Stamp(t).c_str(), pid + 1, group.c_str(), op & 0xfffff, op & 0xfffff, 1024 + (op % 7) * 256, r, dev);
      ++op;
    }
    long long stop_time = t;
    // Heartbeat: every rank's neighbours report the stuck rank.
    if (r != stuck && (r / 8 == stuck / 8 || r % 8 == stuck % 8)) {
      run.Line("[INFO] HCCL(%d,python):%s [heartbeat.cc:951] [8970][TaskExecStage][HeartbeatAbnormal]local rank [%s/%d]: "
               "crimer rank [127.20.0.%d/%d] status[STUCK] by informer rank [127.20.0.%d/%d]",
               pid, Stamp(stop_time + 250000000LL).c_str(), host.c_str(), dev, stuck / 8 + 1, stuck % 8, stuck / 8 + 1,
               stuck % 8);
    }
    total += run.bytes;
    run.Close();
    // Debug logs, rotated in two files.
    static const char* kNoise[] = {
        "[INFO] HCCL(%d,python):%s [hccl_communicator.cc:%d] [%d]Alloc buffer in comm, size[%d], rank[%d]",
        "[DEBUG] GE(%d,python):%s [graph_manager.cc:%d]%d Run graph %d, session %d done",
        "[INFO] RUNTIME(%d,python):%s [stream.cc:%d]%d stream sync done, stream_id=%d, task_id=%d",
        "[INFO] HCCL(%d,python):%s [transport_manager.cc:%d] [%d]create link rank[%d]-rank[%d] success",
        "[WARNING] ASCENDCL(%d,python):%s [acl_rt.cc:%d]%d aclrtSynchronizeStreamWithTimeout timeout=%d, stream=%d",
    };
    for (int part = 0; part < 2; ++part) {
      dbg.Open(root + "/debug/plog/plog-" + std::to_string(pid) + "_2025102411160000" + std::to_string(part) + ".log");
      long long dt = t0 + part * 1000000;
      while (dbg.bytes < budget / 4) {
        dt += 5000;
        int k = static_cast<int>(rng() % 5);
        dbg.Line(kNoise[k], pid, Stamp(dt).c_str(), static_cast<int>(rng() % 3000), pid + 2, static_cast<int>(rng() % 100000),
                 static_cast<int>(rng() % 1024));
      }
      if (part == 1 && r != stuck) {
        std::string ft = Stamp(stop_time + 600000000LL + r * 1000);
        dbg.Line("[ERROR] HCCL(%d,python):%s [task_exception_handler.cc:908] [%d][TaskExecStage][Timeout][Host]Task run "
                 "failed, base information is streamID:[2], taskID[%d], tag[AllReduce_%s], AlgType(level 0-1-2):[fullmesh-ring-NHR]. "
                 "[ERROR] HCCL(%d,python):%s [task_exception_handler.cc:771] [%d][TaskExecStage][Timeout][Host]Task run failed, "
                 "groupRank information is group:[%s], user define information[], rankSize[%d], rankId[%d]. "
                 "[ERROR] HCCL(%d,python):%s [task_exception_handler.cc:704] [%d][TaskExecStage][Timeout][Host]Task run failed, "
                 "opData information is timeStamp:[%s], deviceId[%d], index[%d], count[%d], reduceType[sum], src[0x1], dst[0x2], dataType[float32].",
                 pid, ft.c_str(), pid, stop, group.c_str(), pid, ft.c_str(), pid, group.c_str(), ranks, r, pid, ft.c_str(), pid,
                 Stamp(stop_time).c_str(), dev, stop, 1024 + (stop % 7) * 256);
      }
      total += dbg.bytes;
      dbg.Close();
    }
  }
  std::printf("wrote %.2f GiB for %d ranks under %s\n", static_cast<double>(total) / (1 << 30), ranks, out.c_str());
  return 0;
}
