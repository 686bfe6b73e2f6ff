// OpenMPI side of compare.sh: the same sweep and timing as `vigil bench` (warm-up, barrier,
// N back-to-back calls, mean per call, max over ranks), fp32 sum, out of place.
//   mpirun -np 4 mpi_bench allreduce -b 1M -e 64M -f 2 -n 20 -w 5 --label ompi-shm
#include <mpi.h>

#include "bench_common.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  cmp::Args a;
  if (!cmp::ParseArgs(argc, argv, &a)) {
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::vector<uint64_t> sizes = cmp::Sizes(a);
  const uint64_t max_count = cmp::CountFor(a.op, sizes.back(), n);
  const size_t cap = cmp::BytesFor(a.op, max_count, n) + 64;
  std::vector<float> send(cap / 4, 1.0f), recv(cap / 4, 0.0f);
  std::vector<cmp::Row> rows;
  bool ok = true;
  // Warm-up at the largest size first (as vigil bench and nccl-tests), then per size below.
  for (int pass = 0; pass < 2; ++pass) {
  const bool warm = pass == 0;
  for (uint64_t size : warm ? std::vector<uint64_t>{sizes.back()} : sizes) {
    const uint64_t c = cmp::CountFor(a.op, size, n);
    const int ci = static_cast<int>(c);
    auto call = [&]() {
      if (a.op == "allreduce") MPI_Allreduce(send.data(), recv.data(), ci, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (a.op == "allgather") MPI_Allgather(send.data(), ci, MPI_FLOAT, recv.data(), ci, MPI_FLOAT, MPI_COMM_WORLD);
      else if (a.op == "reducescatter") MPI_Reduce_scatter_block(send.data(), recv.data(), ci, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (a.op == "broadcast") MPI_Bcast(recv.data(), ci, MPI_FLOAT, 0, MPI_COMM_WORLD);
      else if (a.op == "alltoall") MPI_Alltoall(send.data(), ci, MPI_FLOAT, recv.data(), ci, MPI_FLOAT, MPI_COMM_WORLD);
      else if (a.op == "reduce") MPI_Reduce(send.data(), recv.data(), ci, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    };
    for (int i = 0; i < a.warmup; ++i) call();
    if (warm) continue;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < a.iters; ++i) call();
    double us = (MPI_Wtime() - t0) * 1e6 / a.iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    // Sanity: all-ones input, so an AllReduce/ReduceScatter sum is n everywhere.
    if (a.op == "allreduce" || a.op == "reducescatter") ok = ok && recv[0] == float(n) && recv[c - 1] == float(n);
    rows.push_back({cmp::BytesFor(a.op, c, n), cmp::Blocks(a.op) ? c * n : c, us});
  }
  }
  if (!ok) std::fprintf(stderr, "mpi_bench: rank %d: wrong %s result\n", rank, a.op.c_str());
  if (rank == 0) cmp::PrintJson(a, n, rows);
  MPI_Finalize();
  return ok ? 0 : 1;
}
