// The knowledge-base verdict (rules/evidence.cc) on small excerpts in the forms users paste:
// causal precedence across ranks, a verdict from one rank's output, non-communication faults
// named as such, what to collect next.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.h"
#include "diagnose/scanner.h"
#include "verdicts.h"

namespace vigil::diagnose {
namespace {

std::string Fact(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.facts)
    if (k == key) return v;
  return {};
}

TEST(EvidenceVerdict, OneRankTimeoutNamesThePeerAndWhatToCollect) {
  auto f = Verdicts(
      "[rank1]: EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution of the Notify "
      "register times out. Reason: The Notify register has not received the Notify record from remote "
      "rank: [24]. base information: [streamID:[109], taskID[38], taskType[Notify Wait]].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "timeout");
  EXPECT_EQ(f[0].kb, "EI0002");
  EXPECT_EQ(f[0].confidence, "medium");
  EXPECT_TRUE(Names(f[0], 24, "suspect"));
  EXPECT_TRUE(Names(f[0], 1, "reporter"));
  EXPECT_NE(Fact(f[0], "collect_next").find("rank 24"), std::string::npos);
}

TEST(EvidenceVerdict, ADeviceFaultBeforeTheTimeoutsIsTheRoot) {
  auto f = Verdicts(
      "[rank3]: [PID: 500] 2025-10-11-15:00:00.000.000 Device_Absent/Abnormal(EL0001): The device is "
      "abnormal or absent.\n"
      "[rank1]: EI0002: [PID: 400] 2025-10-11-15:30:36.000.000 The wait execution of the Notify "
      "register times out. Reason: The Notify register has not received the Notify record from remote "
      "rank: [3].\n"
      "[rank2]: EI0002: [PID: 450] 2025-10-11-15:30:37.000.000 The wait execution of the Notify "
      "register times out. Reason: The Notify register has not received the Notify record from remote "
      "rank: [3].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "device");
  EXPECT_EQ(f[0].kb, "EL0001");
  EXPECT_EQ(f[0].confidence, "high");
  EXPECT_TRUE(Names(f[0], 3, "root cause"));
  EXPECT_NE(f[0].summary.find("consequence"), std::string::npos) << f[0].summary;
}

TEST(EvidenceVerdict, ModelOutOfMemoryIsNotANetworkFault) {
  auto f = Verdicts(
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"/app/train.py\", line 9, in step\n"
      "[rank0]: torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB (NPU 0; 60.96 "
      "GiB total capacity; 5.00 MiB free)\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "memory");
  EXPECT_TRUE(Names(f[0], 0, "root cause"));
}

TEST(EvidenceVerdict, ADeviceHeldByAnOldProcessIsEnvironment) {
  auto f = Verdicts(
      "EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process. Reason: Maybe the "
      "last training process is running.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "environment");
  EXPECT_EQ(f[0].kb, "EJ0001");
}

TEST(EvidenceVerdict, WatchdogTimeoutAloneSaysWhatIsMissing) {
  auto f = Verdicts(
      "[rank1]:[E324 13:00:25.428029551 compiler_depend.ts:574] [Rank 1] Watchdog caught collective "
      "operation timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, Timeout(ms)=3600000) ran for 3600185 "
      "milliseconds before timing out.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "timeout");
  EXPECT_EQ(f[0].confidence, "low");
  EXPECT_FALSE(Fact(f[0], "collect_next").empty());
}

TEST(EvidenceVerdict, TheRankAtALowerWatchdogSequenceFellBehind) {
  std::string text;
  for (int r : {0, 1, 3})
    text += "[rank" + std::to_string(r) + "]:[E324 13:00:25.428029551 compiler_depend.ts:574] [Rank " + std::to_string(r) +
            "] Watchdog caught collective operation timeout: WorkHCCL(SeqNum=196, OpType=ALLREDUCE, "
            "Timeout(ms)=600000) ran for 600185 milliseconds before timing out.\n";
  text += "[rank2]:[E324 13:00:26.428029551 compiler_depend.ts:574] [Rank 2] Watchdog caught collective operation "
          "timeout: WorkHCCL(SeqNum=195, OpType=BROADCAST, Timeout(ms)=600000) ran for 600100 milliseconds before "
          "timing out.\n";
  auto f = Verdicts(text);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "timeout");
  EXPECT_TRUE(Names(f[0], 2, "suspect")) << f[0].title;
  // All at the same sequence: nobody is named.
  auto g = Verdicts(text.substr(0, text.rfind("[rank2]")));
  ASSERT_FALSE(g.empty());
  EXPECT_FALSE(Names(g[0], 0, "suspect") || Names(g[0], 1, "suspect") || Names(g[0], 3, "suspect"));
}

TEST(EvidenceVerdict, ALineAboutThePeerDoesNotBlameItsPrinter) {
  // vllm-project/vllm-ascend#486: rank 1 says its remote rank did not send in time; the remote is
  // not named, so no finding may call rank 1 the root cause (it is the reporter).
  auto f = Verdicts(
      "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS "
      "function error: HcclAllreduce, error code is 6\n"
      "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. "
      "Reason: Remote Rank did not send the data in time. Please check the reason for the rank "
      "being stuck\n");
  ASSERT_FALSE(f.empty());
  bool reported = false;
  for (const Finding& x : f) {
    EXPECT_FALSE(Names(x, 1, "root cause")) << x.title;
    if (x.kb == "hccl.remote_not_sending") {
      reported = Names(x, 1, "reporter");
      EXPECT_NE(x.title.find("reported by rank 1"), std::string::npos) << x.title;
    }
  }
  EXPECT_TRUE(reported);
}

TEST(EvidenceVerdict, HcclErrNoOfAFailedInitIsItsResult) {
  // gpustack/gpustack#2021: HCCL's plog prints the HcclResult of a failed HcclCommInitRootInfo
  // as errNo[0x...05XXXXXX], the MindIE runner as "error:2".
  auto f = Verdicts(
      "[ERROR] HCCL(36035,mindie_llm_backend_connector):2025-05-13-02:25:58.068.817 "
      "[op_base.cc:974][36818][Init][CommRootInfoConfig]errNo[0x0000000005000002]"
      "HcclCommInitRootInfo failed.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl_result.2");
  auto g = Verdicts(
      "[2025-05-13 02:25:58.64217] [error] [36815] [hccl_runner.cpp:132] AllGatherHcclRunner:0 "
      "HcclCommInitRootInfo fail, error:11, rank:1, rankSize:4\n");
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g[0].kb, "hccl_result.11");
}

TEST(EvidenceVerdict, ASymptomKeepsItsOwnMeaningOverItsTimeoutCode) {
  // vllm-project/vllm-ascend#9872: "links establish ... failed ... ret[9]" is a link failure;
  // its ret 9 (HCCL_E_TIMEOUT, itself a symptom) must not replace it.
  auto f = Verdicts(
      "[ERROR] HCCL(55694,):2026-06-03-06:04:59.040.451 [hccl_socket_manager.cc:860] "
      "[60446][Wait][LinksEstablishCompleted] is failed. ret[9].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.links_establish_failed");
  EXPECT_EQ(f[0].cls, "connection");
}

TEST(EvidenceVerdict, LinesOfOtherFormsAreRead) {
  // A wrapped device report (vllm-project/vllm-ascend#16652): the sentence on a line of its own.
  auto f = Verdicts(
      "The error from device(chipId:0, dieId:0), serial number is 17,\n"
      "hccl fftsplus task timeout occurred during task execution,\n"
      "stream_id:9, sq_id:9, task_id:10, stuck notify num:1, timeout=1836s.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.fftsplus_timeout");
  // A glog CHECK of an HCCL call (xLLM-AI/xllm#350): its result code.
  auto g = Verdicts(
      "F20251111 12:28:58.504206 214989 collective_service.cpp:37] Check failed: status == "
      "HCCL_SUCCESS (1 vs. 0) HCCL get root info failed.\n");
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g[0].kb, "hccl_result.1");
  // EI0007 names the rank whose resource ran out (vllm-project/vllm-ascend#5947).
  auto h = Verdicts(
      "[PID: 542] 2026-01-16-04:52:41.266.655 Allocation_Failure(EI0007): Failed to allocate "
      "resource[qp] with info [aicpu rank:7,localUserrank:7,localIpAddr: 100.97.2.72,"
      "deviceLogicId:3,send_cq_depth:32768]. Reason: Memory resources are exhausted.\n");
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kb, "EI0007");
  EXPECT_TRUE(Names(h[0], 7, "root cause"));
}

TEST(EvidenceVerdict, AReportTakesTheRankOfTheLinesAroundIt) {
  // vllm-project/vllm-ascend#5661: "[rank9]:" only on the warning that opens the CANN block.
  const std::string block =
      "EZ9999[PID: 244584] 2026-01-06-19:37:15.407.487 (EZ9999):  The error from "
      "device(chipId:4, dieId:1), serial number is 91, there is an exception of fftsplus "
      "aivector error, core id is 7\n"
      "       Kernel task happen error, retCode=0x26, [aicore exception].[FUNC:PreCheckTaskErr]\n";
  auto f = Verdicts("[rank9]:[W106 19:37:15.186470670 compiler_depend.ts:57] Warning: EZ9999: "
                    "Inner Error!\n" + block);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.aivec_exception");
  EXPECT_TRUE(Names(f[0], 9, "root cause"));
  // Two ranks around it: which one is not known.
  auto g = Verdicts("[rank9]: Warning: EZ9999: Inner Error!\n" + block +
                    "[rank3]: Warning: EZ9999: Inner Error!\n");
  ASSERT_FALSE(g.empty());
  EXPECT_FALSE(Names(g[0], 9, "root cause") || Names(g[0], 3, "root cause"));
}

TEST(EvidenceVerdict, AFailedTilingIsTheCauseOfItsLaunchError) {
  // ggml-org/llama.cpp#10161: the tiling failure, not the aclnn code it leads to; an unknown
  // code's report names the process that printed it.
  auto f = Verdicts(
      "ggml-cann.cpp:61: CANN error: E89999: Inner Error!\n"
      "E89999: [PID: 2277481] 2024-11-04-17:38:30.068.533 op[Range], outSize from framework (OFF) "
      "is 1, but outSize from tiling (OFT) is 64\n"
      "       Tiling failed\n"
      "       launch failed for Range, errno:561103.\n"
      "EX1234: [PID: 2277481] 2024-11-04-17:38:31.000.000 Something else.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.op_tiling_failed");
  EXPECT_EQ(f[0].cls, "software");
  bool other = false;
  for (const Finding& x : f) {
    EXPECT_EQ(x.title.find("pid -1"), std::string::npos) << x.title;
    if (x.code == "EX1234") other = x.title.find("(pid 2277481)") != std::string::npos;
  }
  EXPECT_TRUE(other);
}

TEST(EvidenceVerdict, ARelayedErrorIsNotTheRelayersOwn) {
  // vllm-project/vllm-ascend#3367: the engine process relays its worker's HCCL error; the
  // engine's pid (its launcher prefix) is not the failing process's.
  auto f = Verdicts(
      "(EngineCore_DP0 pid=384) ERROR 10-10 17:15:01 [core.py:708] RuntimeError: Worker failed "
      "with error 'create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL "
      "function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, "
      "&(comm->hcclComm_)), error code is 1'\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl_result.1");
  for (const RankRef& r : f[0].ranks) EXPECT_NE(r.pid, 384) << r.role;
}

// The first finding's knowledge-base entry for one plog line.
std::string FirstKb(const std::string& line) {
  auto f = Verdicts(line + "\n");
  return f.empty() ? "(none)" : f[0].kb;
}

TEST(EvidenceVerdict, PlogLinesOfSetupAndBuildFailures) {
  // From the hicann/hixl troubleshooting guide's examples and PaddlePaddle threads.
  EXPECT_EQ(FirstKb("[ERROR] HCCL(705,python):2026-02-11-06:09:23.236.320 "
                    "[topoinfo_ranktableConcise.cc:446] [737][Get][SingleDeviceIp]'device_ip' is "
                    "not set correctly,must be set when multi Server or HCCL_INTRA_ROCE_ENABLE "
                    "enabled"),
            "hccl.ranktable_invalid");
  EXPECT_EQ(FirstKb("[ERROR] HCCP(130245,python3):2025-11-08-08:55:21.692.085 "
                    "[ra_hdc_rdma.c:609]tid:131014,ra_hdc_typical_mr_reg : "
                    "[reg][ra_hdc_typical_mr]ra hdc message process failed ret(-13) phy_id(2)"),
            "hccp.mr_reg_failed");
  // The init form of the same message stays an RDMA init failure (the corpus's form).
  EXPECT_EQ(FirstKb("[ERROR] HCCP(38011,python):2025-07-15-12:45:32.997.682 "
                    "[ra_hdc_rdma.c:1199]tid:38011,ra_hdc_rdev_init(1199) : "
                    "[init][ra_hdc_rdev]ra hdc message process failed ret(-67) phy_id(0)"),
            "hccp.rdma_init_failed");
  EXPECT_EQ(FirstKb("[ERROR] HCCP(28499, hccp_service.bin):2026-02-09-11:36:23.530.514 "
                    "[rs.c:1847]tid:28494,rs_get_vnic_ip_info(1847) : phy_id:9 "
                    "devdrv_get_vnic_ip_by_sdid fail! sdid:0xffffffff ret:1"),
            "hccp.vnic_by_super_device_id_failed");
  EXPECT_EQ(FirstKb("[ERROR] TEFUSION(3536113,python):2023-07-14-20:35:57.663.954 "
                    "[fusion_op.cc:858]3774464 ReportBuildErrMessage Compile op[Slice] failed, "
                    "oppath[/usr/local/Ascend/opp/slice.py]"),
            "framework.op_compile_failed");
  EXPECT_EQ(FirstKb("[ERROR] GE(39944,demo):2021-11-18-01:09:39.723.315 "
                    "[infershape_pass.cc:42]39944 Run: ErrorNo: 1343242270(Prepare Graph "
                    "infershape failed) [COMP][PRE_OPT]infershape failed. node: op_3"),
            "framework.graph_build_failed");
  // A client's source address that cannot be bound (error 99): the address is named.
  auto f = Verdicts(
      "[ERROR] HCCP(13854,python3):2023-09-04-14:37:34.444.964 [rs_socket.c:1124]tid:21717,"
      "rs_connect_bind_client(1124) : client bind fail! IP:fe80::4b79:e6c9:31eb:f019, sock:530, "
      "ret:-1, error:99\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].fault, "port_in_use");
  EXPECT_NE(f[0].title.find("fe80::4b79:e6c9:31eb:f019"), std::string::npos) << f[0].title;
}

TEST(EvidenceVerdict, ARuleNamesTheRankItsProcessSaysItIs) {
  // vllm-project/vllm-ascend#4725: the listen failure's process says in its init line that it is
  // rank 4.
  auto f = Verdicts(
      "[ERROR] HCCL(60570,):2025-12-04-14:46:07.911.312 [hccl_socket.cc:106] [60570][HcclSocket]"
      "[Listen] socket type[0], listen on ip[192.2.2.195] and specific port[16666] fail.\n"
      "[ERROR] HCCL(60570,):2025-12-04-14:46:07.911.330 [op_base.cc:1]"
      " [60570][InitCommRootInfo]Init failed, return[0x0000000005000007], rankNum[8], rank[4], "
      "rootInfo identifier[10.0.0.1%eth0_60000_0_1], server[10.0.0.1], device[0]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].fault, "port_in_use");
  EXPECT_TRUE(Names(f[0], 4, "root cause"));
}

TEST(EvidenceVerdict, InterleavedWorkersLendNoRank) {
  // vllm-project/vllm-ascend#10720: two workers' CANN blocks interleaved, rank 3's watchdog
  // line below them; worker TP2's fault must not become rank 3's.
  auto f = Verdicts(
      "(Worker_TP3 pid=26762) ERROR 06-23 17:20:43 [multiproc_executor.py:962] E39999[PID: 26762] "
      "2026-06-23-17:20:43.940.189 (E39999):  Kernel task happen error, retCode=0x2a, "
      "[aicpu exception].[FUNC:PreCheckTaskErr]\n"
      "(Worker_TP2 pid=26716) ERROR 06-23 17:20:43 [multiproc_executor.py:962] E39999[PID: 26716] "
      "2026-06-23-17:20:43.939.759 (E39999):  Kernel task happen error, retCode=0x2a, "
      "[aicpu exception].[FUNC:PreCheckTaskErr]\n"
      "[rank3]:[E623 17:20:44.503368705 ProcessGroupHCCL.cpp:1869] [Rank 3] HCCL watchdog thread "
      "terminated with exception: \n");
  ASSERT_FALSE(f.empty());
  for (const RankRef& r : f[0].ranks) {
    if (r.pid == 26716) {
      EXPECT_NE(r.rank, 3) << f[0].title;
    }
  }
}

TEST(EvidenceVerdict, ASegfaultReportedByTheMpiLauncher) {
  // mindspore-lab/mindyolo#242, #238: OpenMPI's signal handler prints the crash.
  EXPECT_EQ(FirstKb("[m2301007135:374576] Signal: Segmentation fault (11)"),
            "framework.python_segfault");
  EXPECT_EQ(FirstKb("[notebook-2a7f:3436928] Failing at address: 0xb8"),
            "framework.python_segfault");
}

TEST(EvidenceVerdict, FormsOfMc2OperatorsAndRdma) {
  // vllm-project/vllm-ascend#16835: newer CANN names the expert-parallel buffer.
  EXPECT_EQ(FirstKb("HCCL_BUFFSIZE_EP is too SMALL, maxBs = 64, h = 6144, need 600MB, "
                    "HCCL_BUFFSIZE=256MB.[FUNC:CheckActualWinSize]"),
            "framework.hccl_buffsize_too_small");
  // sgl-project/sgl-kernel-npu#238, vllm-project/vllm-ascend#4051: MC2 operators' tiling.
  EXPECT_EQ(FirstKb("[ERROR][MoeDistributeDispatchV2] MoeDistributeDispatchV2 set tiling data "
                    "failed."),
            "framework.op_tiling_failed");
  EXPECT_EQ(FirstKb("(Worker_TP2_EP2 pid=3412) MoeDistributeDispatchV2 do tiling failed, "
                    "ret is -1."),
            "framework.op_tiling_failed");
  // uccl-project/uccl#799: an ibverbs completion after the NIC's retries ran out.
  EXPECT_EQ(FirstKb("CQE ERROR on qp 0x1c2, status=12(transport retry counter exceeded)"),
            "network.rdma_retry_exceeded");
}

TEST(EvidenceVerdict, OperatorPackageAndVersionForms) {
  // vllm-project/vllm-ascend#811, ggml-org/llama.cpp#25040, #10108, microsoft/onnxruntime#26195.
  EXPECT_EQ(FirstKb("EZ3002: [PID: 101] 2025-05-01-10:00:00.000.000 Optype [TransData] of Ops "
                    "kernel [AIcoreEngine] is unsupported. Reason: not found in this op store."),
            "EZ3002");
  EXPECT_EQ(FirstKb("[PID: 7] 2025-05-01-10:00:00.000.000 AclNN_Inner_Error(EZ9999):  Do not find "
                    "tiling func of RotaryPositionEmbedding!"),
            "framework.op_tiling_missing");
  EXPECT_EQ(FirstKb("EZ9999: 2024-10-31-12:08:42.276.420  The error from device(0), serial number "
                    "is 3, there is an aivec error, core id is 0, error code = 0x10"),
            "runtime.aivec_exception");
  EXPECT_EQ(FirstKb("2025-09-29 06:21:38.967642262 [E:onnxruntime:Default, cann_call.cc:139 "
                    "CannCall] CANN failure 500002: ACL_ERROR_GE_FAILURE ; NPU=0"),
            "500002");
}

TEST(EvidenceVerdict, NothingRecognisedIsNoVerdict) {
  auto f = Verdicts("INFO 06-12 12:00:00 [worker.py:3] loading weights\nall good\n");
  EXPECT_TRUE(f.empty());
}

}  // namespace
}  // namespace vigil::diagnose
