// The decoders the fuzz targets call, as the library uses them: ParseRankTable (LoadRankTable's
// parser, with a host resolver instead of DNS), the rendezvous hello and table decoders, and the
// link handshake's reply decoder.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_server.h"
#include "diagnose/flight_recorder.h"
#include "bootstrap/root_info.h"
#include "transport/handshake.h"

namespace vigil {
namespace {

using bootstrap::RankInfo;
using bootstrap::RankTable;

const char* const kNamedTable = R"({"status": "completed", "version": "1.0", "server_count": "2",
  "server_list": [
    {"server_id": "alpha", "device": [{"device_id": "0", "device_ip": "192.168.1.8", "rank_id": "1"}]},
    {"server_id": "10.0.0.9", "device": [{"device_id": "1", "device_ip": "192.168.1.9", "rank_id": "0"}]}]})";

bool KnowsAlpha(const std::string& name, std::string* ipv4) {
  if (name != "alpha") return false;
  *ipv4 = "10.0.0.7";
  return true;
}
bool KnowsNothing(const std::string&, std::string*) { return false; }

TEST(FuzzSeams, ParseRankTableResolvesNamesThroughTheResolver) {
  RankTable t;
  std::string error;
  ASSERT_EQ(bootstrap::ParseRankTable(kNamedTable, "t.json", &t, &error, KnowsAlpha), HCCL_SUCCESS)
      << error;
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].server_id, "10.0.0.9");
  EXPECT_EQ(t.ranks[1].server_id, "10.0.0.7");
  EXPECT_EQ(t.ranks[1].device_ip, "192.168.1.8");
}

TEST(FuzzSeams, ParseRankTableNamesTheUnresolvedServer) {
  RankTable t;
  std::string error;
  EXPECT_EQ(bootstrap::ParseRankTable(kNamedTable, "t.json", &t, &error, KnowsNothing),
            HCCL_E_PARA);
  EXPECT_NE(error.find("t.json"), std::string::npos) << error;
  EXPECT_NE(error.find("server_list[0].server_id"), std::string::npos) << error;
  EXPECT_NE(error.find("[alpha]"), std::string::npos) << error;
}

TEST(FuzzSeams, ParseRankTableOneUnknownServerIsThisHost) {
  const std::string one = R"({"status": "completed", "version": "1.0", "server_list": [
    {"server_id": "SERVER_ID_SV1", "device": [{"device_id": 0, "rank_id": 0}]}]})";
  RankTable t;
  std::string error;
  ASSERT_EQ(bootstrap::ParseRankTable(one, "t.json", &t, &error, KnowsNothing), HCCL_SUCCESS)
      << error;
  EXPECT_EQ(t.ranks.at(0).server_id, "127.0.0.1");
}

TEST(FuzzSeams, LoadRankTableReadsWhatParseRankTableParses) {
  const std::string table = R"({"status": "completed", "version": "2.0", "rank_count": 2,
    "rank_list": [{"rank_id": 1, "device_id": 3, "server_id": "10.1.0.2"},
                  {"rank_id": 0, "device_id": 2, "host_ip": "10.1.0.1"}]})";
  const std::string path = ::testing::TempDir() + "fuzz_seams_rank_table.json";
  std::ofstream(path) << table;
  RankTable from_file, from_text;
  std::string e1, e2;
  ASSERT_EQ(bootstrap::LoadRankTable(path, &from_file, &e1), HCCL_SUCCESS) << e1;
  ASSERT_EQ(bootstrap::ParseRankTable(table, path, &from_text, &e2), HCCL_SUCCESS) << e2;
  ASSERT_EQ(from_file.ranks.size(), 2u);
  ASSERT_EQ(from_text.ranks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(from_file.ranks[i].server_id, from_text.ranks[i].server_id);
    EXPECT_EQ(from_file.ranks[i].device_id, from_text.ranks[i].device_id);
  }
  std::remove(path.c_str());
  EXPECT_EQ(bootstrap::LoadRankTable(path, &from_file, &e1), HCCL_E_PARA);
  EXPECT_NE(e1.find("cannot open"), std::string::npos) << e1;
}

RankInfo Rank(uint32_t rank, uint32_t nranks) {
  RankInfo r;
  r.rank = rank;
  r.nranks = nranks;
  r.host_ip = "10.0.0.1";
  r.host_id = "host-a";
  r.data_port = 60001;
  r.pid = 4242 + rank;
  r.device = static_cast<int32_t>(rank);
  r.transport = "tcp";
  r.op_check = "on";
  return r;
}

TEST(FuzzSeams, RendezvousHelloDecodesWhatARankSends) {
  wire::Writer w;
  w.Str("10.0.0.1%eth0_60000_0_1");
  bootstrap::rdv::PutRankInfo(&w, Rank(3, 8));
  std::string id;
  RankInfo got;
  ASSERT_TRUE(bootstrap::rdv::DecodeHello(w.data().data(), w.size(), &id, &got));
  EXPECT_EQ(id, "10.0.0.1%eth0_60000_0_1");
  EXPECT_EQ(got.rank, 3u);
  EXPECT_EQ(got.host_id, "host-a");
  EXPECT_EQ(got.op_check, "on");
  EXPECT_FALSE(bootstrap::rdv::DecodeHello(w.data().data(), w.size() - 1, &id, &got));
}

TEST(FuzzSeams, RendezvousTableNeedsEveryRankInOrder) {
  auto table = [](std::vector<uint32_t> ranks) {
    wire::Writer w;
    w.U32(static_cast<uint32_t>(ranks.size()));
    for (uint32_t r : ranks) bootstrap::rdv::PutRankInfo(&w, Rank(r, 3));
    return w.data();
  };
  std::vector<RankInfo> all;
  const auto good = table({0, 1, 2});
  ASSERT_TRUE(bootstrap::rdv::DecodeTable(good.data(), good.size(), 3, &all));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].pid, 4244u);
  std::vector<RankInfo> untouched;
  EXPECT_FALSE(bootstrap::rdv::DecodeTable(good.data(), good.size(), 4, &untouched));
  EXPECT_FALSE(bootstrap::rdv::DecodeTable(good.data(), good.size() - 1, 3, &untouched));
  const auto swapped = table({0, 2, 1});
  EXPECT_FALSE(bootstrap::rdv::DecodeTable(swapped.data(), swapped.size(), 3, &untouched));
  EXPECT_TRUE(untouched.empty());
  // A count far beyond the bytes stops at the end of the payload.
  wire::Writer huge;
  huge.U32(0xffffffffu);
  EXPECT_FALSE(bootstrap::rdv::DecodeTable(huge.data().data(), huge.size(), 0xffffffffu, &untouched));
}

TEST(FuzzSeams, HandshakeReplyDecodesWhatTheAcceptorSends) {
  transport::Reply rep;
  rep.status = HCCL_E_PARA;
  rep.message = "no such communicator";
  rep.pid = 77;
  rep.doorbell_fd = 5;
  const std::vector<uint8_t> framed = transport::EncodeReply(rep);
  ASSERT_GT(framed.size(), transport::kHeaderBytes);
  const uint8_t* payload = framed.data() + transport::kHeaderBytes;
  const size_t len = framed.size() - transport::kHeaderBytes;
  transport::Reply got;
  ASSERT_TRUE(transport::DecodeReply(payload, len, &got));
  EXPECT_EQ(got.status, static_cast<uint32_t>(HCCL_E_PARA));
  EXPECT_EQ(got.message, "no such communicator");
  EXPECT_EQ(got.pid, 77u);
  EXPECT_EQ(got.doorbell_fd, 5u);
  EXPECT_FALSE(transport::DecodeReply(payload, len - 1, &got));
}

TEST(FuzzFindings, HandshakeReplyStatusOutOfEnumRangeIsInternal) {
  transport::Reply rep;
  rep.status = 0xdeadbeefu;
  const std::vector<uint8_t> framed = transport::EncodeReply(rep);
  transport::Reply got;
  ASSERT_TRUE(transport::DecodeReply(framed.data() + transport::kHeaderBytes,
                                     framed.size() - transport::kHeaderBytes, &got));
  EXPECT_EQ(got.status, static_cast<uint32_t>(HCCL_E_INTERNAL));
}

// Found by fuzz_rendezvous: an error answer's code was cast to HcclResult whatever its value,
// undefined behaviour for values the enum cannot hold. Such a code now reads as HCCL_E_INTERNAL.
TEST(FuzzFindings, RendezvousErrorCodeOutOfEnumRange) {
  wire::Writer w;
  w.U32(838860809u);
  w.Str("boom");
  w.Str("");
  w.U32(0);
  wire::Reader r(w.data().data(), w.size());
  const bootstrap::rdv::ErrorReply e = bootstrap::rdv::GetError(&r);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(e.code, HCCL_E_INTERNAL);
  EXPECT_EQ(e.message, "boom");
  wire::Writer ok;
  ok.U32(HCCL_E_TIMEOUT);
  ok.Str("late");
  ok.Str("EI0006");
  ok.U32(0);
  wire::Reader r2(ok.data().data(), ok.size());
  EXPECT_EQ(bootstrap::rdv::GetError(&r2).code, HCCL_E_TIMEOUT);
}

// Found by fuzz_flight_json: a number beyond int64_t (a float such as 6.7e123, or an unsigned
// above 2^63 - 1) was cast as is, undefined behaviour. It now reads as unknown.
TEST(FuzzFindings, FlightDumpNumbersOutOfRangeReadAsUnknown) {
  const std::string dump = R"({"schema": "vigil.flight/1", "pid": 8100, "comms": [
    {"identifier": "g", "rank": 6.7e123, "nranks": 18446744073709551615, "device": -1e300,
     "ops": [{"index": 1e19, "op": "AllReduce", "count": 256.0, "enter": 1e300,
              "leave": 1761300000000900, "state": "done"}]}]})";
  std::vector<diagnose::FlightDump> dumps;
  std::vector<diagnose::RankTableDevice> table;
  ASSERT_TRUE(diagnose::ParseJsonFile(dump, 0, &dumps, &table));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].rank, -1);
  EXPECT_EQ(dumps[0].rank_size, -1);
  EXPECT_EQ(dumps[0].device, -1);
  EXPECT_EQ(dumps[0].pid, 8100);
  ASSERT_EQ(dumps[0].ops.size(), 1u);
  EXPECT_EQ(dumps[0].ops[0].index, -1);
  EXPECT_EQ(dumps[0].ops[0].count, 256);
  EXPECT_EQ(dumps[0].ops[0].enter, diagnose::kNoTime);
  EXPECT_EQ(dumps[0].ops[0].leave, 1761300000000900);
}

}  // namespace
}  // namespace vigil
