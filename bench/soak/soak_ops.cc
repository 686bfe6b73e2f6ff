// The soak program: one rank of `vigil run -n N -- soak_ops --seconds S`. Every rank draws the
// same pseudo-random sequence (same seed), so all ranks issue the same op with the same size:
// AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll or a Send/Recv pair exchange, 8 B to
// 16 MiB (log-uniform; for the gathering ops the size is the whole receive buffer). Buffers are
// device memory (aclrtMalloc): the long-lived pair most of the time, a fresh pair freed after
// the op one time in four (the user-buffer registration path). Every result is checked element
// by element. Rank 0 decides when the time is up and broadcasts it, so all ranks stop together.
// Exit 0 when every op succeeded and every result was right; prints a one-line summary per rank.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace {

constexpr uint64_t kMinBytes = 8;
constexpr uint64_t kMaxBytes = 16u << 20;
enum Op { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAlltoAll, kSendRecv, kOpCount };
const char* const kOpNames[kOpCount] = {"allreduce", "allgather", "reducescatter",
                                        "broadcast", "alltoall",  "sendrecv"};

// Element values: small enough that a sum over 8 ranks never overflows int32.
int32_t Val(uint32_t rank, uint64_t i, uint64_t iter) {
  return static_cast<int32_t>((rank * 7919u + i * 31u + iter * 17u) % 100003u);
}

struct Ctx {
  uint32_t rank = 0;
  uint32_t n = 1;
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
  std::vector<int32_t> host_in, host_out;
  uint64_t wrong = 0;
  uint64_t failed = 0;
};

bool Check(HcclResult r, const char* what, Ctx& c) {
  if (r == HCCL_SUCCESS) return true;
  std::fprintf(stderr, "soak_ops rank %u: %s returned %d\n", c.rank, what, static_cast<int>(r));
  ++c.failed;
  return false;
}

bool Upload(void* dev, const std::vector<int32_t>& host, uint64_t count) {
  if (count == 0) return true;
  return aclrtMemcpy(dev, count * 4, host.data(), count * 4, ACL_MEMCPY_HOST_TO_DEVICE) == ACL_SUCCESS;
}
bool Download(std::vector<int32_t>& host, const void* dev, uint64_t count) {
  if (count == 0) return true;
  return aclrtMemcpy(host.data(), count * 4, dev, count * 4, ACL_MEMCPY_DEVICE_TO_HOST) == ACL_SUCCESS;
}

// One op on `count` int32 elements of "size" (per the file comment). in/out hold kMaxBytes each.
void RunOp(Ctx& c, Op op, uint64_t elems, uint64_t iter, void* in, void* out) {
  const uint32_t n = c.n, me = c.rank;
  auto& hi = c.host_in;
  auto& ho = c.host_out;
  uint64_t expect_count = 0;
  auto expect = [&](uint64_t i) -> int32_t {
    switch (op) {
      case kAllReduce: {
        int64_t s = 0;
        for (uint32_t r = 0; r < n; ++r) s += Val(r, i, iter);
        return static_cast<int32_t>(s);
      }
      case kAllGather: {
        const uint64_t chunk = elems / n;
        return Val(static_cast<uint32_t>(i / chunk), i % chunk, iter);
      }
      case kReduceScatter: {
        const uint64_t chunk = elems / n;
        int64_t s = 0;
        for (uint32_t r = 0; r < n; ++r) s += Val(r, me * chunk + i, iter);
        return static_cast<int32_t>(s);
      }
      case kBroadcast:
        return Val(static_cast<uint32_t>(iter % n), i, iter);
      case kAlltoAll: {
        const uint64_t chunk = elems / n;  // element i of block p came from rank p
        const uint64_t p = i / chunk;
        return Val(static_cast<uint32_t>(p), me * chunk + i % chunk, iter);
      }
      case kSendRecv: {
        const uint32_t peer = me ^ static_cast<uint32_t>(1 + iter % (n - 1));
        return Val(peer, i, iter);
      }
      default:
        return 0;
    }
  };
  HcclResult r = HCCL_SUCCESS;
  const char* name = kOpNames[op];
  switch (op) {
    case kAllReduce:
      for (uint64_t i = 0; i < elems; ++i) hi[i] = Val(me, i, iter);
      if (!Upload(in, hi, elems)) return;
      r = HcclAllReduce(in, out, elems, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c.comm, c.stream);
      expect_count = elems;
      break;
    case kAllGather: {
      const uint64_t chunk = elems / n;
      for (uint64_t i = 0; i < chunk; ++i) hi[i] = Val(me, i, iter);
      if (!Upload(in, hi, chunk)) return;
      r = HcclAllGather(in, out, chunk, HCCL_DATA_TYPE_INT32, c.comm, c.stream);
      expect_count = chunk * n;
      break;
    }
    case kReduceScatter: {
      const uint64_t chunk = elems / n;
      for (uint64_t i = 0; i < chunk * n; ++i) hi[i] = Val(me, i, iter);
      if (!Upload(in, hi, chunk * n)) return;
      r = HcclReduceScatter(in, out, chunk, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, c.comm, c.stream);
      expect_count = chunk;
      break;
    }
    case kBroadcast: {
      const uint32_t root = static_cast<uint32_t>(iter % n);
      for (uint64_t i = 0; i < elems; ++i) hi[i] = me == root ? Val(me, i, iter) : -1;
      if (!Upload(out, hi, elems)) return;
      r = HcclBroadcast(out, elems, HCCL_DATA_TYPE_INT32, root, c.comm, c.stream);
      expect_count = elems;
      break;
    }
    case kAlltoAll: {
      const uint64_t chunk = elems / n;
      // Block p goes to rank p: element j of it is Val(me, p * chunk + j).
      for (uint64_t i = 0; i < chunk * n; ++i) hi[i] = Val(me, i, iter);
      if (!Upload(in, hi, chunk * n)) return;
      r = HcclAlltoAll(in, chunk, HCCL_DATA_TYPE_INT32, out, chunk, HCCL_DATA_TYPE_INT32, c.comm,
                       c.stream);
      expect_count = chunk * n;
      break;
    }
    case kSendRecv: {
      // Pairs me ^ k (k in 1..n-1; n a power of two): the lower rank sends first.
      const uint32_t peer = me ^ static_cast<uint32_t>(1 + iter % (n - 1));
      for (uint64_t i = 0; i < elems; ++i) hi[i] = Val(me, i, iter);
      if (!Upload(in, hi, elems)) return;
      if (me < peer) {
        r = HcclSend(in, elems, HCCL_DATA_TYPE_INT32, peer, c.comm, c.stream);
        if (r == HCCL_SUCCESS) r = HcclRecv(out, elems, HCCL_DATA_TYPE_INT32, peer, c.comm, c.stream);
      } else {
        r = HcclRecv(out, elems, HCCL_DATA_TYPE_INT32, peer, c.comm, c.stream);
        if (r == HCCL_SUCCESS) r = HcclSend(in, elems, HCCL_DATA_TYPE_INT32, peer, c.comm, c.stream);
      }
      expect_count = elems;
      break;
    }
    default:
      return;
  }
  if (!Check(r, name, c)) return;
  if (aclrtSynchronizeStream(c.stream) != ACL_SUCCESS) {
    std::fprintf(stderr, "soak_ops rank %u: sync after %s failed\n", c.rank, name);
    ++c.failed;
    return;
  }
  if (!Download(ho, out, expect_count)) {
    ++c.failed;
    return;
  }
  uint64_t bad = 0;
  for (uint64_t i = 0; i < expect_count; ++i) bad += ho[i] != expect(i);
  if (bad != 0) {
    std::fprintf(stderr, "soak_ops rank %u: iter %llu %s of %llu elements: %llu wrong\n", c.rank,
                 static_cast<unsigned long long>(iter), name,
                 static_cast<unsigned long long>(elems), static_cast<unsigned long long>(bad));
  }
  c.wrong += bad;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 60;
  uint64_t seed = 20261204;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
  }
  Ctx c;
  if (!VigilLaunchRank(&c.rank, &c.n)) {
    std::fprintf(stderr, "soak_ops: start me with `vigil run -n N -- soak_ops`\n");
    return 2;
  }
  if (c.n < 2 || (c.n & (c.n - 1)) != 0) {
    std::fprintf(stderr, "soak_ops: the rank count must be a power of two >= 2\n");
    return 2;
  }
  if (aclrtSetDevice(static_cast<int32_t>(c.rank % 8)) != ACL_SUCCESS) return 1;
  HcclRootInfo root;
  if (VigilLaunchRootInfo(c.rank, &root) != HCCL_SUCCESS) return 1;
  if (HcclCommInitRootInfo(c.n, &root, c.rank, &c.comm) != HCCL_SUCCESS) return 1;
  if (aclrtCreateStream(&c.stream) != ACL_SUCCESS) return 1;

  const uint64_t max_elems = kMaxBytes / 4;
  c.host_in.resize(max_elems);
  c.host_out.resize(max_elems);
  void* in = nullptr;
  void* out = nullptr;
  void* flag = nullptr;
  if (aclrtMalloc(&in, kMaxBytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
      aclrtMalloc(&out, kMaxBytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
      aclrtMalloc(&flag, 64, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
    return 1;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log2(double(kMinBytes)),
                                                  std::log2(double(kMaxBytes)));
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t iter = 0;
  uint64_t per_op[kOpCount] = {};
  for (;; ++iter) {
    // Rank 0 says whether to go on (every rank stops at the same op).
    int32_t go = 0;
    if (c.rank == 0) {
      go = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds;
    }
    if (aclrtMemcpy(flag, 4, &go, 4, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return 1;
    if (!Check(HcclBroadcast(flag, 1, HCCL_DATA_TYPE_INT32, 0, c.comm, c.stream), "flag", c) ||
        aclrtSynchronizeStream(c.stream) != ACL_SUCCESS ||
        aclrtMemcpy(&go, 4, flag, 4, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) {
      break;
    }
    if (!go) break;
    const Op op = static_cast<Op>(rng() % kOpCount);
    uint64_t bytes = static_cast<uint64_t>(std::exp2(log_size(rng)));
    const bool fresh = rng() % 4 == 0;
    uint64_t elems = bytes / 4;
    // Gathering ops split the buffer in n blocks of at least one element.
    if (op == kAllGather || op == kReduceScatter || op == kAlltoAll) elems = elems / c.n * c.n;
    if (elems < c.n) elems = c.n;
    void* a = in;
    void* b = out;
    if (fresh) {
      if (aclrtMalloc(&a, elems * 4, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS ||
          aclrtMalloc(&b, elems * 4, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
        std::fprintf(stderr, "soak_ops rank %u: aclrtMalloc failed\n", c.rank);
        return 1;
      }
    }
    RunOp(c, op, elems, iter, a, b);
    ++per_op[op];
    if (fresh) {
      aclrtFree(a);
      aclrtFree(b);
    }
    if (c.failed != 0) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string counts;
  for (int i = 0; i < kOpCount; ++i) {
    counts += std::string(" ") + kOpNames[i] + "=" + std::to_string(per_op[i]);
  }
  std::printf("soak_ops rank %u: %llu ops in %.0f s,%s; wrong elements %llu, failed ops %llu\n",
              c.rank, static_cast<unsigned long long>(iter), secs, counts.c_str(),
              static_cast<unsigned long long>(c.wrong), static_cast<unsigned long long>(c.failed));
  aclrtFree(in);
  aclrtFree(out);
  aclrtFree(flag);
  HcclCommDestroy(c.comm);
  aclrtDestroyStream(c.stream);
  return c.wrong == 0 && c.failed == 0 ? 0 : 1;
}
