// The plog forms of data/formats/plog_lines.json (a rank's identity, whom it waits for) and
// data/formats/fault_lines.json (the records of a fault), read by plog_forms.cc; and the
// knowledge base's pattern vocabulary (FieldPattern).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "diagnose/kb_matcher.h"
#include "diagnose/line_parser.h"
#include "diagnose/plog_forms.h"
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
  const auto& errors = PlogFormErrors();
  EXPECT_TRUE(errors.empty()) << errors.front();
}

// What loading rejects: a row no prefilter needle covers, an unknown field or kind, a bad regex.
TEST(PlogLines, LoadingRejectsWhatItCannotUse) {
  auto errors = [](const char* text) {
    std::string all;
    for (const std::string& e : FormsFileErrors(text)) all += e + "\n";
    return all;
  };
  EXPECT_EQ(errors(R"J({"prefilter": ["bar"], "fault_lines": [
      {"name": "a", "kind": "error", "needles": ["foo bar"]},
      {"name": "b", "kind": "error", "needles": ["x", "y"], "requires": [["bar1", "bar2"]]},
      {"name": "c", "kind": "error", "level": "error", "needles": ["zzz"]}]})J"), "");
  EXPECT_NE(errors(R"J({"prefilter": ["bar"], "fault_lines": [{"name": "d", "kind": "error", "needles": ["foo"]}]})J")
                .find("d: no needle of the prefilter"), std::string::npos);
  EXPECT_NE(errors(R"J({"prefilter": ["bar"], "fault_lines": [{"name": "e", "kind": "error", "needles": ["bar", "x"]}]})J")
                .find("e: no needle of the prefilter"), std::string::npos);
  EXPECT_NE(errors(R"J({"prefilter": ["f"], "fault_lines": [{"name": "g", "kind": "error", "needles": ["f"],
                       "patterns": ["(?P<no_field>x)"]}]})J").find("no field 'no_field'"), std::string::npos);
  EXPECT_NE(errors(R"J({"prefilter": ["f"], "fault_lines": [{"name": "h", "kind": "nope", "needles": ["f"]}]})J")
                .find("unknown kind 'nope'"), std::string::npos);
  EXPECT_NE(errors(R"J({"prefilter": ["f"], "fault_lines": [{"name": "i", "kind": "error", "needles": ["f"],
                       "patterns": ["(unclosed"]}]})J").find("i: "), std::string::npos);
  EXPECT_EQ(errors("{not json"), "not valid JSON\n");
}

Event ParseRecordLine(Level level, std::string_view content, std::string_view module = "HCCL") {
  std::string line = std::string(level == Level::kError ? "[ERROR] " : "[INFO] ") + std::string(module) +
                     "(123,python3):2025-06-19-09:26:21.563.624 " + std::string(content);
  Record r;
  EXPECT_TRUE(ParseRecord(line, &r)) << line;
  Event ev;
  OpEntry op;
  OpKey key;
  EXPECT_EQ(ParseRecordContent(r, Loc{}, &ev, &op, &key), Parsed::kEvent) << line;
  return ev;
}

// Every row's example is of its own form: read as a whole plog record (ERROR for rows read in
// ERROR records only, of the row's module), it gives the row's kind and its set name.
TEST(PlogLines, EveryExampleGivesItsKind) {
  for (const char* table : {"plog_lines", "fault_lines"}) {
    std::ifstream f(std::string(VIGIL_DIAG_FIXTURES) + "/../../../data/formats/" + table + ".json");
    ASSERT_TRUE(f.good()) << table;
    std::stringstream text;
    text << f.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str());
    ASSERT_GE(j[table].size(), 10u);
    for (const auto& row : j[table]) {
      ASSERT_TRUE(row.contains("example")) << row["name"];
      Level level = row.value("level", "any") == "error" ? Level::kError : Level::kInfo;
      if (std::string(table) == "fault_lines") level = Level::kError;  // most are ERROR records
      Event ev = ParseRecordLine(level, row["example"].get<std::string>(), row.value("module", "HCCL"));
      EXPECT_EQ(EventKindName(ev.kind), row["kind"].get<std::string>()) << row["name"];
      if (row.contains("set") && row["set"].contains("name")) {
        EXPECT_EQ(ev.name, row["set"]["name"].get<std::string>()) << row["name"];
      }
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

// The fault forms (fault_lines.json): the fields the rules read, from HCCL's own line formats.
TEST(FaultLines, ClusterExceptionAndHeartbeatCqe) {
  Event ev = ParseRecordLine(Level::kError,
      "[task_exception_handler.cc:610] [835695][TaskExecStage][HeartbeatAbnormal]Cluster Exception "
      "Location[IP/ID]:[127.10.0.1/1], Arrival Time:[Thu Oct 23 17:25:58 2025], Discoverer:[127.10.0.1/2], "
      "ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. Process has exited.");
  EXPECT_EQ(ev.kind, EventKind::kClusterException);
  EXPECT_EQ(ev.crimer, "127.10.0.1/1");
  EXPECT_EQ(ev.informer, "127.10.0.1/2");
  EXPECT_EQ(ev.status, "Heartbeat Lost Occurred");
  EXPECT_EQ(ev.detail, "1. Process has exited");
  EXPECT_NE(ev.aux_time, kNoTime);

  ev = ParseRecordLine(Level::kError,
      "[heartbeat.cc:1229] [2040666][TaskExecStage][HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], "
      "time:[2025-09-15 08:38:12.776654],localInfo{server[127.10.0.1],deviceId[1],deviceIp[127.11.0.1]}, "
      "remoteIP{server[127.10.0.2],deviceId[3],deviceIp[127.11.0.2]}");
  EXPECT_EQ(ev.kind, EventKind::kCqeDetail);
  EXPECT_EQ(ev.status, "12");
  EXPECT_EQ(ev.local_server, "127.10.0.1");
  EXPECT_EQ(ev.local_device, "1");
  EXPECT_EQ(ev.local_ip, "127.11.0.1");
  EXPECT_EQ(ev.remote_server, "127.10.0.2");
  EXPECT_EQ(ev.remote_device, "3");
  EXPECT_EQ(ev.remote_ip, "127.11.0.2");
  EXPECT_NE(ev.aux_time, kNoTime);
}

TEST(FaultLines, TaskExceptionReports) {
  Event ev = ParseRecordLine(Level::kError,
      "[task_exception_handler.cc:908] [2111667][TaskExecStage][Timeout][Host]Task run failed, base information "
      "is streamID:[2], taskID[21], tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], AlgType(level 0-1-2):"
      "[fullmesh-ring-NHR].");
  EXPECT_EQ(ev.kind, EventKind::kTaskBase);
  EXPECT_EQ(ev.stage, "Timeout");
  EXPECT_EQ(ev.engine, "Host");
  EXPECT_EQ(ev.stream, 2);
  EXPECT_EQ(ev.task, 21);
  EXPECT_EQ(ev.tag, "AllReduce_127.10.0.1%enp_60000_0_1761275812718970");
  EXPECT_EQ(ev.detail, "fullmesh-ring-NHR");

  ev = ParseRecordLine(Level::kError,
      "[TaskExecStage][Timeout][Host]Task run failed, para information is notify id:[0x48], src[0x10], dst[0x20], "
      "size[0x400], remote rank:[local], link type:[ON_CHIP]");
  EXPECT_EQ(ev.kind, EventKind::kTaskPara);
  EXPECT_EQ(ev.remote, "local");  // a wait on its own other stream
  EXPECT_EQ(ev.remote_rank, -1);
  EXPECT_EQ(ev.src, 0x10u);
  EXPECT_EQ(ev.size, 0x400u);

  ev = ParseRecordLine(Level::kError, "[TaskExecStage][RunFailed][Device]Task run failed, something else");
  EXPECT_EQ(ev.kind, EventKind::kError);
  EXPECT_EQ(ev.stage, "RunFailed");
}

TEST(FaultLines, ConsistencyChecksNameTheParameter) {
  Event ev = ParseRecordLine(Level::kError,
      "[ParameterConflict] CMD information ranktable check fail, ranktable_content local[11], remote[12].");
  EXPECT_EQ(ev.kind, EventKind::kParamCheckFail);
  EXPECT_EQ(ev.name, "ranktable_content");
  EXPECT_EQ(ev.local, "11");
  EXPECT_EQ(ev.remote, "12");
  ev = ParseRecordLine(Level::kError, "[ParameterConflict]CMD information cclbufferSize check fail. local[2], remote[1]");
  EXPECT_EQ(ev.name, "cclbufferSize");
  ev = ParseRecordLine(Level::kError, "CRC for ranktable check fail. local[1], remote[2]");
  EXPECT_EQ(ev.name, "ranktable CRC");

  ev = ParseRecordLine(Level::kError,
      "op inconsistent in communicator[G] index[2]: local rank[1] AllGather count[256] dataType[float32] tag[T1]; "
      "remote rank[0] AllReduce count[128] dataType[int8] tag[T0]");
  EXPECT_EQ(ev.kind, EventKind::kOpInconsistent);
  EXPECT_EQ(ev.rank, 1);
  EXPECT_EQ(ev.local, "AllGather");
  EXPECT_EQ(ev.count, 256);
  EXPECT_EQ(ev.dtype, "float32");
  EXPECT_EQ(ev.tag, "T1");
  EXPECT_EQ(ev.remote_rank, 0);
  EXPECT_EQ(ev.name, "AllReduce");
  EXPECT_EQ(ev.remote.rfind("remote rank[0] AllReduce", 0), 0u) << ev.remote;
}

TEST(FaultLines, LinkSetupFailures) {
  Event ev = ParseRecordLine(Level::kError,
      "[Create][DestLink]Transport init error! createLink para:rank[4]-localUserrank[4]-localIpAddr[10.0.0.1], "
      "dst_rank[5]-remoteUserrank[5]-remoteIpAddr[10.0.0.2/3]");
  EXPECT_EQ(ev.kind, EventKind::kTransportError);
  EXPECT_EQ(ev.remote_server, "10.0.0.2");
  EXPECT_EQ(ev.remote_device, "3");

  ev = ParseRecordLine(Level::kError, "[Get][Connection]topo exchange server get socket timeout! timeout[120 s]");
  EXPECT_EQ(ev.kind, EventKind::kTopoTimeout);
  EXPECT_EQ(ev.detail, "server");
  ev = ParseRecordLine(Level::kError,
      "[Wait][AllClientSocketEstab] client : device[2] rank[2] get socket timeout, total connected num[3], "
      "need connect rankNum[4]");
  EXPECT_EQ(ev.detail, "agent");
  EXPECT_EQ(ev.connected, 3);
  EXPECT_EQ(ev.need, 4);

  ev = ParseRecordLine(Level::kError,
      "[InitGroupStage][RanktableDetect] TopoDetect ERROR occur !!! fault_type[1], fault_info[\"Failed to connect "
      "agent[1,3,5,7,]\"]");
  EXPECT_EQ(ev.kind, EventKind::kMissingRanks);
  EXPECT_EQ(ev.ranks, (std::vector<int64_t>{1, 3, 5, 7}));

  // Runtime records are read only from the RUNTIME module.
  ev = ParseRecordLine(Level::kError,
      "fftsplus task execute failed, dev_id=0, stream_id=50, task_id=21, err_type=4[fftsplus sdma error]", "RUNTIME");
  EXPECT_EQ(ev.kind, EventKind::kSdmaRuntime);
  EXPECT_EQ(ev.stream, 50);
  EXPECT_EQ(ev.detail, "fftsplus sdma error");
  ev = ParseRecordLine(Level::kError, "fftsplus task execute failed, dev_id=0, stream_id=50, err_type=4[fftsplus sdma error]");
  EXPECT_EQ(ev.kind, EventKind::kError);
}

// The coded screen messages' fields (screen_fields.json), from CANN's texts.
Event Screen(std::string code, std::string_view msg) {
  Event ev;
  ev.code = std::move(code);
  ParseScreenFields(msg, &ev);
  return ev;
}

TEST(ScreenFields, EveryCodeReadsItsMessage) {
  Event ev = Screen("EI0013",
                    "An error CQE occurred during operator execution. Local information: server 127.0.0.1, device ID 0, "
                    "device IP 127.10.0.1. Peer information: server 127.0.0.2, device ID 1, device IP 127.10.0.2.");
  EXPECT_EQ(ev.local_server, "127.0.0.1");
  EXPECT_EQ(ev.local_device, "0");
  EXPECT_EQ(ev.local_ip, "127.10.0.1");
  EXPECT_EQ(ev.remote_server, "127.0.0.2");
  EXPECT_EQ(ev.remote_device, "1");
  EXPECT_EQ(ev.remote_ip, "127.10.0.2");

  ev = Screen("EI0012",
              "SDMA memory copy task exception occurred. Remote rank: [4800]. Base information: [streamID:[351], "
              "taskID[5], taskType[Memcpy], tag[], AlgType(level 0-1-2):[null-null-null].]. Task information: "
              "[src:[0x12c180000000], dst:[0x12c041800000], size:[0x80], link type:[HCCS], remote rank:[0]].");
  EXPECT_EQ(ev.remote_rank, 4800);
  EXPECT_EQ(ev.stream, 351);
  EXPECT_EQ(ev.task, 5);
  EXPECT_EQ(ev.src, 0x12c180000000u);
  EXPECT_EQ(ev.size, 0x80u);

  ev = Screen("EI0019", "Failed to bind the IP port. Reason: [Address already in use]. IP: [127.0.0.1], port: [60000].");
  EXPECT_EQ(ev.ip, "127.0.0.1");
  EXPECT_EQ(ev.port, 60000);
  ev = Screen("EI0019", "Failed to enable listening for the host network adapter socket.Reason: The IP address "
                        "192.168.1.100 and port 50001 have already been bound.");
  EXPECT_EQ(ev.port, 50001);

  ev = Screen("EI0015", "Failed to collect cluster information of the communicator based on rootInfo detection. "
                        "List of unconnected ranks: \"[16,17,18,]\".");
  EXPECT_EQ(ev.ranks, (std::vector<int64_t>{16, 17, 18}));

  ev = Screen("EI9001", "Failed to allocate the communication buffer of [4294967296] bytes (HCCL_BUFFSIZE [2048]MB x 2) "
                        "for communicator [grp0].");
  EXPECT_EQ(ev.value, "2048");
  EXPECT_EQ(ev.group, "grp0");

  ev = Screen("EI0005", "The arguments for collective communication are inconsistent between ranks: ccl_op AllReduce, "
                        "group hccl_world_group, parameter count, local end 1024, remote end 2048.");
  EXPECT_EQ(ev.tag, "AllReduce");
  EXPECT_EQ(ev.group, "hccl_world_group");
  EXPECT_EQ(ev.name, "count");
  EXPECT_EQ(ev.local, "1024");
  EXPECT_EQ(ev.remote, "2048");

  // What the message names replaces what the event held (the title in name); the rest stays.
  ev = Event();
  ev.code = "EI0005";
  ev.name = "Invalid_Argument";
  ev.tag = "kept";
  ParseScreenFields("inconsistent between ranks, group g, parameter count, local end 1, remote end 2.", &ev);
  EXPECT_EQ(ev.name, "count");
  EXPECT_EQ(ev.tag, "kept");
  EXPECT_EQ(ev.group, "g");
  ev = Screen("EI0001", "Remote rank: [3]");
  EXPECT_EQ(ev.remote_rank, -1);
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
