// A stranger with the protocol: a real job of four ranks (threads of this process, each its own
// communicator, its own data-link listener) runs while a stranger that speaks Vigil's wire format
// but has another key connects to every port the job listens on — the rendezvous server, every
// rank's data-link listener, the heartbeat listener (which is also the health port) — and tries
// the real handshakes. Every port must refuse it (the test fails if one accepts), one [Auth] line
// must name the stranger's address for each, and the job's collectives must still give the right
// sums. Then `vigil health` with the job's key gets the job's view, and without it gets nothing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "api/hccl_api_util.h"
#include "bootstrap/auth.h"
#include "bootstrap/rendezvous_server.h"
#include "bootstrap/root_info.h"
#include "bootstrap/socket.h"
#include "comm/communicator.h"
#include "dfx/heartbeat_frame.h"
#include "hccl/hccl.h"
#include "transport/handshake.h"

namespace {

using namespace std::chrono_literals;
using vigil::SteadyClock;
namespace auth = vigil::auth;
namespace bs = vigil::bootstrap;
namespace net = vigil::net;

constexpr uint32_t kRanks = 4;
constexpr uint64_t kCount = 4096;

std::string g_log_dir;

std::string Logs() {
  std::string all;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(g_log_dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

size_t Count(const std::string& all, const std::string& needle) {
  size_t n = 0;
  for (size_t at = all.find(needle); at != std::string::npos; at = all.find(needle, at + 1)) ++n;
  return n;
}

std::string LocalAddress(const net::Socket& s) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len);
  char ip[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// True when the peer sends anything back or keeps the connection open past `wait` (i.e. reads
// what the stranger sent as if it were in the job); false when it closes on the stranger.
bool Answers(net::Socket& s, std::chrono::milliseconds wait) {
  uint8_t b;
  std::string err;
  const HcclResult rc = s.RecvAll(&b, 1, SteadyClock::now() + wait, &err);
  return rc == HCCL_SUCCESS || rc == HCCL_E_TIMEOUT;
}

// The stranger's two tries at one port: (1) the real job-key exchange with its own key, (2) the
// port's own handshake sent without any exchange. Returns the local addresses it used, after
// failing the test if the port accepted either.
std::vector<std::string> Try(const std::string& what, const std::string& ip, uint16_t port,
                             auth::Purpose purpose, const std::vector<uint8_t>& handshake,
                             const auth::JobKey& stranger_key) {
  std::vector<std::string> used;
  std::string err;
  {
    net::Socket s;
    EXPECT_EQ(net::Connect(ip, port, SteadyClock::now() + 5s, &s, &err), HCCL_SUCCESS) << err;
    used.push_back(LocalAddress(s));
    const HcclResult rc =
        auth::AuthenticateDialer(s, purpose, stranger_key, SteadyClock::now() + 5s, &err);
    EXPECT_NE(rc, HCCL_SUCCESS) << what << " accepted the stranger's key";
    if (rc == HCCL_SUCCESS) {
      // Accepted: it would now read the handshake. Show it does, to make the failure plain.
      (void)s.SendAll(handshake.data(), handshake.size(), SteadyClock::now() + 1s, &err);
      ADD_FAILURE() << what << " answered the stranger's handshake: " << Answers(s, 1s);
    }
  }
  {
    net::Socket s;
    EXPECT_EQ(net::Connect(ip, port, SteadyClock::now() + 5s, &s, &err), HCCL_SUCCESS) << err;
    used.push_back(LocalAddress(s));
    EXPECT_EQ(s.SendAll(handshake.data(), handshake.size(), SteadyClock::now() + 5s, &err),
              HCCL_SUCCESS)
        << what << ": " << err;
    EXPECT_FALSE(Answers(s, 5s)) << what << " read the stranger's handshake without a key";
  }
  return used;
}

std::vector<uint8_t> RendezvousHello(const bs::RootInfo& root) {
  bs::RankInfo fake;
  fake.rank = 0;
  fake.nranks = kRanks;
  fake.host_ip = "127.0.0.1";
  fake.host_id = "stranger";
  fake.data_port = 1;
  fake.buffsize_mb = 1;
  vigil::wire::Writer w;
  w.Str(root.identifier);
  bs::rdv::PutRankInfo(&w, fake);
  return bs::rdv::Frame(bs::rdv::kHello, w);
}

std::vector<uint8_t> LinkHello(const std::string& comm_id, uint32_t dst) {
  vigil::transport::Hello h;
  h.kind = vigil::transport::kControl;
  h.comm_id = comm_id;
  h.tag = "AllReduce_stranger";
  h.src = (dst + 1) % kRanks;
  h.dst = dst;
  h.link_type = vigil::transport::kWireTcp;
  h.qp_count = 1;
  h.from.host_ip = "127.0.0.1";
  h.from.host_id = "stranger";
  return vigil::transport::EncodeHello(h);
}

// Runs `vigil health` with `env` set; its exit code and output.
int RunHealth(const std::string& target, const std::string& env, std::string* out) {
  const std::string cmd = env + " " VIGIL_BIN " health --timeout 5 " + target + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(StrangerWithTheProtocol, EveryPortRefusesItAndTheJobCompletes) {
  HcclRootInfo root_bytes;
  ASSERT_EQ(HcclGetRootInfo(&root_bytes), HCCL_SUCCESS);
  bs::RootInfo root;
  std::string err;
  ASSERT_EQ(bs::DecodeRootInfo(root_bytes, &root, &err), HCCL_SUCCESS) << err;
  ASSERT_TRUE(root.key.given);
  auth::JobKey stranger_key;
  ASSERT_TRUE(auth::GenerateJobKey(&stranger_key, &err)) << err;

  // Before the ranks join: the rendezvous server. And a stranger that connects and stays silent
  // through the whole init must not hold anyone up.
  std::vector<std::string> rdv_addrs =
      Try("rendezvous server", root.host_ip, root.port, auth::Purpose::kRendezvous,
          RendezvousHello(root), stranger_key);
  net::Socket silent;
  ASSERT_EQ(net::Connect(root.host_ip, root.port, SteadyClock::now() + 5s, &silent, &err),
            HCCL_SUCCESS);

  std::array<HcclComm, kRanks> comms{};
  std::array<aclrtStream, kRanks> streams{};
  {
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        ASSERT_EQ(aclrtSetDevice(static_cast<int32_t>(r)), ACL_SUCCESS);
        ASSERT_EQ(aclrtCreateStream(&streams[r]), ACL_SUCCESS);
        ASSERT_EQ(HcclCommInitRootInfo(kRanks, &root_bytes, r, &comms[r]), HCCL_SUCCESS);
      });
    }
    for (auto& t : threads) t.join();
  }
  for (HcclComm c : comms) ASSERT_NE(c, nullptr);

  // While the job runs: every rank's data-link listener, and the heartbeat listener.
  struct Port {
    std::string what, ip;
    uint16_t port;
    std::vector<std::string> addrs;
  };
  std::vector<Port> ports;
  std::string maint_ip;
  uint16_t maint_port = 0;
  for (uint32_t r = 0; r < kRanks; ++r) {
    auto comm = vigil::api::LookupComm(comms[r]);
    ASSERT_TRUE(comm);
    const auto& me = comm->ranks()[r];
    ports.push_back({"rank[" + std::to_string(r) + "] data-link listener", me.host_ip,
                     me.data_port, {}});
    ports.back().addrs = Try(ports.back().what, me.host_ip, me.data_port, auth::Purpose::kData,
                             LinkHello(comm->identifier(), r), stranger_key);
    maint_ip = me.host_ip;
    maint_port = me.maint_port;
  }
  ASSERT_NE(maint_port, 0) << "the heartbeat listener is off";
  ports.push_back({"heartbeat listener", maint_ip, maint_port, {}});
  for (auth::Purpose p : {auth::Purpose::kHeartbeat, auth::Purpose::kHealth}) {
    vigil::dfx::HelloFrame h{"127.0.0.1", 1, 1};
    const std::vector<uint8_t> frame =
        p == auth::Purpose::kHealth ? vigil::dfx::EncodeQuery() : vigil::dfx::EncodeHello(h);
    for (const std::string& a : Try("heartbeat listener", maint_ip, maint_port, p, frame,
                                    stranger_key)) {
      ports.back().addrs.push_back(a);
    }
  }

  // The job's collectives: allreduce of (rank + 1) * i on every rank.
  {
    std::vector<std::thread> threads;
    std::array<bool, kRanks> right{};
    for (uint32_t r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] {
        ASSERT_EQ(aclrtSetDevice(static_cast<int32_t>(r)), ACL_SUCCESS);
        void *in = nullptr, *out = nullptr;
        ASSERT_EQ(aclrtMalloc(&in, kCount * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        ASSERT_EQ(aclrtMalloc(&out, kCount * sizeof(float), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
        std::vector<float> host(kCount);
        for (uint64_t i = 0; i < kCount; ++i) host[i] = static_cast<float>((r + 1) * (i % 97));
        ASSERT_EQ(aclrtMemcpy(in, kCount * sizeof(float), host.data(), kCount * sizeof(float),
                              ACL_MEMCPY_HOST_TO_DEVICE),
                  ACL_SUCCESS);
        for (int round = 0; round < 3; ++round) {
          ASSERT_EQ(HcclAllReduce(in, out, kCount, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comms[r],
                                  streams[r]),
                    HCCL_SUCCESS);
        }
        ASSERT_EQ(aclrtSynchronizeStream(streams[r]), ACL_SUCCESS);
        ASSERT_EQ(aclrtMemcpy(host.data(), kCount * sizeof(float), out, kCount * sizeof(float),
                              ACL_MEMCPY_DEVICE_TO_HOST),
                  ACL_SUCCESS);
        bool ok = true;
        const float ranks_sum = kRanks * (kRanks + 1) / 2;
        for (uint64_t i = 0; i < kCount; ++i) ok = ok && host[i] == ranks_sum * (i % 97);
        right[r] = ok;
        aclrtFree(in);
        aclrtFree(out);
      });
    }
    for (auto& t : threads) t.join();
    for (uint32_t r = 0; r < kRanks; ++r) EXPECT_TRUE(right[r]) << "rank " << r << " sum is wrong";
  }

  // The job's own key gets vigil health its view; none and a wrong one get nothing.
  const std::string target = maint_ip + ":" + std::to_string(maint_port);
  std::string with_key, without, wrong;
  const std::string job_env = "VIGIL_JOB_KEY=" + auth::JobKeyHex(root.key);
  EXPECT_EQ(RunHealth(target, job_env + " ASCEND_PROCESS_LOG_PATH=" + g_log_dir + "/none",
                      &with_key),
            0)
      << with_key;
  // (Each of the process's four communicators lists its ranks: the view counts 16.)
  EXPECT_NE(with_key.find("rank(s) in 1 communicator(s); 1 process(es) answered"),
            std::string::npos)
      << with_key;
  EXPECT_EQ(with_key.find(auth::JobKeyHex(root.key)), std::string::npos);
  EXPECT_EQ(RunHealth(target, "env -u VIGIL_JOB_KEY ASCEND_PROCESS_LOG_PATH=" + g_log_dir + "/none",
                      &without),
            2)
      << without;
  EXPECT_EQ(RunHealth(target, "VIGIL_JOB_KEY=" + auth::JobKeyHex(stranger_key) +
                                  " ASCEND_PROCESS_LOG_PATH=" + g_log_dir + "/none",
                      &wrong),
            2)
      << wrong;

  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_EQ(HcclCommDestroy(comms[r]), HCCL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(streams[r]), ACL_SUCCESS);
  }

  // One line per refused connection, naming the stranger's address and the port it hit.
  const std::string logs = Logs();
  const std::string rdv_where = "[Auth]rendezvous server " + root.host_ip + ":" +
                                std::to_string(root.port) + " rejected connection from ";
  for (const std::string& a : rdv_addrs) EXPECT_EQ(Count(logs, rdv_where + a + ":"), 1u) << a;
  for (const Port& p : ports) {
    const std::string where =
        "[Auth]" + p.what + " " + p.ip + ":" + std::to_string(p.port) + " rejected connection from ";
    for (const std::string& a : p.addrs) {
      EXPECT_EQ(Count(logs, where + a + ":"), 1u) << where << a << "\n" << logs;
    }
  }
  // The key itself is nowhere.
  EXPECT_EQ(logs.find(auth::JobKeyHex(root.key)), std::string::npos);
  EXPECT_EQ(Logs().find("[Auth]maintenance link"), std::string::npos)
      << "a rank's own heartbeat link failed its check";
}

}  // namespace

int main(int argc, char** argv) {
  char dir[] = "/tmp/vigil-auth-test.XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  g_log_dir = dir;
  setenv("ASCEND_PROCESS_LOG_PATH", dir, 1);
  setenv("HCCL_IF_IP", "127.0.0.1", 1);
  setenv("HCCL_IF_BASE_PORT", "0", 1);
  setenv("HCCL_BUFFSIZE", "1", 1);
  setenv("HCCL_CONNECT_TIMEOUT", "30", 1);
  setenv("HCCL_EXEC_TIMEOUT", "120", 1);
  unsetenv("VIGIL_JOB_KEY");
  unsetenv("VIGIL_HEARTBEAT");
  aclInit(nullptr);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  if (rc == 0) std::filesystem::remove_all(dir, ec);
  return rc;
}
