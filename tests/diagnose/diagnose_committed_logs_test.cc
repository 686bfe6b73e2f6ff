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

}  // namespace
}  // namespace vigil::diagnose
