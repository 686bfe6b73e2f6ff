// Rank tables whose server_id names the host instead of giving its IPv4 address: the name is
// resolved when the table is loaded and a communicator is made from such a table; a name that
// does not resolve is this host when the table has one server, else an error naming the field.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "acl/acl.h"
#include "bootstrap/root_info.h"
#include "hccl/hccl.h"

namespace {

std::string g_dir;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = g_dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string Table10(const std::string& server_id) {
  return R"({"status":"completed","version":"1.0","server_count":"1","server_list":[{"server_id":")" +
         server_id +
         R"(","device":[{"device_id":"0","device_ip":"192.168.1.8","rank_id":"0"}]}]})";
}

TEST(RankTableHostTest, ServerIdNamesAreResolved) {
  vigil::bootstrap::RankTable table;
  std::string error;
  ASSERT_EQ(vigil::bootstrap::LoadRankTable(Write("named.json", Table10("localhost")), &table,
                                            &error),
            HCCL_SUCCESS)
      << error;
  ASSERT_EQ(table.ranks.size(), 1u);
  EXPECT_EQ(table.ranks[0].server_id, "127.0.0.1");

  // 2.0 rank_list: a name with its host_ip beside it takes the address as given.
  const std::string v2 =
      R"({"status":"completed","version":"2.0","rank_count":"2","rank_list":[)"
      R"({"rank_id":0,"device_id":0,"server_id":"node-a.invalid","host_ip":"127.0.0.1"},)"
      R"({"rank_id":1,"device_id":1,"server_id":"localhost"}]})";
  ASSERT_EQ(vigil::bootstrap::LoadRankTable(Write("v2.json", v2), &table, &error), HCCL_SUCCESS)
      << error;
  EXPECT_EQ(table.ranks[0].server_id, "127.0.0.1");
  EXPECT_EQ(table.ranks[1].server_id, "127.0.0.1");
}

// Two servers, one named `name`, the other 127.0.0.1.
std::string TwoServers(const std::string& name) {
  return R"({"status":"completed","version":"1.0","server_count":"2","server_list":[)"
         R"({"server_id":"127.0.0.1","device":[{"device_id":"0","rank_id":"0"}]},)"
         R"({"server_id":")" +
         name + R"(","device":[{"device_id":"0","rank_id":"1"}]}]})";
}

TEST(RankTableHostTest, AnUnresolvableNameAmongServersIsNamed) {
  vigil::bootstrap::RankTable table;
  std::string error;
  EXPECT_EQ(vigil::bootstrap::LoadRankTable(Write("bad.json", TwoServers("no-such-node.invalid")),
                                            &table, &error),
            HCCL_E_PARA);
  EXPECT_NE(error.find("server_list[1].server_id"), std::string::npos) << error;
  EXPECT_NE(error.find("[no-such-node.invalid] is neither an IPv4 address nor a host name"),
            std::string::npos)
      << error;
  HcclComm comm = nullptr;
  EXPECT_EQ(HcclCommInitClusterInfo((g_dir + "/bad.json").c_str(), 0, &comm), HCCL_E_PARA);
  ASSERT_EQ(vigil::bootstrap::LoadRankTable(Write("good.json", TwoServers("localhost")), &table,
                                            &error),
            HCCL_SUCCESS)
      << error;
  EXPECT_EQ(table.ranks[1].server_id, "127.0.0.1");
}

TEST(RankTableHostTest, TheOneServerOfATableIsThisHost) {
  // HCCL's rank-table sample names its one server "SERVER_ID_SV1".
  vigil::bootstrap::RankTable table;
  std::string error;
  ASSERT_EQ(vigil::bootstrap::LoadRankTable(Write("sv1.json", Table10("SERVER_ID_SV1")), &table,
                                            &error),
            HCCL_SUCCESS)
      << error;
  EXPECT_EQ(table.ranks[0].server_id, "127.0.0.1");
  // 2.0 rank_list naming no server at all (HCCL's rank_table_v2.json sample).
  const std::string v2 =
      R"({"status":"completed","version":"2.0","rank_count":2,"rank_list":[)"
      R"({"rank_id":0,"device_id":0,"level_list":[]},{"rank_id":1,"device_id":1,"level_list":[]}]})";
  ASSERT_EQ(vigil::bootstrap::LoadRankTable(Write("v2none.json", v2), &table, &error),
            HCCL_SUCCESS)
      << error;
  EXPECT_EQ(table.ranks[1].server_id, "127.0.0.1");
  // Some ranks named, one not: which one is missing.
  const std::string v2some =
      R"({"status":"completed","version":"2.0","rank_count":2,"rank_list":[)"
      R"({"rank_id":0,"device_id":0,"server_id":"127.0.0.1"},{"rank_id":1,"device_id":1}]})";
  EXPECT_EQ(vigil::bootstrap::LoadRankTable(Write("v2some.json", v2some), &table, &error),
            HCCL_E_PARA);
  EXPECT_NE(error.find("[rank_list[1].server_id] is missing"), std::string::npos) << error;
}

TEST(RankTableHostTest, CommunicatorFromANamedServer) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  HcclComm comm = nullptr;
  ASSERT_EQ(HcclCommInitClusterInfo(Write("one.json", Table10("localhost")).c_str(), 0, &comm),
            HCCL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  int32_t data[4] = {1, 2, 3, 4};
  ASSERT_EQ(HcclAllReduce(data, data, 4, HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, comm, stream),
            HCCL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(data[3], 4);
  EXPECT_EQ(HcclCommDestroy(comm), HCCL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// A port free now, for rank 0's rendezvous (a rank table needs a fixed HCCL_IF_BASE_PORT).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  char dir[] = "/tmp/vigil-rank-table-host.XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  g_dir = dir;
  setenv("ASCEND_PROCESS_LOG_PATH", dir, 1);
  setenv("HCCL_BUFFSIZE", "1", 1);
  setenv("HCCL_IF_BASE_PORT", std::to_string(FreePort()).c_str(), 1);
  aclInit(nullptr);
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  // The rank tables and logs stay for a look when a test failed; a passing run leaves nothing.
  if (rc == 0) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return rc;
}
