// Transport: connecting (fallbacks, socket buffers, timeouts naming the missing peers, link
// memory over budget), fault injection, and links to a child process that dies.
#include "transport_test_util.h"

namespace vigil::transport {
namespace {

using namespace test;

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

}  // namespace

namespace {
constexpr size_t kBigLend = 32u << 20;
}  // namespace

// The child of the process tests (see transport_test_main.cc).
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

namespace {

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
