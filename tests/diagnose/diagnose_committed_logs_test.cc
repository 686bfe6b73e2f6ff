// Forms of log files committed to public repositories (ModelArts job output, TensorFlow
// training logs, device black-box files) that `vigil diagnose` once misread. Each test cites the
// repository and path its lines come from.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.h"
#include "verdicts.h"

namespace vigil::diagnose {
namespace {

TEST(CommittedLogs, AnOperatorThatFailsToPrebuildLeadsOverTheJobsExitCode) {
  // Ascend/modelzoo (a ModelArts job's stdout of a PWC-Net run): the verdict was the job's exit
  // code 250, the consequence of the failed operator build.
  auto f = Verdicts(
      "[ERROR] TEFUSION(146,python):2020-12-05-11:55:04.505.388 [tensor_engine/te_fusion/"
      "fusion_op.cc:5713]GetFinishedCompilationTask FinishedTask[0]: taskID[281442714096096:3034], "
      "status[1], kernel[None] res: prebuild failed. module[impl.conv2d_backprop_input_d] "
      "func[conv2d_backprop_input_d], compile_info: 0\n"
      "[ERROR] TEFUSION(146,python):2020-12-05-11:55:04.505.495 [tensor_engine/te_fusion/"
      "fusion_op.cc:5720]GetFinishedCompilationTask RuntimeError: ({'errCode': 'E60024'}, 'In "
      "op[None], Shape error : The compute result of H under convolution rule cannot match')\n"
      "[Modelarts Service Log]2020-12-05 11:55:40,363 - ERROR - FMK of device1 (pid: [146]) has "
      "exited with non-zero code: -6\n"
      "[Modelarts Service Log]Training end with return code: 250\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.op_compile_failed") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].pid, 146);
}

TEST(CommittedLogs, TheDeviceOfAFailedGraphAllocationIsRead) {
  // Ascend/ModelZoo-TensorFlow TensorFlow/contrib/cv/InsightFace_TF/figures/if_npu.log.
  auto f = Verdicts(
      "EL0004: Failed to allocate memory.\n"
      "        Possible Cause: Available memory is insufficient.\n"
      "        TraceBack (most recent call last):\n"
      "        rtMalloc execute failed, reason=[driver error:out of memory][FUNC:FuncErrorReason]"
      "[FILE:error_message_manage.cc][LINE:49]\n"
      "        Call rtMalloc fail, purpose:feature map,used for op input and output., "
      "size:6861537792, device_id:6[FUNC:MallocMemory][FILE:graph_mem_allocator.cc][LINE:56]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "memory") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 6);
}

TEST(CommittedLogs, ADeviceBlackBoxEccLineIsRead) {
  // Ascend mind-cluster component/ascend-faultdiag test fixtures: hisi_logs/.../bbox/driver.txt.
  auto f = Verdicts(
      "device_id = 2, fail info: device_id-2 appeared multi ecc err, the physical address is "
      "0x400cd8d202e0\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].cls, "device") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 2);
}

TEST(CommittedLogs, ClusterSoftwaresFaultReportsAreRead) {
  // Ascend/mind-cluster docs/zh/scheduling/07_references/02_common_operations.md: the device
  // plugin's fault event and the job's fault record ("no fault found" before).
  auto f = Verdicts(
      "kube-system   8s          Warning   Occur      pod/ascend-device-plugin-daemonset-910-dlpmv "
      "  "
      "device fault, nodeName:k8smaster, assertion:Occur, cardID:2, deviceID:0, "
      "faultCodes:8C084E00, faultLevelName:RestartBusiness, alarmRaisedTime:2023-11-21 05:36:53\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.device_plugin_fault") << f[0].title;
  EXPECT_EQ(f[0].cls, "device");
  f = Verdicts(
      "[{\"FaultDeviceList\":[{\"fault_type\":\"CardUnhealthy\",\"npu_name\":\"Ascend910-4\","
      "\"fault_level\":\"SeparateNPU\",\"fault_code\":\"A8028801,A4028801,80E18402\"}]}]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.card_unhealthy") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].device, 4);
  // Its FAQ (docs/zh/scheduling/faq.md @27179ad1): what the components print when the cluster
  // is not set up for them.
  f = Verdicts(
      "E1024 19:45:08.438884       6 reflector.go:127] K8s.io/client-go@v1.19.4-h4/tools/cache/"
      "reflector.go:156: Failed to watch *v1alpha1.Job: the server could not find the requested "
      "resource (get jobs.batch.volcano.sh)\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.volcano_not_installed") << f[0].title;
  f = Verdicts(
      "  Warning  FailedMount  8s (x5 over 15s)  kubelet, ubuntu      MountVolume.SetUp failed for "
      "volume \"device-ascenddeviceplugin\" : hostPath type check failed: /var/log/mindx-dl/"
      "ascend-device-plugin is not a directory\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.host_path_missing") << f[0].title;
  f = Verdicts("create configmap fault-job-info err:namespaces \"cluster-system\" not fount\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.namespace_missing") << f[0].title;
  f = Verdicts(
      "RuntimeError: Failed to register the compute graph node: 4. Reason: Repeated registration "
      "node: 4 to the scheduler. Please check if there's another scheduler process with port:2222 "
      "still running, or this is an extra node for distributed job.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.mindspore_repeated_registration") << f[0].title;
  EXPECT_TRUE(Names(f[0], 4, "root cause")) << f[0].title;
}

}  // namespace
}  // namespace vigil::diagnose
