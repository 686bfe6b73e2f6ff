// Forms of real failure output that `vigil diagnose` once got wrong (each test cites the public
// thread or guide page its lines were printed in): install and configuration faults that end in a
// generic code, KV-cache transfer between inference instances, launcher prefixes that carry the
// rank or nest processes, HCCL's rank-table checks, root-info detection, a device port in use.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.h"
#include "diagnose/line_formats.h"
#include "verdicts.h"

namespace vigil::diagnose {
namespace {

TEST(ReportedForms, MissingKernelBinariesAreTheInstallNotAnOperatorBug) {
  // hiyouga/LlamaFactory#4610 (ERR01005 and 561000 after it) and #3796 (the kernel config file).
  auto f = Verdicts(
      "RuntimeError: call aclnnCast failed, detail:EZ9999: Inner Error!\n"
      "EZ9999: 2024-06-28-13:05:55.631.066  Parse dynamic kernel config fail.\n"
      "        TraceBack (most recent call last):\n"
      "        AclOpKernelInit failed opType\n"
      "        Op Cast does not has any binary.\n"
      "        Kernel Run failed. opType: 3, Cast\n"
      "        launch failed for Cast, errno:561000.\n"
      "\n"
      "[ERROR] 2024-06-28-13:05:55 (PID:11591, Device:0, RankID:-1) ERR01005 OPS internal error\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.op_kernel_binary_missing") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
  f = Verdicts(
      "EZ9999  Cannot parse json for config file [/usr/local/Ascend/ascend-toolkit/latest/opp/"
      "built-in/op_impl/ai_core/tbe//kernel/config/ascend910/cast.json].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.op_kernel_binary_missing") << f[0].title;
}

TEST(ReportedForms, AnNcclBackendOnAnNpuHostIsConfiguration) {
  // deepspeedai/DeepSpeed#7312: read nothing before ("no log records").
  auto f = Verdicts(
      "[2025-05-26 13:54:17,413] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend "
      "in "
      "DeepSpeed with backend nccl\n"
      "RuntimeError: Distributed package doesn't have NCCL built in\n"
      "[2025-05-26 13:54:21,112] [ERROR] [launch.py:322:sigkill_handler] "
      "['/usr/local/python3.10.13/"
      "bin/python3.10', '-u', 'start_train.py', '--local_rank=7'] exits with return code = 1\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.nccl_backend_on_npu");
  EXPECT_EQ(f[0].cls, "config");
}

TEST(ReportedForms, MsrunNamesTheNodeThatTimedOut) {
  // candle-org/MindAct#1983: msrun's own analysis after a worker failed ("no fault found" before).
  auto f = Verdicts(
      "[WARNING] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:12.444.000 [mindspore/"
      "parallel/cluster/process_entity/_api.py:318] There's worker exits with exception, kill all "
      "other workers.\n"
      "[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.720.000 [mindspore/"
      "parallel/cluster/process_entity/_api.py:331] Scheduler process 162146 exit with exception.\n"
      "[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.722.000 [mindspore/"
      "parallel/cluster/process_entity/_api.py:431] Time out nodes are ['3']\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.msrun_timeout_nodes");
  EXPECT_TRUE(Names(f[0], 3, "root cause")) << f[0].title;
}

TEST(ReportedForms, KvCacheTransferFailuresNameTheirPeer) {
  // vllm-project/vllm-ascend#5635 (connect failure) and #7846 (a batch timeout): glog lines of the
  // transfer engine and the connector's lines; nothing was read before.
  auto f = Verdicts(
      "E20260106 06:43:02.966156  5793 ascend_direct_transport.cpp:820] Failed to connect to "
      "target: "
      "172.17.0.16:25482, status: 103900\n"
      "E20260106 06:43:02.966198  5793 ascend_direct_transport.cpp:581] Failed to connect to "
      "segment: 172.17.0.16:16584\n"
      "(EngineCore_DP0 pid=5704) ERROR 01-06 06:43:02 [mooncake_connector.py:330] Failed to "
      "transfer "
      "KV cache for request cmpl-118b93ed-a3b2-4d9f-a26d-1d5dce6d7bf2-0: Mooncake transfer failed, "
      "ret: -1\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "kv_transfer.connect_failed");
  ASSERT_FALSE(f[0].evidence.empty());
  EXPECT_NE(f[0].evidence[0].text.find("172.17.0.16:25482"), std::string::npos);
  f = Verdicts(
      "I0331 02:49:30.617945 803444 transfer_engine_py.cpp:454] Sync batch data transfer timeout "
      "after 33061142969ns\n"
      "(Worker pid=782865) (Worker_DP0_TP0_EP0 pid=782865) ERROR 03-31 02:49:30 "
      "[mooncake_connector.py:547] Mooncake transfer failed for request chatcmpl-ba310df4\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "kv_transfer.transfer_timeout");
}

TEST(ReportedForms, VisibleDevicesOutOfRangeIsConfigurationNotADeviceFault) {
  // gpustack/gpustack#3352: 207004 ("no device") and 107001 follow from the variable.
  auto f = Verdicts(
      "[ERROR] RUNTIME(42,mindie_llm_backend_connector):2025-11-18-09:33:13.666.323 "
      "[runtime.cc:5632]"
      "58 GetVisibleDevices:[INIT][DEFAULT]set ASCEND_RT_VISIBLE_DEVICES:[4] error, input data "
      "rang[0-2)\n"
      "RuntimeError: init:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:292 NPU function "
      "error: "
      "aclrtGetDeviceCount(&device_count), error code is 207004\n"
      "EE1001: [PID: 42] 2025-11-18-09:33:13.673.064 The argument is invalid.Reason: set "
      "ASCEND_RT_VISIBLE_DEVICES:4 error, input data rang[0-2)\n"
      "        rtSetDevice execute failed, reason=[device id error][FUNC:FuncErrorReason][FILE:"
      "error_message_manage.cc][LINE:53]\n"
      "        open device 0 failed, runtime result = 107001.[FUNC:ReportCallError][FILE:"
      "log_inner.cpp][LINE:161]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.visible_devices_invalid");
  EXPECT_EQ(f[0].cls, "config");
}

TEST(ReportedForms, AKernelTimeoutIsTheCauseOfTheFailedSynchronize) {
  // vllm-project/vllm-ascend#10299 (vector core) and #5509 (AI Core, retCode 0x25): the
  // synchronize failure and the exception report follow from the timeout.
  auto f = Verdicts(
      "[rank0]:[W610 17:20:44.224261525 NPUStream.cpp:647] Warning: NPU warning, error code is "
      "507034[Error]: \n"
      "[Error]: Vector core execution timed out. \n"
      "EE9999: Inner Error!\n"
      "EE9999[PID: 10180] 2026-06-10-17:20:44.486.049 (EE9999):  rtDeviceSynchronizeWithTimeout "
      "execution failed, reason=vector core "
      "timeout[FUNC:FuncErrorReason][FILE:error_message_manage.cc]"
      "[LINE:65]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.kernel_timeout");
  EXPECT_TRUE(Names(f[0], 0, "root cause")) << f[0].title;
  f = Verdicts(
      "        The error from device(chipId:0, dieId:0), serial number is 10, there is an "
      "exception of "
      "fftsplus aivector error, core id is 8, error code = 0, dump info: pc start: 0x12c0c0000000\n"
      "        The extend info: errcode:(0, 0, 0) errorStr: timeout or trap error. fixp_error0 "
      "info: "
      "0x4a09188, fixp_error1 info: 0xf8\n"
      "        Kernel task happen error, retCode=0x25, [aicore "
      "timeout].[FUNC:PreCheckTaskErr][FILE:"
      "davinci_kernel_task.cc][LINE:1555]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.kernel_timeout");
}

TEST(ReportedForms, VllmWorkerNamesGiveTheRank) {
  // vllm-project/vllm-ascend#10861: the device report of worker TP3 (rank "?" before).
  const std::string report =
      " pid=1754774) ERROR 06-23 11:26:16 [multiproc_executor.py:932]         Kernel task happen "
      "error, retCode=0x25, [aicore timeout].[FUNC:PreCheckTaskErr][FILE:davinci_kernel_task.cc]"
      "[LINE:1582]\n";
  for (const auto& [name, rank] :
       std::vector<std::pair<std::string, int64_t>>{{"Worker_DP0_TP3_EP3", 3},
                                                    {"Worker_TP2", 2},
                                                    {"Worker_DP1_TP0_EP2", 2},
                                                    {"Worker_PP1_TP0", -1}}) {
    auto f = Verdicts("(" + name + report);
    ASSERT_FALSE(f.empty()) << name;
    if (rank >= 0) {
      EXPECT_TRUE(Names(f[0], rank, "root cause")) << name << ": " << f[0].title;
    } else {
      // A pipeline stage's TP index is not its rank in the world.
      for (const RankRef& r : f[0].ranks) EXPECT_LT(r.rank, 0) << name;
    }
  }
}

TEST(ReportedForms, AQuotedPasteKeepsItsRank) {
  // vllm-project/vllm-ascend#1579: a reply quoting the log ("> " before every line).
  auto f = Verdicts(
      "> (VllmWorker rank=6 pid=296) ERROR 07-17 12:09:52 [multiproc_executor.py:470] "
      "RuntimeError: "
      "create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:102 HCCL function error: "
      "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error "
      "code "
      "is 7\n");
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(Names(f[0], 6, "root cause")) << f[0].title;
}

TEST(ReportedForms, NestedProcessPrefixesNameTheInnermostProcess) {
  // vllm-project/vime#434: the engine relays its workers' lines, each under its own prefix.
  auto f = Verdicts(
      "(VLLMEngine pid=3599803) (Worker pid=3600530) ERROR 09-15 13:02:43 "
      "[multiproc_executor.py:870]"
      " E39999[PID: 3600530] 2026-09-15-13:02:35.314.621 (E39999):  TsdOpen failed. devId=9, tdt "
      "error=1[FUNC:PrintfTsdError][FILE:runtime.cc][LINE:2638]\n"
      "(VLLMEngine pid=3599803) (Worker pid=3600530) ERROR 09-15 13:02:43 "
      "[multiproc_executor.py:870]"
      " [Error]: Failed to start the device.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.tsd_open_failed");
  EXPECT_EQ(f[0].cls, "environment");
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].pid, 3600530);
}

TEST(ReportedForms, AMissingAiCpuSchedulerIsTheInstall) {
  // PaddlePaddle/PaddleX#2311: a TDT plog record ("no fault found" before).
  auto f = Verdicts(
      "[ERROR] TDT(88,python):2024-10-23-20:50:03.869.408 "
      "[thread_mode_manager.cpp:120][StartCallAICPU]"
      "[tid:88] [ThreadModeManager] failed open libaicpu_scheduler.so, deviceId[0], "
      "reason[libaicpu_scheduler.so: cannot open shared object file:\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.aicpu_scheduler_missing");
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 0);
}

TEST(ReportedForms, RankTableChecksHaveTheirOwnEntries) {
  // The printed examples of HCCL's fault-diagnosis guide (hicann/hccl docs/zh/user_guide/
  // fault_diagnosis: tls_info_config_inconsistent_EI0016.md, super_device_id_duplicate_EI0014.md;
  // docs/en/.../cluster_info_verify_fail.md): all were "Rank table path or field invalid".
  auto f = Verdicts(
      "[ERROR] HCCL(94774,all_reduce_test):2025-10-27-11:51:32.570.490 "
      "[topoinfo_exchange_agent.cc:831]"
      " [94774][InitGroupStage][RanktableCheck] Value Disable for config \"tls\" is invalid. "
      "Expected "
      "Value:\"All ranks are consistent. Current status : rankList for enabled "
      "tls:[10.78.106.107/0]; "
      "rankList for disabled tls:[10.78.106.107/0]; rankList for query failure tls:\".;\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.tls_inconsistent");
  f = Verdicts(
      "[ERROR] HCCL(169030,alltoall_test):2025-10-23-16:28:59.392.635 "
      "[topoinfo_exchange_agent.cc:695]"
      " [169030][InitGroupStage][RanktableCheck]devices have same superDeviceId[0x3000000] in "
      "superPod[super_pod_id_0]. Current device info: serverId[127.10.0.1], rankId[0], "
      "group[hccl_world_group]. Another device info: rankId[1].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.superpod_mismatch");
  EXPECT_TRUE(Names(f[0], 0, "root cause")) << f[0].title;
  f = Verdicts(
      "[ERROR] HCCL(144905,python):2025-04-20-00:26:54.435.048 [config.cc:413] "
      "[145735][InitGroupStage]"
      "[RanktableCheck]rank[0] device ip family[2] is not same as others[10].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.ip_family_mismatch");
  EXPECT_TRUE(Names(f[0], 0, "root cause")) << f[0].title;
  // A check without an entry of its own is still the rank table's.
  f = Verdicts(
      "[ERROR] HCCL(1,python):2025-04-20-00:26:54.435.048 [config.cc:1] [1][InitGroupStage]"
      "[RanktableCheck]server count is not the same as the rank table's.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "hccl.ranktable_invalid");
}

TEST(ReportedForms, AnAgentThatCannotReachTheRootIsRootInfoDetection) {
  // hicann/hccl docs/en/user_guide/fault_diagnosis/cluster_info_nego.md: EI0015, not a link setup
  // timeout (EI0006).
  auto f = Verdicts(
      "[ERROR] HCCL(7988,all_reduce_test):2025-03-19-04:16:13.978.979 "
      "[topoinfo_exchange_agent.cc:190]"
      " [7988][InitGroupStage][RanktableDetect]topo exchange agent get socket timeout! "
      "timeout[120] \n"
      "[ERROR] HCCL(7988,all_reduce_test):2025-03-19-04:16:13.978.995 "
      "[topoinfo_exchange_agent.cc:41]"
      " [7988][TopoInfoExchangeAgent][Setup]TopoExchangeAgent: connect server[127.10.0.1 : 60000] "
      "failed\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].fault, "rank_detect_timeout");
  EXPECT_EQ(f[0].code, "EI0015");
  EXPECT_NE(f[0].title.find("127.10.0.1:60000"), std::string::npos) << f[0].title;
}

TEST(ReportedForms, ADevicePortInUseAdvisesTheDevicePortRange) {
  // hicann/hccl docs/en/user_guide/fault_diagnosis/param_link_stage.md: socket type[0] is the
  // device NIC's port.
  auto f = Verdicts(
      "[ERROR] HCCL(1009464,all_reduce_test):2025-03-15-00:41:48.470.172 [hccl_socket.cc:110] "
      "[1009464][InitGroupStage][RanktableDetect] socket type[0], listen on ip[192.168.2.199] and "
      "specific port[16666] fail. Please check the port status and whether the port is being used "
      "by "
      "other process.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].fault, "port_in_use");
  EXPECT_NE(f[0].advice.find("HCCL_NPU_SOCKET_PORT_RANGE"), std::string::npos) << f[0].advice;
}

TEST(ReportedForms, AnEscapedMultiLineMessageIsReadLineByLine) {
  // modelscope/ms-swift#9135: torch_npu's error inside a Python exception's repr, its newlines
  // escaped; the driver's line in the middle is the cause.
  auto f = Verdicts(
      "[rank54]: \tWhile copying the parameter named \"w\", an exception occurred : ('enable_peer_"
      "access:torch_npu/csrc/core/npu/NPUPeerToPeerAccess.cpp:39 NPU function error: "
      "aclrtDeviceEnablePeerAccess(dest_dev, enable_flag_value), error code is 507899\\n[ERROR] "
      "2026-04-17-11:29:42 (PID:7136, Device:6, RankID:54) ERR00100 PTA call acl api "
      "failed\\n[Error]: "
      "An internal error occurs in the Driver module. \\nEL9999: Inner Error!\\nEL9999[PID: 7136] "
      "2026-04-17-11:29:42.001.734 (EL9999):  [drv api] halDeviceEnableP2P failed: drv devId=6, "
      "phyIdSrc=0, drvRetCode=17![FUNC:EnableP2P][FILE:npu_driver.cc][LINE:4088]\\n',)\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "driver.p2p_enable_failed");
  EXPECT_TRUE(Names(f[0], 54, "root cause")) << f[0].title;
  // An escaped newline before text that starts no line is not split.
  EXPECT_TRUE(EscapedLines("path C:\\new\\data and \\n more text").empty());
}

TEST(ReportedForms, ARankThatEntersCreationLateIsNamed) {
  // hicann/hccl docs/en/user_guide/fault_diagnosis/cluster_info_nego.md: INFO lines only, rank 3
  // enters 200 s after the others with HCCL_CONNECT_TIMEOUT at its default 120 s.
  const std::string entry =
      "[op_base.cc:1293] [{pid}]Entry-HcclCommInitRootInfoInner:ranks[4], rank[{rank}], rootinfo: "
      "host ip[127.10.0.1] port[60000] nicDeploy[1] "
      "identifier[127.10.0.1%enp_60000_0_1763610996711234],\n";
  auto line = [&](int pid, int rank, const std::string& time) {
    std::string s =
        "[INFO] HCCL(" + std::to_string(pid) + ",all_reduce_test):" + time + " " + entry;
    s.replace(s.find("{pid}"), 5, std::to_string(pid));
    s.replace(s.find("{rank}"), 6, std::to_string(rank));
    return s;
  };
  std::string text = line(3079955, 3, "2025-11-20-11:59:56.716.583") +
                     line(3079952, 0, "2025-11-20-11:56:36.711.546") +
                     line(3079953, 1, "2025-11-20-11:56:36.712.024") +
                     line(3079954, 2, "2025-11-20-11:56:36.712.065");
  auto f = Verdicts(text);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].fault, "late_init") << f[0].title;
  EXPECT_TRUE(Names(f[0], 3, "late"));
  // Within the timeout: no finding of it.
  text = line(3079955, 3, "2025-11-20-11:57:36.716.583") +
         line(3079952, 0, "2025-11-20-11:56:36.711.546");
  for (const Finding& g : Verdicts(text)) EXPECT_NE(g.fault, "late_init");
}

TEST(ReportedForms, LauncherAndStoreFormsOfTrainingJobs) {
  // hiyouga/LlamaFactory#4284: OpenMPI's signal banner of an aborted process ("no records").
  auto f = Verdicts(
      "[ma-job-50d563e2-worker-0:00366] *** Process received signal ***\n"
      "[ma-job-50d563e2-worker-0:00366] Signal: Aborted (6)\n"
      "[ma-job-50d563e2-worker-0:00366] Signal code:  (-6)\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.worker_killed_by_signal");
  EXPECT_EQ(f[0].ranks[0].pid, 366);
  // PaddlePaddle/PaddleCustomDevice#706: Paddle's "failed : <code>" form.
  f = Verdicts(
      "Call aclrtSynchronizeStream(reinterpret_cast<aclrtStream>(stream)) failed : 507015 at file "
      "/workspace/PaddleCustomDevice/backends/npu/runtime/runtime.cc line 408\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "507015");
  // OpenRLHF/OpenRLHF#265 (a timeout in seconds) and ymcui/Chinese-LLaMA-Alpaca-2#274: the store.
  for (const char* line :
       {"(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has "
        "timed out after 1800s while trying to connect to (172.17.0.2, 44737).\n",
        "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node "
        "'38049eef641b_3140_0' has failed to shutdown the rendezvous '3045048012703006698827246' "
        "due "
        "to an error of type RendezvousConnectionError.\n"}) {
    f = Verdicts(line);
    ASSERT_FALSE(f.empty()) << line;
    EXPECT_EQ(f[0].kb, "framework.c10d_store_timeout") << line;
  }
  // hiyouga/LlamaFactory#5558: a host tag ("mpi-...-launcher: ") before torch's rank prefix.
  f = Verdicts(
      "mpi-rc1ou1aw-launcher: [rank6]:[E ProcessGroupNCCL.cpp:563] [Rank 6] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=635, OpType=ALLREDUCE, NumelIn=576156928, "
      "NumelOut=576156928, Timeout(ms)=600000) ran for 600052 milliseconds before timing out.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(Names(f[0], 6, "reporter")) << f[0].title;
}

TEST(ReportedForms, OpsThatCannotBeComparedAreNotCalledConsistent) {
  // HCCL's guide's op-mismatch example with the lines that name the ops lost (a wrapped copy):
  // the op is unknown, not equal.
  const std::string group = "[127.10.0.1%enp_60000_0_1761275812718970]";
  auto rank = [&](int pid, int r, const std::string& t) {
    const std::string head = "[ERROR] HCCL(" + std::to_string(pid) + ",all_reduce_test):" + t +
                             " [task_exception_handler.cc:771] [" + std::to_string(pid) +
                             "][TaskExecStage][Timeout][Host]Task run failed, ";
    return head + "groupRank information is group:" + group + ", user define information[], " +
           "rankSize[4], rankId[" + std::to_string(r) + "].\n" + head +
           "opData information is timeStamp:[2025-10-24-11:16:55.493.816], deviceId[" +
           std::to_string(r) +
           "], index[21], count[256], src[0x12c0c0013000], dst[0x12c0c0014000], " +
           "dataType[float32].\n";
  };
  auto f = Verdicts(rank(2111665, 0, "2025-10-24-11:18:29.499.247") +
                    rank(2111666, 1, "2025-10-24-11:18:29.513.764"));
  for (const Finding& g : f)
    EXPECT_EQ(g.title.find("consistent arguments"), std::string::npos) << g.title;
}

TEST(ReportedForms, ContainersThatCannotReachTheirDevice) {
  // vllm-project/vllm-ascend#2698 and #632 (npu-smi in a container), InternLM/lmdeploy#2585 (no
  // device nodes), Project-HAMi/HAMi#1413 (a pod never scheduled): "no fault found" before.
  for (const char* text :
       {"DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
        "dcmi module initialize failed. ret is -8005\n",
        "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n"
        "dcmi model initialized failed, because the device is used. ret is -8020\n"}) {
    auto f = Verdicts(text);
    ASSERT_FALSE(f.empty()) << text;
    EXPECT_EQ(f[0].kb, "npu_tools.dcmi_init_failed");
    EXPECT_EQ(f[0].cls, "environment");
  }
  auto f = Verdicts(
      "[ERROR] RUNTIME(1,python3.10):2024-10-14-07:24:13.025.157 [error_message_manage.cc:48]1 "
      "FuncErrorReason:rtGetDevMsg execute failed, reason=[context pointer null]\n"
      "[ERROR] IDEDD(1,python3.10):2024-10-14-07:24:13.097.930 [adx_dsmi.cpp:54][tid:201]>>> Get "
      "physical device number failed, err: 87\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "driver.no_device_visible");
  f = Verdicts(
      "  Warning  FailedScheduling  27s   hami-scheduler  0/1 nodes are available: 1 Insufficient "
      "huawei.com/Ascend910B3-memory. preemption: 0/1 nodes are available: 1 No preemption victims "
      "found for incoming pod.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.npu_resource_unschedulable");
}

TEST(ReportedForms, InstallAndDeviceOpenCodesHaveEntriesOfTheirOwn) {
  // PaddlePaddle/Paddle#72458: aclInit fails with 507008 (the SoC version) in a container; the
  // EE1001 after it is the follow-on (software, low, before).
  auto f = Verdicts(
      "Call aclInit(nullptr) failed : 507008 at file /work/PaddleCustomDevice/backends/npu/"
      "runtime/runtime.cc line 403\n"
      "EE1001: [PID: 1] 2025-04-25-09:00:00.000.000 The argument is invalid.Reason: "
      "rtGetDevMsg execute failed, reason=[context pointer null]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "507008") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
  // hiyouga/LlamaFactory#4388: an aclnn argument check (a generic second finding before).
  f = Verdicts(
      "[PID: 595606] 2025-11-28-18:37:41.744.591 AclNN_Parameter_Error(EZ1001): Self dtype "
      "DT_FLOAT or mat2 dtype DT_FLOAT not support under keep type mode.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "EZ1001") << f[0].title;
  EXPECT_EQ(f[0].cls, "config");
  // mindspore-lab/mindyolo#186: the device runtime never started ("no fault found" before).
  f = Verdicts(
      "[ERROR] DEVICE(246,ffff807c8ac0,python):2023-08-10-12:33:06.836.235 [mindspore/ccsrc/"
      "runtime/device/kernel_runtime_manager.cc:136] WaitTaskFinishOnDevice] SyncStream failed, "
      "exception:The pointer[stream] is null.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.mindspore_null_stream") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
}

TEST(ReportedForms, TheDeviceOfAReportIsTakenFromItsOtherLines) {
  // hw-native-sys/PTOAS#765: the E39005 line names no device; the TsdOpen line under it does.
  auto f = Verdicts(
      "[ERROR] aclrtSetDevice(deviceId) failed: 507033 (main.cpp:98)\n"
      "[ERROR] RecentErrMsg: [PID: 3738657] 2026-06-24-16:04:59.396.436 "
      "Inner_Error_TSDaemon_Process_Abnormal(E39005): The TSDaemon process initialization is "
      "abnormal.\n"
      "        TraceBack (most recent call last):\n"
      "        TsdOpen failed. devId=2, tdt error=1[FUNC:PrintfTsdError][FILE:runtime.cc]"
      "[LINE:2638]\n"
      "        open device 2 failed, runtime result = 507033.[FUNC:ReportCallError]"
      "[FILE:log_inner.cpp][LINE:148]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "environment") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 2);
  // vllm-project/vllm-ascend#1993: torch_npu's line names device 0, the EL0004 under it none.
  f = Verdicts(
      "(EngineCore_DP0 pid=553) [ERROR] 2025-09-17-04:55:13 (PID:553, Device:0, RankID:-1) "
      "ERR00100 PTA call acl api failed\n"
      "(EngineCore_DP0 pid=553) EL0004: [PID: 553] 2025-09-17-04:55:13.065.712 Failed to "
      "allocate memory.\n"
      "(EngineCore_DP0 pid=553)         alloc device memory failed, runtime result = 207001"
      "[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:161]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "EL0004") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 0);
  // Two processes' lines on two devices around it: no device is lent.
  f = Verdicts(
      "[ERROR] 2025-09-17-04:55:13 (PID:553, Device:0, RankID:-1) ERR00100 PTA call acl api "
      "failed\n"
      "[ERROR] 2025-09-17-04:55:13 (PID:554, Device:1, RankID:-1) ERR00100 PTA call acl api "
      "failed\n"
      "EL0004: 2025-09-17-04:55:13.065.712 Failed to allocate memory.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "EL0004") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, -1);
}

TEST(ReportedForms, FrameworkStartFailuresHaveEntries) {
  // blog.csdn.net/beauty0220/article/details/129155215: MindSpore finds the card's memory held
  // by another process ("no fault found" before).
  auto f = Verdicts(
      "RuntimeError: mindspore/ccsrc/plugin/device/ascend/hal/device/ascend_memory_adapter.cc:47 "
      "Initialize] Malloc device memory failed, free memory size is less than half of total "
      "memory size.Device 0 Device HBM total size:34359738368 Device HBM free size:1929908224 "
      "may be other processes occupying this card, check as: ps -ef|grep python\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.mindspore_device_memory_held") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 0);
  // www.hiascend.com/forum/thread-0216133685096022081-1-1.html: a CPU-only MindSpore.
  f = Verdicts(
      "E RuntimeError: Unsupported device target Ascend. This process only supports one of the "
      "['CPU']. Please check whether the Ascend environment is installed and configured "
      "correctly, and check whether current mindspore wheel package was built with \"-e "
      "Ascend\".\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "python.mindspore_cpu_only") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
  // support.huaweicloud.com/intl/en-us/trouble-modelarts/modelarts_13_0074.html: exit 137.
  f = Verdicts("[Modelarts Service Log]Training end with return code: 137\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.modelarts_return_code") << f[0].title;
  EXPECT_TRUE(Verdicts("[Modelarts Service Log]Training end with return code: 0\n").empty());
}

TEST(ReportedForms, TheSpecificReasonLeadsOverItsWrapper) {
  // www.hiascend.com/forum/thread-02108172740147456233-1-1.html: FlashAttention called with
  // float32 inputs; the verdict rested on torch_npu's ERR01005 before.
  auto f = Verdicts(
      "[E compiler_depend.ts:270] call aclnnFlashAttentionScore failed, detail:EZ9999: Inner "
      "Error!\n"
      "EZ9999: 2025-01-20-03:22:58.402.844 Cannot find bin of op FlashAttentionScore, integral "
      "key 0/1/|float/ND/float/ND/float/ND/float/ND/float/ND/float/ND/float/ND/.\n"
      "TraceBack (most recent call last):\n"
      "Cannot find binary for op FlashAttentionScore.\n"
      "Kernel Run failed. opType: 100, FlashAttentionScore\n"
      "launch failed for FlashAttentionScore, errno:561000.\n"
      "[ERROR] 2025-01-20-03:22:58 (PID:9022, Device:0, RankID:-1) ERR01005 OPS internal error\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.op_binary_no_match") << f[0].title;
  // www.hiascend.com/forum/thread-0225198294622205405-1-1.html: an invalid device id is
  // configuration (torch_npu's "open device 2 failed" said environment before).
  f = Verdicts(
      "[ERROR] 2025-11-10-16:41:19 (PID:4603, Device:0, RankID:-1) ERR00100 PTA call acl api "
      "failed\n"
      "EE1001: [PID: 4603] 2025-11-10-16:41:19.431.327 The argument is invalid.Reason: Set device "
      "failed, invalid device, set device=2, valid device range is [0, 2)\n"
      "TraceBack (most recent call last):\n"
      "rtSetDevice execute failed, reason=[device id error][FUNC:FuncErrorReason]"
      "[FILE:error_message_manage.cc][LINE:53]\n"
      "open device 2 failed, runtime result = 107001.[FUNC:ReportCallError][FILE:log_inner.cpp]"
      "[LINE:161]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "config") << f[0].title;
  // hiascend.com troubleshooting_0050 (CANN 8.3.RC1): the driver's line names the device.
  f = Verdicts(
      "[ERROR] DRV(4176881,python3.7):2024-06-29-16:19:28.520.085 [ascend][curpid: 4176881, "
      "4176881][drv][devmm][halMemCreate 3073]<errno:12, 6> Mem create failed. (ret=6; "
      "size=20971520; side=1; devid=0)\n"
      "[ERROR] RUNTIME(4176881,python3.7):2024-06-29-16:19:28.521.933 [api_c.cc:4738]4176881 "
      "rtMallocPhysical:[INIT][DEFAULT]ErrCode=207001, desc=[driver error:out of memory], "
      "InnerCode=0x7020016\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "driver.mem_alloc_failed") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 0);
}

TEST(ReportedForms, VersionsThatDoNotBelongTogetherAreTheEnvironment) {
  // sgl-project/sglang#16360 (and vllm-ascend#7423 for Ascend310P3): triton-ascend's compiler
  // does not know the chip; the bare MLIRCompilationError line was the verdict before.
  auto f = Verdicts(
      "triton.compiler.errors.MLIRCompilationError: \n"
      "///------------------[ERROR][Triton][BEG]------------------\n"
      "[ConvertLinalgRToBinary] encounters error:\n"
      "bishengir-compile: for the --target option: Cannot find option named 'Ascend910B4-1'!\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.compiler_unknown_soc") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
  // PaddlePaddle/PaddleCustomDevice#2452: a plugin built for CANN 8.0 loaded with CANN 8.5
  // ("no log records" before).
  f = Verdicts(
      "ValueError: (InvalidArgument) Fail to open library: \n"
      "/usr/local/lib/python3.10/dist-packages/paddle_custom_device/libpaddle-custom-npu.so \n"
      "with error: /usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib/libtbe_adapter.so: \n"
      "undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "python.undefined_symbol") << f[0].title;
  EXPECT_EQ(f[0].cls, "environment");
  // Behind a bullet or a quote a shipper or a chat put there, too.
  f = Verdicts("- undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcEEb\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "python.undefined_symbol") << f[0].title;
  // torchvision's warning about its optional image extension is not a failure.
  f = Verdicts(
      "/usr/lib/python3/warnings.py:12: UserWarning: Failed to load image Python extension: "
      "'/usr/local/lib/python3.10/dist-packages/torchvision/image.so: undefined symbol: "
      "_ZN3c1017RegisterOperatorsD1Ev'If you don't plan on using image functionality from "
      "`torchvision.io`, you can ignore this warning.\n");
  EXPECT_TRUE(f.empty()) << f[0].title;
  // lm-sys/FastChat#2842: memory allocated in a process that never set its device; the EE1001
  // under it was the verdict before.
  f = Verdicts(
      "(allocate:torch_npu/csrc/core/npu/NPUCachingAllocator.cpp:2050 NPU error, error code is "
      "107002\n"
      "[Error]: The context is empty.\n"
      "        Check whether acl.rt.set_context or acl.rt.set_device is called.\n"
      "EE1001: The argument is invalid.Reason: rtGetDevMsg execute failed, reason=[context "
      "pointer null]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "107002") << f[0].title;
  // hiyouga/LlamaFactory#7986: E40021 with the rank's device (a generic code before).
  f = Verdicts(
      "[rank3]: RuntimeError: InnerRun:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:218 OPS "
      "function error: Conv3D, error code is 500002\n"
      "[rank3]: [ERROR] 2025-07-17-11:24:31 (PID:2000, Device:3, RankID:3) ERR01100 OPS call acl "
      "api failed\n"
      "[rank3]: E40021: [PID: 2000] 2025-07-17-11:24:31.572.955 Failed to compile Op "
      "[Conv3D1_to_Conv3dv2,[Conv3D1,Conv3D1]].\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].code, "E40021") << f[0].title;
  EXPECT_TRUE(Names(f[0], 3, "root cause")) << f[0].title;
}

TEST(ReportedForms, AGraphRuntimesFailedOperatorIsRead) {
  // InternLM/lmdeploy#4272: garbled output, the process goes on ("no fault found" before).
  auto f = Verdicts(
      "(RayWorkerWrapper pid=30789) [2026-01-20 05:42:19.692] [dicp] [error] [model.cpp:304] op "
      "command execute node[65516] fail, error code: 65516 [repeated 105x across cluster]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.dicp_op_failed") << f[0].title;
  EXPECT_EQ(f[0].cls, "software");
}

TEST(ReportedForms, AnNpuPortWithoutAddressIsConfiguration) {
  // ascendai.csdn.net/69dcb53c72111d255bf89e07.html: hccn_tool's view of 910B ports never given
  // an IP ("no fault found" before).
  auto f = Verdicts(
      "link status: UP\n"
      "net health status: Init\n"
      "netdetect address: 0.0.0.0\n"
      "Get gateway failed, because no gateway was preset there!\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "npu_tools.nic_not_configured") << f[0].title;
  EXPECT_EQ(f[0].cls, "config");
  // A probed, healthy port says nothing.
  EXPECT_TRUE(Verdicts("net health status: Success\nnetdetect address: 192.168.1.1\n").empty());
}

TEST(ReportedForms, ADeadProcessIsNotGivenItsReportersPid) {
  // ray-project/ray#49998: the driver's exit hook (ERR99999, pid 39837) printed beside the dead
  // worker's report; the worker's pid is not in the lines.
  auto f = Verdicts(
      "[ERROR] 2025-02-05-07:50:38 (PID:39837, Device:-1, RankID:-1) ERR99999 UNKNOWN "
      "application exception\n"
      "    The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
      "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
      "file.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.ray_actor_died") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_NE(f[0].ranks[0].pid, 39837);
}

}  // namespace
}  // namespace vigil::diagnose
