// The wrappers real users' logs come in: a UTF-8 byte-order mark, a terminal's colours, a
// timestamping pipe (moreutils ts), a job step's task label, a compressed file's name. The
// verdict must be the one the bare lines give.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "diagnose/diagnose.h"
#include "diagnose/scanner.h"
#include "diagnose/text_util.h"
#include "diagnose/walker.h"
#include "verdicts.h"

namespace vigil::diagnose {
namespace {

// vllm-project/vllm-ascend#4725's listen failure.
const std::string kListen =
    "[ERROR] HCCL(60570,):2025-12-04-14:46:07.911.312 [hccl_socket.cc:106] [60570][HcclSocket]"
    "[Listen] socket type[0], listen on ip[192.2.2.195] and specific port[16666] fail.\n";

std::string FirstTitle(const std::string& text) {
  auto f = Verdicts(text);
  return f.empty() ? "(none)" : f[0].title;
}

TEST(DiagnoseWrappers, TheVerdictOfTheBareLinesSurvivesThem) {
  const std::string bare = FirstTitle(kListen);
  ASSERT_NE(bare.find("16666"), std::string::npos) << bare;
  EXPECT_EQ(FirstTitle("\xEF\xBB\xBF" + kListen), bare);                  // byte-order mark
  EXPECT_EQ(FirstTitle("\x1b[31m[ERROR]\x1b[0m" + kListen.substr(7)), bare);  // colours
  EXPECT_EQ(FirstTitle("Jan 02 03:04:05 " + kListen), bare);              // ts
  EXPECT_EQ(FirstTitle("Jan 02 03:04:05.123456 " + kListen), bare);
  // docker's json-file: the line JSON-escaped, its newline inside the string.
  std::string json = "{\"log\":\"" + kListen.substr(0, kListen.size() - 1) +
                     "\\n\",\"stream\":\"stderr\",\"time\":\"2025-12-04T14:46:07.9Z\"}\n";
  EXPECT_EQ(FirstTitle(json), bare) << json;
}

TEST(DiagnoseWrappers, AJsonLogLineIsUnescaped) {
  std::string text;
  ASSERT_TRUE(UnwrapJsonLog(R"({"log":"a \"b\" \\ c\u001b[0m\td\n","stream":"stderr"})", &text));
  EXPECT_EQ(text, "a \"b\" \\ c\x1b[0m\td");
  EXPECT_FALSE(UnwrapJsonLog(R"({"log":"cut off)", &text));
  EXPECT_FALSE(UnwrapJsonLog(R"({"msg":"x"})", &text));
}

TEST(DiagnoseWrappers, AColouredCodeIsStillTheCode) {
  // afd-plugin-229's screen line with the code in colour.
  auto f = Verdicts(
      "[PID: 1234] 2025-01-02-03:04:05.678.901 Communication_Error_Get_Socket(\x1b[1;31mEI0006"
      "\x1b[0m): Getting socket times out. Reason: Remote Rank did not send the data in time.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "EI0006");
}

TEST(DiagnoseWrappers, ATaskLabelYieldsToTheRankTheLineNames) {
  // `srun -l` labels each line with its task; torch_npu's own prefix says the rank.
  auto f = Verdicts(
      "3: [ERROR] 2024-08-18-22:15:47 (PID:23232, Device:0, RankID:0) ERR02002 DIST invalid "
      "type\n");
  ASSERT_FALSE(f.empty());
  bool rank0 = false;
  for (const RankRef& r : f[0].ranks) rank0 = rank0 || r.rank == 0;
  EXPECT_TRUE(rank0) << f[0].title;
}

TEST(DiagnoseWrappers, ACompressedLogIsALog) {
  EXPECT_TRUE(LooksLikeLog("case/logs/npu_log.txt.gz"));
  EXPECT_TRUE(LooksLikeLog("case/logs/worker.out.gz"));
  EXPECT_FALSE(LooksLikeLog("case/logs/model.bin.gz"));
}

TEST(DiagnoseWrappers, ARecordBehindTextNoPrefixKnowsIsStillARecord) {
  // HCCL's guide's stuck report (hicann/hccl docs, heartbeat fault pages) behind the stamps and
  // marks of journald, a container runtime's pod log, a log shipper's JSON, a bullet, grep -rn,
  // and after a progress bar's redraws and a truncated copy's NULs.
  const std::string s =
      "[ERROR]HCCL(1219039,all_reduce_test):2025-10-23-21:05:09.859.568[task_exception_handler.cc:"
      "610] [1219039][TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:"
      "[127.10.0.1/1], Arrival Time:[Thu Oct 23 21:03:19 2025], ExceptionType:[Stuck Occurred], "
      "Possible Reason:1.Host process is stuck, 2.Device task is stuck";
  auto fault = [](const std::string& text) {
    auto f = Verdicts(text);
    return f.empty() ? std::string("(none)") : f[0].fault;
  };
  const std::string bare = fault(s + "\n");
  ASSERT_EQ(bare, "process_stuck");
  for (const std::string& wrapped :
       {"Jan 02 03:04:05.123456 node-1 python[1234]: " + s + "\n",
        "2025-01-02T03:04:05.123456789Z stderr F " + s + "\n",
        "{\"line\":\"" + s + "\",\"timestamp\":\"1735787045123456789\"}\n", "- " + s + "\n",
        "logs/rank0/plog-1.log:12:" + s + "\n",
        "\rLoading:  40%|####      | 4/10 [00:01<00:02]\r" + s + "\n",
        std::string(64, '\0') + s + "\n"}) {
    EXPECT_EQ(fault(wrapped), bare) << wrapped.substr(0, 60);
  }
}

TEST(DiagnoseWrappers, HtmlTextFromAWebPageIsDecoded) {
  // The TLS check line of HCCL's guide as a saved web page shows it.
  auto f = Verdicts(
      "[ERROR] HCCL(94774,all_reduce_test):2025-10-27-11:51:32.570.490 [topoinfo_exchange_agent.cc:"
      "831] [94774][InitGroupStage][RanktableCheck] Value Disable for config &quot;tls&quot; is "
      "invalid.&nbsp;Expected Value:&quot;All ranks are consistent.&quot;\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.tls_inconsistent");
}

TEST(DiagnoseWrappers, LineNumbersAreNotTaskLabels) {
  // A copy with its line numbers ("10: ", "11: ", ...): not ranks; the line's own RankID is.
  auto f = Verdicts(
      "10: RuntimeError: Tensors must be contiguous\n"
      "11: [ERROR] 2024-08-18-22:15:47 (PID:23232, Device:0, RankID:0) ERR02002 DIST invalid type\n"
      "12: [ERROR] 2024-08-18-22:15:47 (PID:23232, Device:0, RankID:0) ERR02002 DIST invalid "
      "type\n");
  ASSERT_FALSE(f.empty());
  for (const RankRef& r : f[0].ranks) EXPECT_TRUE(r.rank == 0 || r.rank < 0) << f[0].title;
}

TEST(DiagnoseWrappers, MoreNamesOfLogsInAFolder) {
  for (const char* name : {"a.LOG", "b.Log", "c.stdout", "d.stderr", "e.txt.bak", "g.log-20250102"})
    EXPECT_TRUE(LooksLikeLog(std::string("case/") + name)) << name;
  EXPECT_FALSE(LooksLikeLog("case/model.bin"));
  EXPECT_FALSE(LooksLikeLog("case/weights.bak"));
}

TEST(DiagnoseWrappers, Utf16FilesAreRead) {
  // Windows Notepad's "Unicode" (UTF-16LE with its mark) and a big-endian file without one.
  const std::string s =
      "[ERROR] HCCL(1009464,all_reduce_test):2025-03-15-00:41:48.470.172 [hccl_socket.cc:110] "
      "[1009464][InitGroupStage][RanktableDetect] socket type[0], listen on ip[192.168.2.199] and "
      "specific port[16666] fail.\n";
  const std::string dir = ::testing::TempDir() + "vigil-utf16-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const bool be : {false, true}) {
    std::string bytes = be ? "" : "\xFF\xFE";
    for (char c : s) {
      if (be) bytes.push_back('\0');
      bytes.push_back(c);
      if (!be) bytes.push_back('\0');
    }
    const std::string path = dir + (be ? "/be.log" : "/le.log");
    std::ofstream(path, std::ios::binary) << bytes;
    DiagnoseOptions o;
    o.inputs = {path};
    DiagnoseResult r = Diagnose(o);
    ASSERT_FALSE(r.findings.empty()) << path;
    EXPECT_EQ(r.findings[0].fault, "port_in_use") << path;
    ASSERT_FALSE(r.findings[0].evidence.empty());
    EXPECT_NE(r.findings[0].evidence[0].text.find("port[16666]"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(DiagnoseWrappers, ALauncherPrefixBehindUnknownTextStillNamesTheRank) {
  // vllm-project/vllm-ascend#1579's worker line behind a bullet, a journald stamp, a chat header;
  // and the older "(VllmWorker TP3 pid=...)" form.
  const std::string line =
      "(VllmWorker rank=6 pid=296) ERROR 07-17 12:09:52 [multiproc_executor.py:470] RuntimeError: "
      "create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:102 HCCL function error: "
      "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error "
      "code is 7\n";
  auto ranks = [](const std::string& text) {
    std::string s;
    auto f = Verdicts(text);
    if (!f.empty())
      for (const RankRef& r : f[0].ranks) s += std::to_string(r.rank) + " ";
    return s;
  };
  ASSERT_EQ(ranks(line), "6 ");
  for (const std::string& wrapped :
       {"- " + line, "Jan 02 03:04:05.123456 node-1 python[1234]: " + line,
        "[10:42 AM] Alice Chen: " + line, "1735787045.123 " + line,
        "2025-01-02T03:04:05.123456789Z stderr F " + line, "node-1 python[1234]: " + line})
    EXPECT_EQ(ranks(wrapped), "6 ") << wrapped.substr(0, 50);
  std::string tp = line;
  tp.replace(0, tp.find(')') + 1, "(VllmWorker TP3 pid=296)");
  EXPECT_EQ(ranks(tp), "3 ");
}

TEST(DiagnoseWrappers, ALineATerminalWrappedInsideParenthesesIsReadWhole) {
  // OpenRLHF/OpenRLHF#265: the store's address was cut from its port ("no log records" before).
  auto f = Verdicts(
      "(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has "
      "timed out after 1800s while trying to connect to (172.17.0.2\n"
      ", 44737).\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.c10d_store_timeout") << f[0].title;
  // A traceback's indented next line, or a record, is never glued to an open parenthesis.
  f = Verdicts(
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py\", line 79, in w(\n"
      "    return func(*args, **kwargs))\n"
      "RuntimeError: Distributed package doesn't have NCCL built in\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.nccl_backend_on_npu") << f[0].title;
}

TEST(DiagnoseWrappers, ZeroWidthSpacesOfAChatCopyAreNotPartOfTheLine) {
  // A chat app puts U+200B after '[' and '(' to let long lines wrap: the line (the HCCL guide's
  // EI0001 example, hcclug_000030) still names its code, rank and process.
  const std::string zw = "\xE2\x80\x8B";
  const std::string line =
      "[" + zw + "ERROR] 2024-04-20-10:42:34 (" + zw +
      "PID:2090824, Device:0, RankID:0) ERR02200 DIST call hccl api failed. EI0001: "
      "2024-04-20-10:42:34.020.677 Environment variable [" +
      zw +
      "HCCL_EXEC_TIMEOUT] is invalid. Reason: it should be a number greater than or equal to 1s "
      "and less than or equal to 17340s.\n";
  auto f = Verdicts(line);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "EI0001") << f[0].title;
  EXPECT_TRUE(Names(f[0], 0, "root cause")) << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].pid, 2090824);
}

TEST(DiagnoseWrappers, LinesEndedByCarriageReturnsAloneAreLines) {
  // An old Mac's line ends (or a tool that made them so): every line was one, and only the text
  // after the last carriage return was read.
  const std::string s =
      "[INFO] HCCL(1009464,all_reduce_test):2025-03-15-00:41:48.470.100 [hccl_socket.cc:90] "
      "[1009464]start\r"
      "[ERROR] HCCL(1009464,all_reduce_test):2025-03-15-00:41:48.470.172 [hccl_socket.cc:110] "
      "[1009464][InitGroupStage][RanktableDetect] socket type[0], listen on ip[192.168.2.199] and "
      "specific port[16666] fail.\r"
      "[INFO] HCCL(1009464,all_reduce_test):2025-03-15-00:41:48.470.200 [hccl_socket.cc:120] "
      "[1009464]end\r";
  auto f = Verdicts(s);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].fault, "port_in_use") << f[0].title;
  // From a file, the evidence line is that line alone.
  const std::string dir = ::testing::TempDir() + "vigil-cr-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/mac.log";
  std::ofstream(path, std::ios::binary) << s;
  DiagnoseOptions o;
  o.inputs = {path};
  DiagnoseResult r = Diagnose(o);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].fault, "port_in_use");
  ASSERT_FALSE(r.findings[0].evidence.empty());
  const std::string& text = r.findings[0].evidence[0].text;
  EXPECT_NE(text.find("port[16666]"), std::string::npos) << text;
  EXPECT_EQ(text.find("end"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vigil::diagnose
