#include "common/env_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

namespace vigil {
namespace {

class EnvConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every variable the loader knows (from its own echo list), plus the log-root fallbacks.
    EnvConfig probe;
    probe.Load(nullptr);
    for (const auto& e : probe.echoes) names_.push_back(e.name);
    names_.push_back("ASCEND_WORK_PATH");
    for (const auto& n : names_) unsetenv(n.c_str());
    if (const char* home = std::getenv("HOME")) saved_home_ = home;
  }
  void TearDown() override {
    for (const auto& n : names_) unsetenv(n.c_str());
    setenv("HOME", saved_home_.c_str(), 1);
  }

  // Loads with one variable set; returns whether Load succeeded.
  bool LoadWith(const char* name, const char* value, EnvConfig* cfg, std::string* error) {
    setenv(name, value, 1);
    const bool ok = cfg->Load(error);
    unsetenv(name);
    return ok;
  }

  const EnvConfig::Echo* FindEcho(const EnvConfig& cfg, const std::string& name) {
    for (const auto& e : cfg.echoes) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  std::vector<std::string> names_;
  std::string saved_home_ = "/tmp";
};

TEST_F(EnvConfigTest, Defaults) {
  EnvConfig cfg;
  std::string error = "stale";
  ASSERT_TRUE(cfg.Load(&error));
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(cfg.exec_timeout_s, 1836u);
  EXPECT_EQ(cfg.connect_timeout_s, 120u);
  EXPECT_EQ(cfg.buffsize_mb, 200u);
  EXPECT_FALSE(cfg.entry_log);
  EXPECT_FALSE(cfg.diagnose_enable);
  EXPECT_EQ(cfg.qps_per_connection, 1u);
  EXPECT_EQ(cfg.rdma_timeout, 20u);
  EXPECT_EQ(cfg.rdma_retry_cnt, 7u);
  EXPECT_EQ(cfg.algo, "");
  EXPECT_EQ(cfg.if_ip, "");
  EXPECT_EQ(cfg.socket_ifname, "");
  EXPECT_EQ(cfg.if_base_port, 60000u);
  EXPECT_TRUE(cfg.whitelist_disable);
  EXPECT_EQ(cfg.global_log_level, 3);
  EXPECT_FALSE(cfg.slog_print_to_stdout);
  EXPECT_EQ(cfg.device_count, 8u);
  EXPECT_EQ(cfg.device_memory, 0u);
  EXPECT_EQ(cfg.log_file_max_bytes, 20ull << 20);
  EXPECT_EQ(cfg.heartbeat_lost_s, 30u);
  EXPECT_TRUE(cfg.heartbeat_enable);
  EXPECT_EQ(cfg.transport, "");
  EXPECT_EQ(cfg.fault, "");
  EXPECT_TRUE(cfg.invalid.empty());
  for (const auto& e : cfg.echoes) EXPECT_FALSE(e.from_env) << e.name;
}

TEST_F(EnvConfigTest, JobKeyIsCheckedAndNeverEchoedByValue) {
  const char* key = "00112233445566778899AABBCCDDEEFF";
  EnvConfig cfg;
  std::string error;
  ASSERT_TRUE(LoadWith("VIGIL_JOB_KEY", key, &cfg, &error)) << error;
  EXPECT_EQ(cfg.job_key, key);
  const auto* echo = FindEcho(cfg, "VIGIL_JOB_KEY");
  ASSERT_NE(echo, nullptr);
  EXPECT_TRUE(echo->from_env);
  EXPECT_EQ(echo->value, "(set)");
  EnvConfig bad;
  EXPECT_FALSE(LoadWith("VIGIL_JOB_KEY", "0011223344556677zz", &bad, &error));
  EXPECT_NE(error.find("VIGIL_JOB_KEY"), std::string::npos) << error;
  EXPECT_EQ(error.find("0011223344556677zz"), std::string::npos) << error;
  EXPECT_TRUE(bad.job_key.empty());
}

TEST_F(EnvConfigTest, LogRootPrecedence) {
  EnvConfig cfg;
  setenv("HOME", "/home/someone", 1);
  ASSERT_TRUE(cfg.Load(nullptr));
  EXPECT_EQ(cfg.log_path, "/home/someone/ascend/log");
  setenv("ASCEND_WORK_PATH", "/work/x", 1);
  ASSERT_TRUE(cfg.Load(nullptr));
  EXPECT_EQ(cfg.log_path, "/work/x/log");
  setenv("ASCEND_PROCESS_LOG_PATH", "/logs/here", 1);
  ASSERT_TRUE(cfg.Load(nullptr));
  EXPECT_EQ(cfg.log_path, "/logs/here");
}

struct VarCase {
  const char* name;
  std::vector<std::pair<const char*, std::function<bool(const EnvConfig&)>>> good;
  std::vector<const char*> bad;
};

TEST_F(EnvConfigTest, EachVariableGoodAndBad) {
  const std::vector<VarCase> cases = {
      {"HCCL_EXEC_TIMEOUT",
       {{"0", [](const EnvConfig& c) { return c.exec_timeout_s == 0; }},
        {"2147483647", [](const EnvConfig& c) { return c.exec_timeout_s == 2147483647u; }},
        {"300", [](const EnvConfig& c) { return c.exec_timeout_s == 300; }}},
       {"2147483648", "-1", "abc", "10s", "1.5", "99999999999999999999999"}},
      {"HCCL_CONNECT_TIMEOUT",
       {{"1", [](const EnvConfig& c) { return c.connect_timeout_s == 1; }},
        {"7200", [](const EnvConfig& c) { return c.connect_timeout_s == 7200; }}},
       {"0", "7201", "x"}},
      {"HCCL_BUFFSIZE",
       {{"1", [](const EnvConfig& c) { return c.buffsize_mb == 1; }},
        {"1024", [](const EnvConfig& c) { return c.buffsize_mb == 1024; }}},
       {"0", "-5", "200M", "4294967296"}},
      {"HCCL_ENTRY_LOG_ENABLE",
       {{"1", [](const EnvConfig& c) { return c.entry_log; }},
        {"0", [](const EnvConfig& c) { return !c.entry_log; }}},
       {"2", "true", "yes"}},
      {"HCCL_DIAGNOSE_ENABLE",
       {{"1", [](const EnvConfig& c) { return c.diagnose_enable; }}},
       {"on", "-1"}},
      {"HCCL_RDMA_QPS_PER_CONNECTION",
       {{"1", [](const EnvConfig& c) { return c.qps_per_connection == 1; }},
        {"32", [](const EnvConfig& c) { return c.qps_per_connection == 32; }}},
       {"0", "33", "eight"}},
      {"HCCL_RDMA_TIMEOUT",
       {{"5", [](const EnvConfig& c) { return c.rdma_timeout == 5; }},
        {"20", [](const EnvConfig& c) { return c.rdma_timeout == 20; }}},
       {"4", "21"}},
      {"HCCL_RDMA_RETRY_CNT",
       {{"1", [](const EnvConfig& c) { return c.rdma_retry_cnt == 1; }},
        {"7", [](const EnvConfig& c) { return c.rdma_retry_cnt == 7; }}},
       {"0", "8"}},
      {"HCCL_ALGO",
       {{"level0:NA;level1:ring", [](const EnvConfig& c) { return c.algo == "level0:NA;level1:ring"; }}},
       {}},
      {"HCCL_DETERMINISTIC",
       {{"false", [](const EnvConfig& c) { return c.deterministic == 0; }},
        {"TRUE", [](const EnvConfig& c) { return c.deterministic == 1; }},
        {"strict", [](const EnvConfig& c) { return c.deterministic == 2; }}},
       {"1", "yes", "on"}},
      {"HCCL_IF_IP",
       {{"127.0.0.1", [](const EnvConfig& c) { return c.if_ip == "127.0.0.1"; }},
        {"::1", [](const EnvConfig& c) { return c.if_ip == "::1"; }}},
       {"127.0.0", "localhost", "300.1.1.1"}},
      {"HCCL_SOCKET_IFNAME",
       {{"^=eth0", [](const EnvConfig& c) { return c.socket_ifname == "^=eth0"; }}},
       {}},
      {"HCCL_IF_BASE_PORT",
       {{"0", [](const EnvConfig& c) { return c.if_base_port == 0; }},
        {"65504", [](const EnvConfig& c) { return c.if_base_port == 65504; }}},
       {"65505", "-1", "port"}},
      {"HCCL_WHITELIST_DISABLE",
       {{"0", [](const EnvConfig& c) { return !c.whitelist_disable; }}},
       {"2"}},
      {"ASCEND_PROCESS_LOG_PATH",
       {{"/tmp/x", [](const EnvConfig& c) { return c.log_path == "/tmp/x"; }}},
       {}},
      {"ASCEND_GLOBAL_LOG_LEVEL",
       {{"0", [](const EnvConfig& c) { return c.global_log_level == 0; }},
        {"4", [](const EnvConfig& c) { return c.global_log_level == 4; }}},
       {"5", "-1", "debug"}},
      {"ASCEND_SLOG_PRINT_TO_STDOUT",
       {{"1", [](const EnvConfig& c) { return c.slog_print_to_stdout; }}},
       {"2"}},
      {"VIGIL_DEVICE_COUNT",
       {{"1", [](const EnvConfig& c) { return c.device_count == 1; }},
        {"1024", [](const EnvConfig& c) { return c.device_count == 1024; }}},
       {"0", "1025"}},
      {"VIGIL_DEVICE_MEMORY",
       {{"4096", [](const EnvConfig& c) { return c.device_memory == 4096; }},
        {"64K", [](const EnvConfig& c) { return c.device_memory == 64ull << 10; }},
        {"512m", [](const EnvConfig& c) { return c.device_memory == 512ull << 20; }},
        {"2G", [](const EnvConfig& c) { return c.device_memory == 2ull << 30; }},
        {"3GB", [](const EnvConfig& c) { return c.device_memory == 3ull << 30; }},
        {"0", [](const EnvConfig& c) { return c.device_memory == 0; }}},
       {"1T", "M", "-1G", "1.5G", "99999999999G"}},
      {"VIGIL_LOG_FILE_SIZE",
       {{"4K", [](const EnvConfig& c) { return c.log_file_max_bytes == 4096; }},
        {"1024", [](const EnvConfig& c) { return c.log_file_max_bytes == 1024; }}},
       {"1023", "0", "big"}},
      {"VIGIL_HEARTBEAT_LOST_TIMEOUT",
       {{"1", [](const EnvConfig& c) { return c.heartbeat_lost_s == 1; }},
        {"3600", [](const EnvConfig& c) { return c.heartbeat_lost_s == 3600; }}},
       {"0", "3601"}},
      {"VIGIL_HEARTBEAT",
       {{"0", [](const EnvConfig& c) { return !c.heartbeat_enable; }}},
       {"off"}},
      {"VIGIL_TCP_EAGER",
       {{"0", [](const EnvConfig& c) { return !c.tcp_eager; }},
        {"1", [](const EnvConfig& c) { return c.tcp_eager; }}},
       {"yes"}},
      {"VIGIL_TRANSPORT",
       {{"shm", [](const EnvConfig& c) { return c.transport == "shm"; }},
        {"tcp", [](const EnvConfig& c) { return c.transport == "tcp"; }}},
       {"rdma", "TCP"}},
      {"VIGIL_FAULT",
       {{"rank1:kill@allreduce:3", [](const EnvConfig& c) { return c.fault == "rank1:kill@allreduce:3"; }}},
       {}},
  };
  const EnvConfig defaults = [] {
    EnvConfig d;
    d.Load(nullptr);
    return d;
  }();
  for (const auto& vc : cases) {
    ASSERT_NE(FindEcho(defaults, vc.name), nullptr) << vc.name << " is not echoed";
    for (const auto& [value, check] : vc.good) {
      EnvConfig cfg;
      std::string error;
      EXPECT_TRUE(LoadWith(vc.name, value, &cfg, &error)) << vc.name << "=" << value << ": " << error;
      EXPECT_TRUE(check(cfg)) << vc.name << "=" << value;
      const auto* echo = FindEcho(cfg, vc.name);
      ASSERT_NE(echo, nullptr);
      EXPECT_TRUE(echo->from_env) << vc.name;
    }
    for (const char* value : vc.bad) {
      EnvConfig cfg;
      std::string error;
      EXPECT_FALSE(LoadWith(vc.name, value, &cfg, &error)) << vc.name << "=" << value;
      // The message names the variable, the value and what is accepted.
      EXPECT_NE(error.find(vc.name), std::string::npos) << error;
      EXPECT_NE(error.find(std::string("[") + value + "]"), std::string::npos) << error;
      EXPECT_NE(error.find("expected"), std::string::npos) << error;
      ASSERT_EQ(cfg.invalid.size(), 1u) << vc.name << "=" << value;
      EXPECT_EQ(cfg.invalid[0].name, vc.name);
      EXPECT_EQ(cfg.invalid[0].value, value);
      // The bad variable keeps its default; the echo says so.
      const auto* echo = FindEcho(cfg, vc.name);
      ASSERT_NE(echo, nullptr);
      EXPECT_FALSE(echo->from_env);
      EXPECT_EQ(echo->value, FindEcho(defaults, vc.name)->value) << vc.name << "=" << value;
    }
  }
}

TEST_F(EnvConfigTest, DfsConfig) {
  EnvConfig cfg;
  std::string error;
  ASSERT_TRUE(cfg.Load(&error));
  EXPECT_EQ(cfg.connection_fault_detection_s, 20u);
  EXPECT_TRUE(cfg.cluster_heartbeat);
  EXPECT_TRUE(cfg.stuck_detection);
  EXPECT_TRUE(cfg.inconsistent_check);

  ASSERT_TRUE(LoadWith("HCCL_DFS_CONFIG",
                       "connection_fault_detection_time:0, cluster_heartbeat:off,"
                       "stuck_detection:off,inconsistent_check:off,task_monitor_interval:100",
                       &cfg, &error))
      << error;
  EXPECT_EQ(cfg.connection_fault_detection_s, 0u);
  EXPECT_FALSE(cfg.cluster_heartbeat);
  EXPECT_FALSE(cfg.stuck_detection);
  EXPECT_FALSE(cfg.inconsistent_check);
  EXPECT_TRUE(FindEcho(cfg, "HCCL_DFS_CONFIG")->from_env);

  ASSERT_TRUE(LoadWith("HCCL_DFS_CONFIG", "inconsistent_check:first", &cfg, &error)) << error;
  EXPECT_TRUE(cfg.inconsistent_check);
  ASSERT_TRUE(LoadWith("HCCL_DFS_CONFIG", "connection_fault_detection_time:7200", &cfg, &error));
  EXPECT_EQ(cfg.connection_fault_detection_s, 7200u);

  for (const char* bad : {"connection_fault_detection_time:10", "cluster_heartbeat:maybe",
                          "unknown_key:1", "cluster_heartbeat", "task_monitor_interval:-1",
                          "connection_fault_detection_time:7201"}) {
    EXPECT_FALSE(LoadWith("HCCL_DFS_CONFIG", bad, &cfg, &error)) << bad;
    EXPECT_NE(error.find("HCCL_DFS_CONFIG"), std::string::npos) << error;
    // A bad spec changes nothing: every switch keeps its default.
    EXPECT_EQ(cfg.connection_fault_detection_s, 20u) << bad;
    EXPECT_TRUE(cfg.cluster_heartbeat) << bad;
  }
}

TEST_F(EnvConfigTest, OpRetry) {
  EnvConfig cfg;
  std::string error;
  ASSERT_TRUE(cfg.Load(&error));
  EXPECT_FALSE(cfg.op_retry.any());  // HCCL's default: off at every level
  EXPECT_EQ(cfg.op_retry.max_cnt, 1u);
  EXPECT_EQ(cfg.op_retry.hold_ms, 5000u);
  EXPECT_EQ(cfg.op_retry.interval_ms, 1000u);
  EXPECT_EQ(FindEcho(cfg, "HCCL_OP_RETRY_ENABLE")->value, "L0:0,L1:0,L2:0");
  EXPECT_EQ(FindEcho(cfg, "HCCL_OP_RETRY_PARAMS")->value,
            "MaxCnt:1,HoldTime:5000,IntervalTime:1000");

  ASSERT_TRUE(LoadWith("HCCL_OP_RETRY_ENABLE", "L1:1, L2:0", &cfg, &error)) << error;
  EXPECT_FALSE(cfg.op_retry.l0);
  EXPECT_TRUE(cfg.op_retry.l1);
  EXPECT_TRUE(cfg.op_retry.covers(false));
  EXPECT_FALSE(cfg.op_retry.covers(true));
  EXPECT_TRUE(FindEcho(cfg, "HCCL_OP_RETRY_ENABLE")->from_env);
  ASSERT_TRUE(LoadWith("HCCL_OP_RETRY_PARAMS", "MaxCnt:3,HoldTime:0,IntervalTime:60000", &cfg,
                       &error))
      << error;
  EXPECT_EQ(cfg.op_retry.max_cnt, 3u);
  EXPECT_EQ(cfg.op_retry.hold_ms, 0u);
  EXPECT_EQ(cfg.op_retry.interval_ms, 60000u);

  for (const char* bad : {"L1:2", "L3:1", "L1", "on"}) {
    EXPECT_FALSE(LoadWith("HCCL_OP_RETRY_ENABLE", bad, &cfg, &error)) << bad;
    EXPECT_NE(error.find("HCCL_OP_RETRY_ENABLE"), std::string::npos) << error;
    EXPECT_FALSE(cfg.op_retry.any()) << bad;
  }
  for (const char* bad : {"MaxCnt:0", "MaxCnt:11", "HoldTime:60001", "IntervalTime:-1", "Foo:1"}) {
    EXPECT_FALSE(LoadWith("HCCL_OP_RETRY_PARAMS", bad, &cfg, &error)) << bad;
    EXPECT_NE(error.find("HCCL_OP_RETRY_PARAMS"), std::string::npos) << error;
    EXPECT_EQ(cfg.op_retry.max_cnt, 1u) << bad;
  }
}

TEST_F(EnvConfigTest, RangeInMessage) {
  EnvConfig cfg;
  std::string error;
  ASSERT_FALSE(LoadWith("HCCL_RDMA_QPS_PER_CONNECTION", "33", &cfg, &error));
  EXPECT_EQ(error, "HCCL_RDMA_QPS_PER_CONNECTION value [33] is invalid: expected an integer in [1, 32]");
  ASSERT_FALSE(LoadWith("HCCL_BUFFSIZE", "abc", &cfg, &error));
  EXPECT_EQ(error, "HCCL_BUFFSIZE value [abc] is invalid: expected an integer >= 1");
  EXPECT_EQ(cfg.buffsize_mb, 200u);
}

TEST_F(EnvConfigTest, SeveralBadValuesAllReported) {
  setenv("HCCL_BUFFSIZE", "x", 1);
  setenv("HCCL_CONNECT_TIMEOUT", "0", 1);
  setenv("HCCL_EXEC_TIMEOUT", "100", 1);
  EnvConfig cfg;
  std::string error;
  EXPECT_FALSE(cfg.Load(&error));
  EXPECT_EQ(cfg.invalid.size(), 2u);
  EXPECT_NE(error.find("HCCL_BUFFSIZE"), std::string::npos);
  EXPECT_NE(error.find("HCCL_CONNECT_TIMEOUT"), std::string::npos);
  EXPECT_EQ(cfg.exec_timeout_s, 100u);  // good ones still apply
}

TEST_F(EnvConfigTest, EmptyAndPaddedValues) {
  EnvConfig cfg;
  std::string error;
  EXPECT_TRUE(LoadWith("HCCL_BUFFSIZE", "", &cfg, &error));  // empty = unset
  EXPECT_EQ(cfg.buffsize_mb, 200u);
  EXPECT_FALSE(FindEcho(cfg, "HCCL_BUFFSIZE")->from_env);
  EXPECT_TRUE(LoadWith("HCCL_BUFFSIZE", " 300 ", &cfg, &error));
  EXPECT_EQ(cfg.buffsize_mb, 300u);
}

TEST_F(EnvConfigTest, EchoFormat) {
  setenv("HCCL_BUFFSIZE", "200", 1);
  EnvConfig cfg;
  ASSERT_TRUE(cfg.Load(nullptr));
  EXPECT_EQ(FormatEnvEcho(*FindEcho(cfg, "HCCL_BUFFSIZE")),
            "HCCL_BUFFSIZE set by environment to [200]M");
  EXPECT_EQ(FormatEnvEcho(*FindEcho(cfg, "HCCL_EXEC_TIMEOUT")),
            "HCCL_EXEC_TIMEOUT set by default to [1836]s");
  EXPECT_EQ(FormatEnvEcho(*FindEcho(cfg, "HCCL_CONNECT_TIMEOUT")),
            "HCCL_CONNECT_TIMEOUT set by default to [120]s");
  EXPECT_EQ(FormatEnvEcho(*FindEcho(cfg, "HCCL_RDMA_QPS_PER_CONNECTION")),
            "HCCL_RDMA_QPS_PER_CONNECTION set by default to [1]");
  EXPECT_EQ(FormatEnvEcho(*FindEcho(cfg, "HCCL_IF_IP")), "HCCL_IF_IP is not set");
  EXPECT_EQ(FormatEnvEcho({"X", "1", true, "s"}), "X set by environment to [1]s");
}

TEST_F(EnvConfigTest, EchoOrderIsStable) {
  EnvConfig a, b;
  a.Load(nullptr);
  setenv("HCCL_BUFFSIZE", "7", 1);
  b.Load(nullptr);
  ASSERT_EQ(a.echoes.size(), b.echoes.size());
  for (size_t i = 0; i < a.echoes.size(); ++i) EXPECT_EQ(a.echoes[i].name, b.echoes[i].name);
  EXPECT_EQ(a.echoes[0].name, "HCCL_EXEC_TIMEOUT");
}

TEST_F(EnvConfigTest, ProcessWideEnvAndReload) {
  setenv("HCCL_BUFFSIZE", "123", 1);
  ReloadEnvForTesting();
  EXPECT_EQ(Env().buffsize_mb, 123u);
  EXPECT_TRUE(EnvLoadError().empty());
  setenv("HCCL_BUFFSIZE", "bad", 1);
  ReloadEnvForTesting();
  EXPECT_EQ(Env().buffsize_mb, 200u);  // default kept for the bad variable
  EXPECT_NE(EnvLoadError().find("HCCL_BUFFSIZE"), std::string::npos);
  unsetenv("HCCL_BUFFSIZE");
  ReloadEnvForTesting();
  EXPECT_TRUE(EnvLoadError().empty());
}

}  // namespace
}  // namespace vigil
