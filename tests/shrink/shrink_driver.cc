// Rank program of the shrink tests, run as every rank of `vigil run -n N -- shrink_driver ...`:
//
//   shrink_driver --out DIR --mode MODE [--victim R] [--victim2 R] [--iters N] [--kill-at K]
//                 [--kill2-at K] [--count C] [--abort 0|1] [--hold 0|1]
//
// Every rank loops N AllReduces (sum) of values that depend on its original rank and the
// iteration, and checks each result against the sum over the ranks of its current communicator.
// When an op fails, the survivors shrink (VigilCommShrink, excludeRanks NULL: the heartbeat's
// view), learn the members of the new communicator from an AllGather of their original ranks
// (the first op of the new communicator), and redo the iteration. Modes:
//   kill      the victim SIGKILLs itself at iteration K (before entering the op)
//   kill2     as kill, and --victim2 SIGKILLs itself at iteration --kill2-at, after the first
//             shrink: the survivors shrink again
//   disagree  as kill, but the survivors pass lists: the last survivor also excludes the first
//             one, the others only the victim; each records its VigilCommShrink result and stops
//   silent    as kill, but the survivor --victim2 never calls VigilCommShrink (it waits for the
//             others' results): the others' agreement fails at HCCL_CONNECT_TIMEOUT
//   healthy   at iteration K the others shrink the victim out (given list) although it lives;
//             the victim calls nothing and waits for the others' results
//   inflight  at iteration K every survivor queues an AllReduce and calls VigilCommShrink
//             without synchronizing first. --abort 1: the victim lives and never joins that op;
//             the survivors give VIGIL_SHRINK_ABORT and the victim in the list. --abort 0: the
//             victim SIGKILLs itself 300 ms after the others queued; the survivors give
//             VIGIL_SHRINK_DEFAULT and NULL (shrink waits for the op, aborted by the heartbeat)
// Each rank that finishes writes DIR/result-R:
//   "rank=R ok=0|1 iters=I bad=B shrinks=S size=Z members=a,b,c shrink_rc=RC first_ok_us=T"
// and the victims DIR/victim-time (wall clock µs of their kill). With --hold 1 a rank that
// finished then writes DIR/held-R and keeps its communicator until DIR/release exists (at most
// 60 s), so that a test can ask `vigil health` about the shrunk job.
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
#include "hccl/hccl.h"
#include "vigil/ext.h"
#include "vigil/launch.h"

namespace {

uint64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// Waits (bounded) until every rank but those in `skip` has written DIR/result-R.
void WaitForResults(const std::string& dir, uint32_t n, const std::vector<int64_t>& skip,
                    int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    bool all = true;
    for (uint32_t r = 0; r < n && all; ++r) {
      bool skipped = false;
      for (int64_t s : skip) skipped = skipped || s == static_cast<int64_t>(r);
      if (!skipped) all = std::filesystem::exists(dir + "/result-" + std::to_string(r));
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

float Value(uint32_t orig, int it, uint64_t i) {
  return static_cast<float>((orig + 1) * (it + 1)) + static_cast<float>(i % 5);
}

struct Rank {
  uint32_t orig = 0;
  HcclComm comm = nullptr;
  std::vector<uint32_t> members;  // original ranks, by current rank
  aclrtStream stream = nullptr;
};

// The members of the current communicator, by an AllGather of original ranks.
bool LearnMembers(Rank* r) {
  uint32_t size = 0;
  if (HcclGetRankSize(r->comm, &size) != HCCL_SUCCESS) return false;
  int32_t mine = static_cast<int32_t>(r->orig);
  std::vector<int32_t> all(size, -1);
  if (HcclAllGather(&mine, all.data(), 1, HCCL_DATA_TYPE_INT32, r->comm, r->stream) !=
          HCCL_SUCCESS ||
      aclrtSynchronizeStream(r->stream) != ACL_SUCCESS) {
    return false;
  }
  r->members.assign(all.begin(), all.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir, mode = "kill";
  int64_t victim = -1, victim2 = -1;
  int iters = 20, kill_at = 5, kill2_at = 12;
  uint64_t count = 4096;
  bool abort_flag = false, hold = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--out")
      out_dir = v;
    else if (k == "--mode")
      mode = v;
    else if (k == "--victim")
      victim = std::atoll(v);
    else if (k == "--victim2")
      victim2 = std::atoll(v);
    else if (k == "--iters")
      iters = std::atoi(v);
    else if (k == "--kill-at")
      kill_at = std::atoi(v);
    else if (k == "--kill2-at")
      kill2_at = std::atoi(v);
    else if (k == "--count")
      count = std::strtoull(v, nullptr, 10);
    else if (k == "--abort")
      abort_flag = std::atoi(v) != 0;
    else if (k == "--hold")
      hold = std::atoi(v) != 0;
  }
  uint32_t n = 0;
  Rank r;
  if (out_dir.empty() || !VigilLaunchRank(&r.orig, &n)) {
    std::fprintf(stderr, "shrink_driver: run under `vigil run` with --out DIR\n");
    return 2;
  }
  if (aclrtSetDevice(static_cast<int32_t>(r.orig % 8)) != ACL_SUCCESS) return 10;
  if (aclrtCreateStream(&r.stream) != ACL_SUCCESS) return 11;
  HcclRootInfo root;
  if (VigilLaunchRootInfo(r.orig, &root) != HCCL_SUCCESS) return 12;
  if (HcclCommInitRootInfo(n, &root, r.orig, &r.comm) != HCCL_SUCCESS) return 13;
  for (uint32_t i = 0; i < n; ++i) r.members.push_back(i);

  const bool is_victim = static_cast<int64_t>(r.orig) == victim;
  const bool is_victim2 = static_cast<int64_t>(r.orig) == victim2;
  auto die = [&] {
    WriteFile(out_dir + "/victim-time" + (is_victim2 ? "2" : ""), std::to_string(NowUs()));
    raise(SIGKILL);
  };
  // The survivors' given lists in mode disagree: the last also excludes the first.
  auto disagree_list = [&] {
    std::vector<uint32_t> list = {static_cast<uint32_t>(victim)};
    uint32_t first = n, last = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (static_cast<int64_t>(i) == victim) continue;
      first = std::min(first, i);
      last = std::max(last, i);
    }
    if (r.orig == last) list.push_back(first);
    return list;
  };

  std::vector<float> in(count), out(count);
  int bad = 0, shrinks = 0, failures = 0;
  int shrink_rc = HCCL_SUCCESS;
  uint64_t first_ok_us = 0;
  bool stopped = false;
  bool inflight_done = false;  // mode inflight: the iteration is redone without the fault
  int it = 0;
  // Shrinks the communicator (from the failed or in-flight op); false when this rank stops.
  auto shrink = [&](const uint32_t* list, uint32_t list_n, uint32_t flags) {
    HcclComm next = nullptr;
    const HcclResult rc = VigilCommShrink(r.comm, list, list_n, nullptr, &next, flags);
    // The stream may hold the failed op's error, or an op aborted by the shrink.
    (void)aclrtSynchronizeStream(r.stream);
    if (rc != HCCL_SUCCESS) {
      shrink_rc = rc;
      std::fprintf(stderr, "shrink_driver rank %u: VigilCommShrink returned %d\n", r.orig, rc);
      return false;
    }
    HcclCommDestroy(r.comm);
    r.comm = next;
    ++shrinks;
    if (!LearnMembers(&r)) {
      shrink_rc = -1;
      std::fprintf(stderr, "shrink_driver rank %u: the shrunk communicator's first op failed\n",
                   r.orig);
      return false;
    }
    if (first_ok_us == 0) first_ok_us = NowUs();
    return true;
  };

  for (it = 0; it < iters && !stopped; ++it) {
    if (is_victim && it == kill_at &&
        (mode == "kill" || mode == "kill2" || mode == "disagree" || mode == "silent")) {
      die();
    }
    if (is_victim2 && mode == "kill2" && it == kill2_at) die();
    if (it == kill_at && mode == "healthy") {
      if (is_victim) {  // alive, calls nothing; leaves once the others are done
        WaitForResults(out_dir, n, {victim}, 120);
        stopped = true;
        break;
      }
      const uint32_t list[] = {static_cast<uint32_t>(victim)};
      if (!shrink(list, 1, VIGIL_SHRINK_DEFAULT)) break;
    }
    for (uint64_t i = 0; i < count; ++i) in[i] = Value(r.orig, it, i);
    if (it == kill_at && mode == "inflight" && !inflight_done) {
      inflight_done = true;
      if (is_victim && abort_flag) {  // alive, never joins the op the others queue
        WaitForResults(out_dir, n, {victim}, 120);
        stopped = true;
        break;
      }
      if (is_victim) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        die();
      }
      (void)HcclAllReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                          r.comm, r.stream);
      const uint32_t list[] = {static_cast<uint32_t>(victim)};
      if (!(abort_flag ? shrink(list, 1, VIGIL_SHRINK_ABORT)
                       : shrink(nullptr, 0, VIGIL_SHRINK_DEFAULT))) {
        break;
      }
      --it;  // redo the iteration on the shrunk communicator
      continue;
    }
    const HcclResult enq = HcclAllReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32,
                                         HCCL_REDUCE_SUM, r.comm, r.stream);
    const aclError sync = aclrtSynchronizeStream(r.stream);
    if (enq == HCCL_SUCCESS && sync == ACL_SUCCESS) {
      for (uint64_t i = 0; i < count; ++i) {
        float want = 0;
        for (uint32_t m : r.members) want += Value(m, it, i);
        if (out[i] != want) {
          ++bad;
          break;
        }
      }
      continue;
    }
    if (++failures > 4) break;
    if (mode == "silent" && is_victim2) {  // a survivor that never calls
      WaitForResults(out_dir, n, {victim, victim2}, 120);
      stopped = true;
      break;
    }
    if (mode == "disagree") {
      const std::vector<uint32_t> list = disagree_list();
      shrink(list.data(), static_cast<uint32_t>(list.size()), VIGIL_SHRINK_DEFAULT);
      break;  // records its result either way
    }
    if (!shrink(nullptr, 0, VIGIL_SHRINK_DEFAULT)) break;
    --it;  // redo the iteration on the shrunk communicator
  }
  std::string members;
  for (uint32_t m : r.members) members += (members.empty() ? "" : ",") + std::to_string(m);
  const bool ok = it >= iters && bad == 0 && shrink_rc == HCCL_SUCCESS && !stopped;
  WriteFile(out_dir + "/result-" + std::to_string(r.orig),
            "rank=" + std::to_string(r.orig) + " ok=" + (ok ? "1" : "0") +
                " iters=" + std::to_string(it) + " bad=" + std::to_string(bad) + " shrinks=" +
                std::to_string(shrinks) + " size=" + std::to_string(r.members.size()) +
                " members=" + members + " shrink_rc=" + std::to_string(shrink_rc) +
                " first_ok_us=" + std::to_string(first_ok_us));
  if (hold && ok) {
    WriteFile(out_dir + "/held-" + std::to_string(r.orig), "held");
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(out_dir + "/release") &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  HcclCommDestroy(r.comm);
  aclrtDestroyStream(r.stream);
  return 0;
}
