#include "dfx/heartbeat_graph.h"

#include <algorithm>

namespace vigil::dfx {

std::vector<uint32_t> HeartbeatNeighbours(uint32_t rank, uint32_t nranks) {
  std::vector<uint32_t> out;
  if (nranks < 2 || rank >= nranks) return out;
  const uint64_t n = nranks, i = rank;
  auto add = [&](uint64_t v) {
    if (v != i) out.push_back(static_cast<uint32_t>(v));
  };
  add((i + 1) % n);
  add((i + n - 1) % n);
  add((2 * i) % n);
  add((2 * i + 1) % n);
  // In-edges: j with 2j + c = i + kN, c in {0,1}, k in {0,1} (2j + c < 2N).
  for (uint64_t c = 0; c < 2; ++c) {
    for (uint64_t k = 0; k < 2; ++k) {
      const uint64_t t = i + k * n;
      if (t < c || (t - c) % 2 != 0) continue;
      const uint64_t j = (t - c) / 2;
      if (j < n) add(j);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

PropagationStats SimulatePropagation(uint32_t nranks, uint32_t crimer, bool crimer_dead) {
  PropagationStats s;
  s.nranks = nranks;
  if (nranks == 0 || crimer >= nranks) return s;
  std::vector<std::vector<uint32_t>> adj(nranks);
  uint64_t degree_sum = 0;
  for (uint32_t r = 0; r < nranks; ++r) {
    adj[r] = HeartbeatNeighbours(r, nranks);
    degree_sum += adj[r].size();
    s.max_degree = std::max<uint32_t>(s.max_degree, static_cast<uint32_t>(adj[r].size()));
  }
  s.mean_degree = static_cast<double>(degree_sum) / nranks;

  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<bool> knows(nranks, false);
  std::vector<uint32_t> informer(nranks, kNone);
  struct Msg {
    uint32_t from, to;
  };
  // Each discoverer (hop 0) forwards to all live neighbours but itself.
  std::vector<uint32_t> frontier;
  if (crimer_dead) {
    for (uint32_t v : adj[crimer]) frontier.push_back(v);
  } else {
    frontier.push_back(crimer);
  }
  for (uint32_t v : frontier) {
    knows[v] = true;
    informer[v] = v;
  }
  s.discoverers = static_cast<uint32_t>(frontier.size());
  std::vector<uint32_t> came_from(nranks, kNone);
  uint32_t known = s.discoverers;
  const uint32_t live = crimer_dead ? nranks - 1 : nranks;
  while (!frontier.empty() && known < live) {
    std::vector<Msg> sent;
    for (uint32_t u : frontier) {
      for (uint32_t v : adj[u]) {
        if (crimer_dead && v == crimer) continue;  // not an OK peer
        if (v == came_from[u] || v == informer[u]) continue;
        sent.push_back({u, v});
      }
    }
    s.messages += sent.size();
    ++s.hops;
    std::vector<uint32_t> next;
    for (const Msg& m : sent) {
      if (knows[m.to]) continue;  // de-dup: no status change, nothing recorded or forwarded
      knows[m.to] = true;
      informer[m.to] = informer[m.from];
      came_from[m.to] = m.from;
      next.push_back(m.to);
      ++known;
    }
    frontier.swap(next);
  }
  // The last round's receivers still forward once in the real protocol (they cannot know that
  // everyone already knows); count those duplicate frames too.
  for (uint32_t u : frontier) {
    for (uint32_t v : adj[u]) {
      if (crimer_dead && v == crimer) continue;
      if (v == came_from[u] || v == informer[u]) continue;
      ++s.messages;
    }
  }
  s.reached = known;
  return s;
}

}  // namespace vigil::dfx
