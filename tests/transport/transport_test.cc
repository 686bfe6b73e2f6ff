// Transport: Progress semantics, shm and TCP links between threads and between processes
// (data integrity, bidirectional), handshake hygiene, connect timeouts, link errors (cut, peer
// death, orderly close), link memory (EI0011), fault injection. Short timeouts via env.
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

namespace vigil::transport {
namespace {

using namespace std::chrono_literals;
using testing::EnvTest;

std::string g_self_exe = "/proc/self/exe";

std::vector<uint8_t> Pattern(uint32_t seed, size_t n) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

TransportOptions Options(uint32_t rank, const std::string& host_id, bool force_tcp,
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

Endpoint EndpointOf(const TransportOptions& o, const Transport& t) {
  Endpoint e = o.self;
  e.port = t.listen_port();
  return e;
}

WaitPolicy Within(std::chrono::milliseconds d) {
  WaitPolicy w;
  w.deadline = SteadyClock::now() + d;
  return w;
}

// ---------------------------------------------------------------- Progress on a fake link

class FakeLink : public Link {
 public:
  LinkType type() const override { return LinkType::kTcp; }
  const Endpoint& remote() const override { return remote_; }
  HcclResult TrySend(const void*, size_t n, size_t* moved) override {
    *moved = 0;
    if (fail) return HCCL_E_REMOTE;
    if (credit > 0) {
      *moved = std::min<size_t>(n, credit);
      credit -= *moved;
    }
    return HCCL_SUCCESS;
  }
  HcclResult TryRecv(void* b, size_t n, size_t* moved) override { return TrySend(b, n, moved); }
  void WaitReady(bool for_send, int timeout_ms) override {
    ++waits;
    if (for_send) ++send_waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 5)));
  }
  bool broken() const override { return fail; }
  Endpoint remote_;
  std::atomic<size_t> credit{0};
  std::atomic<bool> fail{false};
  std::atomic<int> waits{0};
  std::atomic<int> send_waits{0};
};

TEST(ProgressTest, CompletesTimesOutAbortsAndFails) {
  FakeLink a, b;
  a.remote_.rank = 1;
  b.remote_.rank = 2;
  std::vector<char> buf(100);
  a.credit = 100;
  b.credit = 100;
  std::vector<Xfer> x{
      {&a, true, buf.data(), 100}, {&b, false, buf.data(), 100}, {nullptr, true, nullptr, 0}};
  ProgressError err;
  EXPECT_EQ(Progress(x, WaitPolicy{}, &err), HCCL_SUCCESS);

  a.credit = 10;
  std::vector<Xfer> one{{&a, true, buf.data(), 100}};
  EXPECT_EQ(Progress(one, Within(100ms), &err), HCCL_E_TIMEOUT);
  EXPECT_TRUE(err.timed_out);
  EXPECT_EQ(err.link, &a);
  EXPECT_NE(err.reason.find("rank[1]"), std::string::npos) << err.reason;
  EXPECT_GT(a.waits.load(), 0);  // it blocked instead of spinning

  std::atomic<int> abort{0};
  WaitPolicy w;
  w.abort = &abort;
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    abort = HCCL_E_SUSPENDING;
  });
  EXPECT_EQ(Progress(one, w, &err), HCCL_E_SUSPENDING);
  t.join();
  EXPECT_FALSE(err.timed_out);

  b.fail = true;
  std::vector<Xfer> two{{&a, true, buf.data(), 100}, {&b, false, buf.data(), 100}};
  EXPECT_EQ(Progress(two, Within(5s), &err), HCCL_E_REMOTE);
  EXPECT_EQ(err.link, &b);
}

// A send whose gate is closed waits for the receive whose head opens it, never on its own link
// (a writable socket would end every wait at once: a busy loop).
TEST(ProgressTest, AGatedSendWaitsForTheReceiveNotForItsLink) {
  FakeLink out, in;
  out.remote_.rank = 1;
  in.remote_.rank = 2;
  out.credit = 1000;  // the link has room: only the gate holds the body back
  std::vector<char> body(100), got(100);
  uint64_t head = 7, their_head = 0;
  bool open = false;
  transport::HeadHook hook;
  hook.ctx = &open;
  hook.on_head = [](void* ctx, uint32_t, const void*) {
    *static_cast<bool*>(ctx) = true;  // the peer's header opens this rank's gate
    return transport::HeadVerdict::kAccept;
  };
  Xfer send{&out, true, body.data(), body.size(), &head, sizeof(head)};
  send.gate = &open;
  Xfer recv{&in, false, got.data(), got.size(), &their_head, sizeof(their_head), &hook};
  std::vector<Xfer> x{send, recv};
  std::thread peer([&] {
    std::this_thread::sleep_for(50ms);
    in.credit = sizeof(their_head) + got.size();
  });
  ProgressError err;
  EXPECT_EQ(Progress(x, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  peer.join();
  EXPECT_TRUE(open);
  EXPECT_GT(in.waits.load(), 0);
  EXPECT_EQ(out.send_waits.load(), 0);
  EXPECT_EQ(out.credit.load(), 1000 - sizeof(head) - body.size());
}

// A gated send with an eager window (Link::eager_bytes) moves its head and that much of its
// body before the gate opens, then the rest once it does.
TEST(ProgressTest, AGatedSendMovesItsEagerWindowFirst) {
  FakeLink out;
  out.remote_.rank = 1;
  out.credit = 1000;
  std::vector<char> body(100);
  uint64_t head = 7;
  bool open = false;
  std::vector<Xfer> x{{&out, true, body.data(), body.size(), &head, sizeof(head)}};
  x[0].gate = &open;
  x[0].eager = 30;
  ProgressError err;
  EXPECT_EQ(Progress(x, Within(100ms), &err), HCCL_E_TIMEOUT);
  EXPECT_EQ(x[0].done, sizeof(head) + 30);
  EXPECT_EQ(out.credit.load(), 1000 - sizeof(head) - 30);
  open = true;
  x[0].head_bytes = 0;  // what is left: the body past the window
  x[0].buf = body.data() + 30;
  x[0].bytes = body.size() - 30;
  EXPECT_EQ(Progress(x, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  EXPECT_EQ(out.credit.load(), 1000 - sizeof(head) - body.size());
}

// ---------------------------------------------------------------- links between threads

struct Mode {
  bool tcp;
  uint32_t qps;
};
std::string ModeName(const ::testing::TestParamInfo<Mode>& info) {
  return info.param.tcp ? "Tcp" + std::to_string(info.param.qps) : std::string("Shm");
}

class Ranks {
 public:
  Ranks(uint32_t n, Mode mode, const auth::JobKey& key = auth::JobKey()) {
    for (uint32_t r = 0; r < n; ++r) {
      opts.push_back(Options(r, "host-a", mode.tcp, mode.qps));
      opts.back().key = key;
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
std::vector<std::vector<uint8_t>> ExchangePair(Ranks& ranks, size_t size,
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

class LinkTest : public EnvTest, public ::testing::WithParamInterface<Mode> {};

TEST_P(LinkTest, PairIntegrityBidirectional) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  for (int r = 0; r < 2; ++r) {
    Link* l = ranks.ts[r]->link(1 - r);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->type(), GetParam().tcp ? LinkType::kTcp : LinkType::kShm);
    EXPECT_EQ(l->remote().rank, static_cast<uint32_t>(1 - r));
  }
  const std::vector<size_t> sizes = {
      0, 1, 7, 4095, 4096, 65537, 262144, 262145, (1u << 20) + 3, 4u << 20, (9u << 20) + 5};
  for (size_t size : sizes) {
    std::vector<std::vector<uint8_t>> got =
        ExchangePair(ranks, size, [size](int r) { return static_cast<uint32_t>(r * 1000 + size); });
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(got[r] == Pattern(static_cast<uint32_t>((1 - r) * 1000 + size), size))
          << "size " << size << " rank " << r;
    }
  }
  EXPECT_GE(CountInLogs("link established: tag[AllReduce_test]"), 2u);
}

TEST_P(LinkTest, FourRanksAllToAll) {
  const uint32_t n = 4;
  Ranks ranks(n, GetParam());
  ranks.ConnectAll();
  const size_t size = (3u << 20) + 11;
  std::vector<std::thread> th;
  std::atomic<int> bad{0};
  for (uint32_t r = 0; r < n; ++r) {
    th.emplace_back([&, r] {
      std::vector<std::vector<uint8_t>> out(n), in(n);
      std::vector<Xfer> x;
      for (uint32_t p = 0; p < n; ++p) {
        if (p == r) continue;
        out[p] = Pattern(r * 16 + p, size);
        in[p].assign(size, 0);
        x.push_back({ranks.ts[r]->link(p), true, out[p].data(), size});
        x.push_back({ranks.ts[r]->link(p), false, in[p].data(), size});
      }
      ProgressError err;
      EXPECT_EQ(Progress(x, Within(60s), &err), HCCL_SUCCESS) << err.reason;
      for (uint32_t p = 0; p < n; ++p) {
        if (p != r && in[p] != Pattern(p * 16 + r, size)) ++bad;
      }
    });
  }
  for (auto& t : th) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_P(LinkTest, DeadlineAndAbortOnARealLink) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  std::vector<uint8_t> buf(1024);
  std::vector<Xfer> x{{ranks.ts[0]->link(1), false, buf.data(), buf.size()}};
  ProgressError err;
  EXPECT_EQ(Progress(x, Within(200ms), &err), HCCL_E_TIMEOUT);
  EXPECT_TRUE(err.timed_out);
  std::atomic<int> abort{0};
  WaitPolicy w;
  w.abort = &abort;
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    abort = HCCL_E_INTERNAL;
  });
  EXPECT_EQ(Progress(x, w, &err), HCCL_E_INTERNAL);
  t.join();
  // The link still works afterwards.
  std::vector<uint8_t> msg = Pattern(5, 1024);
  std::vector<Xfer> send{{ranks.ts[1]->link(0), true, msg.data(), msg.size()}};
  EXPECT_EQ(Progress(send, Within(10s), &err), HCCL_SUCCESS);
  EXPECT_EQ(Progress(x, Within(10s), &err), HCCL_SUCCESS);
  EXPECT_EQ(buf, msg);
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

TEST_P(LinkTest, CutLinkFailsFastAndIsReportedOncePerSide) {
  Observed obs0, obs1;  // outlive the transports, whose monitor threads report to them
  Ranks ranks(2, GetParam());
  obs0.Attach(*ranks.ts[0]);
  obs1.Attach(*ranks.ts[1]);
  ranks.ConnectAll();
  std::vector<uint8_t> buf(8u << 20);
  std::vector<Xfer> x{{ranks.ts[1]->link(0), false, buf.data(), buf.size()}};
  std::thread cutter([&] {
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(ranks.ts[0]->InjectLinkCut(1));
  });
  ProgressError err;
  EXPECT_EQ(Progress(x, Within(20s), &err), HCCL_E_REMOTE) << err.reason;
  cutter.join();
  EXPECT_TRUE(ranks.ts[1]->link(0)->broken());
  std::vector<Xfer> again{{ranks.ts[0]->link(1), true, buf.data(), 16}};
  EXPECT_EQ(Progress(again, Within(5s), &err), HCCL_E_REMOTE);
  for (int i = 0; i < 100 && (obs0.count() < 1 || obs1.count() < 1); ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(obs0.count(), 1u);
  ASSERT_EQ(obs1.count(), 1u);
  EXPECT_EQ(obs1.errors[0].local.rank, 1u);
  EXPECT_EQ(obs1.errors[0].remote.rank, 0u);
  EXPECT_EQ(obs1.errors[0].code, HCCL_E_REMOTE);
  EXPECT_EQ(obs0.errors[0].remote.rank, 1u);
  EXPECT_EQ(obs0.errors[0].remote.port, ranks.eps[1].port);
  EXPECT_NE(Logs().find("[TaskExecStage][Link]link error"), std::string::npos);
}

TEST_P(LinkTest, OrderlyCloseIsNotAnError) {
  Observed obs0;
  Ranks ranks(2, GetParam());
  obs0.Attach(*ranks.ts[0]);
  ranks.ConnectAll();
  std::vector<uint8_t> msg = Pattern(9, 1000), got(1000);
  ProgressError err;
  std::vector<Xfer> s{{ranks.ts[1]->link(0), true, msg.data(), msg.size()}};
  ASSERT_EQ(Progress(s, Within(10s), &err), HCCL_SUCCESS);
  ranks.ts[1]->Close();
  ranks.ts[1]->Close();  // twice is fine
  // Data sent before the close is still delivered, then the link reports the close.
  std::vector<Xfer> r{{ranks.ts[0]->link(1), false, got.data(), got.size()}};
  EXPECT_EQ(Progress(r, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  EXPECT_EQ(got, msg);
  EXPECT_EQ(Progress(r, Within(10s), &err), HCCL_E_REMOTE);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(obs0.count(), 0u);
}

// A link error already received when a rank closes in order is reported, not hidden by the
// close (F4: the far end of a cut link whose op failed on an abort and which then destroyed its
// communicator). Rank 1's monitor thread is held inside the observer, reporting the cut from
// rank 0, while rank 2 cuts its link to rank 1; then rank 1 closes. The second cut must be
// reported too (by the closing thread: the monitor is still held).
TEST_P(LinkTest, CloseReportsALinkErrorThatArrivedFirst) {
  std::mutex mu;  // these outlive the transports, whose threads report to them
  std::condition_variable cv;
  bool held = false, released = false;
  std::vector<uint32_t> reported;  // remote ranks, in report order
  Ranks ranks(3, GetParam());
  ranks.ts[1]->SetLinkErrorObserver([&](const LinkError& e) {
    std::unique_lock<std::mutex> lock(mu);
    reported.push_back(e.remote.rank);
    if (e.remote.rank == 0) {
      held = true;
      cv.notify_all();
      cv.wait_for(lock, 5s, [&] { return released; });
    } else {
      released = true;
      cv.notify_all();
    }
  });
  ranks.ConnectAll();
  ASSERT_TRUE(ranks.ts[0]->InjectLinkCut(1));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return held; }));
  }
  ASSERT_TRUE(ranks.ts[2]->InjectLinkCut(1));
  auto* cut = dynamic_cast<LinkBase*>(ranks.ts[1]->link(2));
  ASSERT_NE(cut, nullptr);
  pollfd pfd{cut->ctrl_fd(), POLLRDHUP, 0};
  ASSERT_EQ(poll(&pfd, 1, 10000), 1);  // the cut's EOF is in rank 1's socket, unread
  ranks.ts[1]->Close();
  std::lock_guard<std::mutex> lock(mu);
  released = true;
  cv.notify_all();
  EXPECT_EQ(reported, (std::vector<uint32_t>{0, 2}));
  EXPECT_TRUE(cut->broken());
}

// ReportPendingLinkErrors returns only once a report the monitor thread is making has reached
// the observer (the heartbeat removes its observer right after: the report must not find none).
// The monitor is held inside the observer for a while; nothing else releases it.
TEST_P(LinkTest, PendingReportsAreDeliveredBeforeReportPendingLinkErrorsReturns) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, delivered = false;
  Ranks ranks(2, GetParam());
  ranks.ts[1]->SetLinkErrorObserver([&](const LinkError&) {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait_for(lock, 1s, [] { return false; });  // a slow observer (a liveness probe)
    delivered = true;
  });
  ranks.ConnectAll();
  ASSERT_TRUE(ranks.ts[0]->InjectLinkCut(1));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return entered; }));
  }
  ranks.ts[1]->ReportPendingLinkErrors();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(delivered);
}

// A peer that closes in order while this rank waits on its data is never taken for a link
// error, however the reads of its bye and its EOF interleave (the monitor thread's and the
// receiving thread's).
TEST_P(LinkTest, OrderlyCloseDuringAReceiveIsNeverALinkError) {
  for (int round = 0; round < 50; ++round) {
    Observed obs0;
    Ranks ranks(2, GetParam());
    obs0.Attach(*ranks.ts[0]);
    ranks.ConnectAll();
    std::vector<uint8_t> buf(1u << 20);
    std::vector<Xfer> x{{ranks.ts[0]->link(1), false, buf.data(), buf.size()}};
    std::thread closer([&] { ranks.ts[1]->Close(); });
    ProgressError err;
    EXPECT_EQ(Progress(x, Within(20s), &err), HCCL_E_REMOTE) << err.reason;
    closer.join();
    ranks.ts[0]->Close();
    ASSERT_EQ(obs0.count(), 0u) << "round " << round << ": " << obs0.errors[0].reason;
  }
}

TEST_P(LinkTest, StrangerBytesOnTheListenerAreDropped) {
  Ranks ranks(2, GetParam());
  std::string err;
  {
    net::Socket s;
    ASSERT_EQ(net::Connect("127.0.0.1", ranks.eps[1].port, SteadyClock::now() + 5s, &s, &err),
              HCCL_SUCCESS);
    const char junk[] = "SSH-2.0-OpenSSH_9.6\r\n";
    ASSERT_EQ(s.SendAll(junk, sizeof(junk) - 1, SteadyClock::now() + 5s, &err), HCCL_SUCCESS);
    char c;
    EXPECT_NE(s.RecvAll(&c, 1, SteadyClock::now() + 5s, &err), HCCL_SUCCESS);
  }
  ranks.ConnectAll();
  std::vector<uint8_t> msg = Pattern(1, 5000), got(5000);
  std::vector<Xfer> x0{{ranks.ts[0]->link(1), true, msg.data(), msg.size()}};
  std::vector<Xfer> x1{{ranks.ts[1]->link(0), false, got.data(), got.size()}};
  ProgressError e;
  ASSERT_EQ(Progress(x0, Within(10s), &e), HCCL_SUCCESS);
  ASSERT_EQ(Progress(x1, Within(10s), &e), HCCL_SUCCESS);
  EXPECT_EQ(got, msg);
  EXPECT_EQ(CountInLogs("[Auth]rank[1] data-link listener 127.0.0.1:" +
                        std::to_string(ranks.eps[1].port) +
                        " rejected connection from 127.0.0.1:"),
            1u)
      << Logs();
  EXPECT_EQ(CountInLogs("no job-key hello"), 1u);
}

// A rank of another job (same communicator name and wire format, another key) cannot make a
// link: it gives up at once, the listener logs its address, and the job's own links work.
TEST_P(LinkTest, ADialerWithAnotherKeyIsRefused) {
  auth::JobKey key, other;
  std::string err;
  ASSERT_TRUE(auth::GenerateJobKey(&key, &err));
  ASSERT_TRUE(auth::GenerateJobKey(&other, &err));
  Ranks ranks(2, GetParam(), key);
  Ranks stranger(1, GetParam(), other);  // its rank 0 dials (the lower rank dials) ranks' rank 1
  Endpoint target = ranks.eps[1];
  EXPECT_EQ(stranger.ts[0]->Connect({target}, "AllReduce_test", &err), HCCL_E_PARA) << err;
  EXPECT_NE(err.find("job key"), std::string::npos) << err;
  ranks.ConnectAll();
  std::vector<uint8_t> msg = Pattern(2, 5000), got(5000);
  std::vector<Xfer> x0{{ranks.ts[0]->link(1), true, msg.data(), msg.size()}};
  std::vector<Xfer> x1{{ranks.ts[1]->link(0), false, got.data(), got.size()}};
  ProgressError e;
  ASSERT_EQ(Progress(x0, Within(10s), &e), HCCL_SUCCESS);
  ASSERT_EQ(Progress(x1, Within(10s), &e), HCCL_SUCCESS);
  EXPECT_EQ(got, msg);
  EXPECT_EQ(CountInLogs("[Auth]rank[1] data-link listener"), 1u) << Logs();
  EXPECT_EQ(Logs().find(auth::JobKeyHex(key)), std::string::npos);
}

// Heads (op headers): sent with the body, judged by the receiver's hook before the body is
// taken; a held head keeps its body in the link; a closed gate sends the head only.
TEST_P(LinkTest, HeadsHooksAndGates) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  struct Judge {
    transport::HeadVerdict verdict = transport::HeadVerdict::kAccept;
    int calls = 0;
    uint32_t arg = 0;
    uint64_t seen = 0;
  } judge;
  transport::HeadHook hook;
  hook.ctx = &judge;
  hook.on_head = [](void* ctx, uint32_t arg, const void* head) {
    auto* j = static_cast<Judge*>(ctx);
    ++j->calls;
    j->arg = arg;
    std::memcpy(&j->seen, head, sizeof(j->seen));
    return j->verdict;
  };
  const size_t size = 300000;
  std::vector<uint8_t> body = Pattern(7, size), got(size);
  uint64_t head = 0x1122334455667788ull, their_head = 0;

  // Accepted: head and body arrive intact, the hook runs once with its argument.
  {
    std::thread t([&] {
      std::vector<Xfer> x{{tx, true, body.data(), size, &head, sizeof(head)}};
      ProgressError err;
      EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
    });
    std::vector<Xfer> x{{rx, false, got.data(), size, &their_head, sizeof(their_head), &hook, 5}};
    ProgressError err;
    EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
    t.join();
    EXPECT_EQ(judge.calls, 1);
    EXPECT_EQ(judge.arg, 5u);
    EXPECT_EQ(judge.seen, head);
    EXPECT_TRUE(got == body);
  }
  // Held: the body stays in the link until the deadline; kFail ends Progress with HCCL_E_PARA.
  {
    std::vector<uint8_t> small = Pattern(9, 100), in(100);
    std::vector<Xfer> s{{tx, true, small.data(), small.size(), &head, sizeof(head)}};
    ASSERT_EQ(Progress(s, Within(10s), nullptr), HCCL_SUCCESS);
    judge.verdict = transport::HeadVerdict::kHold;
    std::vector<Xfer> x{{rx, false, in.data(), in.size(), &their_head, sizeof(their_head), &hook}};
    ProgressError err;
    EXPECT_EQ(Progress(x, Within(300ms), &err), HCCL_E_TIMEOUT);
    EXPECT_NE(err.reason.find("8 bytes done"), std::string::npos) << err.reason;
    // The body is still there for whoever reads on.
    std::vector<Xfer> rest{{rx, false, in.data(), in.size()}};
    EXPECT_EQ(Progress(rest, Within(10s), &err), HCCL_SUCCESS) << err.reason;
    EXPECT_TRUE(in == small);
    ASSERT_EQ(Progress(s, Within(10s), nullptr), HCCL_SUCCESS);
    judge.verdict = transport::HeadVerdict::kFail;
    std::vector<Xfer> y{{rx, false, in.data(), in.size(), &their_head, sizeof(their_head), &hook}};
    EXPECT_EQ(Progress(y, Within(10s), &err), HCCL_E_PARA);
    std::vector<Xfer> drain{{rx, false, in.data(), in.size()}};
    EXPECT_EQ(Progress(drain, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  }
  // A closed gate lets the head go and holds the body back until it opens.
  {
    bool open = false;
    std::vector<uint8_t> small = Pattern(11, 100), in(100);
    Xfer gated{tx, true, small.data(), small.size(), &head, sizeof(head)};
    gated.gate = &open;
    std::vector<Xfer> s{gated};
    ProgressError err;
    EXPECT_EQ(Progress(s, Within(200ms), &err), HCCL_E_TIMEOUT);
    std::vector<Xfer> h{{rx, false, nullptr, 0, &their_head, sizeof(their_head)}};
    EXPECT_EQ(Progress(h, Within(10s), &err), HCCL_SUCCESS) << err.reason;
    EXPECT_EQ(their_head, head);
    std::vector<Xfer> b{{rx, false, in.data(), in.size()}};
    EXPECT_EQ(Progress(b, Within(200ms), &err), HCCL_E_TIMEOUT);  // nothing behind the head
    open = true;
    std::vector<Xfer> body_only{{tx, true, small.data(), small.size()}};
    EXPECT_EQ(Progress(body_only, Within(10s), &err), HCCL_SUCCESS) << err.reason;
    EXPECT_EQ(Progress(b, Within(10s), &err), HCCL_SUCCESS) << err.reason;
    EXPECT_TRUE(in == small);
  }
}

// A peer that rejected this rank's op sent its own header and closed its links before this rank
// came in: the send to it fails at once, but the header it left is still judged, so the
// mismatch (HCCL_E_PARA) is named rather than the close.
TEST_P(LinkTest, HeadAPeerSentBeforeClosingIsJudgedWhenASendFails) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  uint64_t head = 0xfeedull, their_head = 0;
  std::vector<uint8_t> body = Pattern(3, 1000), in(1000);
  std::vector<Xfer> s{{ranks.ts[1]->link(0), true, body.data(), body.size(), &head, sizeof(head)}};
  ASSERT_EQ(Progress(s, Within(10s), nullptr), HCCL_SUCCESS);
  ranks.ts[1]->Close();
  Link* link = ranks.ts[0]->link(1);
  for (int i = 0; i < 500 && !link->broken(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(link->broken());

  struct Judge {
    transport::HeadVerdict verdict;
    int calls = 0;
  } judge{transport::HeadVerdict::kFail};
  transport::HeadHook hook;
  hook.ctx = &judge;
  hook.on_head = [](void* ctx, uint32_t, const void*) {
    auto* j = static_cast<Judge*>(ctx);
    ++j->calls;
    return j->verdict;
  };
  std::vector<uint8_t> out = Pattern(4, 1000);
  uint64_t my_head = 0xbeefull;
  auto step = [&] {
    return std::vector<Xfer>{
        {link, true, out.data(), out.size(), &my_head, sizeof(my_head)},
        {link, false, in.data(), in.size(), &their_head, sizeof(their_head), &hook}};
  };
  std::vector<Xfer> x = step();
  ProgressError err;
  EXPECT_EQ(Progress(x, Within(10s), &err), HCCL_E_PARA) << err.reason;
  EXPECT_EQ(judge.calls, 1);
  EXPECT_EQ(their_head, head);
  EXPECT_NE(err.reason.find("op header rejected"), std::string::npos) << err.reason;
  // A header the hook accepts changes nothing: the link error stands.
  Ranks again(2, GetParam());
  again.ConnectAll();
  s = {{again.ts[1]->link(0), true, body.data(), body.size(), &head, sizeof(head)}};
  ASSERT_EQ(Progress(s, Within(10s), nullptr), HCCL_SUCCESS);
  again.ts[1]->Close();
  link = again.ts[0]->link(1);
  for (int i = 0; i < 500 && !link->broken(); ++i) std::this_thread::sleep_for(10ms);
  judge.verdict = transport::HeadVerdict::kAccept;
  x = step();
  EXPECT_EQ(Progress(x, Within(10s), &err), HCCL_E_REMOTE) << err.reason;
  EXPECT_EQ(judge.calls, 2);
}

// A rank that gives an op up takes back what the peer has not read: shm hides it in the ring,
// TCP sends a retract notice over the control connection (its bytes are already in the
// kernel). So an op's data may go out before the peer enters the op (no gate on either link),
// and a late peer still gets nothing of it. Op 1 spans QPs (Tcp3) so op 2 starts mid-stream.
TEST_P(LinkTest, AbandonedOpIsTakenBack) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  EXPECT_TRUE(tx->can_retract());
  const size_t n1 = (300u << 10) + 7, n2 = 64u << 10;
  std::vector<uint8_t> a = Pattern(1, n1), b = Pattern(2, n2), c = Pattern(3, 100), in(n1);
  ProgressError err;
  tx->MarkOpStart();
  std::vector<Xfer> op1{{tx, true, a.data(), n1}, {rx, false, in.data(), n1}};
  ASSERT_EQ(Progress(op1, Within(10s), &err), HCCL_SUCCESS) << err.reason;  // read in time
  EXPECT_TRUE(in == a);
  // Op 2 goes out whole before the peer comes (eager); the peer reads only its first KiB.
  tx->MarkOpStart();
  std::vector<Xfer> s2{{tx, true, b.data(), n2}};
  ASSERT_EQ(Progress(s2, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  std::vector<uint8_t> part(1024);
  std::vector<Xfer> r1{{rx, false, part.data(), part.size()}};
  ASSERT_EQ(Progress(r1, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  EXPECT_TRUE(std::equal(part.begin(), part.end(), b.begin()));
  tx->AbandonOp();  // op 2 given up: the rest never arrives
  for (int i = 0; i < 1000 && !rx->peer_retracted(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(rx->peer_retracted());
  std::vector<uint8_t> rest(n2 - part.size());
  std::vector<Xfer> r2{{rx, false, rest.data(), rest.size()}};
  EXPECT_EQ(Progress(r2, Within(200ms), &err), HCCL_E_TIMEOUT);
  EXPECT_NE(err.reason.find("0 bytes done"), std::string::npos) << err.reason;
  // A later op's start does not uncover it, nor does that op's own data arrive.
  tx->MarkOpStart();
  std::vector<Xfer> s3{{tx, true, c.data(), c.size()}};
  ASSERT_EQ(Progress(s3, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  tx->AbandonOp();
  EXPECT_EQ(Progress(r2, Within(200ms), &err), HCCL_E_TIMEOUT);
  // The peer closing in order ends the wait at once (not at the deadline).
  ranks.ts[0]->Close();
  EXPECT_EQ(Progress(r2, Within(30s), &err), HCCL_E_REMOTE) << err.reason;
}

// VIGIL_TCP_EAGER=0: a TCP link cannot take data back, so an op's data waits for the peer's
// header (the algorithms gate it) and AbandonOp leaves what was sent to be read.
class TcpEagerTest : public EnvTest {};
TEST_F(TcpEagerTest, OffMeansNothingIsTakenBack) {
  SetEnv("VIGIL_TCP_EAGER", "0");
  {
    Ranks ranks(2, Mode{true, 1});
    ranks.ConnectAll();
    Link* tx = ranks.ts[0]->link(1);
    Link* rx = ranks.ts[1]->link(0);
    EXPECT_FALSE(tx->can_retract());
    std::vector<uint8_t> b = Pattern(2, 64), in(64);
    ProgressError err;
    tx->MarkOpStart();
    std::vector<Xfer> s{{tx, true, b.data(), b.size()}};
    ASSERT_EQ(Progress(s, Within(10s), &err), HCCL_SUCCESS) << err.reason;
    tx->AbandonOp();
    std::vector<Xfer> r{{rx, false, in.data(), in.size()}};
    EXPECT_EQ(Progress(r, Within(10s), &err), HCCL_SUCCESS) << err.reason;
    EXPECT_TRUE(in == b);
    EXPECT_FALSE(rx->peer_retracted());
  }
  unsetenv("VIGIL_TCP_EAGER");
  log::ResetForTesting();
}

// Lent sends (single copy on shm: the receiver reads the sender's buffer in place; TCP sends
// them as usual): heads and bodies arrive intact around the lend threshold, both ways at once.
TEST_P(LinkTest, LentSendsArriveIntact) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks.ts[r]->link(1 - r)->lends(1u << 20), !GetParam().tcp);
    EXPECT_FALSE(ranks.ts[r]->link(1 - r)->lends(100));
  }
  if (!GetParam().tcp) {
    EXPECT_EQ(CountInLogs("single copy (process_vm_readv)"), 2u);
  }
  const std::vector<size_t> sizes = {100, (64u << 10) - 1, 64u << 10, (1u << 20) + 3,
                                     (9u << 20) + 5};
  for (size_t size : sizes) {
    for (bool with_head : {false, true}) {
      std::vector<std::vector<uint8_t>> got(2);
      std::vector<uint64_t> their(2, 0);
      std::vector<std::thread> th;
      for (int r = 0; r < 2; ++r) {
        th.emplace_back([&, r] {
          std::vector<uint8_t> mine = Pattern(static_cast<uint32_t>(r * 77 + size), size);
          uint64_t head = 0xabc0 + r;
          got[r].assign(size, 0);
          Link* l = ranks.ts[r]->link(1 - r);
          std::vector<Xfer> x{{l, true, mine.data(), size}, {l, false, got[r].data(), size}};
          x[0].lend = true;
          if (with_head) {
            x[0].head = &head;
            x[0].head_bytes = sizeof(head);
            x[1].head = &their[r];
            x[1].head_bytes = sizeof(head);
          }
          ProgressError err;
          EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
        });
      }
      for (auto& t : th) t.join();
      for (int r = 0; r < 2; ++r) {
        ASSERT_TRUE(got[r] == Pattern(static_cast<uint32_t>((1 - r) * 77 + size), size))
            << "size " << size << " rank " << r;
        if (with_head) {
          EXPECT_EQ(their[r], 0xabc0u + (1 - r));
        }
      }
    }
  }
  // Plain sends after lent ones still line up.
  std::vector<uint8_t> msg = Pattern(3, 5000), in(5000);
  std::vector<Xfer> s{{ranks.ts[0]->link(1), true, msg.data(), msg.size()}};
  std::vector<Xfer> x{{ranks.ts[1]->link(0), false, in.data(), in.size()}};
  ProgressError err;
  ASSERT_EQ(Progress(s, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  ASSERT_EQ(Progress(x, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  EXPECT_TRUE(in == msg);
}

// A lender that gives up (deadline) recalls its lend: the reader gets nothing more of it, as if
// it had never been sent, and times out itself instead of reading a buffer returned to the user.
TEST_P(LinkTest, RecalledLendIsNotReadAfterTheSenderGaveUp) {
  if (GetParam().tcp) GTEST_SKIP() << "TCP does not lend";
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  const size_t size = 1u << 20, part = 256u << 10;
  std::vector<uint8_t> lent = Pattern(21, size), got(size, 0);
  std::atomic<bool> gave_up{false};
  std::thread sender([&] {
    std::vector<Xfer> x{{tx, true, lent.data(), size}};
    x[0].lend = true;
    ProgressError err;
    EXPECT_EQ(Progress(x, Within(1s), &err), HCCL_E_TIMEOUT);
    EXPECT_NE(err.reason.find(std::to_string(part) + " bytes done"), std::string::npos)
        << err.reason;
    gave_up = true;
  });
  std::vector<Xfer> first{{rx, false, got.data(), part}};
  ProgressError err;
  ASSERT_EQ(Progress(first, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + part, lent.begin()));
  sender.join();
  ASSERT_TRUE(gave_up.load());
  std::fill(lent.begin(), lent.end(), 0xee);  // the user has its buffer back
  std::vector<Xfer> rest{{rx, false, got.data() + part, size - part}};
  EXPECT_EQ(Progress(rest, Within(200ms), &err), HCCL_E_TIMEOUT);
  EXPECT_NE(err.reason.find("0 bytes done"), std::string::npos) << err.reason;
  EXPECT_TRUE(std::all_of(got.begin() + part, got.end(), [](uint8_t b) { return b == 0; }));
}

// A receiver that read a whole lend may finish its op and close its links before the sender
// looks at the acknowledgement again: the send is done, not a link error (the last op of a job
// failed on the sender this way when the receiver exited at once).
TEST_P(LinkTest, ReadLendIsDoneEvenAfterTheReaderClosed) {
  if (GetParam().tcp) GTEST_SKIP() << "TCP does not lend";
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  const size_t size = 1u << 20;
  std::vector<uint8_t> lent = Pattern(33, size), got(size, 0);
  size_t moved = 0;
  ASSERT_EQ(tx->TrySendLent(nullptr, 0, lent.data(), size, &moved), HCCL_SUCCESS);
  EXPECT_EQ(moved, 0u);  // lent, not copied
  std::vector<Xfer> r{{rx, false, got.data(), size}};
  ProgressError err;
  ASSERT_EQ(Progress(r, Within(10s), &err), HCCL_SUCCESS) << err.reason;
  EXPECT_TRUE(got == lent);
  ranks.ts[1]->Close();
  std::vector<Xfer> s{{tx, true, lent.data(), size}};
  s[0].lend = true;
  EXPECT_EQ(Progress(s, Within(5s), &err), HCCL_SUCCESS) << err.reason;
}

INSTANTIATE_TEST_SUITE_P(Links, LinkTest,
                         ::testing::Values(Mode{false, 1}, Mode{true, 1}, Mode{true, 3}), ModeName);

// ---------------------------------------------------------------- connect failures

class ConnectTest : public EnvTest {};

// VIGIL_SHM_SINGLE_COPY=0 (or a kernel that refuses process_vm_readv): shm links copy through
// the rings both ways, lent sends included, and the log says which path each link uses.
TEST_F(ConnectTest, SingleCopyOffFallsBackToTheRings) {
  SetEnv("VIGIL_SHM_SINGLE_COPY", "0");
  {
    Ranks ranks(2, Mode{false, 1});
    ranks.ConnectAll();
    for (int r = 0; r < 2; ++r) EXPECT_FALSE(ranks.ts[r]->link(1 - r)->lends(8u << 20));
    const size_t size = (5u << 20) + 1;
    std::vector<uint8_t> msg = Pattern(4, size), in(size);
    std::thread t([&] {
      std::vector<Xfer> s{{ranks.ts[0]->link(1), true, msg.data(), size}};
      s[0].lend = true;
      ProgressError err;
      EXPECT_EQ(Progress(s, Within(30s), &err), HCCL_SUCCESS) << err.reason;
    });
    std::vector<Xfer> x{{ranks.ts[1]->link(0), false, in.data(), size}};
    ProgressError err;
    EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
    t.join();
    EXPECT_TRUE(in == msg);
    EXPECT_EQ(CountInLogs("two copies through the ring for every message "
                          "(VIGIL_SHM_SINGLE_COPY=0)"),
              2u);
  }
  unsetenv("VIGIL_SHM_SINGLE_COPY");
  log::ResetForTesting();
}

// TCP links inside one host (loopback) get VIGIL_TCP_LOOPBACK_SOCKBUF socket buffers; links
// between hosts (or with no host identity) leave them to the kernel. A value below the 64 KiB
// floor is raised to it (a tinier window stalls loopback TCP), and striped data arrives intact.
TEST_F(ConnectTest, LoopbackSocketBuffers) {
  Endpoint a, b;
  a.host_id = "host-a";
  b.host_id = "host-a";
  EXPECT_EQ(LoopbackSockBuf(a, b), 0);  // the default: the kernel's autotuning
  SetEnv("VIGIL_TCP_LOOPBACK_SOCKBUF", "128K");
  EXPECT_EQ(LoopbackSockBuf(a, b), 128 << 10);
  b.host_id = "host-b";
  EXPECT_EQ(LoopbackSockBuf(a, b), 0);
  a.host_id.clear();
  b.host_id.clear();
  EXPECT_EQ(LoopbackSockBuf(a, b), 0);
  a.host_id = b.host_id = "host-a";
  SetEnv("VIGIL_TCP_LOOPBACK_SOCKBUF", "0");
  EXPECT_EQ(LoopbackSockBuf(a, b), 0);
  SetEnv("VIGIL_TCP_LOOPBACK_SOCKBUF", "1K");
  EXPECT_EQ(LoopbackSockBuf(a, b), 64 << 10);  // raised to the floor
  {
    Ranks ranks(2, Mode{true, 3});
    ranks.ConnectAll();
    const size_t size = (3u << 20) + 5;
    std::vector<std::vector<uint8_t>> got =
        ExchangePair(ranks, size, [](int r) { return static_cast<uint32_t>(r + 77); });
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(got[r] == Pattern(static_cast<uint32_t>(1 - r + 77), size)) << "rank " << r;
    }
  }
  unsetenv("VIGIL_TCP_LOOPBACK_SOCKBUF");
  log::ResetForTesting();
}

TEST_F(ConnectTest, TimeoutNamesTheMissingPeers) {
  auto o0 = Options(0, "h", false), o1 = Options(1, "h", false);
  o0.connect_timeout_s = 1;
  o1.connect_timeout_s = 1;
  std::unique_ptr<Transport> t0, t1;
  std::string err;
  ASSERT_EQ(Transport::Create(o0, &t0, &err), HCCL_SUCCESS);
  ASSERT_EQ(Transport::Create(o1, &t1, &err), HCCL_SUCCESS);
  // Rank 2 does not exist: its port is closed.
  net::Socket probe;
  uint16_t dead_port = 0;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &probe, &dead_port, &err), HCCL_SUCCESS);
  probe.Close();
  Endpoint e2 = Options(2, "h", false).self;
  e2.port = dead_port;
  EXPECT_EQ(t0->Connect({EndpointOf(o1, *t1), e2}, "AllGather_x", &err), HCCL_E_TIMEOUT);
  EXPECT_NE(err.find("rank[2]"), std::string::npos) << err;
  EXPECT_EQ(err.find("rank[1] ("), std::string::npos) << err;  // rank 1 did link
  EXPECT_NE(t0->link(1), nullptr);
  // Rank 1 waits for rank 2 to dial it (2 > 1 would dial... so use rank 0's view): a server role.
  auto o3 = Options(3, "h", false);
  o3.connect_timeout_s = 1;
  std::unique_ptr<Transport> t3;
  ASSERT_EQ(Transport::Create(o3, &t3, &err), HCCL_SUCCESS);
  EXPECT_EQ(t3->Connect({e2}, "AllGather_x", &err), HCCL_E_TIMEOUT);
  EXPECT_NE(err.find("role[server]"), std::string::npos) << err;
  std::string logs = Logs();
  EXPECT_NE(logs.find("wait socket establish timeout, role[client] rank[2] timeout[1 s]"),
            std::string::npos);
  EXPECT_NE(logs.find("wait socket establish timeout, role[server] rank[2] timeout[1 s]"),
            std::string::npos);
}

TEST_F(ConnectTest, QpMemoryOverBudgetIsEi0011) {
  SetEnv("VIGIL_DEVICE_MEMORY", "16M");
  auto o0 = Options(0, "h", true, 32), o1 = Options(1, "h", true, 32);
  std::unique_ptr<Transport> t0, t1;
  std::string err;
  ASSERT_EQ(Transport::Create(o0, &t0, &err), HCCL_SUCCESS);
  ASSERT_EQ(Transport::Create(o1, &t1, &err), HCCL_SUCCESS);
  EXPECT_EQ(t0->Connect({EndpointOf(o1, *t1)}, "AllReduce_x", &err), HCCL_E_MEMORY);
  EXPECT_EQ(err, "size: [0.25MB, 32MB], Affected by QP depth configuration.");
  EXPECT_NE(Logs().find("alloc link resources failed"), std::string::npos);
  // With fewer QPs it fits; the accepting side charges its own device too.
  auto o2 = Options(2, "h", true, 8), o3 = Options(3, "h", true, 8);
  std::unique_ptr<Transport> t2, t3;
  ASSERT_EQ(Transport::Create(o2, &t2, &err), HCCL_SUCCESS);
  ASSERT_EQ(Transport::Create(o3, &t3, &err), HCCL_SUCCESS);
  size_t before = rt::DeviceMemory::Instance().UsedBytes(3);
  EXPECT_EQ(t2->Connect({EndpointOf(o3, *t3)}, "AllReduce_x", &err), HCCL_SUCCESS) << err;
  EXPECT_EQ(t3->Connect({EndpointOf(o2, *t2)}, "AllReduce_x", &err), HCCL_SUCCESS) << err;
  EXPECT_EQ(rt::DeviceMemory::Instance().UsedBytes(3), before + (8u << 20));
  t3.reset();
  EXPECT_EQ(rt::DeviceMemory::Instance().UsedBytes(3), before);
}

TEST_F(ConnectTest, AcceptorOverBudgetFailsBothSides) {
  SetEnv("VIGIL_DEVICE_MEMORY", "6M");
  auto o0 = Options(0, "h", false), o1 = Options(1, "h", false);
  std::unique_ptr<Transport> t0, t1;
  std::string err;
  ASSERT_EQ(Transport::Create(o0, &t0, &err), HCCL_SUCCESS);
  ASSERT_EQ(Transport::Create(o1, &t1, &err), HCCL_SUCCESS);
  void* hog = nullptr;  // leaves device 1 less than one 4 MiB ring
  ASSERT_EQ(rt::DeviceMemory::Instance().Alloc(1, 3u << 20, &hog, "test"), ACL_SUCCESS);
  std::string err1;
  std::thread t([&] { EXPECT_EQ(t1->Connect({EndpointOf(o0, *t0)}, "x", &err1), HCCL_E_MEMORY); });
  EXPECT_EQ(t0->Connect({EndpointOf(o1, *t1)}, "x", &err), HCCL_E_MEMORY) << err;
  t.join();
  EXPECT_NE(err1.find("Affected by QP depth"), std::string::npos) << err1;
  rt::DeviceMemory::Instance().Free(hog);
}

TEST_F(ConnectTest, VigilFaultCutsAfterBytes) {
  SetEnv("VIGIL_FAULT", "something_else:1;link_cut:0-1@1M");
  Observed obs;
  Ranks ranks(2, Mode{false, 1});
  obs.Attach(*ranks.ts[1]);
  ranks.ConnectAll();
  std::vector<uint8_t> buf(8u << 20);
  std::thread sender([&] {
    std::vector<Xfer> x{{ranks.ts[0]->link(1), true, buf.data(), buf.size()}};
    ProgressError e;
    EXPECT_EQ(Progress(x, Within(20s), &e), HCCL_E_REMOTE);
  });
  std::vector<uint8_t> got(buf.size());
  std::vector<Xfer> x{{ranks.ts[1]->link(0), false, got.data(), got.size()}};
  ProgressError e;
  EXPECT_EQ(Progress(x, Within(20s), &e), HCCL_E_REMOTE);
  sender.join();
  for (int i = 0; i < 100 && obs.count() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(obs.count(), 1u);
  EXPECT_NE(Logs().find("VIGIL_FAULT link_cut"), std::string::npos);
}

// ---------------------------------------------------------------- links between processes
//
// The child re-executes this binary in child mode (a clean process) as rank 1, prints its
// listener port, links with the parent (rank 0, which dials) and then runs the scenario.

const std::vector<size_t> kProcSizes = {1, 4096, 100000, (1u << 20) + 1, 6u << 20};
constexpr size_t kBigLend = 32u << 20;

int ChildMain(const std::string& mode, uint16_t parent_port, uint32_t parent_pid,
              const std::string& scenario) {
  const bool tcp = mode == "tcp";
  TransportOptions o = Options(1, tcp ? "host-b" : "host-a", tcp);
  std::unique_ptr<Transport> t;
  std::string err;
  if (Transport::Create(o, &t, &err) != HCCL_SUCCESS) return 20;
  printf("PORT %u\n", t->listen_port());
  fflush(stdout);
  Endpoint parent = Options(0, tcp ? "host-a" : "host-a", tcp).self;
  parent.port = parent_port;
  parent.pid = parent_pid;
  if (t->Connect({parent}, "proc", &err) != HCCL_SUCCESS) return 21;
  Link* l = t->link(0);
  for (size_t size : kProcSizes) {
    std::vector<uint8_t> mine = Pattern(static_cast<uint32_t>(100 + size), size), got(size);
    std::vector<Xfer> x{{l, true, mine.data(), size}, {l, false, got.data(), size}};
    x[0].lend = true;  // single copy on shm (the parent reads our memory)
    ProgressError e;
    if (Progress(x, Within(30s), &e) != HCCL_SUCCESS) return 22;
    if (got != Pattern(static_cast<uint32_t>(size), size)) return 23;
  }
  if (scenario == "die") {
    printf("READY\n");
    fflush(stdout);
    std::this_thread::sleep_for(60s);  // killed by the parent
    return 24;
  }
  if (scenario == "die-lending") {
    // Killed by the parent while it reads this lent buffer.
    std::vector<uint8_t> big = Pattern(7, kBigLend);
    printf("READY\n");
    fflush(stdout);
    std::vector<Xfer> x{{l, true, big.data(), big.size()}};
    x[0].lend = true;
    ProgressError e;
    (void)Progress(x, Within(60s), &e);
    return 24;
  }
  if (scenario == "die-reading") {
    // Reads part of the parent's lent buffer, then is killed.
    std::vector<uint8_t> part(1u << 20);
    std::vector<Xfer> x{{l, false, part.data(), part.size()}};
    ProgressError e;
    if (Progress(x, Within(30s), &e) != HCCL_SUCCESS) return 25;
    printf("READY\n");
    fflush(stdout);
    std::this_thread::sleep_for(60s);
    return 24;
  }
  t->Close();
  return 0;
}

class ProcessTest : public EnvTest, public ::testing::WithParamInterface<bool> {
 protected:
  // Starts the child; returns its pid and keeps its stdout.
  pid_t Spawn(bool tcp, uint16_t port, const std::string& scenario) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      std::string p = std::to_string(port), me = std::to_string(getppid());
      execl(g_self_exe.c_str(), g_self_exe.c_str(), "--transport-child", tcp ? "tcp" : "shm",
            p.c_str(), me.c_str(), scenario.c_str(), nullptr);
      _exit(99);
    }
    close(fds[1]);
    out_ = fdopen(fds[0], "r");
    return pid;
  }
  std::string ReadLine() {
    char line[256] = {0};
    if (out_ == nullptr || fgets(line, sizeof(line), out_) == nullptr) return "";
    return line;
  }
  void TearDown() override {
    if (out_ != nullptr) fclose(out_);
    EnvTest::TearDown();
  }
  FILE* out_ = nullptr;
};

TEST_P(ProcessTest, IntegrityAndPeerDeath) {
  const bool tcp = GetParam();
  for (const std::string scenario : {"ok", "die", "die-lending", "die-reading"}) {
    if (tcp && scenario != "ok" && scenario != "die") continue;  // TCP does not lend
    TransportOptions o = Options(0, "host-a", tcp);
    Observed obs;  // outlives the transport, whose monitor thread reports to it
    std::unique_ptr<Transport> t;
    std::string err;
    ASSERT_EQ(Transport::Create(o, &t, &err), HCCL_SUCCESS);
    obs.Attach(*t);
    pid_t child = Spawn(tcp, t->listen_port(), scenario);
    std::string line = ReadLine();
    ASSERT_EQ(line.rfind("PORT ", 0), 0u) << line;
    Endpoint peer = Options(1, tcp ? "host-b" : "host-a", tcp).self;
    peer.port = static_cast<uint16_t>(std::stoi(line.substr(5)));
    peer.pid = static_cast<uint32_t>(child);
    ASSERT_EQ(t->Connect({peer}, "proc", &err), HCCL_SUCCESS) << err;
    Link* l = t->link(1);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->type(), tcp ? LinkType::kTcp : LinkType::kShm);
    for (size_t size : kProcSizes) {
      std::vector<uint8_t> mine = Pattern(static_cast<uint32_t>(size), size), got(size);
      std::vector<Xfer> x{{l, true, mine.data(), size}, {l, false, got.data(), size}};
      x[0].lend = true;
      ProgressError e;
      ASSERT_EQ(Progress(x, Within(30s), &e), HCCL_SUCCESS) << e.reason;
      ASSERT_TRUE(got == Pattern(static_cast<uint32_t>(100 + size), size)) << size;
    }
    if (!tcp) {
      EXPECT_TRUE(l->lends(1u << 20));  // the child's memory is readable here (no Yama/seccomp)
    }
    int status = 0;
    if (scenario == "die-lending") {
      ASSERT_EQ(ReadLine(), "READY\n");
      const std::vector<uint8_t> want = Pattern(7, kBigLend);
      std::vector<uint8_t> got(kBigLend);
      std::vector<Xfer> first{{l, false, got.data(), 1u << 20}};
      ProgressError e;
      ASSERT_EQ(Progress(first, Within(30s), &e), HCCL_SUCCESS) << e.reason;
      EXPECT_TRUE(std::equal(got.begin(), got.begin() + (1u << 20), want.begin()));
      kill(child, SIGKILL);
      ASSERT_EQ(waitpid(child, &status, 0), child);
      // The lender died mid-transfer: a link error, not a hang until the deadline.
      std::vector<Xfer> rest{{l, false, got.data() + (1u << 20), kBigLend - (1u << 20)}};
      EXPECT_EQ(Progress(rest, Within(30s), &e), HCCL_E_REMOTE) << e.reason;
      EXPECT_FALSE(e.timed_out);
      for (int i = 0; i < 100 && obs.count() == 0; ++i) std::this_thread::sleep_for(10ms);
      EXPECT_EQ(obs.count(), 1u);
    } else if (scenario == "die-reading") {
      std::vector<uint8_t> big = Pattern(8, kBigLend);
      std::thread killer([&] {
        if (ReadLine() == "READY\n") kill(child, SIGKILL);
      });
      std::vector<Xfer> x{{l, true, big.data(), big.size()}};
      x[0].lend = true;
      ProgressError e;
      // The reader died with most of the lent buffer unread: a link error.
      EXPECT_EQ(Progress(x, Within(30s), &e), HCCL_E_REMOTE) << e.reason;
      EXPECT_FALSE(e.timed_out);
      killer.join();
      ASSERT_EQ(waitpid(child, &status, 0), child);
      EXPECT_TRUE(WIFSIGNALED(status)) << status;
    } else if (scenario == "ok") {
      ASSERT_EQ(waitpid(child, &status, 0), child);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
      EXPECT_EQ(obs.count(), 0u);  // the child closed in order
    } else {
      ASSERT_EQ(ReadLine(), "READY\n");
      std::thread killer([&] {
        std::this_thread::sleep_for(100ms);
        kill(child, SIGKILL);
      });
      std::vector<uint8_t> got(1u << 20);
      std::vector<Xfer> x{{l, false, got.data(), got.size()}};
      ProgressError e;
      // A dead peer is a link error well before the deadline.
      EXPECT_EQ(Progress(x, Within(30s), &e), HCCL_E_REMOTE) << e.reason;
      EXPECT_FALSE(e.timed_out);
      killer.join();
      ASSERT_EQ(waitpid(child, &status, 0), child);
      for (int i = 0; i < 100 && obs.count() == 0; ++i) std::this_thread::sleep_for(10ms);
      ASSERT_EQ(obs.count(), 1u);
      EXPECT_EQ(obs.errors[0].remote.rank, 1u);
      EXPECT_EQ(obs.errors[0].remote.pid, static_cast<uint32_t>(child));
    }
    if (out_ != nullptr) {
      fclose(out_);
      out_ = nullptr;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Procs, ProcessTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("Tcp") : std::string("Shm");
                         });

}  // namespace
}  // namespace vigil::transport

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--transport-child") {
    return vigil::transport::ChildMain(argv[2], static_cast<uint16_t>(std::stoi(argv[3])),
                                       static_cast<uint32_t>(std::stoul(argv[4])), argv[5]);
  }
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) vigil::transport::g_self_exe.assign(buf, static_cast<size_t>(n));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
