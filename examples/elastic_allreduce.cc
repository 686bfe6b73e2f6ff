// An elastic loop: ranks AllReduce every iteration; when one rank is lost the others shrink the
// communicator (VigilCommShrink) and carry on with the survivors, redoing the iteration that
// failed. Start it with
//
//   vigil run -n 4 --keep-going -- elastic_allreduce [--iters N] [--kill-rank R] [--kill-at K]
//
// (ELASTIC_KILL_RANK / ELASTIC_KILL_AT do the same as the flags). Rank R SIGKILLs itself at
// iteration K, a real fault: the survivors' AllReduce fails within milliseconds naming it, they
// agree to exclude it, and the loop goes on. Every rank contributes (original rank + 1) * (it +
// 1) per element, so a survivor checks each sum against the members it has: those are learnt
// from an AllGather of the original ranks, the first op of each new communicator.
//
// A collective a rank dies in can complete on some survivors and fail on others (the dead rank
// had sent some of them all they needed). So after a shrink the survivors agree on where to go
// on: the earliest iteration any of them failed (an AllReduce MIN), which the ones that had
// passed it redo too.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hccl/hccl.h"
#include "vigil/ext.h"
#include "vigil/launch.h"

namespace {

int Fail(uint32_t rank, const char* what, int code) {
  std::fprintf(stderr, "elastic_allreduce rank %u: %s failed (%d)\n", rank, what, code);
  return 1;
}

// The earliest of the survivors' failed iterations.
bool AgreeOnIteration(HcclComm comm, aclrtStream stream, long failed, long* resume) {
  int32_t mine = static_cast<int32_t>(failed), all = -1;
  if (HcclAllReduce(&mine, &all, 1, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_MIN, comm, stream) !=
          HCCL_SUCCESS ||
      aclrtSynchronizeStream(stream) != ACL_SUCCESS)
    return false;
  *resume = all;
  return true;
}

// The original ranks of the communicator's members, by their rank in it.
bool Members(HcclComm comm, aclrtStream stream, uint32_t original, std::vector<int32_t>* out) {
  uint32_t size = 0;
  if (HcclGetRankSize(comm, &size) != HCCL_SUCCESS) return false;
  int32_t mine = static_cast<int32_t>(original);
  out->assign(size, -1);
  return HcclAllGather(&mine, out->data(), 1, HCCL_DATA_TYPE_INT32, comm, stream) == HCCL_SUCCESS &&
         aclrtSynchronizeStream(stream) == ACL_SUCCESS;
}

long Option(int argc, char** argv, const char* flag, const char* env, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::atol(argv[i + 1]);
  }
  const char* v = std::getenv(env);
  return v != nullptr ? std::atol(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t rank = 0, nranks = 1;
  if (!VigilLaunchRank(&rank, &nranks)) {
    std::fprintf(stderr,
                 "elastic_allreduce: start me with `vigil run -n N --keep-going -- "
                 "elastic_allreduce`\n");
    return 2;
  }
  const long iters = Option(argc, argv, "--iters", "ELASTIC_ITERS", 10);
  const long kill_rank = Option(argc, argv, "--kill-rank", "ELASTIC_KILL_RANK", -1);
  const long kill_at = Option(argc, argv, "--kill-at", "ELASTIC_KILL_AT", 3);

  if (aclError e = aclrtSetDevice(static_cast<int32_t>(rank % 8)); e != ACL_SUCCESS) {
    return Fail(rank, "aclrtSetDevice", e);
  }
  aclrtStream stream;
  if (aclError e = aclrtCreateStream(&stream); e != ACL_SUCCESS) return Fail(rank, "stream", e);
  HcclRootInfo root;
  if (HcclResult r = VigilLaunchRootInfo(rank, &root); r != HCCL_SUCCESS) {
    return Fail(rank, "root info", r);
  }
  HcclComm comm;
  if (HcclResult r = HcclCommInitRootInfo(nranks, &root, rank, &comm); r != HCCL_SUCCESS) {
    return Fail(rank, "HcclCommInitRootInfo", r);
  }
  std::vector<int32_t> members;
  if (!Members(comm, stream, rank, &members)) return Fail(rank, "AllGather of the members", -1);

  const uint64_t count = 1024;
  std::vector<float> in(count), out(count);
  int shrinks = 0;
  for (long it = 0; it < iters; ++it) {
    if (static_cast<long>(rank) == kill_rank && it == kill_at) {
      std::printf("rank %u: killing myself at iteration %ld\n", rank, it);
      std::fflush(stdout);
      raise(SIGKILL);
    }
    for (uint64_t i = 0; i < count; ++i) in[i] = static_cast<float>((rank + 1) * (it + 1));
    const HcclResult enq = HcclAllReduce(in.data(), out.data(), count, HCCL_DATA_TYPE_FP32,
                                         HCCL_REDUCE_SUM, comm, stream);
    const aclError sync = aclrtSynchronizeStream(stream);
    if (enq == HCCL_SUCCESS && sync == ACL_SUCCESS) {
      float want = 0;
      for (int32_t m : members) want += static_cast<float>((m + 1) * (it + 1));
      for (uint64_t i = 0; i < count; ++i) {
        if (out[i] != want) {
          std::fprintf(stderr, "rank %u: iteration %ld: sum %g, expected %g\n", rank, it, out[i],
                       want);
          return 1;
        }
      }
      if (rank == static_cast<uint32_t>(members.front())) {
        std::printf("iteration %ld: sum %g over %zu ranks\n", it, want, members.size());
      }
      continue;
    }
    // The op failed: the reason, then the survivors carry on without the lost rank(s).
    char why[1024] = {0};
    VigilCommGetLastErrorMessage(comm, why, sizeof(why));
    std::printf("rank %u: iteration %ld failed: %s\n", rank, it, why);
    if (++shrinks > static_cast<int>(nranks)) return Fail(rank, "too many shrinks", shrinks);
    HcclComm smaller = nullptr;
    if (HcclResult r = VigilCommShrink(comm, nullptr, 0, nullptr, &smaller, VIGIL_SHRINK_DEFAULT);
        r != HCCL_SUCCESS) {
      return Fail(rank, "VigilCommShrink", r);
    }
    HcclCommDestroy(comm);
    comm = smaller;
    if (!Members(comm, stream, rank, &members)) return Fail(rank, "AllGather of the members", -1);
    long resume = it;
    if (!AgreeOnIteration(comm, stream, it, &resume)) {
      return Fail(rank, "AllReduce MIN of the iteration", -1);
    }
    uint32_t now = 0;
    HcclGetRankId(comm, &now);
    std::printf(
        "rank %u: shrunk to %zu ranks, now rank %u; failed iteration %ld, going on from "
        "iteration %ld\n",
        rank, members.size(), now, it, resume);
    it = resume - 1;
  }
  std::printf("rank %u: done, %ld iterations, %d shrink(s)\n", rank, iters, shrinks);
  HcclCommDestroy(comm);
  aclrtDestroyStream(stream);
  return 0;
}
