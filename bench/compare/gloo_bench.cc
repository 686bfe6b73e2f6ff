// Gloo side of compare.sh: TCP transport on loopback, file-store rendezvous, ranks forked here;
// or, for bench/cluster (ranks in several network namespaces), one rank per process:
// --rank R --hostname ADDR (the namespace's address), the file store on the shared file system.
// Same sweep and timing as `vigil bench` (warm-up, barrier, N back-to-back calls, mean per call,
// max over ranks), fp32 sum, out of place where Gloo has the form.
//   gloo_bench allreduce --algo ring --ranks 4 --store DIR -b 1M -e 64M -f 2 -n 20 -w 5
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench_common.h"

namespace {

void SumF(void* c, const void* a, const void* b, size_t n) {
  float* o = static_cast<float*>(c);
  const float* x = static_cast<const float*>(a);
  const float* y = static_cast<const float*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

void MaxD(void* c, const void* a, const void* b, size_t n) {
  double* o = static_cast<double*>(c);
  const double* x = static_cast<const double*>(a);
  const double* y = static_cast<const double*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = std::max(x[i], y[i]);
}

int RunRank(const cmp::Args& a, int rank, int n) {
  gloo::transport::tcp::attr attr;
  attr.hostname = a.hostname;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(a.store);
  gloo::rendezvous::PrefixStore store("gloo_bench", file_store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->setTimeout(std::chrono::seconds(300));
  ctx->connectFullMesh(store, dev);
  std::shared_ptr<gloo::Context> context = ctx;

  const std::vector<uint64_t> sizes = cmp::Sizes(a);
  const uint64_t max_count = cmp::CountFor(a.op, sizes.back(), n);
  const size_t cap = cmp::BytesFor(a.op, max_count, n) / 4 + 16;
  std::vector<float> send(cap, 1.0f), recv(cap, 0.0f);
  std::vector<cmp::Row> rows;
  uint32_t tag = 1;
  bool ok = true;
  // Warm-up at the largest size first (as vigil bench and nccl-tests), then per size below.
  for (int pass = 0; pass < 2; ++pass) {
  const bool warm = pass == 0;
  for (uint64_t size : warm ? std::vector<uint64_t>{sizes.back()} : sizes) {
    const uint64_t c = cmp::CountFor(a.op, size, n);
    std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs;
    std::vector<float*> rs_ptrs;
    if (a.op == "reducescatter") {
      // Gloo's reduce-scatter is the old in-place algorithm object; built once per size.
      rs_ptrs = {recv.data()};
      rs.reset(new gloo::ReduceScatterHalvingDoubling<float>(
          context, rs_ptrs, static_cast<int>(c * n), std::vector<int>(n, static_cast<int>(c))));
    }
    auto call = [&]() {
      if (a.op == "allreduce") {
        gloo::AllreduceOptions o(context);
        o.setAlgorithm(a.algo == "bcube" ? gloo::AllreduceOptions::Algorithm::BCUBE
                                         : gloo::AllreduceOptions::Algorithm::RING);
        o.setInput(send.data(), c);
        o.setOutput(recv.data(), c);
        o.setReduceFunction(&SumF);
        o.setTag(tag++);
        gloo::allreduce(o);
      } else if (a.op == "allgather") {
        gloo::AllgatherOptions o(context);
        o.setInput(send.data(), c);
        o.setOutput(recv.data(), c * n);
        o.setTag(tag++);
        gloo::allgather(o);
      } else if (a.op == "broadcast") {
        gloo::BroadcastOptions o(context);
        o.setRoot(0);
        o.setOutput(recv.data(), c);
        o.setTag(tag++);
        gloo::broadcast(o);
      } else if (a.op == "alltoall") {
        gloo::AlltoallOptions o(context);
        o.setInput(send.data(), c * n);
        o.setOutput(recv.data(), c * n);
        o.setTag(tag++);
        gloo::alltoall(o);
      } else if (a.op == "reducescatter") {
        rs->run();
      }
    };
    auto barrier = [&]() {
      gloo::BarrierOptions o(context);
      o.setTag(tag++);
      gloo::barrier(o);
    };
    for (int i = 0; i < a.warmup; ++i) call();
    if (warm) continue;
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < a.iters; ++i) call();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / a.iters;
    gloo::AllreduceOptions o(context);
    o.setOutput(&us, 1);
    o.setReduceFunction(&MaxD);
    o.setTag(tag++);
    gloo::allreduce(o);
    if (a.op == "allreduce") ok = ok && recv[0] == float(n) && recv[c - 1] == float(n);
    rows.push_back({cmp::BytesFor(a.op, c, n), cmp::Blocks(a.op) ? c * n : c, us});
  }
  }
  if (!ok) std::fprintf(stderr, "gloo_bench: rank %d: wrong %s result\n", rank, a.op.c_str());
  if (rank == 0) cmp::PrintJson(a, n, rows);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  cmp::Args a;
  if (!cmp::ParseArgs(argc, argv, &a) || a.store.empty()) {
    std::fprintf(stderr, "usage: gloo_bench OP --store DIR [--ranks N] [--rank R --hostname ADDR] [--algo ring|bcube] -b -e -f -n -w\n");
    return 2;
  }
  std::fflush(stdout);
  if (a.rank >= 0) {
    if (a.rank >= a.nranks) return 2;
    try {
      return RunRank(a, a.rank, a.nranks);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gloo_bench: rank %d: %s\n", a.rank, e.what());
      return 1;
    }
  }
  std::vector<pid_t> kids;
  for (int r = 0; r < a.nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      int rc = 1;
      try {
        rc = RunRank(a, r, a.nranks);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo_bench: rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    kids.push_back(pid);
  }
  int rc = 0;
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
  }
  return rc;
}
