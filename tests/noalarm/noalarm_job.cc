// The rank program of the no-false-alarm tests, run as every rank of
//   vigil run -n N -- noalarm_job --out DIR --min-seconds S --max-seconds M [--min-ops K]
//
// Every rank makes one communicator and runs rounds of mixed collectives (AllReduce of two
// dtypes, AllGather, ReduceScatter, Broadcast and Reduce from a moving root, AlltoAll, a
// BatchSendRecv ring, Barrier), checking every result against a reference computed here (small
// integers: exact in every dtype). Each round ends with an AllReduce(MIN) of "this rank is done"
// (at least S seconds and K ops behind it, or M seconds), so all ranks stop after the same
// round. Then each rank
//   - prints and writes DIR/result-R: "rank=R ops=.. checks=.. wrong=.. failed=.. rounds=..
//     seconds=.. async=.. lasterr=.." (failed: ops whose enqueue or synchronize returned an
//     error; async: HcclGetCommAsyncError; lasterr: 1 when VigilCommGetLastErrorMessage had text),
//   - writes DIR/done-R and keeps its communicator until DIR/release exists (at most 60 s), so
//     the test can ask `vigil health` about the live job after the faults,
//   - exits 0 only when every op succeeded and every check matched.
// DIR/pid-R (written first) has the rank's pid: the SIGSTOP test stops ranks by it.
#include <unistd.h>

#include <chrono>
#include <cstdint>
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
#include "vigil/ext.h"
#include "vigil/launch.h"

namespace {

using Clock = std::chrono::steady_clock;

void WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// The small integer rank r contributes at element i of op `op` in round `round`.
int64_t Val(uint32_t r, uint64_t i, uint64_t round, uint32_t op) {
  return static_cast<int64_t>((r * 131 + i * 7 + round * 13 + op * 29) % 17) - 8;
}

class Job {
 public:
  Job(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n)
      : comm_(comm), stream_(stream), rank_(rank), n_(n) {}

  // One round of the mix; false once an op failed (the job stops: its ranks may disagree).
  bool Round(uint64_t round) {
    round_ = round;
    static const uint64_t kSizes[] = {1, 1000, 65536};
    return AllReduceF32(kSizes[round % 3]) && AllReduceI32Max(4097) && AllGatherI8(3001) &&
           ReduceScatterF32(1000) && BroadcastI64(2000, round % n_) &&
           ReduceI16(999, (round + 1) % n_) && AlltoAllI32(513) && Ring(10000) && Barrier();
  }

  // Whether every rank is done (AllReduce MIN of the flags); *ok false when the op failed.
  bool AllDone(bool mine, bool* ok) {
    int32_t flag = mine ? 1 : 0, all = -1;
    *ok = Op(HcclAllReduce(&flag, &all, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MIN, comm_, stream_));
    Check(all == 0 || all == 1);
    return *ok && all == 1;
  }

  int ops() const { return ops_; }
  int checks() const { return checks_; }
  int wrong() const { return wrong_; }
  int failed() const { return failed_; }

 private:
  bool Op(HcclResult enq) {
    ++ops_;
    const bool ok = enq == HCCL_SUCCESS && aclrtSynchronizeStream(stream_) == ACL_SUCCESS;
    if (!ok) {
      ++failed_;
      std::printf("rank %u: op %d (round %llu) failed: enqueue %d\n", rank_, ops_,
                  static_cast<unsigned long long>(round_), static_cast<int>(enq));
    }
    return ok;
  }

  void Check(bool good) {
    ++checks_;
    if (!good && ++wrong_ <= 10) {
      std::printf("rank %u: WRONG result of op %d (round %llu)\n", rank_, ops_,
                  static_cast<unsigned long long>(round_));
    }
  }

  template <typename T>
  void CheckAll(const std::vector<T>& got, const std::vector<T>& want) {
    Check(got == want);
  }

  int64_t Sum(uint64_t i, uint32_t op) const {
    int64_t s = 0;
    for (uint32_t r = 0; r < n_; ++r) s += Val(r, i, round_, op);
    return s;
  }

  bool AllReduceF32(uint64_t count) {
    std::vector<float> in(count), out(count, -1000.0f), want(count);
    for (uint64_t i = 0; i < count; ++i) {
      in[i] = static_cast<float>(Val(rank_, i, round_, 1));
      want[i] = static_cast<float>(Sum(i, 1));
    }
    if (!Op(HcclAllReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                          comm_, stream_))) {
      return false;
    }
    CheckAll(out, want);
    return true;
  }

  bool AllReduceI32Max(uint64_t count) {
    std::vector<int32_t> in(count), want(count);
    for (uint64_t i = 0; i < count; ++i) {
      in[i] = static_cast<int32_t>(Val(rank_, i, round_, 2));
      int64_t m = Val(0, i, round_, 2);
      for (uint32_t r = 1; r < n_; ++r) m = std::max(m, Val(r, i, round_, 2));
      want[i] = static_cast<int32_t>(m);
    }
    if (!Op(HcclAllReduce(in.data(), in.data(), count, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MAX,
                          comm_, stream_))) {
      return false;
    }
    CheckAll(in, want);
    return true;
  }

  bool AllGatherI8(uint64_t count) {
    std::vector<int8_t> in(count), out(count * n_, 99), want(count * n_);
    for (uint64_t i = 0; i < count; ++i) in[i] = static_cast<int8_t>(Val(rank_, i, round_, 3));
    for (uint32_t r = 0; r < n_; ++r) {
      for (uint64_t i = 0; i < count; ++i) want[r * count + i] = static_cast<int8_t>(Val(r, i, round_, 3));
    }
    if (!Op(HcclAllGather(in.data(), out.data(), count, HCCL_DATA_TYPE_INT8, comm_, stream_))) {
      return false;
    }
    CheckAll(out, want);
    return true;
  }

  bool ReduceScatterF32(uint64_t count) {
    std::vector<float> in(count * n_), out(count, -1000.0f), want(count);
    for (uint64_t i = 0; i < count * n_; ++i) in[i] = static_cast<float>(Val(rank_, i, round_, 4));
    for (uint64_t i = 0; i < count; ++i) want[i] = static_cast<float>(Sum(rank_ * count + i, 4));
    if (!Op(HcclReduceScatter(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                              comm_, stream_))) {
      return false;
    }
    CheckAll(out, want);
    return true;
  }

  bool BroadcastI64(uint64_t count, uint32_t root) {
    std::vector<int64_t> buf(count, -77), want(count);
    for (uint64_t i = 0; i < count; ++i) want[i] = Val(root, i, round_, 5) * 1000003;
    if (rank_ == root) buf = want;
    if (!Op(HcclBroadcast(buf.data(), count, HCCL_DATA_TYPE_INT64, root, comm_, stream_))) {
      return false;
    }
    CheckAll(buf, want);
    return true;
  }

  bool ReduceI16(uint64_t count, uint32_t root) {
    std::vector<int16_t> in(count), out(count, 0), want(count);
    for (uint64_t i = 0; i < count; ++i) {
      in[i] = static_cast<int16_t>(Val(rank_, i, round_, 6));
      want[i] = static_cast<int16_t>(Sum(i, 6));
    }
    if (!Op(HcclReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, root,
                       comm_, stream_))) {
      return false;
    }
    if (rank_ == root) CheckAll(out, want);
    return true;
  }

  bool AlltoAllI32(uint64_t count) {
    // Block d of rank s: Val(s * 64 + d, ...).
    std::vector<int32_t> in(count * n_), out(count * n_, -1), want(count * n_);
    for (uint32_t d = 0; d < n_; ++d) {
      for (uint64_t j = 0; j < count; ++j) {
        in[d * count + j] = static_cast<int32_t>(Val(rank_ * 64 + d, j, round_, 7));
        want[d * count + j] = static_cast<int32_t>(Val(d * 64 + rank_, j, round_, 7));
      }
    }
    if (!Op(HcclAlltoAll(in.data(), count, HCCL_DATA_TYPE_INT32, out.data(), count,
                         HCCL_DATA_TYPE_INT32, comm_, stream_))) {
      return false;
    }
    CheckAll(out, want);
    return true;
  }

  bool Ring(uint64_t count) {
    const uint32_t next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
    std::vector<uint8_t> mine(count), got(count, 0), want(count);
    for (uint64_t i = 0; i < count; ++i) {
      mine[i] = static_cast<uint8_t>(Val(rank_, i, round_, 8) + 8);
      want[i] = static_cast<uint8_t>(Val(prev, i, round_, 8) + 8);
    }
    HcclSendRecvItem items[2] = {{HCCL_SEND, mine.data(), count, HCCL_DATA_TYPE_UINT8, next},
                                 {HCCL_RECV, got.data(), count, HCCL_DATA_TYPE_UINT8, prev}};
    if (!Op(HcclBatchSendRecv(items, 2, comm_, stream_))) return false;
    CheckAll(got, want);
    return true;
  }

  bool Barrier() { return Op(HcclBarrier(comm_, stream_)); }

  HcclComm comm_;
  aclrtStream stream_;
  uint32_t rank_, n_;
  uint64_t round_ = 0;
  int ops_ = 0, checks_ = 0, wrong_ = 0, failed_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  double min_s = 10, max_s = 60;
  int min_ops = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--out") dir = argv[i + 1];
    if (k == "--min-seconds") min_s = std::atof(argv[i + 1]);
    if (k == "--max-seconds") max_s = std::atof(argv[i + 1]);
    if (k == "--min-ops") min_ops = std::atoi(argv[i + 1]);
  }
  uint32_t rank = 0, n = 0;
  if (dir.empty() || !VigilLaunchRank(&rank, &n)) {
    std::fprintf(stderr, "noalarm_job: run under `vigil run` with --out DIR\n");
    return 2;
  }
  const std::string r = std::to_string(rank);
  WriteFile(dir + "/pid-" + r, std::to_string(getpid()));
  if (aclrtSetDevice(static_cast<int32_t>(rank % 8)) != ACL_SUCCESS) return 10;
  aclrtStream stream;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 11;
  HcclRootInfo root;
  if (VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) return 12;
  HcclComm comm;
  if (HcclCommInitRootInfo(n, &root, rank, &comm) != HCCL_SUCCESS) return 13;

  Job job(comm, stream, rank, n);
  const auto start = Clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  uint64_t round = 0;
  bool ok = true;
  for (; round < 1000000; ++round) {  // the clock ends it; the bound is for form
    if (!job.Round(round)) {
      ok = false;
      break;
    }
    if (round == 0) WriteFile(dir + "/ready-" + r, "1");
    const double s = seconds();
    const bool mine = (s >= min_s && job.ops() >= min_ops) || s >= max_s;
    if (job.AllDone(mine, &ok) || !ok) break;
  }
  const double took = seconds();
  HcclResult async = HCCL_E_INTERNAL;
  HcclGetCommAsyncError(comm, &async);
  std::vector<char> text(4096, 0);
  const bool lasterr = VigilCommGetLastErrorMessage(comm, text.data(), text.size()) != HCCL_SUCCESS ||
                       text[0] != '\0';
  char line[512];
  std::snprintf(line, sizeof(line),
                "rank=%u ops=%d checks=%d wrong=%d failed=%d rounds=%llu seconds=%.1f async=%d "
                "lasterr=%d",
                rank, job.ops(), job.checks(), job.wrong(), job.failed(),
                static_cast<unsigned long long>(round + 1), took, static_cast<int>(async),
                lasterr ? 1 : 0);
  std::printf("noalarm_job %s\n", line);
  if (lasterr) std::printf("rank %u: last error: %s\n", rank, text.data());
  std::fflush(stdout);
  WriteFile(dir + "/result-" + r, line);
  WriteFile(dir + "/done-" + r, "1");
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(dir + "/release") && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const bool destroyed = HcclCommDestroy(comm) == HCCL_SUCCESS;
  aclrtDestroyStream(stream);
  aclrtResetDevice(static_cast<int32_t>(rank % 8));
  const bool good = ok && destroyed && job.wrong() == 0 && job.failed() == 0 &&
                    async == HCCL_SUCCESS && !lasterr;
  return good ? 0 : 1;
}
