// Link bandwidth between two ranks as threads of one process (one-direction and bidirectional),
// 1 MiB .. 64 MiB messages:  transport_bw [shm|tcp] [qps]
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "transport/link.h"

using namespace vigil;
using namespace vigil::transport;

int main(int argc, char** argv) {
  const bool tcp = argc > 1 && std::string(argv[1]) == "tcp";
  const uint32_t qps = argc > 2 ? static_cast<uint32_t>(std::stoul(argv[2])) : 1;
  std::vector<std::unique_ptr<Transport>> ts(2);
  std::vector<Endpoint> eps(2);
  for (uint32_t r = 0; r < 2; ++r) {
    TransportOptions o;
    o.comm_id = "bw";
    o.self.rank = r;
    o.self.host_ip = "127.0.0.1";
    o.self.host_id = "h";
    o.force_tcp = tcp;
    o.qps_per_connection = qps;
    o.connect_timeout_s = 10;
    o.device = static_cast<int32_t>(r);
    std::string err;
    if (Transport::Create(o, &ts[r], &err) != HCCL_SUCCESS) {
      fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    eps[r] = o.self;
    eps[r].port = ts[r]->listen_port();
  }
  std::thread t1([&] {
    std::string e;
    ts[1]->Connect({eps[0]}, "bw", &e);
  });
  std::string err;
  if (ts[0]->Connect({eps[1]}, "bw", &err) != HCCL_SUCCESS) return 1;
  t1.join();
  printf("%s qps=%u\n%10s %12s %14s\n", tcp ? "TCP" : "SHM", qps, "bytes", "uni GB/s",
         "bidir GB/s(each way)");
  for (size_t size = 1u << 20; size <= (64u << 20); size *= 4) {
    std::vector<char> a(size, 1), b(size, 2), c(size), d(size);
    double res[2];
    for (int bidir = 0; bidir < 2; ++bidir) {
      const int iters = static_cast<int>(std::max<size_t>(4, (512u << 20) / size));
      auto run = [&](int r) {
        Link* l = ts[r]->link(1 - r);
        for (int i = 0; i < iters; ++i) {
          std::vector<Xfer> x;
          if (r == 0 || bidir) x.push_back({l, true, r == 0 ? a.data() : b.data(), size});
          if (r == 1 || bidir) x.push_back({l, false, r == 0 ? c.data() : d.data(), size});
          ProgressError e;
          if (Progress(x, WaitPolicy{}, &e) != HCCL_SUCCESS) {
            fprintf(stderr, "progress: %s\n", e.reason.c_str());
            std::exit(1);
          }
        }
      };
      auto start = SteadyClock::now();
      std::thread peer(run, 1);
      run(0);
      peer.join();
      double s = std::chrono::duration<double>(SteadyClock::now() - start).count();
      res[bidir] = static_cast<double>(size) * iters / s / 1e9;
    }
    printf("%10zu %12.2f %14.2f\n", size, res[0], res[1]);
  }
  return 0;
}
