// Transport: shm and TCP links between threads: data integrity both ways, link errors (cut,
// orderly close), handshake hygiene, heads and gates, lent buffers.
#include <sys/ioctl.h>

#include "transport_test_util.h"

namespace vigil::transport {
namespace {

using namespace test;

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

// One stream read in pieces of mixed sizes, as op headers and bodies are: small reads go
// through TCP's stage (read ahead, served first), large ones in place, across the QPs' chunk
// boundaries (Tcp3) and the stage's size.
TEST_P(LinkTest, MixedReadSizesKeepTheStream) {
  // Socket buffers that hold the whole stream, so each QP's next chunk is already behind the
  // one being read (a read past a chunk's end would take it).
  SetEnv("VIGIL_TCP_LOOPBACK_SOCKBUF", std::to_string(8u << 20));
  struct Unset {
    ~Unset() {
      unsetenv("VIGIL_TCP_LOOPBACK_SOCKBUF");
      log::ResetForTesting();
    }
  } unset;
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  std::vector<size_t> reads = {64, 8, 64, 1000, 64, 8191, 8192, 8193, 1, 64};
  size_t total = 0;
  for (size_t n : reads) total += n;
  // Then small reads that straddle the chunk boundaries (a stage never reads past one: the
  // next chunk is on another QP), a large read between them.
  for (size_t boundary : {kTcpChunk, 2 * kTcpChunk, 3 * kTcpChunk + 8192}) {
    reads.push_back(boundary - 30 - total);
    reads.push_back(64);
    reads.push_back(8);
    total = boundary + 42;
  }
  for (size_t n : {size_t{4096}, size_t{520000}, size_t{8000}, size_t{64}, size_t{3}}) {
    reads.push_back(n);
    total += n;
  }
  const std::vector<uint8_t> stream = Pattern(9, total);
  std::vector<uint8_t> got(total, 0);
  ProgressError err;
  std::vector<Xfer> send{{tx, true, const_cast<uint8_t*>(stream.data()), total}};
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    EXPECT_EQ(Progress(send, Within(30s), &err), HCCL_SUCCESS);
    sent = true;
  });
  for (int i = 0; i < 200 && !sent; ++i) std::this_thread::sleep_for(10ms);
  // The reads stop at the first failure; the sender is joined either way (its Progress ends
  // at its deadline if the reads stopped early).
  [&] {
    size_t at = 0;
    for (size_t n : reads) {
      ProgressError rerr;
      std::vector<Xfer> r{{rx, false, got.data() + at, n}};
      ASSERT_EQ(Progress(r, Within(30s), &rerr), HCCL_SUCCESS) << rerr.reason;
      ASSERT_TRUE(std::equal(got.begin() + at, got.begin() + at + n, stream.begin() + at))
          << "read of " << n << " bytes at " << at;
      at += n;
    }
  }();
  sender.join();
}

// An op header's read takes its body with it and nothing more: the peer's next message stays
// in the socket until this end reads it (on TCP, a read that drained both made the kernel send
// a bare acknowledgement, a segment of its own, for messages this end's next send would carry
// the acknowledgement of).
TEST_P(LinkTest, AHeadReadLeavesTheNextMessageInTheSocket) {
  if (!GetParam().tcp) GTEST_SKIP() << "shm has no socket";
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  std::vector<int> fds;
  auto* rx_base = dynamic_cast<LinkBase*>(rx);
  ASSERT_NE(rx_base, nullptr);
  rx_base->AppendDataFds(&fds);
  ASSERT_FALSE(fds.empty());
  constexpr size_t kBody = 8;
  uint64_t head[2][8] = {{0x11}, {0x22}};
  uint8_t body[2][kBody] = {{1, 2, 3}, {4, 5, 6}};
  for (int m = 0; m < 2; ++m) {
    std::vector<Xfer> s{{tx, true, body[m], kBody}};
    s[0].head = head[m];
    s[0].head_bytes = sizeof(head[m]);
    ProgressError err;
    ASSERT_EQ(Progress(s, Within(30s), &err), HCCL_SUCCESS) << err.reason;
  }
  const size_t message = sizeof(head[0]) + kBody;
  auto queued = [&] {
    int n = 0;
    return ioctl(fds[0], FIONREAD, &n) == 0 ? static_cast<size_t>(n) : size_t{0};
  };
  for (int i = 0; i < 1000 && queued() < 2 * message; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(queued(), 2 * message) << "both messages in the receiver's socket";
  for (int m = 0; m < 2; ++m) {
    uint64_t head_in[8] = {};
    uint8_t in[kBody] = {};
    std::vector<Xfer> r{{rx, false, in, kBody}};
    r[0].head = head_in;
    r[0].head_bytes = sizeof(head_in);
    ProgressError err;
    ASSERT_EQ(Progress(r, Within(30s), &err), HCCL_SUCCESS) << err.reason;
    EXPECT_EQ(head_in[0], head[m][0]);
    EXPECT_EQ(std::memcmp(in, body[m], kBody), 0);
    // After the first: the second is still the kernel's, whole.
    EXPECT_EQ(queued(), m == 0 ? message : 0) << "after message " << m;
  }
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

// A head and its body leave together (one sendmsg on TCP); where the pair straddles the point
// at which the stream moves to its next QP, each byte still goes to the QP its offset names.
TEST_P(LinkTest, HeadAndBodyAcrossAQpBoundaryArriveInOrder) {
  Ranks ranks(2, GetParam());
  ranks.ConnectAll();
  Link* tx = ranks.ts[0]->link(1);
  Link* rx = ranks.ts[1]->link(0);
  for (size_t before : {kTcpChunk - 3, kTcpChunk - 8, kTcpChunk - 9, size_t{5}}) {
    for (size_t body : {size_t{1}, size_t{4096}, kTcpChunk + 17}) {
      std::vector<uint8_t> pad = Pattern(static_cast<uint32_t>(before), before), pad_in(before);
      std::vector<uint8_t> msg = Pattern(static_cast<uint32_t>(body + 1), body), in(body);
      uint64_t head = 0x5eed0000 + body, head_in = 0;
      // One Progress per message: transfers on one link within a Progress are not ordered.
      std::vector<std::vector<Xfer>> s{{{tx, true, pad.data(), before}},
                                       {{tx, true, msg.data(), body}}};
      s[1][0].head = &head;
      s[1][0].head_bytes = sizeof(head);
      std::vector<std::vector<Xfer>> r{{{rx, false, pad_in.data(), before}},
                                       {{rx, false, in.data(), body}}};
      r[1][0].head = &head_in;
      r[1][0].head_bytes = sizeof(head_in);
      std::thread sender([&] {
        for (auto& x : s) {
          ProgressError err;
          EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
        }
      });
      for (auto& x : r) {
        ProgressError err;
        EXPECT_EQ(Progress(x, Within(30s), &err), HCCL_SUCCESS) << err.reason;
      }
      sender.join();
      ASSERT_TRUE(pad_in == pad) << "before " << before << " body " << body;
      ASSERT_TRUE(in == msg) << "before " << before << " body " << body;
      EXPECT_EQ(head_in, head);
    }
  }
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

}  // namespace
}  // namespace vigil::transport
