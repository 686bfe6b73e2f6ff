// The plog forms of data/formats/plog_lines.json (a rank's identity, whom it waits for) and the
// pattern vocabulary they share with the knowledge base (FieldPattern).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "diagnose/kb_matcher.h"
#include "diagnose/line_parser.h"
#include "diagnose/rank_lines.h"
#include "diagnose/record.h"

namespace vigil::diagnose {
namespace {

Event Parse(Level level, std::string_view content) {
  Record r;
  r.level = level;
  r.content = content;
  Event ev;
  EXPECT_TRUE(ParseRankLine(r, &ev)) << content;
  return ev;
}

TEST(PlogLines, FormsLoadWithoutErrors) {
  const auto& errors = RankLineErrors();
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// Every row's example is of its own form: read as a whole plog record, it gives the row's kind.
TEST(PlogLines, EveryExampleGivesItsKind) {
  std::ifstream f(std::string(VIGIL_DIAG_FIXTURES) + "/../../../data/formats/plog_lines.json");
  ASSERT_TRUE(f.good());
  std::stringstream text;
  text << f.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str());
  ASSERT_GE(j["plog_lines"].size(), 10u);
  for (const auto& row : j["plog_lines"]) {
    std::string level = row.value("level", "any") == "error" ? "ERROR" : "INFO";
    std::string line = "[" + level + "] HCCL(123,python3):2025-06-19-09:26:21.563.624 " +
                       row["example"].get<std::string>();
    Record r;
    ASSERT_TRUE(ParseRecord(line, &r)) << line;
    Event ev;
    OpEntry op;
    OpKey key;
    ASSERT_EQ(ParseRecordContent(r, Loc{}, &ev, &op, &key), Parsed::kEvent) << row["name"];
    EXPECT_EQ(EventKindName(ev.kind), row["kind"].get<std::string>()) << row["name"];
    if (row.contains("event")) {
      EXPECT_EQ(ev.name, row["event"].get<std::string>()) << row["name"];
    }
  }
}

TEST(PlogLines, IdentityCarriesDeviceIpPhysicalIdAndServer) {
  Event ev = Parse(Level::kInfo,
                   "[HCCL_TRACE]SetupAgent rankNum[8], rank[6], rootInfo identifier[51.38.67.143%eth_60004_4_1], "
                   "server[51.38.67.141%enp189s0f0], logicDevId[2], phydevId[6], deviceIp[192.168.102.203]");
  EXPECT_EQ(ev.kind, EventKind::kRankInfo);
  EXPECT_EQ(ev.name, "setup");
  EXPECT_EQ(ev.rank, 6);
  EXPECT_EQ(ev.rank_size, 8);
  EXPECT_EQ(ev.group, "51.38.67.143%eth_60004_4_1");
  EXPECT_EQ(ev.device, 2);
  EXPECT_EQ(ev.local_device, "6");
  EXPECT_EQ(ev.local_ip, "192.168.102.203");
  EXPECT_EQ(ev.local_server, "51.38.67.141");
  // An unset device IP is no address.
  ev = Parse(Level::kInfo, "SetupAgent rankNum[2], rank[1], logicDevId[3], phydevId[3], deviceIp[0.0.0.0]");
  EXPECT_EQ(ev.local_ip, "");
  EXPECT_EQ(ev.local_device, "3");
}

TEST(PlogLines, HcomInitTakesTheWorldGroupAndItsDevice) {
  Event ev = Parse(Level::kInfo,
                   "[hccl-1-0-1-hccl_world_group][4]hcom init by file success,take time [248118]us, "
                   "rankNum[8], rank[4],server[10.78.130.138], device[5]");
  EXPECT_EQ(ev.name, "hcom_init");
  EXPECT_EQ(ev.group, "hccl_world_group");
  EXPECT_EQ(ev.device, 5);
  EXPECT_EQ(ev.local_device, "5");
  EXPECT_EQ(ev.local_server, "10.78.130.138");
}

TEST(PlogLines, VnicAndWaits) {
  Event ev = Parse(Level::kInfo, "[Start][Vnic]Listen on ip[192.168.2.199], port[16666] sucess, devPhyId[4], devLogicId[1]");
  EXPECT_EQ(ev.name, "vnic");
  EXPECT_EQ(ev.ip, "192.168.2.199");
  EXPECT_EQ(ev.local_device, "4");
  EXPECT_EQ(ev.device, 1);

  ev = Parse(Level::kError, "   |  192.168.2.199(8)   |  16666  |   192.168.2.197(10)   |  0  |  client  | time out |");
  EXPECT_EQ(ev.kind, EventKind::kWaitPeer);
  EXPECT_EQ(ev.detail, "socket");
  EXPECT_EQ(ev.remote_ip, "192.168.2.199");
  EXPECT_EQ(ev.dst_rank, 8);
  EXPECT_EQ(ev.local_ip, "192.168.2.197");
  EXPECT_EQ(ev.src_rank, 10);
  EXPECT_EQ(ev.status, "time out");

  ev = Parse(Level::kError, "[Wait][P2PConnected]connected p2p timeout, timeout:130 s. local logicDevid:0, remote physic id:3.");
  EXPECT_EQ(ev.detail, "p2p");
  EXPECT_EQ(ev.remote_device, "3");

  // An unknown remote rank (HCCL prints 4294967295) is no rank.
  ev = Parse(Level::kError, "[TaskException]base information is streamId:149, type:NOTIFY WAIT, localRank:1, remoteRank:4294967295, taskId:2");
  EXPECT_EQ(ev.detail, "aicpu");
  EXPECT_EQ(ev.rank, 1);
  EXPECT_EQ(ev.remote_rank, -1);

  // Waits are read in ERROR records only.
  Record r;
  r.level = Level::kInfo;
  r.content = "[Wait][P2PConnected]connected p2p timeout, remote physic id:3.";
  EXPECT_FALSE(ParseRankLine(r, &ev));
}

TEST(PlogLines, TimeoutEchoAndCqe) {
  Event ev = Parse(Level::kInfo, "HCCL_CONNECT_TIMEOUT set by environment to [130.0]s");
  EXPECT_EQ(ev.kind, EventKind::kEnv);
  EXPECT_EQ(ev.value, "130");
  EXPECT_TRUE(ev.from_env);
  ev = Parse(Level::kInfo, "HCCL_CONNECT_TIMEOUT set by default to [120]s");
  EXPECT_FALSE(ev.from_env);

  ev = Parse(Level::kError, "cqe error status[12] remoteIP{deviceId[6],deviceIp[2.2.2.2]}");
  EXPECT_EQ(ev.kind, EventKind::kCqeDetail);
  EXPECT_EQ(ev.status, "12");
  EXPECT_EQ(ev.remote_ip, "2.2.2.2");
  EXPECT_EQ(ev.remote_device, "6");
  Record r;
  r.level = Level::kError;
  r.content = "[ROCE CQE ERROR]cqe error status[12], remoteIP:[1.1.1.1]";
  EXPECT_FALSE(ParseRankLine(r, &ev));  // the heartbeat's own CQE line is read elsewhere

  ev = Parse(Level::kError, "connected rankinfo[LINE 0]: [0000000000000000],[0000000000000002];");
  EXPECT_EQ(ev.kind, EventKind::kConnectedRanks);
  EXPECT_EQ(ev.ranks, (std::vector<int64_t>{0, 2}));
}

TEST(FieldPattern, ReadsTheIdentityGroups) {
  FieldPattern p;
  std::string error;
  ASSERT_TRUE(p.Compile("Listen", R"(ip\[(?P<vnic_ip>[^\]]*)\].*phy\[(?P<phy_id>\d+)\].*dev\[(?P<device_ip>[^\]]*)\])"
                        R"(.*size\[(?P<rank_size>\d+)\].*(?P<from_env>env))", &error))
      << error;
  KbFields f;
  ASSERT_TRUE(p.Read("Listen ip[1.2.3.4] phy[7] dev[5.6.7.8] size[16] env", &f));
  EXPECT_EQ(f.vnic_ip, "1.2.3.4");
  EXPECT_EQ(f.phy_id, "7");
  EXPECT_EQ(f.device_ip, "5.6.7.8");
  EXPECT_EQ(f.rank_size, 16);
  EXPECT_TRUE(f.from_env);
  // Without its needle, no read; what is already there is kept.
  KbFields g;
  g.phy_id = "1";
  EXPECT_FALSE(p.Read("ip[1.2.3.4] phy[7]", &g));
  EXPECT_EQ(g.phy_id, "1");
}

// Vigil's shrink line (src/api/vigil_shrink_api.cc): old and new communicator, sizes, the
// survivor's old rank, the excluded ranks and the time it took.
TEST(PlogLines, ShrinkLineCarriesBothCommunicatorsAndTheExcludedRanks) {
  Event ev = Parse(Level::kInfo,
                   "[vigil_shrink_api.cc:206] [418][Shrink]communicator[10.0.0.1%eth0_1_0_9] "
                   "rankSize[8] shrunk to communicator[10.0.0.1%eth0_2_0_9] rankSize[6] by "
                   "rank[7] (new rank[5]): excluded ranks[2,5], coordinator rank[0], "
                   "agreement[12]ms, total[40]ms");
  EXPECT_EQ(ev.kind, EventKind::kShrink);
  EXPECT_EQ(ev.group, "10.0.0.1%eth0_1_0_9");
  EXPECT_EQ(ev.value, "10.0.0.1%eth0_2_0_9");
  EXPECT_EQ(ev.rank_size, 8);
  EXPECT_EQ(ev.rank, 7);
  EXPECT_EQ(ev.ranks, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(ev.elapsed_ms, 40);
}

TEST(FieldPattern, RejectsWhatItCannotRead) {
  FieldPattern p;
  std::string error;
  EXPECT_FALSE(p.Compile("", "", &error));
  EXPECT_NE(error.find("needle or a regex"), std::string::npos);
  EXPECT_FALSE(p.Compile("ab", "(?P<no_such_group>x)", &error));
  EXPECT_NE(error.find("unknown group no_such_group"), std::string::npos);
  EXPECT_FALSE(p.Compile("ab", "(unclosed", &error));
  EXPECT_FALSE(error.empty());
  // A regex alone (no needle) decides by itself.
  ASSERT_TRUE(p.Compile("", R"(server_ip=(?P<server_ip>\S+))", &error));
  KbFields f;
  EXPECT_TRUE(p.Read("x server_ip=10.0.0.1", &f));
  EXPECT_EQ(f.server_ip, "10.0.0.1");
}

}  // namespace
}  // namespace vigil::diagnose
