// The job key and the job-key check (bootstrap/job_key.h, bootstrap/auth.h): the right key
// passes both ways; a wrong key, no key, a truncated or silent peer, a replayed or reflected
// exchange and a purpose the port does not serve all fail, each within its deadline.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <future>
#include <set>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/job_key.h"
#include "bootstrap/socket.h"
#include "test_env.h"

namespace vigil::auth {
namespace {

using namespace std::chrono_literals;
using vigil::testing::EnvTest;

net::Deadline In(std::chrono::milliseconds d) { return SteadyClock::now() + d; }

JobKey NewKey() {
  JobKey k;
  std::string err;
  EXPECT_TRUE(GenerateJobKey(&k, &err)) << err;
  return k;
}

// A connected pair over loopback: [0] dialer end, [1] acceptor end.
struct Pair {
  net::Socket dialer, acceptor;
  Pair() {
    net::Socket listener;
    uint16_t port = 0;
    std::string err;
    EXPECT_EQ(net::Listen("127.0.0.1", 0, &listener, &port, &err), HCCL_SUCCESS) << err;
    EXPECT_EQ(net::Connect("127.0.0.1", port, In(5s), &dialer, &err), HCCL_SUCCESS) << err;
    EXPECT_EQ(net::Accept(listener, In(5s), &acceptor, &err), HCCL_SUCCESS) << err;
  }
};

struct AcceptResult {
  HcclResult rc = HCCL_E_INTERNAL;
  Purpose purpose = Purpose::kData;
  std::vector<uint8_t> rest;
  std::string error;
};

std::future<AcceptResult> AcceptAsync(net::Socket& s, uint32_t allowed, std::vector<JobKey> keys,
                                      std::chrono::milliseconds within = 5000ms) {
  return std::async(std::launch::async, [&s, allowed, keys, within] {
    AcceptResult r;
    r.rc = AuthenticateAcceptor(s, allowed, keys, In(within), &r.purpose, &r.rest, &r.error);
    if (r.rc != HCCL_SUCCESS) s.Close();  // as every acceptor does
    return r;
  });
}

class AuthTest : public EnvTest {
 protected:
  void SetUp() override {
    EnvTest::SetUp();
    unsetenv("VIGIL_JOB_KEY");
    ReloadEnvForTesting();
    ResetJobKeysForTesting();
  }
  void TearDown() override {
    unsetenv("VIGIL_JOB_KEY");
    ReloadEnvForTesting();
    ResetJobKeysForTesting();
    EnvTest::TearDown();
  }
};

TEST_F(AuthTest, KeysAreRandomHexRoundTripsAndIdsHideTheKey) {
  std::set<std::string> seen;
  for (int i = 0; i < 16; ++i) {
    JobKey k = NewKey();
    EXPECT_TRUE(k.given);
    const std::string hex = JobKeyHex(k);
    EXPECT_EQ(hex.size(), 32u);
    JobKey back;
    ASSERT_TRUE(ParseJobKeyHex(hex, &back));
    EXPECT_EQ(back, k);
    EXPECT_EQ(hex.find(fmt::format("{:016x}", JobKeyId(k))), std::string::npos);
    seen.insert(hex);
  }
  EXPECT_EQ(seen.size(), 16u);
  JobKey k;
  EXPECT_FALSE(ParseJobKeyHex("", &k));
  EXPECT_FALSE(ParseJobKeyHex(std::string(31, 'a'), &k));
  EXPECT_FALSE(ParseJobKeyHex(std::string(31, 'a') + "g", &k));
  EXPECT_TRUE(ParseJobKeyHex(std::string(32, 'F'), &k));
  EXPECT_NE(JobKeyId(k), JobKeyId(JobKey()));
}

TEST_F(AuthTest, ProcessKeyIsTheEnvironmentsElseTheFirstAdoptedElseNew) {
  JobKey a, b;
  std::string err;
  ASSERT_TRUE(ProcessJobKey(&a, &err)) << err;
  ASSERT_TRUE(ProcessJobKey(&b, &err)) << err;
  EXPECT_TRUE(a.given);
  EXPECT_EQ(a, b);  // one per process

  ResetJobKeysForTesting();
  JobKey joined = NewKey();
  AdoptJobKey(joined);
  ASSERT_TRUE(ProcessJobKey(&a, &err)) << err;
  EXPECT_EQ(a, joined);

  const std::string hex = "00112233445566778899aabbccddeeff";
  SetEnv("VIGIL_JOB_KEY", hex);
  ReloadEnvForTesting();
  ASSERT_TRUE(ProcessJobKey(&a, &err)) << err;
  EXPECT_EQ(JobKeyHex(a), hex);
  ASSERT_TRUE(RankTableJobKey(&b, &err)) << err;
  EXPECT_EQ(b, a);

  SetEnv("VIGIL_JOB_KEY", "not-a-key");
  ReloadEnvForTesting();
  EXPECT_FALSE(ProcessJobKey(&a, &err));
  EXPECT_NE(err.find("VIGIL_JOB_KEY"), std::string::npos) << err;
  EXPECT_EQ(err.find("not-a-key"), std::string::npos) << err;  // the value is not echoed
}

TEST_F(AuthTest, RankTableWithoutAKeyWarnsOnceAndHasNoKey) {
  JobKey k;
  std::string err;
  ASSERT_TRUE(RankTableJobKey(&k, &err)) << err;
  EXPECT_FALSE(k.given);
  EXPECT_EQ(k, JobKey());
  ASSERT_TRUE(RankTableJobKey(&k, &err)) << err;
  EXPECT_LE(CountInLogs("VIGIL_JOB_KEY is not set"), 1u);
}

TEST_F(AuthTest, RightKeyPassesAndLeavesWhatFollowsUnread) {
  const JobKey key = NewKey();
  Pair p;
  auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kData), {NewKey(), key});
  std::string err;
  ASSERT_EQ(AuthenticateDialer(p.dialer, Purpose::kData, key, In(5s), &err), HCCL_SUCCESS) << err;
  const char msg[] = "after";
  ASSERT_EQ(p.dialer.SendAll(msg, sizeof(msg), In(5s), &err), HCCL_SUCCESS);
  AcceptResult r = acc.get();
  ASSERT_EQ(r.rc, HCCL_SUCCESS) << r.error;
  EXPECT_EQ(r.purpose, Purpose::kData);
  EXPECT_TRUE(r.rest.empty());  // read exactly the exchange
  char got[sizeof(msg)];
  ASSERT_EQ(p.acceptor.RecvAll(got, sizeof(got), In(5s), &err), HCCL_SUCCESS);
  EXPECT_STREQ(got, msg);
}

TEST_F(AuthTest, NoKeyOnBothSidesPassesNoKeyAgainstAKeyFails) {
  {
    Pair p;
    auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kRendezvous), {JobKey()});
    std::string err;
    EXPECT_EQ(AuthenticateDialer(p.dialer, Purpose::kRendezvous, JobKey(), In(5s), &err),
              HCCL_SUCCESS)
        << err;
    EXPECT_EQ(acc.get().rc, HCCL_SUCCESS);
  }
  {
    Pair p;
    auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kRendezvous), {NewKey()});
    std::string err;
    EXPECT_NE(AuthenticateDialer(p.dialer, Purpose::kRendezvous, JobKey(), In(5s), &err),
              HCCL_SUCCESS);
    AcceptResult r = acc.get();
    EXPECT_NE(r.rc, HCCL_SUCCESS);
    EXPECT_NE(r.error.find("no job key"), std::string::npos) << r.error;
  }
}

TEST_F(AuthTest, WrongKeyFailsOnBothSides) {
  Pair p;
  auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kData), {NewKey()});
  std::string err;
  EXPECT_NE(AuthenticateDialer(p.dialer, Purpose::kData, NewKey(), In(5s), &err), HCCL_SUCCESS);
  AcceptResult r = acc.get();
  EXPECT_NE(r.rc, HCCL_SUCCESS);
  EXPECT_NE(r.error.find("not this job's"), std::string::npos) << r.error;
}

// A peer that knows the key id (it is public) but not the key: its MACs are wrong both ways.
TEST_F(AuthTest, KnownKeyIdWithoutTheKeyFailsOnBothSides) {
  const JobKey key = NewKey();
  JobKey impostor = NewKey();
  // Sans I/O: the impostor's hello carries the real key's id.
  DialerAuth real(Purpose::kHeartbeat, key);
  std::vector<uint8_t> hello = real.Start();
  AcceptorAuth acceptor(PurposeBit(Purpose::kHeartbeat), {key});
  std::vector<uint8_t> answer;
  ASSERT_EQ(acceptor.Feed(&hello, &answer), Step::kMore);
  ASSERT_EQ(answer.size(), kAnswerBytes);
  // The impostor cannot make the proof: any 32 bytes it tries fail.
  std::vector<uint8_t> forged(kProofBytes, 0x5a);
  std::vector<uint8_t> none;
  EXPECT_EQ(acceptor.Feed(&forged, &none), Step::kFailed);
  EXPECT_NE(acceptor.why().find("wrong proof"), std::string::npos);
  // And an impostor acceptor cannot answer a real dialer.
  DialerAuth dialer(Purpose::kHeartbeat, key);
  std::vector<uint8_t> h2 = dialer.Start();
  AcceptorAuth fake(PurposeBit(Purpose::kHeartbeat), {impostor});
  // Same id is what a real acceptor would find; the fake one knows only the id, so it answers
  // with a MAC of its own key.
  std::vector<uint8_t> h2_fake = h2;
  const uint64_t id = JobKeyId(impostor);
  for (int i = 0; i < 8; ++i) h2_fake[8 + i] = static_cast<uint8_t>(id >> (8 * i));
  std::vector<uint8_t> fake_answer;
  ASSERT_EQ(fake.Feed(&h2_fake, &fake_answer), Step::kMore);
  std::vector<uint8_t> proof;
  EXPECT_EQ(dialer.Feed(&fake_answer, &proof), Step::kFailed);
  EXPECT_TRUE(proof.empty());  // the dialer never proves itself to a peer without the key
}

TEST_F(AuthTest, ReplayedExchangeFails) {
  const JobKey key = NewKey();
  DialerAuth dialer(Purpose::kData, key);
  std::vector<uint8_t> hello = dialer.Start();
  const std::vector<uint8_t> recorded_hello = hello;
  AcceptorAuth acceptor(PurposeBit(Purpose::kData), {key});
  std::vector<uint8_t> answer;
  ASSERT_EQ(acceptor.Feed(&hello, &answer), Step::kMore);
  std::vector<uint8_t> proof;
  ASSERT_EQ(dialer.Feed(&answer, &proof), Step::kDone);
  const std::vector<uint8_t> recorded_proof = proof;
  std::vector<uint8_t> none;
  ASSERT_EQ(acceptor.Feed(&proof, &none), Step::kDone);

  // The recorder plays both messages to a new connection: the acceptor's nonce is new.
  AcceptorAuth again(PurposeBit(Purpose::kData), {key});
  std::vector<uint8_t> replay = recorded_hello;
  replay.insert(replay.end(), recorded_proof.begin(), recorded_proof.end());
  std::vector<uint8_t> out;
  EXPECT_EQ(again.Feed(&replay, &out), Step::kFailed);
  EXPECT_NE(again.why().find("wrong proof"), std::string::npos);
}

TEST_F(AuthTest, ReflectedAnswerIsNoProof) {
  const JobKey key = NewKey();
  // The stranger opens a connection with any nonce and sends the acceptor's own MAC back.
  AcceptorAuth acceptor(PurposeBit(Purpose::kHealth), {key});
  DialerAuth opener(Purpose::kHealth, JobKey());  // no key: only its hello's shape is used
  std::vector<uint8_t> hello = opener.Start();
  const uint64_t id = JobKeyId(key);
  for (int i = 0; i < 8; ++i) hello[8 + i] = static_cast<uint8_t>(id >> (8 * i));
  std::vector<uint8_t> answer;
  ASSERT_EQ(acceptor.Feed(&hello, &answer), Step::kMore);
  std::vector<uint8_t> reflected(answer.begin() + 8 + kNonceBytes, answer.end());
  std::vector<uint8_t> none;
  EXPECT_EQ(acceptor.Feed(&reflected, &none), Step::kFailed);

  // A dialer whose hello comes back at it as the answer (its nonce, no MAC of the key).
  DialerAuth dialer(Purpose::kHealth, key);
  std::vector<uint8_t> mine = dialer.Start();
  std::vector<uint8_t> echo = mine;
  echo.resize(kAnswerBytes, 0);
  std::memcpy(echo.data() + 8, mine.data() + 16, kNonceBytes);
  echo[4] = 1;
  echo[5] = 0;
  std::vector<uint8_t> proof;
  EXPECT_EQ(dialer.Feed(&echo, &proof), Step::kFailed);
  EXPECT_TRUE(proof.empty());
}

TEST_F(AuthTest, PurposeNotServedHereFails) {
  const JobKey key = NewKey();
  Pair p;
  auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kHeartbeat) | PurposeBit(Purpose::kHealth),
                         {key});
  std::string err;
  EXPECT_NE(AuthenticateDialer(p.dialer, Purpose::kData, key, In(5s), &err), HCCL_SUCCESS);
  AcceptResult r = acc.get();
  EXPECT_NE(r.rc, HCCL_SUCCESS);
  EXPECT_NE(r.error.find("purpose [data]"), std::string::npos) << r.error;
}

// The dialer's MAC names its purpose: a data-link proof is no heartbeat proof.
TEST_F(AuthTest, PurposeIsBoundIntoTheMac) {
  const JobKey key = NewKey();
  DialerAuth dialer(Purpose::kData, key);
  std::vector<uint8_t> hello = dialer.Start();
  hello[5] = static_cast<uint8_t>(Purpose::kHeartbeat);  // relabelled on the way
  AcceptorAuth acceptor(PurposeBit(Purpose::kHeartbeat), {key});
  std::vector<uint8_t> answer;
  ASSERT_EQ(acceptor.Feed(&hello, &answer), Step::kMore);
  std::vector<uint8_t> proof;
  EXPECT_EQ(dialer.Feed(&answer, &proof), Step::kFailed);
}

// A dialer that failed stays failed: bytes after a wrong answer (a stray byte, then the real
// answer) are never read as a new answer.
TEST_F(AuthTest, DialerFailureIsFinal) {
  const JobKey key = NewKey();
  DialerAuth dialer(Purpose::kData, key);
  std::vector<uint8_t> hello = dialer.Start();
  AcceptorAuth acceptor(PurposeBit(Purpose::kData), {key});
  std::vector<uint8_t> answer;
  ASSERT_EQ(acceptor.Feed(&hello, &answer), Step::kMore);
  ASSERT_EQ(answer.size(), kAnswerBytes);
  std::vector<uint8_t> wrong = answer;
  wrong[8 + kNonceBytes] ^= 1;  // the MAC
  std::vector<uint8_t> in = wrong, proof;
  in.push_back(0x55);  // one byte more: the next answer's first
  EXPECT_EQ(dialer.Feed(&in, &proof), Step::kFailed);
  EXPECT_EQ(dialer.Feed(&in, &proof), Step::kFailed);
  in.insert(in.end(), answer.begin(), answer.end());
  EXPECT_EQ(dialer.Feed(&in, &proof), Step::kFailed);
  EXPECT_TRUE(proof.empty());
}

TEST_F(AuthTest, TruncatedHelloFails) {
  const JobKey key = NewKey();
  Pair p;
  auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kData), {key});
  DialerAuth dialer(Purpose::kData, key);
  std::vector<uint8_t> hello = dialer.Start();
  std::string err;
  ASSERT_EQ(p.dialer.SendAll(hello.data(), hello.size() / 2, In(5s), &err), HCCL_SUCCESS);
  p.dialer.Close();
  AcceptResult r = acc.get();
  EXPECT_EQ(r.rc, HCCL_E_TCP_TRANSFER) << r.error;
}

TEST_F(AuthTest, GarbageFailsAtOnce) {
  Pair p;
  auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kRendezvous), {NewKey()});
  const char http[] = "GET / HTTP/1.0\r\n\r\n";
  std::string err;
  ASSERT_EQ(p.dialer.SendAll(http, sizeof(http) - 1, In(5s), &err), HCCL_SUCCESS);
  AcceptResult r = acc.get();
  EXPECT_EQ(r.rc, HCCL_E_PARA);
  EXPECT_NE(r.error.find("no job-key hello"), std::string::npos) << r.error;
}

TEST_F(AuthTest, SilentDialerTimesOutAtTheDeadline) {
  Pair p;
  auto acc = AcceptAsync(p.acceptor, PurposeBit(Purpose::kData), {NewKey()}, 300ms);
  AcceptResult r = acc.get();
  EXPECT_EQ(r.rc, HCCL_E_TIMEOUT) << r.error;
}

TEST_F(AuthTest, SilentAcceptorTimesOutAtTheDeadline) {
  Pair p;
  std::string err;
  EXPECT_EQ(AuthenticateDialer(p.dialer, Purpose::kData, NewKey(), In(300ms), &err),
            HCCL_E_TIMEOUT)
      << err;
}

TEST_F(AuthTest, AcceptorThatClosesFailsTheDialer) {
  Pair p;
  p.acceptor.Close();
  std::string err;
  EXPECT_NE(AuthenticateDialer(p.dialer, Purpose::kData, NewKey(), In(5s), &err), HCCL_SUCCESS);
}

TEST_F(AuthTest, RejectedLineNamesServiceAndPeerButNeverTheKey) {
  const JobKey key = NewKey();
  LogRejected("rendezvous server", "127.0.0.1:60000", "127.0.0.1:41234", "wrong proof");
  const std::string logs = Logs();
  EXPECT_NE(logs.find("[Auth]rendezvous server 127.0.0.1:60000 rejected connection from "
                      "127.0.0.1:41234: wrong proof"),
            std::string::npos)
      << logs;
  EXPECT_NE(logs.find("[WARNING]"), std::string::npos) << logs;
  EXPECT_EQ(logs.find(JobKeyHex(key)), std::string::npos);
}

}  // namespace
}  // namespace vigil::auth
