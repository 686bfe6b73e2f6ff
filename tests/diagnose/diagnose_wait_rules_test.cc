// Waiting chains and timeout reports judged per communicator (rules/wait_chain.cc,
// rules/timeout_reports.cc), the plog lines they read (plog_forms.cc, data/formats/plog_lines.json) and the process keying by
// file name. The lines are of the forms CANN prints (the ascend_fd corpus cases hold whole logs).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "diagnose/diagnose.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

namespace fs = std::filesystem;

std::vector<Event> Events(const std::string& text) { return ParseText(text, 0).events; }

const Event* First(const std::vector<Event>& ev, EventKind k) {
  for (const Event& e : ev)
    if (e.kind == k) return &e;
  return nullptr;
}

// A job folder of plog files: name → content.
class JobDir : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> n{0};
    dir_ = fs::temp_directory_path() / ("vigil_wait_rules_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  DiagnoseResult Run() {
    DiagnoseOptions o;
    o.inputs = {dir_.string()};
    o.threads = 1;
    return Diagnose(o);
  }
  const Finding* Find(const DiagnoseResult& r, const std::string& fault) {
    for (const Finding& f : r.findings)
      if (f.fault == fault) return &f;
    return nullptr;
  }
  static std::vector<int64_t> Roots(const Finding& f) {
    std::vector<int64_t> out;
    for (const RankRef& r : f.ranks)
      if (r.role == "root cause") out.push_back(r.rank);
    return out;
  }
  fs::path dir_;
};

std::string Line(const char* level, int pid, const std::string& time, const std::string& body) {
  return std::string("[") + level + "] HCCL(" + std::to_string(pid) + ",python3):2024-04-08-" + time +
         " [x.cc:1][" + std::to_string(pid) + "]" + body + "\n";
}

const std::string kComm = "10.1.1.1%eth0_60000_0_1712529353144389";

std::string SetupLine(int pid, int rank, int ranks, int phy, const std::string& dev_ip, const std::string& group = kComm) {
  return Line("INFO", pid, "01:00:00.000.000",
              "[HCCL_TRACE]SetupAgent rankNum[" + std::to_string(ranks) + "], rank[" + std::to_string(rank) +
                  "], rootInfo identifier[" + group + "], server[10.1.1.1%eth0], logicDevId[" + std::to_string(phy) +
                  "], phydevId[" + std::to_string(phy) + "], deviceIp[" + dev_ip + "]");
}

std::string Notify(int pid, const std::string& time, const std::string& op, int index, const std::string& remote) {
  std::string idx = index >= 0 ? ", index[" + std::to_string(index) + "]" : "";
  return Line("ERROR", pid, time,
              "[TaskExceptionHandler][Callback]Task run failed, base information is streamID:[3], taskID[7], "
              "taskType[Notify Wait], tag[" + op + "_" + kComm + "]" + idx + ".") +
         Line("ERROR", pid, time,
              "[TaskExceptionHandler][Callback]Task run failed, para information is notify id:[0x48], "
              "stage:[ffffffff], remote rank:[" + remote + "].");
}

TEST(RankLines, IdentityAndWaitLines) {
  std::vector<Event> ev = Events(SetupLine(11, 8, 16, 0, "192.168.100.210"));
  const Event* id = First(ev, EventKind::kRankInfo);
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(id->rank, 8);
  EXPECT_EQ(id->rank_size, 16);
  EXPECT_EQ(id->group, kComm);
  EXPECT_EQ(id->local_ip, "192.168.100.210");
  EXPECT_EQ(id->local_server, "10.1.1.1");
  EXPECT_EQ(id->local_device, "0");

  // The old link table (dest, src, role, status) and the new one (ports in between).
  ev = Events(Line("ERROR", 5, "01:00:00.000.000", "   |  124.0.0.21(0)   |   124.0.0.11(1)   |  client  | no connect |"));
  const Event* w = First(ev, EventKind::kWaitPeer);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->detail, "socket");
  EXPECT_EQ(w->remote_ip, "124.0.0.21");
  EXPECT_EQ(w->dst_rank, 0);
  EXPECT_EQ(w->local_ip, "124.0.0.11");
  EXPECT_EQ(w->src_rank, 1);
  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "   |  192.168.2.199(8)   |  16666  |   192.168.2.197(10)   |  0  |  client  | time out |"));
  w = First(ev, EventKind::kWaitPeer);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->remote_ip, "192.168.2.199");
  EXPECT_EQ(w->src_rank, 10);
  EXPECT_EQ(w->status, "time out");

  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "[Wait][P2PConnected]connected p2p timeout, timeout:130 s. local logicDevid:2, remote physic id:1."));
  w = First(ev, EventKind::kWaitPeer);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->detail, "p2p");
  EXPECT_EQ(w->remote_device, "1");

  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "[TaskException]base information is streamId:149, sqid:153, type:NOTIFY WAIT, localRank:1, "
                   "remoteRank:0, taskId:26064"));
  w = First(ev, EventKind::kWaitPeer);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->detail, "aicpu");
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->remote_rank, 0);
  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "[TaskException]base information is streamId:149, type:NOTIFY WAIT, localRank:1, "
                   "remoteRank:4294967295, taskId:26064"));
  ASSERT_NE(First(ev, EventKind::kWaitPeer), nullptr);
  EXPECT_EQ(First(ev, EventKind::kWaitPeer)->remote_rank, -1);  // unknown

  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "[TopoInfoExchangeServer][DisplayConnectionedRank]connected rankinfo[LINE 0]: "
                   "[0000000000000000],[0000000000000002],[0000000000000003];"));
  const Event* c = First(ev, EventKind::kConnectedRanks);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ranks, (std::vector<int64_t>{0, 2, 3}));

  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "[Heartbeat]cqe err status[12], time:[2023-07-04 22:15:59.099518], ip:[192.1.95.102]"));
  const Event* q = First(ev, EventKind::kCqeDetail);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->status, "12");
  EXPECT_EQ(q->remote_ip, "192.1.95.102");

  ev = Events(Line("ERROR", 5, "01:00:00.000.000",
                   "[Create][DestLink]Transport init error! createLink para:rank[443]-localUserrank[443]-"
                   "localIpAddr[], dst_rank[0]-remoteUserrank[0]-remoteIpAddr[2.2.2.2/1], machineType[1]"));
  const Event* t = First(ev, EventKind::kTransportError);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->remote_server, "2.2.2.2");
  EXPECT_EQ(t->remote_device, "1");
}

TEST_F(JobDir, ProcessesAreKeyedByTheFileNamesPid) {
  // Copied logs print one pid in every file; the file names tell the processes apart.
  for (int r = 0; r < 3; ++r)
    Write("w/plog-" + std::to_string(100 + r) + "_20240408010000000.log",
          SetupLine(7, r, 3, r, "192.168.1." + std::to_string(r)));
  DiagnoseResult res = Run();
  EXPECT_EQ(res.job.processes.size(), 3u);
}

TEST_F(JobDir, NotifyLowestOpIndexIsTheRoot) {
  for (int r = 0; r < 4; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 4, r, "1.0.0." + std::to_string(r)) +
              Notify(100 + r, "02:55:04.903.511", "AllReduce", r == 1 ? 2 : 3, std::to_string((r + 1) % 4)));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "index_mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cls, "consistency");
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{1}));
}

TEST_F(JobDir, NotifyMinorityTagIsTheRoot) {
  for (int r = 0; r < 4; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 4, r, "1.0.0." + std::to_string(r)) +
              Notify(100 + r, "02:55:04.903.511", r == 2 ? "AllRing" : "AllReduce", 3, std::to_string((r + 1) % 4)));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "op_mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{2}));
}

TEST_F(JobDir, NotifyWaitOnOwnStreamAtTheChainsEnd) {
  const char* remote[] = {"1", "2", "local"};
  for (int r = 0; r < 3; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 3, r, "1.0.0." + std::to_string(r)) + Notify(100 + r, "02:55:04.900.605", "AllReduce", -1, remote[r]));
  DiagnoseResult res = Run();
  ASSERT_FALSE(res.findings.empty());
  EXPECT_EQ(res.findings[0].fault, "waits_own_stream");
  EXPECT_EQ(Roots(res.findings[0]), (std::vector<int64_t>{2}));
}

TEST_F(JobDir, NotifyCycleNamesNoRoot) {
  const char* remote[] = {"1", "2", "0"};
  for (int r = 0; r < 3; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 3, r, "1.0.0." + std::to_string(r)) + Notify(100 + r, "02:55:04.900.605", "AllReduce", -1, remote[r]));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "wait_cycle");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cls, "consistency");
  EXPECT_TRUE(Roots(*f).empty());
  EXPECT_EQ(f->ranks.size(), 3u);
  EXPECT_EQ(Find(res, "waits_own_stream"), nullptr);
}

TEST_F(JobDir, NotifySilentRankIsTheRoot) {
  for (int r = 0; r < 3; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 3, r, "1.0.0." + std::to_string(r)) +
              (r == 1 ? std::string() : Notify(100 + r, "02:55:04.900.605", "AllReduce", 3, "1")));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "notify_silent_rank");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{1}));
}

std::string RootInfoFail(int pid, const std::string& time) {
  return Line("ERROR", pid, time, "[Recv][ClusterInfoMsg]receive msg length from fdhandle failed, ret[9]");
}

const std::string kRootComm = "51.38.67.143%enp189s0f0_60004_4_1711621428426055";

TEST_F(JobDir, RootInfoAllFailFastBlamesTheRootRank) {
  for (int r = 4; r < 7; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 8, r, "1.0.0." + std::to_string(r), kRootComm) + RootInfoFail(100 + r, "10:25:50.589.711"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "rootinfo_root");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cls, "connection");
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{0}));
  EXPECT_EQ(f->ranks[0].host, "51.38.67.143");
}

TEST_F(JobDir, RootInfoLateReporter) {
  for (int r = 4; r < 7; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 8, r, "1.0.0." + std::to_string(r), kRootComm) +
              RootInfoFail(100 + r, r == 5 ? "10:28:50.000.000" : "10:25:50.589.711"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "late_reporter");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{5}));
  EXPECT_EQ(Find(res, "rootinfo_root"), nullptr);
}

TEST_F(JobDir, RootInfoSilentRank) {
  for (int r = 4; r < 8; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 8, r, "1.0.0." + std::to_string(r), kRootComm) +
              (r == 7 ? std::string() : RootInfoFail(100 + r, "10:25:50.589.711")));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "rootinfo_silent_rank");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{7}));
}

TEST_F(JobDir, RootInfoRankThatNeverConnected) {
  const std::string comm = "51.38.67.141%enp189s0f0_60004_4_1711521369616458";
  Write("w/plog-parser-100-1.log",
        SetupLine(100, 0, 4, 0, "1.0.0.0", comm) +
            Line("ERROR", 100, "06:38:09.616.883", "[Get][Connection]topo exchange server get socket timeout! timeout[120 s]") +
            Line("ERROR", 100, "06:38:09.616.908",
                 "[TopoInfoExchangeServer][DisplayConnectionedRank]connected rankinfo[LINE 0]: "
                 "[0000000000000000],[0000000000000002],[0000000000000003];"));
  for (int r = 2; r < 4; ++r)
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 4, r, "1.0.0." + std::to_string(r), comm) + RootInfoFail(100 + r, "06:38:12.326.054"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "rank_never_connected");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{1}));
}

TEST_F(JobDir, SocketChainEndsAtTheRankThatWaitsOnNobody) {
  // rank 0 waits on rank 1 (table), rank 1 on rank 2 (P2P physical id 2); rank 2 printed nothing.
  Write("w/plog-100_20240408010000000.log",
        SetupLine(100, 0, 3, 0, "1.0.0.0") +
            Line("ERROR", 100, "01:00:01.000.000", "   |  1.0.0.1(1)   |  16666  |   1.0.0.0(0)   |  0  |  client  | time out |"));
  Write("w/plog-101_20240408010000000.log",
        SetupLine(101, 1, 3, 1, "1.0.0.1") +
            Line("ERROR", 101, "01:00:02.000.000",
                 "[Wait][P2PConnected]connected p2p timeout, timeout:130 s. local logicDevid:1, remote physic id:2."));
  Write("w/plog-102_20240408010000000.log", SetupLine(102, 2, 3, 2, "1.0.0.2"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "wait_chain");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cls, "connection");
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{2}));
}

TEST_F(JobDir, SocketRanksNamingEachOtherAreBothRoots) {
  Write("w/plog-100_20240408010000000.log",
        SetupLine(100, 0, 2, 0, "1.0.0.0") +
            Line("ERROR", 100, "01:00:01.000.000", "   |  1.0.0.1(1)   |   1.0.0.0(0)   |  server  | no connect |"));
  Write("w/plog-101_20240408010000000.log",
        SetupLine(101, 1, 2, 1, "1.0.0.1") +
            Line("ERROR", 101, "01:00:00.500.000", "   |  1.0.0.0(0)   |   1.0.0.1(1)   |  client  | no connect |"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "wait_chain");
  ASSERT_NE(f, nullptr);
  std::vector<int64_t> roots = Roots(*f);
  std::sort(roots.begin(), roots.end());
  EXPECT_EQ(roots, (std::vector<int64_t>{0, 1}));
}

TEST(RankLines, PidOfFileName) {
  EXPECT_EQ(vigil::diagnose::Job::PidOfFileName("w/run/plog/plog-1365_20250805194545930.log"), 1365);
  EXPECT_EQ(vigil::diagnose::Job::PidOfFileName("w/plog-parser-69402-1.log"), 69402);
  EXPECT_EQ(vigil::diagnose::Job::PidOfFileName("w/debug/device-3/device-1365_20250806230906733.log"), 1365);
  // A device's own log (device-<id>/device-<id>_...) outside debug/ is no process's.
  EXPECT_EQ(vigil::diagnose::Job::PidOfFileName("slog/dev-os-3/device-0/device-0_20230607152210099.log"), -1);
  EXPECT_EQ(vigil::diagnose::Job::PidOfFileName("w/train.log"), -1);
}

TEST_F(JobDir, TransportChainEndsAtTheRankWithoutItsOwnError) {
  auto setup = [](int pid, int rank, const std::string& server, int phy) {
    return Line("INFO", pid, "01:00:00.000.000",
                "[HCCL_TRACE]SetupAgent rankNum[3], rank[" + std::to_string(rank) + "], rootInfo identifier[" + kComm +
                    "], server[" + server + "%eth0], logicDevId[" + std::to_string(phy) + "], phydevId[" +
                    std::to_string(phy) + "], deviceIp[" + server + "1]");
  };
  auto transport = [](int pid, const std::string& time, const std::string& peer) {
    return Line("ERROR", pid, time,
                "[Create][DestLink]Transport init error! createLink para:rank[443]-localUserrank[443]-localIpAddr[], "
                "dst_rank[0]-remoteUserrank[0]-remoteIpAddr[" + peer + "], machineType[1], linkMode[1], tag[AllGather_g]");
  };
  Write("w0/plog-100_20240408010000000.log",
        setup(100, 0, "1.1.1.1", 0) + Line("ERROR", 100, "01:00:09.000.000", "[Recv][RaSocket]errNo[0x0d] recv fail"));
  Write("w1/plog-101_20240408010000000.log", setup(101, 1, "2.2.2.2", 1) + transport(101, "01:00:08.000.000", "1.1.1.1/0"));
  Write("w2/plog-102_20240408010000000.log", setup(102, 2, "3.3.3.3", 2) + transport(102, "01:00:07.000.000", "2.2.2.2/1"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "wait_chain");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->code, "EI0009");
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{0}));
}

TEST_F(JobDir, SocketChainToAPeerWithoutLogsNamesTheLastRankSeen) {
  Write("w/plog-100_20240408010000000.log",
        SetupLine(100, 1, 2, 0, "1.0.0.1") +
            Line("ERROR", 100, "01:00:01.000.000", "   |  9.9.9.9(0)   |   1.0.0.1(1)   |  client  | no connect |"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "wait_chain");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{1}));
  EXPECT_NE(f->title.find("9.9.9.9"), std::string::npos) << f->title;
}

TEST_F(JobDir, AicpuNotifyWaitNamesTheAwaitedRank) {
  auto init = [](int pid, int rank, int dev) {
    return Line("INFO", pid, "01:00:00.000.000",
                "hcclCommInitInfo:commId[hccl-1-5-1754394529-hccl_world_group], rank[" + std::to_string(rank) +
                    "], totalRanks[2], serverId[%bond4.24], deviceType[4],logicDevId[" + std::to_string(dev) +
                    "], identifier[group_name_17271]");
  };
  Write("w0/run/plog/plog-1382_20250805194601414.log", init(1382, 0, 11));
  Write("w1/run/plog/plog-1365_20250805194545930.log",
        init(1365, 1, 3) + Line("ERROR", 1365, "02:00:00.000.000", "[Op]some host error"));
  // The device-side log of pid 1365 prints the AICPU scheduler's pid.
  Write("w1/debug/device-3/device-1365_20250806230906733.log",
        Line("ERROR", 5375, "01:59:00.000.000",
             "[TaskException]base information is streamId:149, sqid:153, type:NOTIFY WAIT, localRank:1, "
             "remoteRank:0, taskId:26064") +
            Line("ERROR", 5375, "01:59:00.000.100",
                 "[TaskException]opData information is tag:worldCommSendRecv_2_1_group_name_17271, "
                 "group:group_name_17271, opIndex:39013693, "));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "aicpu_wait_chain");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{0}));
  EXPECT_EQ(res.job.processes.size(), 2u);  // the device log joined its host process
}

TEST_F(JobDir, DeviceErrorBeforeTheTimeoutsBeatsTheCycle) {
  const char* remote[] = {"1", "2", "0"};
  for (int r = 0; r < 3; ++r) {
    std::string early = r == 1 ? "[ERROR] RUNTIME(101,python3):2024-04-08-02:23:48.824.435 [task_info.cc:1754]75380 "
                                 "PreCheckTaskErr:[FINAL][FINAL]Kernel task happen error, retCode=0x26, [aicore exception].\n"
                               : "";
    Write("w/plog-parser-" + std::to_string(100 + r) + "-1.log",
          SetupLine(100 + r, r, 3, r, "1.0.0." + std::to_string(r)) + early +
              Notify(100 + r, "02:55:04.900.605", "AllReduce", -1, remote[r]));
  }
  DiagnoseResult res = Run();
  ASSERT_FALSE(res.findings.empty());
  EXPECT_EQ(res.findings[0].fault, "error_before_timeouts");
  EXPECT_EQ(res.findings[0].cls, "device");
  EXPECT_EQ(Roots(res.findings[0]), (std::vector<int64_t>{1}));
  const Finding* cycle = Find(res, "wait_cycle");
  ASSERT_NE(cycle, nullptr);  // still described, below the cause
  EXPECT_LT(cycle->score, res.findings[0].score);
}

TEST_F(JobDir, SocketFailuresSpreadOverTheConnectTimeoutBlameTheLastRank) {
  // Both ranks name each other, but rank 1 failed 10 minutes after rank 0: it came late.
  Write("w/plog-100_20240408010000000.log",
        SetupLine(100, 0, 2, 0, "1.0.0.0") +
            Line("ERROR", 100, "01:00:01.000.000", "   |  1.0.0.1(1)   |   1.0.0.0(0)   |  server  | no connect |"));
  Write("w/plog-101_20240408010000000.log",
        SetupLine(101, 1, 2, 1, "1.0.0.1") +
            Line("ERROR", 101, "01:10:01.000.000", "   |  1.0.0.0(0)   |   1.0.0.1(1)   |  client  | no connect |"));
  DiagnoseResult res = Run();
  const Finding* f = Find(res, "late_reporter");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{1}));
  EXPECT_EQ(Find(res, "wait_chain"), nullptr);
}

TEST_F(JobDir, AnEarlierRunsProcessIsNotASilentRank) {
  // Rank 1's plog of an earlier run sits next to this run's: only this run's process counts.
  Write("w/plog-90_20240407010000000.log",
        Line("INFO", 90, "00:00:00.000.000",
             "[HCCL_TRACE]SetupAgent rankNum[2], rank[1], rootInfo identifier[" + kComm +
                 "], server[10.1.1.1%eth0], logicDevId[1], phydevId[1], deviceIp[1.0.0.1]"));
  for (int r = 0; r < 2; ++r)
    Write("w/plog-" + std::to_string(100 + r) + "_20240408010000000.log",
          SetupLine(100 + r, r, 2, r, "1.0.0." + std::to_string(r)) +
              Notify(100 + r, "02:55:04.900.605", "AllReduce", r == 1 ? 2 : 3, std::to_string(1 - r)));
  DiagnoseResult res = Run();
  EXPECT_EQ(Find(res, "notify_silent_rank"), nullptr);
  const Finding* f = Find(res, "index_mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(Roots(*f), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace vigil::diagnose
