// torchrun's failure summary read as a block (elastic_summary.h): the worker that failed first,
// its exit code or signal, and the verdict that rests on it. The texts are machine-printed
// summaries from public reports, cited at each test.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/diagnose.h"
#include "diagnose/elastic_summary.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

std::vector<const Event*> WithKb(const std::vector<Event>& ev, const std::string& kb) {
  std::vector<const Event*> out;
  for (const Event& e : ev)
    if (e.kb == kb) out.push_back(&e);
  return out;
}

// A complete summary with no other failures; the root cause died of SIGABRT.
// https://github.com/czp16/Bridge-LLM-reasoning/issues/1
const char* kAbort =
    "Failures:\n"
    "  <NO_OTHER_FAILURES>\n"
    "--------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2025-11-24_17:05:40\n"
    "  host      : user-Rack-Server\n"
    "  rank      : 1 (local_rank: 1)\n"
    "  exitcode  : -6 (pid: 2195196)\n"
    "  error_file: <N/A>\n"
    "  traceback : Signal 6 (SIGABRT) received by PID 2195196\n"
    "========================================================\n"
    "SFT completed\n";

TEST(ElasticSummary, RootCauseEntryIsOneEventWithRankAndSignal) {
  std::vector<Event> ev = ParseText(kAbort, 0).events;
  auto root = WithKb(ev, "framework.torchrun_first_failure");
  ASSERT_EQ(root.size(), 1u);
  const Event& e = *root[0];
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.launcher_rank, 1);
  EXPECT_EQ(e.pid, 2195196);
  EXPECT_EQ(e.ret, -6);
  EXPECT_EQ(e.status, "SIGABRT");
  EXPECT_EQ(e.local_server, "user-Rack-Server");
  EXPECT_EQ(e.loc.line, 8u);  // the entry's rank field
  EXPECT_NE(e.text.find("rank 1 (local_rank 1), killed by SIGABRT (exitcode -6), pid 2195196"), std::string::npos)
      << e.text;
  // The field lines are the block's: no event of their own.
  EXPECT_TRUE(WithKb(ev, "framework.worker_killed_by_signal").empty());
  EXPECT_TRUE(WithKb(ev, "framework.torchrun_child_failed").empty());
}

// DSpark training on Ascend 910C: rank 1 failed first; the others were shut down (SIGKILL,
// SIGTERM) half a minute later. The log ends inside the root-cause entry.
// https://github.com/vllm-project/speculators/issues/1115 (tests/diagnose/corpus/speculators-1115)
TEST(ElasticSummary, CutSummaryOfAnAscendJob) {
  const std::string dir = std::string(VIGIL_DIAG_FIXTURES) + "/../corpus/speculators-1115/logs";
  DiagnoseOptions o;
  o.inputs = {dir};
  o.threads = 1;
  DiagnoseResult r = Diagnose(o);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.kb, "framework.torchrun_first_failure");
  EXPECT_EQ(f.cls, "process");
  ASSERT_FALSE(f.ranks.empty());
  EXPECT_EQ(f.ranks.front().rank, 1);
  EXPECT_EQ(f.ranks.front().role, "root cause");
  ASSERT_FALSE(f.evidence.empty());
  EXPECT_NE(f.evidence.front().text.find("first observed failure: rank 1 (local_rank 1), exit code not in the log"),
            std::string::npos)
      << f.evidence.front().text;
  // The other failures are read too, each with its signal, and follow from the first.
  bool sigkill = false, sigterm = false, exit1 = false;
  for (const Evidence& e : f.evidence) {
    sigkill = sigkill || e.text.find("rank 0 (local_rank 0), killed by SIGKILL (exitcode -9), pid 14689") != std::string::npos;
    sigterm = sigterm || e.text.find("rank 2 (local_rank 2), killed by SIGTERM (exitcode -15)") != std::string::npos;
    exit1 = exit1 || e.text.find("rank 3 (local_rank 3), exitcode 1, pid 14692") != std::string::npos;
  }
  EXPECT_TRUE(sigkill && sigterm && exit1) << RenderText(r, true);
}

TEST(ElasticSummary, ASummaryBehindALauncherPrefixIsRead) {
  // The same summary as docker compose shows it ("worker-1  | ") and with kubectl's stamps.
  for (const std::string prefix : {"worker-1  | ", "2025-11-24T09:05:40.123456789Z "}) {
    std::string text;
    for (size_t at = 0; at < std::string(kAbort).size();) {
      const size_t nl = std::string(kAbort).find('\n', at);
      text += prefix + std::string(kAbort).substr(at, nl - at + 1);
      at = nl + 1;
    }
    const std::vector<Event> events = ParseText(text, 0).events;  // root points into it
    auto root = WithKb(events, "framework.torchrun_first_failure");
    ASSERT_EQ(root.size(), 1u) << prefix;
    EXPECT_EQ(root[0]->rank, 1) << prefix;
    EXPECT_EQ(root[0]->status, "SIGABRT") << prefix;
  }
}

TEST(ElasticSummary, ASummaryBehindTextNoPrefixKnowsIsRead) {
  // Markdown bullets, cat -n's line numbers, a chat header: as many columns before every line.
  std::vector<std::string> lines;
  for (size_t at = 0; at < std::string(kAbort).size();) {
    const size_t nl = std::string(kAbort).find('\n', at);
    lines.push_back(std::string(kAbort).substr(at, nl - at));
    at = nl + 1;
  }
  for (int form = 0; form < 3; ++form) {
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string n = std::to_string(100 + i);
      text += (form == 0   ? std::string("- ")
               : form == 1 ? "   " + n + "\t"
                           : "[10:42 AM] Ann: ") +
              lines[i] + "\n";
    }
    const std::vector<Event> events = ParseText(text, 0).events;
    auto root = WithKb(events, "framework.torchrun_first_failure");
    ASSERT_EQ(root.size(), 1u) << form;
    EXPECT_EQ(root[0]->rank, 1) << form;
  }
}

TEST(ElasticSummary, OtherTextIsNotASummary) {
  std::vector<Event> ev = ParseText("  rank      : 3 (local_rank: 3)\n[1]:\n  exitcode  : 1 (pid: 7)\n", 0).events;
  EXPECT_TRUE(WithKb(ev, "framework.torchrun_first_failure").empty());
  EXPECT_TRUE(WithKb(ev, "framework.torchrun_child_failed").size() <= 2u);  // line patterns only
  EXPECT_EQ(SignalName(9), "SIGKILL");
  EXPECT_EQ(SignalName(11), "SIGSEGV");
  EXPECT_EQ(SignalName(64), "signal 64");
}

}  // namespace
}  // namespace vigil::diagnose
