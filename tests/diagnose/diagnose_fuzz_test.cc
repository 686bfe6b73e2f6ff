// Bounded random-mutation test of the parser and the rules: seed lines mutated 20,000 times
// (byte flips, cuts, splices, bracket and record-start insertions); nothing may crash or hang.
// Deterministic (fixed PRNG seed) so a failure reproduces.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

const std::vector<std::string>& Seeds() {
  static const std::vector<std::string> s = {
      "[INFO] HCCL(686,python):2025-10-23-07:52:59.191.363 [heartbeat.cc:951] "
      "[8970][TaskExecStage][HeartbeatAbnormal]"
      "local rank [127.10.0.1/1]: crimer rank [127.10.0.2/2] status[LOST] by informer rank "
      "[127.10.0.3/3]",
      "[ERROR]HCCL(835695,all_reduce_test):2025-10-23-17:28:06.049.385[task_exception_handler.cc:"
      "610][835695][TaskExecStage]"
      "[HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], Arrival Time:[Thu Oct "
      "23 17:25:58 2025], "
      "Discoverer:[127.10.0.1/2], ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. "
      "Process has exited",
      "[ERROR] HCCL(2111667,all_reduce_test):2025-10-24-11:18:29.597.044 "
      "[task_exception_handler.cc:908] [2111667]"
      "[TaskExecStage][Timeout][Host]Task run failed, base information is streamID:[2], "
      "taskID[21], "
      "tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], AlgType(level "
      "0-1-2):[fullmesh-ring-NHR].",
      "[ERROR] HCCL(2111667,all_reduce_test):2025-10-24-11:18:29.597.054 "
      "[task_exception_handler.cc:771] [2111667]"
      "[TaskExecStage][Timeout][Host]Task run failed, groupRank information is "
      "group:[127.10.0.1%enp_60000_0_1761275812718970], "
      "user define information[], rankSize[4], rankId[2].",
      "[ERROR] HCCL(2111667,all_reduce_test):2025-10-24-11:18:29.597.083 "
      "[task_exception_handler.cc:704] [2111667]"
      "[TaskExecStage][Timeout][Host]Task run failed, opData information is "
      "timeStamp:[2025-10-24-11:16:55.490.253], "
      "deviceId[2], index[21], count[256], reduceType[sum], src[0x12c0c0013000], "
      "dst[0x12c0c0014000], dataType[float32].",
      "[INFO] HCCL(2111667,all_reduce_test):2025-10-24-11:16:52.724.374 [op_base.cc:1292] [2111667]"
      "Entry-HcclCommInitRootInfoInner:ranks[4], rank[2], rootinfo: host ip[127.10.0.1] "
      "port[60000] nicDeploy[1] "
      "identifier[127.10.0.1%enp_60000_0_1761275812718970], deviceLogicId[2]",
      "[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 "
      "[hccl_opbase_atrace_info.cc:56][3017221]Entry-HcclAllReduce: "
      "tag[AllReduce_127.10.0.1%eth_60000_0_1741318944927847], sendBuf[0x1241d3dcdc00], "
      "recvBuf[0x124702f40200], "
      "count[10746295], dataType[float32], op[sum], localRank[0], "
      "streamId[7],comm[0xfffe380078d0], deviceLogicId[0]",
      "[INFO] HCCL(3015875,python):2025-03-07-11:43:33.305.623 "
      "[hccl_opbase_atrace_info.cc:56][3017221]Entry-HcclAllGather: "
      "tag[AllGather_127.10.0.1%eth_60000_0_1741318944927847], sendBuf[0x1241d3dcdc00], "
      "recvBuf[0x124702f40200], "
      "count[1024], dataType[float16], localRank[0], streamId[2],comm[0xfffe380078d0], "
      "deviceLogicId[0]",
      "[PID: 3480365] 2025-12-24-14:10:31.094.189 Execution_Error_SDMA(EI0012): SDMA memory copy "
      "task exception occurred. "
      "Remote rank: [4800]. Base information: [streamID:[351], taskID[5], taskType[Memcpy], tag[], "
      "AlgType(level 0-1-2):"
      "[null-null-null].]. Task information: [src:[0x12c180000000], dst:[0x12c041800000], "
      "size:[0x80], notify id:"
      "[0xffffffffffffffff], link type:[HCCS], remote rank:[0]]. Communicator information: "
      "[group:[], user define "
      "information[], rankSize[0], rankId[0]].",
      "[ERROR] RUNTIME(57096,python3.10):2025-05-12-20:55:44.705.025 [task_info.cc:1170]57288 "
      "PrintSdmaErrorInfoForFftsPlusTask:"
      "fftsplus task execute failed, dev_id=0, stream_id=50, task_id=21, context_id=18, "
      "thread_id=0, err_type=4[fftsplus sdma error]",
      "[PID: 3448331] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE "
      "occurred during operator "
      "execution. Local information: server 127.0.0.1, device ID 0, device IP 127.10.0.1. Peer "
      "information: server "
      "127.0.0.2, device ID 1, device IP 127.10.0.2. Possible Cause: 1.",
      "[ERROR] HCCL(2040034,alltoall_test):2025-09-15-08:38:13.607.432 [heartbeat.cc:1229] "
      "[2040666][TaskExecStage]"
      "[HeartbeatAbnormal][ROCE CQE ERROR]cqe error status[12], time:[2025-09-15 "
      "08:38:12.776654],localInfo{server"
      "[127.10.0.1],deviceId[127.10.0.1],deviceIp[127.11.0.1]}, "
      "remoteIP{server[127.10.0.2],deviceId[127.10.0.2],deviceIp[127.11.0.2]}",
      "[ERROR] ROCE(2040034,alltoall_test):2025-09-15-08:38:12.776.612 "
      "[hns_roce_lite.c:630]hns_roce_lite_handle_error_cqe(630)"
      " : error cqe status: 0x15",
      "[PID: 2103452] 2025-11-03-20:18:46.447.213 "
      "Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate "
      "[size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.",
      "[INFO] HCCL(1,p):2025-10-24-11:16:50.000.000 [externalinput.cc:1] [1][HCCL_ENV] "
      "HCCL_EXEC_TIMEOUT set by environment to [300]",
      "[ERROR] HCCL(900,python):2025-11-03-20:18:46.000.000 [rank_consistentcy_checker.cc:200] "
      "[900][InitChannelStage]"
      "CMD information cclbufferSize check fail. local[209715200], remote[104857600]",
      "[ERROR] HCCL(500,python):2025-11-03-20:20:20.000.000 [transport.cc:1] "
      "[500][InitChannelStage][Timeout]"
      "wait socket establish timeout, role[0] rank[3] timeout[120 s]",
  };
  return s;
}

std::string Mutate(std::mt19937_64& rng, std::string s) {
  static const std::vector<std::string> inserts = {"[",
                                                   "]",
                                                   "[ERROR] HCCL(",
                                                   "[PID: ",
                                                   "\n",
                                                   "\r",
                                                   "\0",
                                                   "\xff",
                                                   "中",
                                                   "Entry-Hccl",
                                                   "Task run failed",
                                                   "(EI0012):",
                                                   "[INFO] ",
                                                   "]:[",
                                                   "crimer rank",
                                                   "{",
                                                   "}",
                                                   ",",
                                                   "=",
                                                   "0x"};
  int n = 1 + static_cast<int>(rng() % 6);
  for (int k = 0; k < n && !s.empty(); ++k) {
    size_t pos = rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:
        if (pos < s.size()) s[pos] = static_cast<char>(rng());
        break;
      case 1:
        s.resize(pos);
        break;
      case 2:
        s.insert(pos, inserts[rng() % inserts.size()]);
        break;
      case 3:
        if (pos < s.size()) s.erase(pos, 1 + rng() % 16);
        break;
      case 4:
        s.insert(pos, Seeds()[rng() % Seeds().size()]);
        break;
      case 5: {
        size_t len = std::min<size_t>(s.size() - std::min(pos, s.size()), 1 + rng() % 40);
        s.insert(pos, s.substr(pos, len));
      } break;
    }
  }
  return s;
}

TEST(DiagnoseFuzz, RandomMutationsOfSeedLines) {
  std::mt19937_64 rng(20251024);
  constexpr int kMutations = 20000;
  constexpr int kPerBatch = 500;
  for (int batch = 0; batch < kMutations / kPerBatch; ++batch) {
    // One batch = one "file" per 100 lines; all of them build a job and go through the rules.
    ScanResult scan;
    std::string text;
    for (int i = 0; i < kPerBatch; ++i) {
      text += Mutate(rng, Seeds()[rng() % Seeds().size()]);
      text += (rng() % 4 == 0) ? " " : "\n";  // some records glued
      if ((i + 1) % 100 == 0) {
        uint32_t idx = static_cast<uint32_t>(scan.files.size());
        scan.files.push_back({"<memory>", "node" + std::to_string(idx % 3), text.size()});
        scan.results.push_back(ParseText(text, idx));
        text.clear();
      }
    }
    DiagnoseResult r;
    r.job = BuildJob(std::move(scan));
    r.findings = ApplyRules(r.job);
    std::string out = RenderText(r, true);
    std::string json = RenderJsonText(r);
    std::string html = RenderHtml(r);
    ASSERT_FALSE(out.empty());
    ASSERT_FALSE(json.empty());
    ASSERT_FALSE(html.empty());
  }
}

// A large file is read in pieces split at line boundaries and merged (scanner.h): on random
// texts of mutated seed lines (glued records, CRLF, cuts inside records, runs of newlines), any
// number of pieces gives exactly the one-pass result, through the job model, rules and JSON.
TEST(DiagnoseFuzz, PiecesGiveTheOnePassResult) {
  std::mt19937_64 rng(20251203);
  static const char* const kSeps[] = {"\n", "\r\n", " ", "", "\n\n", "\n\r\n"};
  auto json_of = [](FileResult r, size_t size) {
    ScanResult scan;
    scan.files.push_back({"<memory>", "node0", size});
    scan.results.push_back(std::move(r));
    DiagnoseResult d;
    d.job = BuildJob(std::move(scan));
    d.findings = ApplyRules(d.job);
    return RenderJsonText(d, -1);
  };
  for (int iter = 0; iter < 300; ++iter) {
    std::string text;
    const int lines = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < lines; ++i) {
      const std::string& seed = Seeds()[rng() % Seeds().size()];
      text += rng() % 3 == 0 ? Mutate(rng, seed) : seed;
      text += kSeps[rng() % std::size(kSeps)];
    }
    const std::string whole = json_of(ParseText(text, 0), text.size());
    const size_t pieces = 2 + rng() % 12;
    ASSERT_EQ(json_of(ParseTextInPieces(text, 0, pieces), text.size()), whole)
        << "iteration " << iter << ", " << pieces << " pieces, text:\n"
        << text;
  }
}

TEST(DiagnoseFuzz, RandomBytes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string s(1 + rng() % 4096, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? "[]()\n:,"[rng() % 7] : rng());
    FileResult r = ParseText(s, 0);
    EXPECT_EQ(r.bytes, s.size());
  }
}

}  // namespace
}  // namespace vigil::diagnose
