// Bootstrap: sockets, root info bytes, the rendezvous (ranks as threads and as processes),
// rank tables. Every wait is bounded by a short HCCL_CONNECT_TIMEOUT; ports are kernel-chosen.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/rendezvous_server.h"
#include "bootstrap/root_info.h"
#include "bootstrap/socket.h"
#include "test_env.h"

namespace vigil::bootstrap {
namespace {

using namespace std::chrono_literals;
using testing::EnvTest;

SteadyClock::time_point In(std::chrono::milliseconds d) { return SteadyClock::now() + d; }

// ---------------------------------------------------------------- sockets

class SocketTest : public EnvTest {};

TEST_F(SocketTest, ListenConnectSendRecv) {
  net::Socket listener;
  uint16_t port = 0;
  std::string err;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &listener, &port, &err), HCCL_SUCCESS) << err;
  ASSERT_NE(port, 0);
  net::Socket client, server;
  ASSERT_EQ(net::Connect("127.0.0.1", port, In(5s), &client, &err), HCCL_SUCCESS) << err;
  ASSERT_EQ(net::Accept(listener, In(5s), &server, &err), HCCL_SUCCESS) << err;
  std::vector<char> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  std::thread t([&] {
    std::string e;
    EXPECT_EQ(client.SendAll(big.data(), big.size(), In(10s), &e), HCCL_SUCCESS) << e;
  });
  std::vector<char> got(big.size());
  EXPECT_EQ(server.RecvAll(got.data(), got.size(), In(10s), &err), HCCL_SUCCESS) << err;
  t.join();
  EXPECT_EQ(got, big);
  EXPECT_NE(server.PeerAddress().find("127.0.0.1:"), std::string::npos);
}

TEST_F(SocketTest, ConnectRetriesUntilTheListenerAppears) {
  net::Socket probe;
  uint16_t port = 0;
  std::string err;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &probe, &port, &err), HCCL_SUCCESS);
  probe.Close();  // the port is free again; nobody listens yet
  std::thread late([&] {
    std::this_thread::sleep_for(300ms);
    net::Socket l;
    uint16_t p = 0;
    std::string e;
    ASSERT_EQ(net::Listen("127.0.0.1", port, &l, &p, &e), HCCL_SUCCESS) << e;
    net::Socket s;
    EXPECT_EQ(net::Accept(l, In(5s), &s, &e), HCCL_SUCCESS) << e;
  });
  net::Socket c;
  EXPECT_EQ(net::Connect("127.0.0.1", port, In(5s), &c, &err), HCCL_SUCCESS) << err;
  late.join();
}

TEST_F(SocketTest, DeadlinesAreHonoured) {
  net::Socket probe;
  uint16_t port = 0;
  std::string err;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &probe, &port, &err), HCCL_SUCCESS);
  probe.Close();
  net::Socket c;
  EXPECT_EQ(net::Connect("127.0.0.1", port, In(200ms), &c, &err), HCCL_E_TIMEOUT);
  EXPECT_NE(err.find("timed out"), std::string::npos) << err;

  net::Socket listener, client, server;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &listener, &port, &err), HCCL_SUCCESS);
  ASSERT_EQ(net::Connect("127.0.0.1", port, In(5s), &client, &err), HCCL_SUCCESS);
  ASSERT_EQ(net::Accept(listener, In(5s), &server, &err), HCCL_SUCCESS);
  char buf[16];
  EXPECT_EQ(server.RecvAll(buf, sizeof(buf), In(200ms), &err), HCCL_E_TIMEOUT);
  net::Socket none;
  EXPECT_EQ(net::Accept(listener, In(100ms), &none, &err), HCCL_E_TIMEOUT);
  client.Close();
  EXPECT_EQ(server.RecvAll(buf, sizeof(buf), In(2s), &err), HCCL_E_TCP_TRANSFER);
  EXPECT_NE(err.find("closed"), std::string::npos) << err;
}

TEST_F(SocketTest, PortInUseIsUnavail) {
  net::Socket a, b;
  uint16_t port = 0, port2 = 0;
  std::string err;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &a, &port, &err), HCCL_SUCCESS);
  EXPECT_EQ(net::Listen("127.0.0.1", port, &b, &port2, &err), HCCL_E_UNAVAIL);
  EXPECT_NE(err.find("address in use"), std::string::npos) << err;
}

TEST_F(SocketTest, PickHostIpFollowsHcclPriority) {
  std::string ifname;
  SetEnv("HCCL_IF_IP", "127.0.0.1");
  EXPECT_EQ(net::PickHostIp(&ifname), "127.0.0.1");
  EXPECT_EQ(ifname, "lo");
  unsetenv("HCCL_IF_IP");
  SetEnv("HCCL_SOCKET_IFNAME", "lo");
  EXPECT_EQ(net::PickHostIp(&ifname), "127.0.0.1");
  SetEnv("HCCL_SOCKET_IFNAME", "=lo");
  EXPECT_EQ(net::PickHostIp(&ifname), "127.0.0.1");
  EXPECT_EQ(ifname, "lo");
  SetEnv("HCCL_SOCKET_IFNAME", "^lo");
  std::string ip = net::PickHostIp(&ifname);
  in_addr addr;
  EXPECT_EQ(inet_pton(AF_INET, ip.c_str(), &addr), 1) << ip;
  unsetenv("HCCL_SOCKET_IFNAME");
  ip = net::PickHostIp(&ifname);
  EXPECT_FALSE(ifname.empty());
  EXPECT_EQ(inet_pton(AF_INET, ip.c_str(), &addr), 1) << ip;
}

// ---------------------------------------------------------------- root info

class RootInfoTest : public EnvTest {};

TEST_F(RootInfoTest, CreateEncodesHcclIdentifierAndDecodes) {
  HcclRootInfo bytes;
  RootInfo made;
  ASSERT_EQ(CreateRootInfo(&bytes, &made), HCCL_SUCCESS);
  RootInfo back;
  std::string err;
  ASSERT_EQ(DecodeRootInfo(bytes, &back, &err), HCCL_SUCCESS) << err;
  EXPECT_EQ(back.host_ip, "127.0.0.1");
  EXPECT_EQ(back.ifname, "lo");
  EXPECT_EQ(back.port, made.port);
  EXPECT_EQ(back.identifier, made.identifier);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(back.identifier, m, std::regex(R"(127\.0\.0\.1%lo_(\d+)_0_(\d{16}))")))
      << back.identifier;
  EXPECT_EQ(std::stoi(m[1]), back.port);
  EXPECT_NE(CountInLogs("rendezvous server listening on ip[127.0.0.1]"), 0u);
}

TEST_F(RootInfoTest, GarbageIsRejectedWithAReason) {
  HcclRootInfo bytes;
  std::memset(&bytes, 0, sizeof(bytes));
  RootInfo out;
  std::string err;
  EXPECT_EQ(DecodeRootInfo(bytes, &out, &err), HCCL_E_PARA);
  EXPECT_NE(err.find("magic"), std::string::npos) << err;

  std::mt19937 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    for (auto& c : bytes.internal) c = static_cast<char>(rng());
    err.clear();
    EXPECT_EQ(DecodeRootInfo(bytes, &out, &err), HCCL_E_PARA);
    EXPECT_FALSE(err.empty());
  }

  HcclRootInfo good;
  ASSERT_EQ(CreateRootInfo(&good, nullptr), HCCL_SUCCESS);
  HcclRootInfo bad = good;
  bad.internal[20] ^= 0x5a;  // inside the payload
  EXPECT_EQ(DecodeRootInfo(bad, &out, &err), HCCL_E_PARA);
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
  bad = good;
  bad.internal[4] = 9;  // version
  EXPECT_EQ(DecodeRootInfo(bad, &out, &err), HCCL_E_PARA);
  EXPECT_NE(err.find("version"), std::string::npos) << err;
  bad = good;
  bad.internal[8] = static_cast<char>(0xff);  // length
  bad.internal[9] = static_cast<char>(0xff);
  EXPECT_EQ(DecodeRootInfo(bad, &out, &err), HCCL_E_PARA);
}

TEST_F(RootInfoTest, NoBindablePortRaisesEi0019) {
  // Occupy 32 consecutive ports on every address, then ask for a root there.
  std::mt19937 rng(static_cast<unsigned>(getpid()));
  std::vector<net::Socket> held;
  uint16_t base = 0;
  for (int attempt = 0; attempt < 50 && base == 0; ++attempt) {
    uint16_t start = static_cast<uint16_t>(20000 + rng() % 30000);
    held.clear();
    for (uint16_t p = start; p < start + 32; ++p) {
      net::Socket s;
      uint16_t bound;
      std::string e;
      if (net::Listen("0.0.0.0", p, &s, &bound, &e) != HCCL_SUCCESS) break;
      held.push_back(std::move(s));
    }
    if (held.size() == 32) base = start;
  }
  ASSERT_NE(base, 0);
  SetEnv("HCCL_IF_BASE_PORT", std::to_string(base));
  HcclRootInfo bytes;
  EXPECT_EQ(CreateRootInfo(&bytes, nullptr), HCCL_E_UNAVAIL);
  std::string logs = Logs();
  EXPECT_NE(logs.find("socket type[2], listen on ip[127.0.0.1] port[" + std::to_string(base) + "-" +
                      std::to_string(base + 31) + "] fail"),
            std::string::npos)
      << logs;
  EXPECT_NE(logs.find("EI0019"), std::string::npos);
}

// ---------------------------------------------------------------- rendezvous

RankInfo MakeRank(uint32_t rank, uint32_t nranks) {
  RankInfo r;
  r.rank = rank;
  r.nranks = nranks;
  r.host_ip = "127.0.0.1";
  r.host_id = "host-a";
  r.data_port = static_cast<uint16_t>(40000 + rank);
  r.pid = static_cast<uint32_t>(getpid());
  r.device = static_cast<int32_t>(rank);
  r.buffsize_mb = 200;
  r.exec_timeout_s = 1836;
  return r;
}

struct Outcome {
  HcclResult rc = HCCL_E_INTERNAL;
  std::string error;
  std::vector<RankInfo> table;
};

std::vector<Outcome> RunRanks(const RootInfo& root, const std::vector<RankInfo>& ranks) {
  std::vector<Outcome> out(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      out[i].rc = Rendezvous(root, ranks[i], &out[i].table, &out[i].error);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

class RendezvousTest : public EnvTest {
 protected:
  RootInfo NewRoot() {
    HcclRootInfo bytes;
    RootInfo root;
    EXPECT_EQ(CreateRootInfo(&bytes, &root), HCCL_SUCCESS);
    return root;
  }
};

TEST_F(RendezvousTest, ThreadsGetTheFullTable) {
  const size_t servers_before = RendezvousServersForTesting();  // unused roots of other tests
  RootInfo root = NewRoot();
  std::vector<RankInfo> ranks;
  for (uint32_t r = 0; r < 5; ++r) ranks.push_back(MakeRank(r, 5));
  std::reverse(ranks.begin(), ranks.end());  // arrival order does not matter
  auto out = RunRanks(root, ranks);
  for (auto& o : out) {
    ASSERT_EQ(o.rc, HCCL_SUCCESS) << o.error;
    ASSERT_EQ(o.table.size(), 5u);
    for (uint32_t r = 0; r < 5; ++r) {
      EXPECT_EQ(o.table[r].rank, r);
      EXPECT_EQ(o.table[r].data_port, 40000 + r);
      EXPECT_EQ(o.table[r].device, static_cast<int32_t>(r));
      EXPECT_EQ(o.table[r].host_id, "host-a");
    }
  }
  // The server finishes and is joined.
  for (int i = 0; i < 100 && RendezvousServersForTesting() > servers_before; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(RendezvousServersForTesting(), servers_before);
}

TEST_F(RendezvousTest, MissingRankTimesOutNamingIt) {
  SetEnv("HCCL_CONNECT_TIMEOUT", "1");
  RootInfo root = NewRoot();
  auto out = RunRanks(root, {MakeRank(0, 4), MakeRank(1, 4), MakeRank(3, 4)});
  for (auto& o : out) {
    EXPECT_EQ(o.rc, HCCL_E_TIMEOUT) << o.error;
    EXPECT_NE(o.error.find("ranks [2] of rankSize[4] did not join"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("Failed to connect agent[2]"), std::string::npos) << o.error;
  }
  std::string logs = Logs();
  EXPECT_NE(logs.find("topo exchange server get socket timeout"), std::string::npos);
  EXPECT_NE(logs.find("total connected num is [3], need connect rankNum is [4]"), std::string::npos);
  EXPECT_NE(logs.find("EI0006"), std::string::npos);
}

TEST_F(RendezvousTest, DuplicateRankIdFailsEveryone) {
  SetEnv("HCCL_CONNECT_TIMEOUT", "3");
  RootInfo root = NewRoot();
  RankInfo dup = MakeRank(1, 3);
  dup.device = 7;
  auto out = RunRanks(root, {MakeRank(0, 3), MakeRank(1, 3), dup});
  for (auto& o : out) {
    EXPECT_EQ(o.rc, HCCL_E_PARA) << o.error;
    EXPECT_NE(o.error.find("rank id[1] is claimed by two ranks"), std::string::npos) << o.error;
  }
  EXPECT_NE(out[1].error.find("device[7]"), std::string::npos) << out[1].error;
  EXPECT_NE(out[2].error.find("device[1]"), std::string::npos) << out[2].error;
}

TEST_F(RendezvousTest, ParameterConflictNamesTheParameter) {
  SetEnv("HCCL_CONNECT_TIMEOUT", "3");
  RootInfo root = NewRoot();
  std::vector<RankInfo> ranks{MakeRank(0, 3), MakeRank(1, 3), MakeRank(2, 3)};
  ranks[2].buffsize_mb = 100;
  auto out = RunRanks(root, ranks);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].rc, HCCL_E_PARA) << out[i].error;
    std::string want = i == 2 ? "buffsize local[100] remote[200]" : "buffsize local[200] remote[100]";
    EXPECT_NE(out[i].error.find(want), std::string::npos) << i << ": " << out[i].error;
  }
  std::string logs = Logs();
  EXPECT_NE(logs.find("[InitChannelStage][ParameterConflict]"), std::string::npos);
  EXPECT_NE(logs.find("EI0005"), std::string::npos);
}

TEST_F(RendezvousTest, RankSizeDisagreementIsAConflict) {
  SetEnv("HCCL_CONNECT_TIMEOUT", "3");
  RootInfo root = NewRoot();
  auto out = RunRanks(root, {MakeRank(0, 2), MakeRank(1, 3)});
  for (auto& o : out) {
    EXPECT_EQ(o.rc, HCCL_E_PARA) << o.error;
    EXPECT_NE(o.error.find("rankSize"), std::string::npos) << o.error;
  }
}

TEST_F(RendezvousTest, OutOfRangeRankIsRejected) {
  RootInfo root = NewRoot();
  std::vector<RankInfo> table;
  std::string err;
  EXPECT_EQ(Rendezvous(root, MakeRank(3, 3), &table, &err), HCCL_E_PARA);
  EXPECT_EQ(Rendezvous(root, MakeRank(0, 0), &table, &err), HCCL_E_PARA);
}

TEST_F(RendezvousTest, StrangersAreDroppedAndTheJobCompletes) {
  RootInfo root = NewRoot();
  std::string err;
  {
    net::Socket s;
    ASSERT_EQ(net::Connect(root.host_ip, root.port, In(5s), &s, &err), HCCL_SUCCESS);
    const char http[] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_EQ(s.SendAll(http, sizeof(http) - 1, In(5s), &err), HCCL_SUCCESS);
    char c;
    EXPECT_NE(s.RecvAll(&c, 1, In(5s), &err), HCCL_SUCCESS);  // dropped
  }
  net::Socket silent;  // connects and says nothing while the job runs
  ASSERT_EQ(net::Connect(root.host_ip, root.port, In(5s), &silent, &err), HCCL_SUCCESS);
  auto out = RunRanks(root, {MakeRank(0, 3), MakeRank(1, 3), MakeRank(2, 3)});
  for (auto& o : out) EXPECT_EQ(o.rc, HCCL_SUCCESS) << o.error;
  // One line for the stranger that spoke (its first bytes are no job-key hello) and one for the
  // silent one once its deadline passed, if it came before the job completed.
  EXPECT_EQ(CountInLogs("no job-key hello (first bytes [0x20544547])"), 1u) << Logs();
}

// A rank with the right identifier and wire format but another key: refused before its hello is
// read (one line naming its address), and the job completes.
TEST_F(RendezvousTest, ARankWithoutTheJobKeyIsRefused) {
  RootInfo root = NewRoot();
  ASSERT_TRUE(root.key.given);
  RootInfo stranger = root;
  std::string err;
  ASSERT_TRUE(auth::GenerateJobKey(&stranger.key, &err)) << err;
  std::vector<RankInfo> table;
  const HcclResult rc = Rendezvous(stranger, MakeRank(0, 2), &table, &err);
  EXPECT_EQ(rc, HCCL_E_PARA) << err;
  EXPECT_NE(err.find("job key"), std::string::npos) << err;
  auto out = RunRanks(root, {MakeRank(0, 2), MakeRank(1, 2)});
  for (auto& o : out) EXPECT_EQ(o.rc, HCCL_SUCCESS) << o.error;
  EXPECT_EQ(CountInLogs(fmt::format("[Auth]rendezvous server {}:{} rejected connection from "
                                    "127.0.0.1:",
                                    root.host_ip, root.port)),
            1u)
      << Logs();
  EXPECT_EQ(Logs().find(auth::JobKeyHex(root.key)), std::string::npos);
}

TEST_F(RendezvousTest, RootInfoBytesCarryTheKey) {
  HcclRootInfo bytes;
  RootInfo made, decoded;
  ASSERT_EQ(CreateRootInfo(&bytes, &made), HCCL_SUCCESS);
  std::string err;
  ASSERT_EQ(DecodeRootInfo(bytes, &decoded, &err), HCCL_SUCCESS) << err;
  EXPECT_TRUE(decoded.key.given);
  EXPECT_EQ(decoded.key, made.key);
}

TEST_F(RendezvousTest, WrongIdentifierIsRefused) {
  RootInfo root = NewRoot();
  RootInfo other = root;
  other.identifier = "someone_else";
  std::vector<RankInfo> table;
  std::string err;
  EXPECT_EQ(Rendezvous(other, MakeRank(0, 1), &table, &err), HCCL_E_PARA);
  EXPECT_NE(err.find("identifier"), std::string::npos) << err;
  // The real job is unaffected.
  auto out = RunRanks(root, {MakeRank(0, 1)});
  EXPECT_EQ(out[0].rc, HCCL_SUCCESS) << out[0].error;
}

TEST_F(RendezvousTest, UnreachableRootTimesOut) {
  SetEnv("HCCL_CONNECT_TIMEOUT", "1");
  net::Socket probe;
  uint16_t port = 0;
  std::string err;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &probe, &port, &err), HCCL_SUCCESS);
  probe.Close();
  RootInfo root{"127.0.0.1", "lo", port, "nobody", {}};
  std::vector<RankInfo> table;
  EXPECT_EQ(Rendezvous(root, MakeRank(0, 2), &table, &err), HCCL_E_TIMEOUT);
  EXPECT_NE(err.find("could not reach the root"), std::string::npos) << err;
}

// Ranks as separate processes: the child re-executes this binary in child mode (a clean
// process, no inherited threads) with the root info in hex.
std::string g_self_exe;

std::string Hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    uint8_t b = static_cast<const uint8_t*>(p)[i];
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

int ChildMain(const std::string& hex, uint32_t rank, uint32_t nranks) {
  HcclRootInfo bytes;
  std::memset(&bytes, 0, sizeof(bytes));
  for (size_t i = 0; i + 1 < hex.size() && i / 2 < sizeof(bytes); i += 2) {
    bytes.internal[i / 2] = static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  RootInfo root;
  std::string err;
  if (DecodeRootInfo(bytes, &root, &err) != HCCL_SUCCESS) return 10;
  RankInfo self = MakeRank(rank, nranks);
  std::vector<RankInfo> table;
  if (Rendezvous(root, self, &table, &err) != HCCL_SUCCESS) return 11;
  if (table.size() != nranks) return 12;
  for (uint32_t r = 0; r < nranks; ++r) {
    if (table[r].rank != r || table[r].data_port != 40000 + r) return 13;
  }
  if (table[rank].pid != static_cast<uint32_t>(getpid())) return 14;
  return 0;
}

TEST_F(RendezvousTest, ForkedProcesses) {
  HcclRootInfo bytes;
  ASSERT_EQ(CreateRootInfo(&bytes, nullptr), HCCL_SUCCESS);
  std::string hex = Hex(&bytes, sizeof(bytes));
  const uint32_t n = 4;
  std::vector<pid_t> kids;
  for (uint32_t r = 1; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      std::string rank = std::to_string(r), size = std::to_string(n);
      execl(g_self_exe.c_str(), g_self_exe.c_str(), "--rendezvous-child", hex.c_str(),
            rank.c_str(), size.c_str(), nullptr);
      _exit(99);
    }
    kids.push_back(pid);
  }
  RootInfo root;
  std::string err;
  ASSERT_EQ(DecodeRootInfo(bytes, &root, &err), HCCL_SUCCESS);
  std::vector<RankInfo> table;
  EXPECT_EQ(Rendezvous(root, MakeRank(0, n), &table, &err), HCCL_SUCCESS) << err;
  for (pid_t k : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(k, &status, 0), k);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  ASSERT_EQ(table.size(), n);
  EXPECT_NE(table[1].pid, table[2].pid);
}

// ---------------------------------------------------------------- rank table

class RankTableTest : public EnvTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
};

const char kTable10[] = R"({
  "status": "completed", "version": "1.0", "server_count": "2",
  "server_list": [
    {"server_id": "127.0.0.1", "device": [
      {"device_id": "0", "device_ip": "192.168.1.8", "rank_id": "0"},
      {"device_id": "1", "device_ip": "192.168.1.9", "rank_id": "1"}]},
    {"server_id": "127.0.0.2", "device": [
      {"device_id": "0", "device_ip": "192.168.2.8", "rank_id": "3"},
      {"device_id": "1", "device_ip": "192.168.2.9", "rank_id": "2"}]}
  ]})";

TEST_F(RankTableTest, Version10) {
  RankTable t;
  std::string err;
  ASSERT_EQ(LoadRankTable(Write("t.json", kTable10), &t, &err), HCCL_SUCCESS) << err;
  EXPECT_EQ(t.version, "1.0");
  ASSERT_EQ(t.ranks.size(), 4u);
  EXPECT_EQ(t.ranks[2].server_id, "127.0.0.2");
  EXPECT_EQ(t.ranks[2].device_id, 1);
  EXPECT_EQ(t.ranks[3].device_ip, "192.168.2.8");
  EXPECT_EQ(t.ranks[1].server_id, "127.0.0.1");
}

TEST_F(RankTableTest, Version20) {
  const char text[] = R"({"status": "completed", "version": "2.0", "rank_count": 2,
    "rank_list": [
      {"rank_id": 1, "device_id": 1, "server_id": "127.0.0.1", "level_list": []},
      {"rank_id": 0, "device_id": 0, "host_ip": "127.0.0.1", "level_list": [{"net_layer": 0}]}]})";
  RankTable t;
  std::string err;
  ASSERT_EQ(LoadRankTable(Write("t2.json", text), &t, &err), HCCL_SUCCESS) << err;
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].server_id, "127.0.0.1");
  EXPECT_EQ(t.ranks[1].device_id, 1);
  // 2.0 with the 1.0 shape.
  std::string v2 = kTable10;
  v2.replace(v2.find("\"1.0\""), 5, "\"2.0\"");
  ASSERT_EQ(LoadRankTable(Write("t3.json", v2), &t, &err), HCCL_SUCCESS) << err;
}

TEST_F(RankTableTest, MalformedNamesFileAndField) {
  struct Case {
    std::string text;
    std::string field;
  };
  std::string t = kTable10;
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = t;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  std::vector<Case> cases = {
      {"{not json", "(document)"},
      {"[1,2]", "(document)"},
      {with("\"completed\"", "\"initializing\""), "status"},
      {with("\"1.0\"", "\"9.9\""), "version"},
      {with("\"server_list\"", "\"servers\""), "server_list"},
      {with("\"server_count\": \"2\"", "\"server_count\": \"3\""), "server_count"},
      {with("\"rank_id\": \"3\"", "\"rank_id\": \"x3\""), "server_list[1].device[0].rank_id"},
      {with("\"rank_id\": \"3\"", "\"rank_id\": \"1\""), "rank_id"},
      {with("\"rank_id\": \"3\"", "\"rank_id\": \"4\""), "rank_id"},
      {with("\"device_id\": \"1\", \"device_ip\": \"192.168.1.9\"", "\"device_ip\": \"192.168.1.9\""),
       "server_list[0].device[1].device_id"},
      {with("\"server_id\": \"127.0.0.2\", ", ""), "server_list[1].server_id"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string path = Write("bad" + std::to_string(i) + ".json", cases[i].text);
    RankTable table;
    std::string err;
    EXPECT_EQ(LoadRankTable(path, &table, &err), HCCL_E_PARA) << i;
    EXPECT_NE(err.find(path), std::string::npos) << i << ": " << err;
    EXPECT_NE(err.find("[" + cases[i].field + "]"), std::string::npos) << i << ": " << err;
  }
  RankTable table;
  std::string err;
  EXPECT_EQ(LoadRankTable(dir_ + "/missing.json", &table, &err), HCCL_E_PARA);
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

TEST_F(RankTableTest, RootFromRankTableServesRendezvous) {
  net::Socket probe;
  uint16_t port = 0;
  std::string err;
  ASSERT_EQ(net::Listen("127.0.0.1", 0, &probe, &port, &err), HCCL_SUCCESS);
  probe.Close();
  SetEnv("HCCL_IF_BASE_PORT", std::to_string(port));
  RankTable t;
  ASSERT_EQ(LoadRankTable(Write("t.json", kTable10), &t, &err), HCCL_SUCCESS) << err;
  std::vector<RootInfo> roots(4);
  // Ranks other than 0 only compute it; rank 0 starts the server.
  for (uint32_t r = 1; r < 4; ++r) ASSERT_EQ(RootInfoFromRankTable(t, r, &roots[r], &err), HCCL_SUCCESS);
  ASSERT_EQ(RootInfoFromRankTable(t, 0, &roots[0], &err), HCCL_SUCCESS) << err;
  EXPECT_EQ(roots[0].port, port);
  EXPECT_EQ(roots[0].identifier, "hccl_world_group");
  std::vector<Outcome> out(4);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      out[r].rc = Rendezvous(roots[r], MakeRank(r, 4), &out[r].table, &out[r].error);
    });
  }
  for (auto& th : threads) th.join();
  for (auto& o : out) EXPECT_EQ(o.rc, HCCL_SUCCESS) << o.error;
  EXPECT_EQ(RootInfoFromRankTable(t, 9, &roots[0], &err), HCCL_E_PARA);
}

}  // namespace
}  // namespace vigil::bootstrap

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--rendezvous-child") {
    return vigil::bootstrap::ChildMain(argv[2], static_cast<uint32_t>(std::stoul(argv[3])),
                                       static_cast<uint32_t>(std::stoul(argv[4])));
  }
  vigil::bootstrap::g_self_exe = "/proc/self/exe";
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) vigil::bootstrap::g_self_exe.assign(buf, static_cast<size_t>(n));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
