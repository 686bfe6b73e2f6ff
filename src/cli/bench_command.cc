#include "cli/bench_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/bench_ops.h"
#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace vigil::cli {

namespace {

using bench::Op;
using bench::OpInfo;

struct BenchOptions {
  std::string op;
  std::string min_bytes = "8";
  std::string max_bytes = "32M";
  double factor = 2.0;
  std::string step_bytes = "1M";
  uint32_t iters = 20;
  uint32_t warmup = 5;
  std::string dtype = "float";
  std::string redop = "sum";
  uint32_t root = 0;
  uint32_t ranks = 0;
  std::string transport;
  bool json = false;
  bool in_place = false;
  bool out_of_place = false;
  bool both = false;
  int check = 1;
  int blocking = 0;  // nccl-tests' -z: synchronize the stream after every op
  bool host_mem = false;
  std::string log_dir;
  uint32_t timeout_s = 0;
  std::string rootinfo_file;
};

// "8", "64K", "1M", "2G" (powers of 1024) -> bytes; false on junk.
bool ParseBytes(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return false;
  uint64_t mult = 1;
  std::string suffix(end);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b') && suffix.size() > 1) {
    suffix.pop_back();  // "64KB", "1MiB" without the "i"
  }
  if (!suffix.empty() && suffix.back() == 'i') suffix.pop_back();
  if (suffix.empty() || suffix == "B" || suffix == "b") mult = 1;
  else if (suffix == "K" || suffix == "k") mult = 1ull << 10;
  else if (suffix == "M" || suffix == "m") mult = 1ull << 20;
  else if (suffix == "G" || suffix == "g") mult = 1ull << 30;
  else return false;
  *out = v * mult;
  return true;
}

std::string SelfExe() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "vigil";
  buf[n] = '\0';
  return buf;
}

// The bench arguments a rank needs, rebuilt from the parsed options (the launcher's own
// options, like --ranks and --log-dir, are left out).
std::vector<std::string> RankArgs(const BenchOptions& o) {
  std::vector<std::string> a = {"bench", o.op,
                                "-b", o.min_bytes,
                                "-e", o.max_bytes,
                                "-f", fmt::format("{}", o.factor),
                                "-i", o.step_bytes,
                                "-n", std::to_string(o.iters),
                                "-w", std::to_string(o.warmup),
                                "-d", o.dtype,
                                "-o", o.redop,
                                "--root", std::to_string(o.root),
                                "-c", std::to_string(o.check),
                                "-z", std::to_string(o.blocking)};
  if (o.json) a.push_back("--json");
  if (o.in_place) a.push_back("--inplace");
  if (o.out_of_place) a.push_back("--outofplace");
  if (o.host_mem) a.push_back("--host-mem");
  return a;
}

// Becomes `vigil run -n N -q [--transport T] [--timeout S] [--log-dir D] -- vigil bench ...`
// (exec, so signals and the exit status are vigil run's own). Returns only on failure.
int LaunchRanks(const BenchOptions& o) {
  const std::string self = SelfExe();
  std::vector<std::string> args = {self, "run", "-n", std::to_string(o.ranks ? o.ranks : 4), "-q"};
  if (!o.transport.empty()) args.insert(args.end(), {"--transport", o.transport});
  if (o.timeout_s > 0) args.insert(args.end(), {"--timeout", std::to_string(o.timeout_s)});
  if (!o.log_dir.empty()) args.insert(args.end(), {"--log-dir", o.log_dir});
  args.push_back("--");
  args.push_back(self);
  for (std::string& s : RankArgs(o)) args.push_back(std::move(s));
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execv(self.c_str(), argv.data());
  fmt::print(stderr, "vigil bench: cannot start {}: {}\n", self, strerror(errno));
  return 127;
}

// Under mpirun/srun nobody hands out a root info: rank 0 writes it to a file the others read.
// The file is named after the launcher's job (unique per run) unless --rootinfo-file says.
bool EnsureRootInfoSource(const BenchOptions& o, std::string* file_out) {
  const char* hex = getenv("VIGIL_ROOT_INFO");
  if (hex != nullptr && *hex != '\0') return true;
  std::string file = o.rootinfo_file;
  if (file.empty()) {
    if (const char* f = getenv("VIGIL_ROOT_INFO_FILE"); f != nullptr && *f != '\0') file = f;
  }
  if (file.empty()) {
    std::string job;
    if (const char* ns = getenv("PMIX_NAMESPACE"); ns != nullptr && *ns != '\0') {
      job = ns;
    } else if (const char* j = getenv("OMPI_MCA_ess_base_jobid"); j != nullptr && *j != '\0') {
      job = std::string("ompi-") + j;
    } else if (const char* sj = getenv("SLURM_JOB_ID"); sj != nullptr && *sj != '\0') {
      const char* step = getenv("SLURM_STEP_ID");
      job = fmt::format("slurm-{}.{}", sj, step ? step : "0");
    }
    if (job.empty()) return false;
    for (char& c : job) {
      if (c == '/' || c == ' ') c = '_';
    }
    const char* tmp = getenv("TMPDIR");
    file = fmt::format("{}/vigil-bench-{}.rootinfo", (tmp && *tmp) ? tmp : "/tmp", job);
  }
  setenv("VIGIL_ROOT_INFO_FILE", file.c_str(), 1);
  *file_out = file;
  return true;
}

uint32_t LocalRank(uint32_t rank) {
  uint32_t v = 0;
  if (VigilEnvU32("LOCAL_RANK", &v) || VigilEnvU32("OMPI_COMM_WORLD_LOCAL_RANK", &v) ||
      VigilEnvU32("SLURM_LOCALID", &v) || VigilEnvU32("MPI_LOCALRANKID", &v)) {
    return v;
  }
  return rank;
}

struct Cell {
  bool ran = false;
  double time_us = 0;
  uint64_t wrong = 0;
};

// One rank's whole run; returns the process exit code.
class RankBench {
 public:
  RankBench(const BenchOptions& o, const OpInfo& info, HcclDataType type, HcclReduceOp redop,
            std::vector<uint64_t> sizes)
      : o_(o), info_(info), type_(type), redop_(redop), sizes_(std::move(sizes)) {}

  int Run();

 private:
  int Fail(const char* what, int code) {
    fmt::print(stderr, "vigil bench: rank {}: {} failed: {} ({})\n", rank_, what,
               code >= 0 && code < 100 ? HcclGetErrorString(static_cast<HcclResult>(code)) : "acl error",
               code);
    return 1;
  }
  bool Sync(int* rc) {
    aclError e = aclrtSynchronizeStream(stream_);
    if (e != ACL_SUCCESS) {
      *rc = Fail("aclrtSynchronizeStream", e);
      return false;
    }
    return true;
  }
  int Measure(const bench::Call& call, uint32_t salt, Cell* cell);
  void PrintHeader(const std::vector<std::string>& rank_lines);
  void PrintRow(const bench::Shape& s, const Cell cells[2]);

  const BenchOptions& o_;
  const OpInfo& info_;
  HcclDataType type_;
  HcclReduceOp redop_;
  std::vector<uint64_t> sizes_;
  uint32_t rank_ = 0, nranks_ = 1;
  HcclComm comm_ = nullptr;
  aclrtStream stream_ = nullptr;
  bench::Buffers bufs_;
  std::unique_ptr<bench::Checker> checker_;
  bool modes_[2] = {true, true};  // out-of-place, in-place
  nlohmann::ordered_json rows_ = nlohmann::ordered_json::array();
  double busbw_sum_ = 0;
  uint64_t busbw_n_ = 0;
};

int RankBench::Measure(const bench::Call& call, uint32_t salt, Cell* cell) {
  int rc = 0;
  cell->ran = true;
  for (uint32_t i = 0; i < o_.warmup; ++i) {
    if (HcclResult r = bench::Launch(call, bufs_, comm_, stream_); r != HCCL_SUCCESS) {
      return Fail(info_.title, r);
    }
  }
  if (HcclResult r = HcclBarrier(comm_, stream_); r != HCCL_SUCCESS) return Fail("HcclBarrier", r);
  if (!Sync(&rc)) return rc;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < o_.iters; ++i) {
    if (HcclResult r = bench::Launch(call, bufs_, comm_, stream_); r != HCCL_SUCCESS) {
      return Fail(info_.title, r);
    }
    if (o_.blocking != 0 && !Sync(&rc)) return rc;
  }
  if (!Sync(&rc)) return rc;
  const auto t1 = std::chrono::steady_clock::now();
  cell->time_us = std::chrono::duration<double, std::micro>(t1 - t0).count() /
                  std::max<uint32_t>(o_.iters, 1);
  // The check: its own call on fresh, salted data, outside the timed loop (as nccl-tests).
  if (o_.check) {
    checker_->Prepare(call, bufs_, salt);
    if (HcclResult r = bench::Launch(call, bufs_, comm_, stream_); r != HCCL_SUCCESS) {
      return Fail(info_.title, r);
    }
    if (!Sync(&rc)) return rc;
    cell->wrong = checker_->Verify(call, bufs_, salt);
  }
  return 0;
}

void RankBench::PrintHeader(const std::vector<std::string>& rank_lines) {
  const char* tp = getenv("VIGIL_TRANSPORT");
  fmt::print("# vigil bench {}: {} ranks, transport {}, memory {}\n", info_.name, nranks_,
             (tp && *tp) ? tp : "auto", o_.host_mem ? "host" : "device (aclrtMalloc)");
  fmt::print("# minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} validation: {} "
             "blocking: {}\n",
             sizes_.front(), sizes_.back(),
             o_.factor > 1 ? fmt::format("{}(factor)", o_.factor) : fmt::format("{}(bytes)", o_.step_bytes),
             o_.warmup, o_.iters, o_.check, o_.blocking);
  fmt::print("#\n# Using devices\n");
  for (const std::string& l : rank_lines) fmt::print("{}\n", l);
  fmt::print("#\n");
  fmt::print("# {:>59}{:>34}\n", "out-of-place", "in-place");
  fmt::print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
             "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
             "algbw", "busbw", "#wrong");
  fmt::print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n",
             "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
             "(GB/s)", "");
  std::fflush(stdout);
}

std::string FormatTime(double us) {
  if (us >= 10000) return fmt::format("{:.0f}", us);
  if (us >= 100) return fmt::format("{:.1f}", us);
  return fmt::format("{:.2f}", us);
}

void RankBench::PrintRow(const bench::Shape& s, const Cell cells[2]) {
  const double factor = bench::BusFactor(info_.op, nranks_);
  const int root = info_.rooted ? static_cast<int>(o_.root) : -1;
  const char* redop = info_.reduces ? bench::ReduceOpName(redop_) : "none";
  nlohmann::ordered_json row = {{"size", s.bytes},  {"count", s.total_count},
                        {"type", bench::DataTypeName(type_)}, {"redop", redop},
                        {"root", root}};
  std::string line = fmt::format("  {:>10}  {:>12}  {:>8}  {:>6}  {:>6}", s.bytes, s.total_count,
                                 bench::DataTypeName(type_), redop, root);
  static const char* kKeys[2] = {"out_of_place", "in_place"};
  for (int m = 0; m < 2; ++m) {
    const Cell& c = cells[m];
    if (!c.ran) {
      line += fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "N/A", "N/A", "N/A", "N/A");
      row[kKeys[m]] = nullptr;
      continue;
    }
    const double algbw = static_cast<double>(s.bytes) / c.time_us / 1e3;  // GB/s
    const double busbw = algbw * factor;
    busbw_sum_ += busbw;
    ++busbw_n_;
    line += fmt::format("  {:>7}  {:>6.2f}  {:>6.2f}  {:>6}", FormatTime(c.time_us), algbw, busbw,
                        o_.check ? std::to_string(c.wrong) : std::string("N/A"));
    row[kKeys[m]] = {{"time_us", c.time_us}, {"algbw_gbps", algbw}, {"busbw_gbps", busbw},
                     {"wrong", o_.check ? nlohmann::ordered_json(c.wrong) : nlohmann::ordered_json(nullptr)}};
  }
  rows_.push_back(std::move(row));
  if (!o_.json) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  }
}

int RankBench::Run() {
  if (!VigilLaunchRank(&rank_, &nranks_)) return 2;
  if (o_.ranks != 0 && o_.ranks != nranks_ && rank_ == 0) {
    fmt::print(stderr, "vigil bench: --ranks {} ignored: the launcher started {} ranks\n", o_.ranks,
               nranks_);
  }
  if (info_.rooted && o_.root >= nranks_) {
    fmt::print(stderr, "vigil bench: --root {} is not a rank (there are {})\n", o_.root, nranks_);
    return 2;
  }
  if (!o_.transport.empty()) setenv("VIGIL_TRANSPORT", o_.transport.c_str(), 1);
  std::string rootinfo_file;
  if (!EnsureRootInfoSource(o_, &rootinfo_file)) {
    fmt::print(stderr,
               "vigil bench: rank {}: no root info: start the ranks with `vigil run`, or set "
               "VIGIL_ROOT_INFO_FILE (or --rootinfo-file) to a path every rank can read\n",
               rank_);
    return 2;
  }

  uint32_t devices = 1;
  if (aclrtGetDeviceCount(&devices) != ACL_SUCCESS || devices == 0) devices = 1;
  const int32_t device = static_cast<int32_t>(LocalRank(rank_) % devices);
  if (aclError e = aclrtSetDevice(device); e != ACL_SUCCESS) return Fail("aclrtSetDevice", e);
  HcclRootInfo root_info;
  if (HcclResult r = VigilLaunchRootInfo(rank_, &root_info); r != HCCL_SUCCESS) {
    return Fail("root info", r);
  }
  if (HcclResult r = HcclCommInitRootInfo(nranks_, &root_info, rank_, &comm_); r != HCCL_SUCCESS) {
    return Fail("HcclCommInitRootInfo", r);
  }
  if (aclError e = aclrtCreateStream(&stream_); e != ACL_SUCCESS) return Fail("aclrtCreateStream", e);

  int rc = 0;
  // Who is where (nccl-tests' "Using devices" lines), gathered so rank 0 can print them.
  constexpr size_t kLine = 128;
  std::vector<char> mine(kLine, 0), all(kLine * nranks_, 0);
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  fmt::format_to_n(mine.data(), kLine - 1, "#  Rank {:>3} Pid {:>7} on {:>10} device {:>2}", rank_,
                   getpid(), host, device);
  if (HcclResult r = HcclAllGather(mine.data(), all.data(), kLine, HCCL_DATA_TYPE_INT8, comm_, stream_);
      r != HCCL_SUCCESS) {
    return Fail("HcclAllGather", r);
  }
  if (!Sync(&rc)) return rc;
  // Every rank has read the root info by now: a named file may go (a rerun must not find it).
  if (rank_ == 0 && !rootinfo_file.empty()) unlink(rootinfo_file.c_str());

  size_t send_cap = 64, recv_cap = 64;
  for (uint64_t size : sizes_) {
    const bench::Shape s = bench::ShapeFor(info_.op, size, type_, nranks_);
    send_cap = std::max(send_cap, s.send_bytes);
    recv_cap = std::max(recv_cap, s.recv_bytes);
  }
  bufs_.send_cap = send_cap;
  bufs_.recv_cap = recv_cap;
  if (o_.host_mem) {
    if (posix_memalign(&bufs_.send, 4096, send_cap) != 0 ||
        posix_memalign(&bufs_.recv, 4096, recv_cap) != 0) {
      return Fail("posix_memalign", -1);
    }
  } else {
    if (aclError e = aclrtMalloc(&bufs_.send, send_cap, ACL_MEM_MALLOC_HUGE_FIRST); e != ACL_SUCCESS) {
      return Fail("aclrtMalloc", e);
    }
    if (aclError e = aclrtMalloc(&bufs_.recv, recv_cap, ACL_MEM_MALLOC_HUGE_FIRST); e != ACL_SUCCESS) {
      return Fail("aclrtMalloc", e);
    }
  }
  // Fault every page in now, so first touches do not land in a timed loop.
  std::memset(bufs_.send, 0, send_cap);
  std::memset(bufs_.recv, 0, recv_cap);
  checker_ = std::make_unique<bench::Checker>(type_, redop_, nranks_);

  const bool want_in = o_.in_place || o_.both || !o_.out_of_place;
  const bool want_out = o_.out_of_place || o_.both || !o_.in_place;
  modes_[0] = want_out && info_.out_of_place;
  modes_[1] = want_in && info_.in_place;
  if (!modes_[0] && !modes_[1] && rank_ == 0) {
    fmt::print(stderr, "vigil bench: {} has no {} form; nothing to run\n", info_.name,
               want_in ? "in-place" : "out-of-place");
  }

  if (rank_ == 0 && !o_.json) {
    std::vector<std::string> lines;
    for (uint32_t r = 0; r < nranks_; ++r) lines.emplace_back(&all[r * kLine]);
    PrintHeader(lines);
  }

  // nccl-tests' warm-up at the largest size first: links, scratch and the shm rings are
  // established and faulted in before any timed loop (each size warms up again below).
  for (int m = 0; m < 2; ++m) {
    if (!modes_[m] || o_.warmup == 0) continue;
    const bench::Shape s = bench::ShapeFor(info_.op, sizes_.back(), type_, nranks_);
    bench::Call call{info_.op, type_, redop_, o_.root, rank_, nranks_, m == 1, s};
    for (uint32_t i = 0; i < o_.warmup; ++i) {
      if (HcclResult r = bench::Launch(call, bufs_, comm_, stream_); r != HCCL_SUCCESS) {
        return Fail(info_.title, r);
      }
    }
    if (!Sync(&rc)) return rc;
    break;
  }

  uint64_t wrong_total = 0;
  uint32_t salt = 1;
  for (uint64_t size : sizes_) {
    const bench::Shape s = bench::ShapeFor(info_.op, size, type_, nranks_);
    Cell cells[2];
    for (int m = 0; m < 2; ++m) {
      if (!modes_[m]) continue;
      bench::Call call{info_.op, type_, redop_, o_.root, rank_, nranks_, m == 1, s};
      if (int r = Measure(call, salt++, &cells[m]); r != 0) return r;
    }
    // Max time and summed #wrong over ranks, as nccl-tests reduces them.
    double times[2] = {cells[0].time_us, cells[1].time_us};
    uint64_t wrong[2] = {cells[0].wrong, cells[1].wrong};
    if (HcclResult r = HcclAllReduce(times, times, 2, HCCL_DATA_TYPE_FP64, HCCL_REDUCE_MAX, comm_, stream_);
        r != HCCL_SUCCESS) {
      return Fail("HcclAllReduce(time)", r);
    }
    if (HcclResult r = HcclAllReduce(wrong, wrong, 2, HCCL_DATA_TYPE_UINT64, HCCL_REDUCE_SUM, comm_, stream_);
        r != HCCL_SUCCESS) {
      return Fail("HcclAllReduce(#wrong)", r);
    }
    if (!Sync(&rc)) return rc;
    for (int m = 0; m < 2; ++m) {
      cells[m].time_us = times[m];
      cells[m].wrong = wrong[m];
      wrong_total += wrong[m];
    }
    if (rank_ == 0) PrintRow(s, cells);
  }

  const double avg_busbw = busbw_n_ ? busbw_sum_ / static_cast<double>(busbw_n_) : 0.0;
  if (rank_ == 0) {
    if (o_.json) {
      const char* tp = getenv("VIGIL_TRANSPORT");
      nlohmann::ordered_json doc = {
          {"tool", "vigil bench"},
          {"op", info_.name},
          {"nranks", nranks_},
          {"transport", (tp && *tp) ? tp : "auto"},
          {"memory", o_.host_mem ? "host" : "device"},
          {"dtype", bench::DataTypeName(type_)},
          {"redop", info_.reduces ? bench::ReduceOpName(redop_) : "none"},
          {"root", info_.rooted ? static_cast<int>(o_.root) : -1},
          {"iters", o_.iters},
          {"warmup", o_.warmup},
          {"check", o_.check != 0},
          {"blocking", o_.blocking != 0},
          {"bus_factor", bench::BusFactor(info_.op, nranks_)},
          {"rows", rows_},
          {"wrong_total", wrong_total},
          {"avg_busbw_gbps", avg_busbw},
      };
      fmt::print("{}\n", doc.dump(2));
    } else {
      fmt::print("# Out of bounds values : {} {}\n", wrong_total, wrong_total ? "FAILED" : "OK");
      fmt::print("# Avg bus bandwidth    : {:.4f}\n#\n", avg_busbw);
    }
    std::fflush(stdout);
  }

  HcclCommDestroy(comm_);
  aclrtDestroyStream(stream_);
  if (o_.host_mem) {
    free(bufs_.send);
    free(bufs_.recv);
  } else {
    aclrtFree(bufs_.send);
    aclrtFree(bufs_.recv);
  }
  return wrong_total ? 1 : 0;
}

int Bench(const BenchOptions& o) {
  const OpInfo* info = bench::FindOp(o.op);
  if (info == nullptr) {
    std::string names;
    for (const OpInfo& i : bench::AllOps()) names += std::string(names.empty() ? "" : ", ") + i.name;
    fmt::print(stderr, "vigil bench: unknown op '{}' (one of: {})\n", o.op, names);
    return 2;
  }
  HcclDataType type;
  HcclReduceOp redop;
  if (!bench::ParseDataType(o.dtype, &type)) {
    fmt::print(stderr, "vigil bench: unknown dtype '{}' (int8 uint8 int16 uint16 int32 uint32 "
                       "int64 uint64 half bfloat16 float double)\n", o.dtype);
    return 2;
  }
  if (!bench::ParseReduceOp(o.redop, &redop)) {
    fmt::print(stderr, "vigil bench: unknown redop '{}' (sum prod max min)\n", o.redop);
    return 2;
  }
  uint64_t min_b = 0, max_b = 0, step = 0;
  if (!ParseBytes(o.min_bytes, &min_b) || !ParseBytes(o.max_bytes, &max_b) ||
      !ParseBytes(o.step_bytes, &step) || min_b == 0 || max_b < min_b) {
    fmt::print(stderr, "vigil bench: bad sizes: -b {} -e {} -i {} (need 0 < MIN <= MAX)\n",
               o.min_bytes, o.max_bytes, o.step_bytes);
    return 2;
  }
  if (o.factor <= 1.0 && step == 0) {
    fmt::print(stderr, "vigil bench: -f must be > 1, or -i > 0 with -f 1\n");
    return 2;
  }
  std::vector<uint64_t> sizes;
  for (uint64_t s = min_b; s <= max_b && sizes.size() < 4096;) {
    sizes.push_back(s);
    const uint64_t next = o.factor > 1.0 ? static_cast<uint64_t>(static_cast<double>(s) * o.factor)
                                         : s + step;
    if (next <= s) break;
    s = next;
  }

  uint32_t rank = 0, size = 0;
  if (!VigilLaunchRank(&rank, &size)) return LaunchRanks(o);
  RankBench rb(o, *info, type, redop, std::move(sizes));
  return rb.Run();
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* b = app.add_subcommand(
      "bench", "Measure a collective nccl-tests style (size, time, algbw, busbw, #wrong)");
  std::string ops;
  for (const OpInfo& i : bench::AllOps()) ops += std::string(ops.empty() ? "" : "|") + i.name;
  b->add_option("op", o->op, ops)->required();
  b->add_option("-b,--minbytes", o->min_bytes, "Smallest size in bytes (K/M/G suffixes)")
      ->capture_default_str();
  b->add_option("-e,--maxbytes", o->max_bytes, "Largest size in bytes")->capture_default_str();
  b->add_option("-f,--stepfactor", o->factor, "Multiply the size by this each step")
      ->capture_default_str();
  b->add_option("-i,--stepbytes", o->step_bytes, "Add this many bytes each step when -f is 1")
      ->capture_default_str();
  b->add_option("-n,--iters", o->iters, "Timed iterations per size")->capture_default_str();
  b->add_option("-w,--warmup_iters", o->warmup, "Untimed iterations before each timing")
      ->capture_default_str();
  b->add_option("-d,--datatype", o->dtype,
                "int8 uint8 int16 uint16 int32 uint32 int64 uint64 half bfloat16 float double")
      ->capture_default_str();
  b->add_option("-o,--redop", o->redop, "Reduce op: sum prod max min")->capture_default_str();
  b->add_option("-r,--root", o->root, "Root rank of broadcast, reduce, scatter")
      ->capture_default_str();
  b->add_option("-c,--check", o->check, "Check every result (1) or not (0)")->capture_default_str();
  b->add_option("-z,--blocking", o->blocking,
                "Synchronize the stream after every op (1), as a blocking MPI call, or only after "
                "the timed loop (0)")
      ->capture_default_str();
  b->add_flag("--inplace", o->in_place, "Only the in-place form");
  b->add_flag("--outofplace", o->out_of_place, "Only the out-of-place form");
  b->add_flag("--both", o->both, "Both forms (the default)");
  b->add_flag("-J,--json", o->json, "Print one JSON document instead of the table");
  b->add_flag("--host-mem", o->host_mem, "Use malloc'd host buffers instead of aclrtMalloc");
  b->add_option("--ranks", o->ranks, "Ranks to start when not under a launcher (default 4)");
  b->add_option("--transport", o->transport, "Force a transport: shm or tcp")
      ->check(CLI::IsMember({"shm", "tcp"}));
  b->add_option("--timeout", o->timeout_s, "Kill the ranks after this many seconds (0 = never)");
  b->add_option("--log-dir", o->log_dir, "Log folder for the ranks (as vigil run)");
  b->add_option("--rootinfo-file", o->rootinfo_file,
                "Under mpirun/srun: root-info file every rank can read (default per job in $TMPDIR)");
  b->callback([o, exit_code] { *exit_code = Bench(*o); });
}

}  // namespace vigil::cli
