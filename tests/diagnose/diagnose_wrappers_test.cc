// The wrappers real users' logs come in: a UTF-8 byte-order mark, a terminal's colours, a
// timestamping pipe (moreutils ts), a job step's task label, a compressed file's name. The
// verdict must be the one the bare lines give.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vigil::diagnose
