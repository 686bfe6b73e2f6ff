// Shared fixtures of the transport tests: a data pattern, per-rank transport options, ranks
// connected between threads, and an observer of link errors.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "../bootstrap/test_env.h"
#include "bootstrap/job_key.h"
#include "bootstrap/socket.h"
#include "runtime/device_memory.h"
#include "transport/link.h"
#include "transport/link_base.h"
#include "transport/tcp_link.h"

namespace vigil::transport::test {

using namespace std::chrono_literals;
using testing::EnvTest;

// The test program's own path, for the tests that start it again as a child process.
inline std::string g_self_exe = "/proc/self/exe";

inline std::vector<uint8_t> Pattern(uint32_t seed, size_t n) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

inline TransportOptions Options(uint32_t rank, const std::string& host_id, bool force_tcp,
                                uint32_t qps = 1) {
  TransportOptions o;
  o.comm_id = "test-comm";
  o.self.rank = rank;
  o.self.host_ip = "127.0.0.1";
  o.self.host_id = host_id;
  o.self.pid = static_cast<uint32_t>(getpid());
  o.self.device = static_cast<int32_t>(rank);
  o.force_tcp = force_tcp;
  o.qps_per_connection = qps;
  o.connect_timeout_s = 10;
  o.device = static_cast<int32_t>(rank);
  return o;
}

inline Endpoint EndpointOf(const TransportOptions& o, const Transport& t) {
  Endpoint e = o.self;
  e.port = t.listen_port();
  return e;
}

inline WaitPolicy Within(std::chrono::milliseconds d) {
  WaitPolicy w;
  w.deadline = SteadyClock::now() + d;
  return w;
}

struct Mode {
  bool tcp;
  uint32_t qps;
  size_t direct_bytes = 0;  // TransportOptions::shm_direct_bytes
};
// How gtest prints a Mode (instead of its bytes, padding included).
inline void PrintTo(const Mode& m, std::ostream* os) {
  *os << (m.tcp ? "tcp, " + std::to_string(m.qps) + " QPs" : std::string("shm"));
  if (m.direct_bytes != 0) *os << ", direct slots of " << m.direct_bytes << " B";
}
inline std::string ModeName(const ::testing::TestParamInfo<Mode>& info) {
  return info.param.tcp ? "Tcp" + std::to_string(info.param.qps) : std::string("Shm");
}

class Ranks {
 public:
  Ranks(uint32_t n, Mode mode, const auth::JobKey& key = auth::JobKey()) {
    for (uint32_t r = 0; r < n; ++r) {
      opts.push_back(Options(r, "host-a", mode.tcp, mode.qps));
      opts.back().key = key;
      opts.back().shm_direct_bytes = mode.direct_bytes;
      std::unique_ptr<Transport> t;
      std::string err;
      EXPECT_EQ(Transport::Create(opts.back(), &t, &err), HCCL_SUCCESS) << err;
      ts.push_back(std::move(t));
    }
    for (uint32_t r = 0; r < n; ++r) eps.push_back(EndpointOf(opts[r], *ts[r]));
  }
  // Every rank connects to every other, concurrently.
  void ConnectAll() {
    std::vector<std::thread> th;
    for (size_t r = 0; r < ts.size(); ++r) {
      th.emplace_back([&, r] {
        std::vector<Endpoint> peers;
        for (size_t p = 0; p < ts.size(); ++p) {
          if (p != r) peers.push_back(eps[p]);
        }
        std::string err;
        EXPECT_EQ(ts[r]->Connect(peers, "AllReduce_test", &err), HCCL_SUCCESS) << err;
      });
    }
    for (auto& t : th) t.join();
  }
  std::vector<TransportOptions> opts;
  std::vector<std::unique_ptr<Transport>> ts;
  std::vector<Endpoint> eps;
};

// Ranks 0 and 1 of `ranks` send each other `size` bytes of Pattern(seed(r)) at once, each in one
// Progress of a send and a receive; returns what each received.
inline std::vector<std::vector<uint8_t>> ExchangePair(Ranks& ranks, size_t size,
                                                      const std::function<uint32_t(int)>& seed) {
  std::vector<std::vector<uint8_t>> got(2, std::vector<uint8_t>(size));
  std::vector<std::thread> th;
  for (int r = 0; r < 2; ++r) {
    th.emplace_back([&, r] {
      std::vector<uint8_t> mine = Pattern(seed(r), size);
      Link* l = ranks.ts[r]->link(1 - r);
      std::vector<Xfer> x{{l, true, mine.data(), size}, {l, false, got[r].data(), size}};
      ProgressError err;
      EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
    });
  }
  for (auto& t : th) t.join();
  return got;
}

struct Observed {
  std::mutex mu;
  std::vector<LinkError> errors;
  void Attach(Transport& t) {
    t.SetLinkErrorObserver([this](const LinkError& e) {
      std::lock_guard<std::mutex> lock(mu);
      errors.push_back(e);
    });
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return errors.size();
  }
};

}  // namespace vigil::transport::test

namespace vigil::transport {
// The child process of the process tests (connect_test.cc): connects back to the parent test on
// `port` and plays `scenario`; returns the process exit code.
int ChildMain(const std::string& mode, uint16_t port, uint32_t parent_pid,
              const std::string& scenario);
}  // namespace vigil::transport
