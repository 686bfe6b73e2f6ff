// Which rank a multi-rank screen output names: a rank another rank's message names as the one
// that did not arrive, ranks that ran different collectives at one sequence number, the ranks the
// failed links lead to, a worker's error before the exit lines of the processes over it. Each
// test's lines are real lines of the public thread it cites.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.h"
#include "verdicts.h"

namespace vigil::diagnose {
namespace {

TEST(RankAttribution, TheRankAMonitoredBarrierNamesIsTheRoot) {
  // hiyouga/LlamaFactory#6000: rank 0 reports rank 6 ("no log records" before).
  auto f = Verdicts(
      "[rank0]:     work = group._allgather_base(output_tensor, input_tensor, opts)\n"
      "[rank0]: RuntimeError: [Rank 0]: Ranks 6 failed to pass monitoredBarrier in 180000000000 "
      "ms\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.monitored_barrier_failed") << f[0].title;
  EXPECT_TRUE(Names(f[0], 6, "root cause")) << f[0].title;
  EXPECT_FALSE(Names(f[0], 0, "root cause"));
}

TEST(RankAttribution, AStoreFailureFetchingTheUniqueIdPointsAtTheRoot) {
  // hiyouga/LlamaFactory#2470 (deepspeed over pdsh): rank 14 could not read rank 0's id.
  auto f = Verdicts(
      "gpu004: RuntimeError: [14] is setting up NCCL communicator and retrieving ncclUniqueId from "
      "[0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset "
      "by peer. This may indicate a possible application crash on rank 0 or a network set up "
      "issue.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.unique_id_store_failed") << f[0].title;
  EXPECT_EQ(f[0].cls, "connection");
  EXPECT_TRUE(Names(f[0], 0, "root cause")) << f[0].title;
}

TEST(RankAttribution, WatchdogReportsOfDifferentCollectivesAtOneSequenceDisagree) {
  // NVIDIA/nccl#1409: at SeqNum 80078 rank 7 is in a BROADCAST, rank 3 in an ALLREDUCE.
  const std::string two =
      "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, "
      "NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
      "[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=2106881, "
      "NumelOut=2106881, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n";
  auto f = Verdicts(two);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "consistency") << f[0].title;
  EXPECT_NE(f[0].title.find("BROADCAST"), std::string::npos) << f[0].title;
  // With a third rank in the ALLREDUCE, rank 7 is the one that diverged.
  f = Verdicts(two +
               "[rank5]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 5] Watchdog "
               "caught collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, "
               "NumelIn=2106881, NumelOut=2106881, Timeout(ms)=600000) ran for 600013 "
               "milliseconds before timing out.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "consistency") << f[0].title;
  EXPECT_TRUE(Names(f[0], 7, "suspect")) << f[0].title;
  // The same collective everywhere: a timeout, no disagreement.
  f = Verdicts(
      "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=5056, "
      "NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
      "[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=5056, "
      "NumelOut=5056, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "timeout") << f[0].title;
}

TEST(RankAttribution, TheRanksFailedLinksLeadToAreTheMissingOnes) {
  // vllm-project/vllm-ascend#3389: ranks 11 and 12 could not link to 14, 8, 10 and 9.
  std::string text;
  const char* pre = "(Worker_TP11 pid=15618) ERROR 10-11 11:32:59 [model_runner_v1.py:3556] ";
  text += std::string(pre) +
          "EI0006: [PID: 15618] 2025-10-11-11:32:59.001.000 Getting socket times out. Reason: "
          "Remote Rank did not send the data in time. Please check the reason for the rank being "
          "stuck\n";
  for (int dst : {14, 8}) {
    text += std::string(pre) +
            "        Transport init error. Reason: [Create][DestLink]Create Dest error! createLink "
            "para:rank[11]-localUserrank[11]-localIpAddr[100.100.164.12], dst_rank[" +
            std::to_string(dst) + "]-remoteUserrank[" + std::to_string(dst) +
            "]-remote_ip_addr[100.100.164.12]\n";
  }
  pre = "(Worker_TP12 pid=15619) ERROR 10-11 11:32:59 [model_runner_v1.py:3556] ";
  for (int dst : {10, 9, 11}) {
    text += std::string(pre) +
            "        Transport init error. Reason: [Create][DestLink]Create Dest error! createLink "
            "para:rank[12]-localUserrank[12]-localIpAddr[100.100.164.12], dst_rank[" +
            std::to_string(dst) + "]-remoteUserrank[" + std::to_string(dst) +
            "]-remote_ip_addr[100.100.164.12]\n";
  }
  auto f = Verdicts(text);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "EI0006") << f[0].title;
  for (int r : {8, 9, 10, 14}) EXPECT_TRUE(Names(f[0], r, "missing")) << r << ": " << f[0].title;
  // Rank 11 reported a failed link of its own: it is not among the missing.
  EXPECT_FALSE(Names(f[0], 11, "missing"));
}

TEST(RankAttribution, AWorkersErrorLeadsOverTheExitLinesAboveIt) {
  // vllm-project/vllm-ascend#5748: the API server's ERR99999 (torch_npu's exit hook) came 8 s
  // after the worker's failed communicator init, and was the verdict.
  auto f = Verdicts(
      "(Worker_DP0_TP0_EP0 pid=8457) ERROR 01-09 10:21:59 [multiproc_executor.py:751] "
      "RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL "
      "function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &comm_), "
      "error code is 1\n"
      "(Worker_DP0_TP0_EP0 pid=8457) ERROR 01-09 10:21:59 [multiproc_executor.py:751] [ERROR] "
      "2026-01-09-10:21:58 (PID:8457, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.\n"
      "(APIServer pid=7658) RuntimeError: Engine core initialization failed. See root cause "
      "above. Failed core proc(s): {}\n"
      "(APIServer pid=7658) [ERROR] 2026-01-09-10:22:06 (PID:7658, Device:-1, RankID:-1) ERR99999 "
      "UNKNOWN applicaiton exception\n");
  ASSERT_FALSE(f.empty());
  EXPECT_NE(f[0].code, "ERR99999") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].pid, 8457) << f[0].title;
}

TEST(RankAttribution, ARuntimeNotifyWaitTimeoutIsReadWithItsDeviceAndTimeout) {
  // vllm-project/vllm-ascend#12487 ("no fault found" before, and the timeout said 1836 s).
  const std::string line =
      "(Worker_DP2_TP0_EP8 pid=1071) ERROR 07-21 06:27:44 [multiproc_executor.py:962]         The "
      "error from device(chipId:4, dieId:0), serial number is 1, notify wait timeout occurred "
      "during task execution, stream_id:142, sq_id:146, task_id:46645, notify_id=155, "
      "timeout=204s.[FUNC:ProcessStarsWaitTimeoutErrorInfo][FILE:device_error_proc.cc]"
      "[LINE:1587]\n";
  auto f = Verdicts(line);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.event_wait_timeout") << f[0].title;
  EXPECT_EQ(f[0].cls, "timeout");
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 4);
  ScanResult scan;
  scan.files.push_back({"<screen>", "node0", line.size()});
  scan.results.push_back(ParseText(line, 0));
  Job job = BuildJob(std::move(scan));
  EXPECT_EQ(job.exec_timeout_s, 204);
  EXPECT_TRUE(job.exec_timeout_from_log);
}

TEST(RankAttribution, APeerThatDidNotSendIsTheOneItsLinkErrorNames) {
  // vllm-project/vllm-ascend#1565: rank 0's EI0006 "Remote Rank did not send" and, under it, the
  // link to rank 1 (its worker had died two minutes before).
  const std::string pre = "ERROR 07-01 00:40:04 [engine.py:458] ";
  auto f = Verdicts(
      "(VllmWorkerProcess pid=176981) ERROR 07-01 00:38:05 [multiproc_worker_utils.py:239] "
      "_pickle.UnpicklingError: invalid load key, '\\x00'.\n" +
      pre +
      "EI0006: [PID: 176930] 2025-07-01-00:40:04.135.732 Getting socket times out. Reason: "
      "Remote Rank did not send the data in time. Please check the reason for the rank being "
      "stuck\n" +
      pre + "        TraceBack (most recent call last):\n" + pre +
      "        Transport init error. Reason: [Create][DestLink]Create Dest error! createLink "
      "para:rank[0]-localUserrank[0]-localIpAddr[172.17.0.2], dst_rank[1]-remoteUserrank[1]-"
      "remote_ip_addr[172.17.0.2]\n");
  ASSERT_FALSE(f.empty());
  bool named = false;
  for (const Finding& x : f) {
    named = named || Names(x, 1, "missing") || Names(x, 1, "root cause");
    EXPECT_FALSE(Names(x, 0, "root cause")) << x.title;
  }
  EXPECT_TRUE(named) << f[0].title;
}

TEST(RankAttribution, TheGapInTheRootsConnectedListIsTheMissingRank) {
  // hiascend.com CANN 8.5.0.alpha002 HCCL guide hcclug_000036 (the root's side): 15 ranks came,
  // rank 9 is absent from the lists; no rank was named before.
  const std::string pre = "[ERROR] HCCL(10261,python):2025-09-11-01:20:11.205.3";
  auto f = Verdicts(
      "[ERROR] HCCL(10261,python):2025-09-11-01:20:11.205.229 [topoinfo_exchange_server.cc:113] "
      "[57044][Get][Connection]topo exchange server get socket timeout! timeout[720 s]\n" +
      pre +
      "04 [topoinfo_exchange_server.cc:253][57044][TopoInfoExchangeServer][DisplayConnectedRank]"
      "connected rankinfo[LINE 0]: [0000000000000000],[0000000000000001],[0000000000000002],"
      "[0000000000000003],[0000000000000004],[0000000000000005],[0000000000000006],"
      "[0000000000000007];\n" +
      pre +
      "08 [topoinfo_exchange_server.cc:253][57044][TopoInfoExchangeServer][DisplayConnectedRank]"
      "connected rankinfo[LINE 1]: [0000000000000008],[0000000000000010],[0000000000000011],"
      "[0000000000000012],[0000000000000013],[0000000000000014],[0000000000000015];\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "EI0015") << f[0].title;
  EXPECT_TRUE(Names(f[0], 9, "missing")) << f[0].title;
  for (int r : {0, 8, 10, 15}) EXPECT_FALSE(Names(f[0], r, "missing")) << r;
}

TEST(RankAttribution, AnOpRetryAgentOnATakenPortIsTheEnvironment) {
  // hiascend.com CANN 8.1.RC1.beta1 HCCL guide hcclug_000036: rankId 9 of 64 reached another
  // server on HCCL's op-retry port ("no fault found" before).
  auto f = Verdicts(
      "[OpRetryConnection][RecvAckTag] Recv unmatched ack  [1381978191] expect [64]\n"
      "call trace: hcclRet -> 4\n"
      "[OpRetryConnection][Init] Connect to server failed, serverIp_[90.90.97.29]  serverPort "
      "[60000]\n"
      "[OpRetryConnection][Init] group[hccl_world_group] rankId [9] rankSize [64] serverIp "
      "[90.90.97.29] localIp [90.90.97.29] rootRank [0] failed\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.op_retry_port_conflict") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
  EXPECT_TRUE(Names(f[0], 9, "root cause")) << f[0].title;
}

TEST(RankAttribution, AReportersProcessIsTakenFromItsReport) {
  // lukaIvanic/paddle_ocr_vl_npu (a committed run.log): the exception's process and device are
  // on torch_npu's exit line under it.
  auto f = Verdicts(
      "  File "
      "\"/workspace/repos/paddle_ocr_vl_npu/21_colqwen3_4b_inference/profile_warm_text.py\", "
      "line 101, in run\n"
      "    raise RuntimeError('Real-page setup validation failed')\n"
      "RuntimeError: Real-page setup validation failed\n"
      "[ERROR] 2026-10-07-11:04:51 (PID:10355, Device:0, RankID:-1) ERR99999 UNKNOWN applicaiton "
      "exception\n");
  ASSERT_FALSE(f.empty());
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].pid, 10355) << f[0].title;
  EXPECT_EQ(f[0].ranks[0].device, 0);
}

}  // namespace
}  // namespace vigil::diagnose
