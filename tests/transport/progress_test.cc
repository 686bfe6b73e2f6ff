// Transport: Progress semantics on a fake link (completion, deadlines, abort, failure, gates).
#include "transport_test_util.h"

namespace vigil::transport {
namespace {

using namespace test;

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
  // An abort code HcclResult cannot hold (set by a careless caller) reads as HCCL_E_INTERNAL.
  for (int code : {5000, -3, 0x7fffffff}) {
    abort = code;
    EXPECT_EQ(Progress(one, w, &err), HCCL_E_INTERNAL) << code;
    EXPECT_EQ(err.code, HCCL_E_INTERNAL) << code;
  }
  abort = 0;

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

// Idle work (WaitPolicy::idle) runs while a transfer waits on its link, a piece per sweep that
// moved nothing: here the link gets its bytes only once five pieces are done, so a Progress
// that left the work for later would time out. Work never holds a transfer back: with the
// bytes there from the start, the transfer completes first.
TEST(ProgressTest, IdleWorkRunsWhileTransfersWait) {
  struct Pieces : IdleWork {
    explicit Pieces(int n) : left(n) {}
    bool Step() override {
      ++done;
      return --left > 0;
    }
    std::atomic<int> left;
    std::atomic<int> done{0};
  };
  FakeLink a;
  a.remote_.rank = 1;
  std::vector<char> buf(100);
  Pieces work(8);
  WaitPolicy w = Within(20s);
  w.idle = &work;
  std::thread feeder([&] {
    while (work.done.load() < 5) std::this_thread::yield();
    a.credit = 100;
  });
  std::vector<Xfer> one{{&a, false, buf.data(), 100}};
  ProgressError err;
  EXPECT_EQ(Progress(one, w, &err), HCCL_SUCCESS) << err.reason;
  feeder.join();
  EXPECT_GE(work.done.load(), 5);

  Pieces later(8);
  w.idle = &later;
  a.credit = 100;
  std::vector<Xfer> ready{{&a, false, buf.data(), 100}};
  EXPECT_EQ(Progress(ready, w, &err), HCCL_SUCCESS) << err.reason;
  EXPECT_EQ(later.done.load(), 0);  // the caller finishes what is left (Ctx::Flush)
}

}  // namespace
}  // namespace vigil::transport
