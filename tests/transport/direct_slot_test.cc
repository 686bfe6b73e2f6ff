// The direct slots of an shm link (shm_direct.cc): every length from the one-line message to
// the data area, lengths other than the receiver expects, nothing seen before a post or after
// a retract, and two threads exchanging messages of mixed lengths back to back (a line read
// before it carries its message would show as a wrong byte).
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "transport/shm_link.h"
#include "transport_test_util.h"

namespace vigil::transport {
namespace {

using namespace test;

constexpr Mode kDirect{false, 1, kShmDirectBytes};

// Byte i of side `side`'s message seq.
uint8_t At(uint64_t seq, int side, size_t i) {
  return static_cast<uint8_t>(seq * 31 + i * 7 + static_cast<size_t>(side) * 101);
}

std::vector<uint8_t> Message(uint64_t seq, int side, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = At(seq, side, i);
  return v;
}

std::array<char, 64> Head(uint64_t seq) {
  std::array<char, 64> h{};
  std::snprintf(h.data(), h.size(), "head of %llu", static_cast<unsigned long long>(seq));
  return h;
}

class DirectSlot : public EnvTest {
 protected:
  void SetUp() override {
    EnvTest::SetUp();
    Connect();
  }
  // Two ranks linked afresh (their links' message numbers start again).
  void Connect() {
    link_[0] = link_[1] = nullptr;
    ranks_.reset();
    ranks_ = std::make_unique<Ranks>(2, kDirect);
    ranks_->ConnectAll();
    for (int r = 0; r < 2; ++r) {
      link_[r] = ranks_->ts[r]->link(1 - r);
      ASSERT_NE(link_[r], nullptr);
      ASSERT_EQ(link_[r]->direct_max_bytes(), kShmDirectBytes);
    }
  }
  // Side `side` posts message seq of n bytes; the other side reads it expecting `expect`.
  void Post(int side, uint64_t seq, size_t n) {
    const std::vector<uint8_t> data = Message(seq, side, n);
    const auto head = Head(seq);
    const uint64_t check = seq * 7 + static_cast<uint64_t>(side);
    link_[side]->DirectPost(seq, check, head.data(), data.data(), n);
  }
  void ExpectRead(int side, uint64_t seq, size_t n, size_t expect) {
    const int from = 1 - side;
    uint64_t check = 0;
    size_t bytes = 0;
    const void* got = link_[side]->DirectPeek(seq, expect, &check, &bytes);
    ASSERT_NE(got, nullptr) << "seq " << seq << ", " << n << " bytes, expecting " << expect;
    EXPECT_EQ(bytes, n);
    EXPECT_EQ(check, seq * 7 + static_cast<uint64_t>(from));
    EXPECT_TRUE(n == 0 || std::memcmp(got, Message(seq, from, n).data(), n) == 0)
        << "seq " << seq << ", " << n << " bytes, expecting " << expect;
    EXPECT_TRUE(link_[side]->DirectStillPosted(seq));
    const void* head = link_[side]->DirectPeerHead(seq);
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(std::memcmp(head, Head(seq).data(), 64), 0);
    EXPECT_EQ(link_[side]->DirectPeerLatest(), seq);
  }

  // Message seq both ways: side 0 posts n0 bytes, side 1 reads them expecting n1, then posts n1
  // bytes, which side 0 reads expecting n0.
  void BothWays(uint64_t seq, size_t n0, size_t n1) {
    Post(0, seq, n0);
    ExpectRead(1, seq, n0, n1);
    Post(1, seq, n1);
    ExpectRead(0, seq, n1, n0);
  }

  std::unique_ptr<Ranks> ranks_;
  Link* link_[2] = {};
};

// Lengths around every boundary: the first line (40), each further line (56 more), the last
// lined length (264) and the data area, up to the slot's size.
const std::vector<size_t> kLengths = {0,   1,   7,   8,   39,  40,   41,   95,   96,  97,
                                      152, 153, 207, 208, 209, 263,  264,  265,  300, 512,
                                      1000, 1024, 2048, 4095, 4096, 264, 8, 4096, 0, 100};

TEST_F(DirectSlot, EveryLengthBothWays) {
  uint64_t seq = 1;
  for (size_t n : kLengths) BothWays(seq++, n, n);
}

TEST_F(DirectSlot, AnotherLengthThanExpectedIsReadWhole) {
  const std::vector<std::pair<size_t, size_t>> cases = {
      {8, 264},   {264, 8},   {100, 4096}, {4096, 100}, {0, 64},   {64, 0},
      {300, 264}, {265, 300}, {41, 40},    {40, 41},    {208, 96}, {4096, 0}};
  uint64_t seq = 1;
  for (const auto& [posted, expected] : cases) BothWays(seq++, posted, expected);
}

TEST_F(DirectSlot, NothingBeforeThePostNorAfterARetract) {
  uint64_t check = 0;
  size_t bytes = 0;
  for (size_t n : {size_t{8}, size_t{200}, size_t{1000}}) {
    Connect();  // messages 1 and 2 of a fresh link
    EXPECT_EQ(link_[1]->DirectPeek(1, n, &check, &bytes), nullptr);
    link_[1]->DirectSleep(1, 1);  // returns (bounded) with nothing posted
    BothWays(1, n, n);
    // Message 2 goes to the other slot; taken back before it is read.
    Post(0, 2, n);
    link_[0]->AbandonOp();
    EXPECT_EQ(link_[1]->DirectPeek(2, n, &check, &bytes), nullptr) << n << " bytes";
    EXPECT_FALSE(link_[1]->DirectStillPosted(2));
    EXPECT_NE(link_[1]->DirectPeerHead(2), nullptr);  // its head still names the op
    EXPECT_EQ(link_[1]->DirectPeerLatest(), 1u);      // a retracted message is not the latest
  }
}

TEST_F(DirectSlot, TwoThreadsMixedLengthsBackToBack) {
  // Each side posts message seq, waits for the peer's, checks every byte, and goes on: the
  // slot protocol (message seq + 2 only after the peer posted seq + 1). One message in five is
  // read expecting another length.
  constexpr uint64_t kMessages = 60000;
  const std::vector<size_t> lengths = {0, 8, 40, 41, 96, 97, 200, 264, 265, 1000, 4096};
  auto length = [&](uint64_t seq) { return lengths[(seq * 2654435761u >> 7) % lengths.size()]; };
  std::atomic<uint64_t> wrong{0}, stuck{0};
  auto side = [&](int me) {
    Link* link = link_[me];
    const auto deadline = SteadyClock::now() + 60s;
    std::vector<uint8_t> data(kShmDirectBytes);
    const auto head = Head(0);
    for (uint64_t seq = 1; seq <= kMessages; ++seq) {
      const size_t n = length(seq);
      for (size_t i = 0; i < n; ++i) data[i] = At(seq, me, i);
      link->DirectPost(seq, seq, head.data(), data.data(), n);
      const size_t expect = seq % 5 == 0 ? 264 : n;
      uint64_t check = 0;
      size_t bytes = 0;
      const void* got = nullptr;
      for (uint32_t i = 0; (got = link->DirectPeek(seq, expect, &check, &bytes)) == nullptr; ++i) {
        if (i % 1024 == 0 && SteadyClock::now() > deadline) {
          ++stuck;
          return;
        }
        if (i % 64 == 63) std::this_thread::yield();  // two threads may share one core
      }
      const auto* p = static_cast<const uint8_t*>(got);
      bool ok = bytes == n && check == seq;
      for (size_t i = 0; ok && i < n; ++i) ok = p[i] == At(seq, 1 - me, i);
      if (!ok || !link->DirectStillPosted(seq)) ++wrong;
    }
  };
  std::thread a(side, 0), b(side, 1);
  a.join();
  b.join();
  EXPECT_EQ(stuck.load(), 0u);
  EXPECT_EQ(wrong.load(), 0u);
}

}  // namespace
}  // namespace vigil::transport
