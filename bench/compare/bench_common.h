// Shared by the peer harnesses (OpenMPI, Gloo) of compare.sh: the size sweep, nccl-tests' size
// semantics and bus factors (the same as `vigil bench`), and the JSON the summary reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace cmp {

struct Args {
  std::string op = "allreduce";
  uint64_t min_bytes = 8, max_bytes = 8;
  double factor = 2;
  int iters = 20, warmup = 5;
  int nranks = 4;           // Gloo: ranks to fork
  std::string algo;         // Gloo allreduce: ring | bcube
  std::string store;        // Gloo: file-store folder
  std::string label;        // free text copied into the JSON ("ompi-shm", ...)
  int rank = -1;            // Gloo: run only this rank (started per host), not fork --ranks
  std::string hostname = "127.0.0.1";  // Gloo: the address this rank's TCP device binds
};

inline uint64_t ParseBytes(const char* s) {
  char* end = nullptr;
  uint64_t v = std::strtoull(s, &end, 10);
  switch (*end) {
    case 'K': case 'k': v <<= 10; break;
    case 'M': case 'm': v <<= 20; break;
    case 'G': case 'g': v <<= 30; break;
    default: break;
  }
  return v;
}

inline bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "-b") a->min_bytes = ParseBytes(next());
    else if (k == "-e") a->max_bytes = ParseBytes(next());
    else if (k == "-f") a->factor = std::atof(next());
    else if (k == "-n") a->iters = std::atoi(next());
    else if (k == "-w") a->warmup = std::atoi(next());
    else if (k == "--ranks") a->nranks = std::atoi(next());
    else if (k == "--algo") a->algo = next();
    else if (k == "--store") a->store = next();
    else if (k == "--label") a->label = next();
    else if (k == "--rank") a->rank = std::atoi(next());
    else if (k == "--hostname") a->hostname = next();
    else if (!k.empty() && k[0] != '-') a->op = k;
    else { std::fprintf(stderr, "unknown argument %s\n", k.c_str()); return false; }
  }
  return a->min_bytes > 0 && a->max_bytes >= a->min_bytes && a->factor > 1;
}

inline std::vector<uint64_t> Sizes(const Args& a) {
  std::vector<uint64_t> s;
  for (uint64_t b = a.min_bytes; b <= a.max_bytes; b = static_cast<uint64_t>(b * a.factor)) {
    s.push_back(b);
  }
  return s;
}

inline bool Blocks(const std::string& op) {
  return op == "allgather" || op == "reducescatter" || op == "alltoall";
}

// Elements per block (blocked ops) or per buffer, for fp32.
inline uint64_t CountFor(const std::string& op, uint64_t bytes, int n) {
  return std::max<uint64_t>(1, Blocks(op) ? bytes / (4ull * n) : bytes / 4);
}
inline uint64_t BytesFor(const std::string& op, uint64_t count, int n) {
  return (Blocks(op) ? count * n : count) * 4;
}

inline double BusFactor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (Blocks(op)) return double(n - 1) / n;
  return 1.0;
}

struct Row {
  uint64_t bytes, count;
  double time_us;
};

inline void PrintJson(const Args& a, int n, const std::vector<Row>& rows) {
  std::printf("{\"tool\": \"%s\", \"op\": \"%s\", \"nranks\": %d, \"algo\": \"%s\", \"rows\": [",
              a.label.c_str(), a.op.c_str(), n, a.algo.c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double algbw = r.bytes / r.time_us / 1e3;
    std::printf("%s\n  {\"size\": %llu, \"count\": %llu, \"out_of_place\": {\"time_us\": %.3f, "
                "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f}}",
                i ? "," : "", (unsigned long long)r.bytes, (unsigned long long)r.count, r.time_us,
                algbw, algbw * BusFactor(a.op, n));
  }
  std::printf("\n]}\n");
  std::fflush(stdout);
}

}  // namespace cmp
