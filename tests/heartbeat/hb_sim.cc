// How one abnormal event floods over the heartbeat's neighbour graph (heartbeat_graph.h), in
// process and without sockets: hops and frames until every live rank knows.
//   hb_sim [N...]        default: 1000 10000
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "dfx/heartbeat_graph.h"

int main(int argc, char** argv) {
  std::vector<uint32_t> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 10)));
  if (sizes.empty()) sizes = {1000, 10000};
  std::printf("graph: ring + generalized de Bruijn (degree 2), undirected; one event per run\n");
  std::printf("%-8s %-6s %8s %7s %6s %10s %11s %9s\n", "ranks", "event", "crimer", "found", "hops",
              "messages", "msgs/rank", "max deg");
  for (uint32_t n : sizes) {
    for (bool dead : {true, false}) {
      for (uint32_t crimer : {0u, n / 3, n / 2, n - 1}) {
        const auto s = vigil::dfx::SimulatePropagation(n, crimer, dead);
        std::printf("%-8u %-6s %8u %7u %6u %10llu %11.2f %9u%s\n", n, dead ? "LOST" : "STUCK",
                    crimer, s.discoverers, s.hops, static_cast<unsigned long long>(s.messages),
                    static_cast<double>(s.messages) / n, s.max_degree,
                    s.reached == (dead ? n - 1 : n) ? "" : "  NOT ALL REACHED");
      }
    }
  }
  return 0;
}
