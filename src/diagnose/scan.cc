// Scan: the inputs walked, each file read once (large plain files in pieces, in parallel), and
// the pieces merged; what reading one file means is scanner.cc's.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "diagnose/file_merge.h"
#include "diagnose/file_parse.h"
#include "diagnose/scanner.h"
#include "diagnose/walker.h"

namespace vigil::diagnose {

ScanResult Scan(const std::vector<std::string>& inputs, const ScanOptions& options) {
  ScanResult res;
  WalkInputs(inputs, &res);
  // Same file named twice (overlapping inputs, symlinks, hard links): read once, by its first path.
  std::sort(res.files.begin(), res.files.end(),
            [](const InputFile& a, const InputFile& b) { return a.path < b.path; });
  res.files.erase(
      std::unique(res.files.begin(), res.files.end(),
                  [](const InputFile& a, const InputFile& b) { return a.path == b.path; }),
      res.files.end());
  {
    std::set<std::pair<uint64_t, uint64_t>> ids;
    std::erase_if(res.files, [&](const InputFile& f) {
      return f.regular && !ids.insert({f.dev, f.ino}).second;
    });
  }
  for (const auto& f : res.files) res.total_bytes += f.size;
  res.results.resize(res.files.size());

  // Work units: whole files, and pieces of the large plain ones (a single huge plog would
  // otherwise keep one worker busy while the others idle). Largest first so workers finish
  // together.
  const int threads = std::max(1, options.threads);
  struct Unit {
    size_t file;
    size_t part;  // SIZE_MAX: the whole file
    uint64_t begin, end, size;
  };
  std::vector<Unit> units;
  std::vector<std::vector<FileResult>> parts(res.files.size());
  const uint64_t piece = std::max<uint64_t>(
      {options.min_piece_bytes, res.total_bytes / (4 * static_cast<uint64_t>(threads)), 1});
  for (size_t i = 0; i < res.files.size(); ++i) {
    const InputFile& f = res.files[i];
    const bool plain = f.regular && detail::IsPlainText(f.path);
    if (threads == 1 || !plain || f.size < 2 * piece) {
      units.push_back({i, SIZE_MAX, 0, 0, f.size});
      continue;
    }
    const uint64_t n = (f.size + piece - 1) / piece;
    parts[i].resize(n);
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t begin = f.size * k / n, end = f.size * (k + 1) / n;
      units.push_back({i, k, begin, k + 1 == n ? UINT64_MAX : end, end - begin});
    }
  }
  std::stable_sort(units.begin(), units.end(),
                   [](const Unit& a, const Unit& b) { return a.size > b.size; });

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> done_bytes{0};
  std::atomic<int> running{0};
  std::mutex mu;
  std::condition_variable cv;
  int nthreads = std::max(1, std::min<int>(threads, static_cast<int>(units.size())));
  auto work = [&](int id) {
    char name[16];
    std::snprintf(name, sizeof(name), "vigil-diag-%d", id);
    pthread_setname_np(pthread_self(), name);
    std::vector<char> buf;
    while (true) {
      size_t k = next.fetch_add(1);
      if (k >= units.size()) break;
      const Unit& u = units[k];
      const auto index = static_cast<uint32_t>(u.file);
      if (u.part == SIZE_MAX) {
        detail::ReadWholeFile(res.files[u.file], index, &res.results[u.file], &buf, &done_bytes);
      } else {
        detail::ReadFilePiece(res.files[u.file], index, u.begin, u.end, &parts[u.file][u.part],
                              &buf, &done_bytes);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    --running;
    cv.notify_all();
  };
  std::vector<std::thread> workers;
  running = nthreads;
  for (int t = 0; t < nthreads; ++t) workers.emplace_back(work, t);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (running > 0) {
      cv.wait_for(lock, std::chrono::milliseconds(200));
      if (options.progress) {
        lock.unlock();
        options.progress(std::min(done_bytes.load(), res.total_bytes),
                         res.total_bytes);  // pieces read past their end
        lock.lock();
      }
    }
  }
  for (auto& t : workers) t.join();
  for (size_t i = 0; i < res.files.size(); ++i) {
    if (parts[i].empty()) continue;
    res.results[i] = MergeParts(std::move(parts[i]));
    detail::NoteEmpty(&res.results[i]);
  }
  for (size_t i = 0; i < res.files.size(); ++i) {
    if (!res.results[i].skip_reason.empty() && !res.results[i].read)
      res.skipped.push_back({res.files[i].path, res.results[i].skip_reason});
  }
  return res;
}

}  // namespace vigil::diagnose
