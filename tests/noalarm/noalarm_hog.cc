// A bounded resource hog for the no-false-alarm tests.
//
//   noalarm_hog --cpu --seconds S                    spin on one core for S seconds
//   noalarm_hog --mem-mb M --seconds S --ready FILE [--floor-mb F] [--fill-seconds T]
//               [--keep-mb K]
//       map M MiB in 64 MiB pieces, write to every page (for at most T seconds, default 60),
//       write FILE ("<MiB held>"), then hold it until S seconds have passed; a piece is given
//       back whenever MemAvailable falls below F MiB (default 256), so the machine runs short
//       but never out (other work on it goes on). With K, memory that other processes free while
//       the hog holds is taken too: a piece is added whenever MemAvailable exceeds K MiB by two
//       pieces (at most M MiB more). On exit it prints "noalarm_hog: held M MiB, at least L MiB
//       throughout".
//
// Whatever happens to the test, the hog ends: after S seconds by itself, and at once when the
// process that started it dies (PR_SET_PDEATHSIG). The memory hog offers itself first to the
// OOM killer (oom_score_adj 1000), so a machine that runs short kills it, not the job or a
// neighbour's work.
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// MemAvailable of /proc/meminfo in MiB (a large number when unreadable: nothing to give back).
long MemAvailableMb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  long kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb / 1024;
  }
  return 1L << 40;
}

}  // namespace

int main(int argc, char** argv) {
  bool cpu = false;
  long mem_mb = 0;
  double seconds = 60;
  std::string ready;
  long floor_mb = 256;
  double fill_s = 60;
  long keep_mb = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--cpu") cpu = true;
    if (k == "--mem-mb" && i + 1 < argc) mem_mb = std::atol(argv[++i]);
    if (k == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    if (k == "--ready" && i + 1 < argc) ready = argv[++i];
    if (k == "--fill-seconds" && i + 1 < argc) fill_s = std::atof(argv[++i]);
    if (k == "--floor-mb" && i + 1 < argc) floor_mb = std::atol(argv[++i]);
    if (k == "--keep-mb" && i + 1 < argc) keep_mb = std::atol(argv[++i]);
  }
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 0;  // the parent died before the call
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  if (cpu) {
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) {
      for (int i = 0; i < 100000; ++i) x = x + 1;
    }
    return 0;
  }
  if (mem_mb <= 0) {
    std::fprintf(stderr, "noalarm_hog: --cpu or --mem-mb M\n");
    return 2;
  }
  {
    std::ofstream adj("/proc/self/oom_score_adj");
    adj << 1000 << "\n";
  }
  constexpr size_t kPiece = size_t{64} << 20;
  const long page = sysconf(_SC_PAGESIZE);
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  struct Piece {
    char* raw;  // the mapping (kPiece + kHuge bytes)
    char* data;
  };
  std::vector<Piece> pieces;
  long least = -1;  // MiB held at the lowest point after the hog was ready
  auto held = [&] { return static_cast<long>(pieces.size() * (kPiece >> 20)); };
  // Gives pieces back while the machine is below the floor.
  auto yield_to_floor = [&] {
    while (!pieces.empty() && MemAvailableMb() < floor_mb) {
      munmap(pieces.back().raw, kPiece + kHuge);
      pieces.pop_back();
    }
  };
  // One filler per core: writing fresh pages is kernel time (zeroing, and in a VM the host
  // backing them), about 1.5 s per GiB of a core on the machine this was written on.
  std::mutex mu;
  long next_mb = 0;
  const auto fill_end = std::min(end, std::chrono::steady_clock::now() +
                                          std::chrono::milliseconds(static_cast<long>(fill_s * 1000)));
  // Maps and writes one piece; false when the mapping fails.
  auto add_piece = [&](long mb) {
    // Huge pages where the kernel has them (2 MiB aligned, MADV_HUGEPAGE): a few thousand
    // faults fill many GiB, where 4 KiB pages take millions.
    void* raw = mmap(nullptr, kPiece + kHuge, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      std::fprintf(stderr, "noalarm_hog: mmap failed at %ld MiB: %s\n", mb, strerror(errno));
      return false;
    }
    char* c = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + kHuge - 1) &
                                      ~(kHuge - 1));
    (void)madvise(c, kPiece, MADV_HUGEPAGE);
    // Distinct bytes per page: no zero-page or same-page merging makes the memory cheap.
    for (size_t off = 0; off < kPiece; off += static_cast<size_t>(page)) {
      c[off] = static_cast<char>(mb + off / static_cast<size_t>(page) + 1);
    }
    std::lock_guard<std::mutex> lock(mu);
    pieces.push_back({static_cast<char*>(raw), c});
    return true;
  };
  auto fill = [&] {
    for (;;) {
      long mb;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next_mb + static_cast<long>(kPiece >> 20) > mem_mb) return;
        mb = next_mb;
        next_mb += kPiece >> 20;
      }
      if (std::chrono::steady_clock::now() >= fill_end) return;
      if (MemAvailableMb() < floor_mb + static_cast<long>(kPiece >> 20)) return;
      if (!add_piece(mb)) return;
    }
  };
  std::vector<std::thread> fillers;
  const long cores = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  for (long i = 0; i < cores; ++i) fillers.emplace_back(fill);
  for (auto& t : fillers) t.join();
  if (std::chrono::steady_clock::now() >= end) return 0;
  yield_to_floor();
  least = held();
  if (!ready.empty()) {
    std::ofstream out(ready + ".tmp");
    out << held() << "\n";
    out.close();
    std::rename((ready + ".tmp").c_str(), ready.c_str());
  }
  const long first = held();
  long added_mb = 0;
  while (std::chrono::steady_clock::now() < end) {
    yield_to_floor();
    while (keep_mb > 0 && added_mb < mem_mb &&
           MemAvailableMb() > keep_mb + 2 * static_cast<long>(kPiece >> 20) &&
           std::chrono::steady_clock::now() < end && add_piece(mem_mb + added_mb)) {
      added_mb += kPiece >> 20;
    }
    least = std::min(least, held());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::printf("noalarm_hog: held %ld MiB, at least %ld MiB throughout\n", first, least);
  return 0;
}
