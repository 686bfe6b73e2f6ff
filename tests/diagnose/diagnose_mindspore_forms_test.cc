// Forms of MindSpore-family output (MindSpore, MindSpore Lite, msrun, MindIE) that `vigil
// diagnose` once read nothing of or got wrong. Each test's lines are real lines of the public
// thread or guide page it cites.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.h"
#include "verdicts.h"

namespace vigil::diagnose {
namespace {

TEST(MindSporeForms, MindIeServerLinesAreRead) {
  // gpustack/gpustack#3894 ("no log records" before): the server cannot bind its address.
  auto f = Verdicts(
      "[2025-12-15 15:19:22.681+08:00] [38] [452] [server] [ERROR] [http_server.cpp:163] : "
      "[MIE04E02041C] [endpoint] Failed to listen 172.17.0.3:40032, please check if business ip "
      "and port are legal.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "cluster.mindie_listen_failed") << f[0].title;
  ASSERT_FALSE(f[0].ranks.empty());
  EXPECT_EQ(f[0].ranks[0].pid, 38);
  // gpustack/gpustack#5317: a model type this MindIE does not know.
  f = Verdicts(
      "[2026-05-14 18:06:16.762] [34] [281473586159104] [llm] [ERROR] "
      "[model_deploy_config.cpp:101] "
      "Failed to get vocab size from tokenizer wrapper with exception: NotImplementedError: "
      "unsupported model type: qwen3_vl_moe\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.model_type_unsupported") << f[0].title;
  EXPECT_EQ(f[0].cls, "config");
}

TEST(MindSporeForms, RuntimeCodesInMindSporesWordsAreRead) {
  // mindspore-lab/mindocr#615: "retcode: 507011" of a failed task ("no fault found" before).
  auto f = Verdicts(
      "[ERROR] DEVICE(2420702,fffe06ffd1e0,python):2023-11-20-15:34:32.886.561 [mindspore/ccsrc/"
      "plugin/device/ascend/hal/device/ascend_kernel_runtime.cc:761] DumpTaskExceptionInfo] Task "
      "fail infos task_id: 2, stream_id: 45, tid: 2420702, device_id: 0, retcode: 507011 ( model "
      "execute failed)\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "507011") << f[0].title;
  // mindspore-ai/docs faq/distributed_parallel.md: msrun gave a rank a device id past the count.
  f = Verdicts(
      "RuntimeError: Ascend kernel runtime initialization failed, device id: 9.\n"
      "Call aclrtSetDevice failed, ret[107001]. Got device count[8] and device id[9], please "
      "check if device id is valid.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "107001") << f[0].title;
  EXPECT_EQ(f[0].cls, "config");
}

TEST(MindSporeForms, ClusterAndInstallFailuresHaveEntries) {
  // mindspore-ai/docs faq/distributed_parallel.md: the root rank's unique id never came.
  auto f = Verdicts(
      "RuntimeError: Communicator of group xxx inited: failed. Result: Init communicator for group "
      "xxx exception info: Failed to fetch the unique id of the collective lib from the meta "
      "server node. Maybe the root rank process of this group has exited or has not executed to "
      "QueryUniqueID step. Please check root rank: 0's log.\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.mindspore_unique_id_fetch_failed") << f[0].title;
  EXPECT_TRUE(Names(f[0], 0, "root cause")) << f[0].title;
  // mindspore-ai/mindspore#252: the rank-table script finds no hccn_tool (a KeyError before).
  f = Verdicts(
      "/bin/sh: 1: hccn_tool: not found\n"
      "Failed to call hccn_tool, try to read /etc/hccn.conf instead\n"
      "KeyError: '0'\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "npu_tools.hccn_tool_missing") << f[0].title;
  // mindspore-lab/mindyolo#275: no operator information for the 310P.
  f = Verdicts(
      "[ERROR] KERNEL(90948,fffdbae749f0,python):2024-03-19-17:40:09.790.450 [mindspore/ccsrc/"
      "kernel/oplib/op_info_utils.cc:172] LoadOpInfoJson] Get op info json suffix path failed, "
      "soc_version: Ascend310P3\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "framework.mindspore_soc_unsupported") << f[0].title;
  // mindspore-lab/mindocr docs/zh/tutorials/frequently_asked_questions.md: the AI CPU package is
  // rejected, then TsdOpen fails (the verdict said "the device is held" before).
  f = Verdicts(
      "E39999 tsd client wait response fail, device response code[1]. load aicpu ops package "
      "failed, device[O], host pid[5653], error stack:\n"
      "[TSDaemon] checksum aicpu package failed, ret=103, [tsd_common.cpp:2242:SaveProcessConfig]"
      "17580\n"
      "TsdOpen failed. devId=0, tdt error=31[FUNC:PrintfTsdError][FILE:runtime.cc][LINE:2638]\n");
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f[0].kb, "runtime.aicpu_package_rejected") << f[0].title;
}

TEST(MindSporeForms, AnErrorRecordNothingExplainsIsShown) {
  // mindspore-lab/mindocr frequently_asked_questions.md (converter_lite): fourteen ERROR records
  // no entry knows gave "no fault found".
  auto f = Verdicts(
      "[ERROR] LITE(30860,7f579d3f4f40,converter_lite):2023-11-10-03:19:29.005.385 [mindspore/"
      "lite/tools/converter/adapter/acl/src/acl_pass_impl.cc:756] SetGraphInputShape] Failed to "
      "find input x in input_shape args0:1,3,736,1280\n"
      "[ERROR] LITE(30860,7f579d3f4f40,converter_lite):2023-11-10-03:19:29.005.416 [mindspore/"
      "lite/tools/converter/adapter/acl/src/acl_pass_impl.cc:773] ConvertGraphToOm] Failed to set "
      "graph input shape\n");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fault, "unexplained_error");
  EXPECT_EQ(f[0].confidence, "low");
  EXPECT_NE(f[0].title.find("Failed to find input x"), std::string::npos) << f[0].title;
  EXPECT_NE(f[0].title.find("LITE"), std::string::npos) << f[0].title;
  // INFO and WARNING records alone: nothing.
  f = Verdicts(
      "[WARNING] LITE(30860,7f579d3f4f40,converter_lite):2023-11-10-03:19:29.005.385 [mindspore/"
      "lite/tools/converter/converter.cc:1] Convert] input shape not given\n");
  EXPECT_TRUE(f.empty());
}

}  // namespace
}  // namespace vigil::diagnose
