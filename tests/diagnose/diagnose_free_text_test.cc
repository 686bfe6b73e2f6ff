// Lines that are not plog records: every screen layout, launcher and logger prefixes, ANSI
// colours, CRLF, tracebacks; and the line-format table itself. Example lines are of the forms
// real jobs print (tests/diagnose/corpus/ holds whole real logs).
#include <gtest/gtest.h>

#include <string>

#include "diagnose/kb_matcher.h"
#include "diagnose/line_formats.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

std::vector<Event> Events(const std::string& text) { return ParseText(text, 0).events; }

const Event* FirstWithCode(const std::vector<Event>& ev, const std::string& code) {
  for (const Event& e : ev)
    if (e.code == code) return &e;
  return nullptr;
}

TEST(LineFormats, TableLoadsAndCompiles) {
  const LineFormats& f = LineFormats::Get();
  EXPECT_TRUE(f.errors().empty()) << f.errors().front();
  EXPECT_GE(f.prefix_count(), 10u);
  EXPECT_GE(f.layout_count(), 5u);
  EXPECT_TRUE(KbMatcher::Get().errors().empty()) << KbMatcher::Get().errors().front();
}

TEST(LineFormats, CodeTokens) {
  EXPECT_TRUE(HasCodeToken("EI0002: x"));
  EXPECT_TRUE(HasCodeToken("error message: EJ0001: Failed"));
  EXPECT_TRUE(HasCodeToken("Title(EE1002): x"));
  EXPECT_TRUE(HasCodeToken("E39999: Inner Error!"));
  EXPECT_TRUE(HasCodeToken(") ERR02200 DIST call hccl api failed."));
  EXPECT_TRUE(HasCodeToken("EZ9999"));
  EXPECT_FALSE(HasCodeToken("XEI0002 and EI00021 and EI002"));
  EXPECT_FALSE(HasCodeToken("ERROR 06-12 12:00:00 nothing"));
}

TEST(LineFormats, StripsNestedPrefixes) {
  LineContext ctx;
  std::string_view rest = LineFormats::Get().StripPrefixes(
      "[rank3]: (VllmWorker rank=2 pid=123) ERROR 06-12 12:00:00 [worker.py:12] RuntimeError: x", &ctx);
  EXPECT_EQ(rest, "RuntimeError: x");
  EXPECT_EQ(ctx.rank, 3);  // the outermost prefix wins
  EXPECT_EQ(ctx.pid, 123);
  LineContext ray;
  rest = LineFormats::Get().StripPrefixes("(RayWorkerWrapper pid=545, ip=10.17.44.60) EI0002: t", &ray);
  EXPECT_EQ(rest, "EI0002: t");
  EXPECT_EQ(ray.pid, 545);
  EXPECT_EQ(ray.ip, "10.17.44.60");
  LineContext tn;
  rest = LineFormats::Get().StripPrefixes(
      "[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 DIST call hccl api failed.", &tn);
  EXPECT_EQ(rest, "ERR02200 DIST call hccl api failed.");
  EXPECT_EQ(tn.rank, 3);
  EXPECT_EQ(tn.device, 3);
  EXPECT_EQ(tn.pid, 927000);
  // A plog record is not a prefix.
  LineContext pl;
  rest = LineFormats::Get().StripPrefixes("[ERROR] HCCL(12,python):2025-01-02-03:04:05.678.901 [a.cc:1] [2]x", &pl);
  EXPECT_TRUE(rest.starts_with("[ERROR] HCCL(12"));
}

TEST(FreeText, EveryScreenLayout) {
  const char* lines[] = {
      "[PID: 4242] 2025-01-02-03:04:05.678.901 Communication_Error_Timeout(EI0002): The wait execution "
      "of the Notify register times out.",
      "Communication_Error_Timeout(EI0002): The wait execution of the Notify register times out.",
      "EI0002: [PID: 4242] 2025-01-02-03:04:05.678.901 The wait execution of the Notify register times out.",
      "RuntimeError: Run task failed, error message: EI0002: The wait execution of the Notify register times out.",
      "EI0002: 2025-01-02-03:04:05.678.901 The wait execution of the Notify register times out.",
      "EI0002: The wait execution of the Notify register times out. Reason: x",
  };
  for (const char* l : lines) {
    std::vector<Event> ev = Events(std::string(l) + "\n");
    const Event* e = FirstWithCode(ev, "EI0002");
    ASSERT_NE(e, nullptr) << l;
    EXPECT_EQ(e->kind, EventKind::kScreenError) << l;
    EXPECT_EQ(e->kb, "EI0002") << l;
    EXPECT_NE(e->detail.find("Notify register"), std::string::npos) << l;
  }
  std::vector<Event> ev = Events(std::string(lines[2]) + "\n");
  EXPECT_EQ(ev[0].pid, 4242);
  EXPECT_NE(ev[0].time, kNoTime);
}

TEST(FreeText, EveryCodeFamily) {
  for (const char* code : {"EJ0001", "EL0004", "EE1002", "EZ9999", "EH9999", "EI9999", "E39999"}) {
    std::vector<Event> ev = Events(std::string(code) + ": 2025-01-02-03:04:05.678.901 something failed\n");
    const Event* e = FirstWithCode(ev, code);
    ASSERT_NE(e, nullptr) << code;
  }
}

TEST(FreeText, PrefixesAnsiAndCrlf) {
  std::string text =
      "\x1b[1;31m(VllmWorker rank=5 pid=77) ERROR 06-12 12:00:00 [worker.py:3] RuntimeError: EI0006: "
      "Getting socket times out.\x1b[0m\r\n";
  std::vector<Event> ev = Events(text);
  const Event* e = FirstWithCode(ev, "EI0006");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->launcher_rank, 5);
  EXPECT_EQ(e->pid, 77);
  EXPECT_EQ(e->launcher, "VllmWorker");
}

TEST(FreeText, PlogRecordBehindALauncherPrefix) {
  std::string text =
      "[rank1]: [ERROR] HCCL(4242,python):2025-01-02-03:04:05.678.901 [a.cc:1] [4243][HeartbeatAbnormal] "
      "crimer rank [127.0.0.1/2] status[LOST] by informer rank [127.0.0.1/1]\n";
  std::vector<Event> ev = Events(text);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0].pid, 4242);
  EXPECT_EQ(ev[0].launcher_rank, 1);
}

TEST(FreeText, TracebackFramesBecomeContext) {
  std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 10, in <module>\n"
      "    main()\n"
      "  File \"/app/train.py\", line 7, in main\n"
      "    dist.all_reduce(t)\n"
      "RuntimeError: EI0002: The wait execution of the Notify register times out.\n";
  std::vector<Event> ev = Events(text);
  const Event* e = FirstWithCode(ev, "EI0002");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->context.find("line 7, in main"), std::string::npos) << e->context;
}

TEST(FreeText, LinesWithoutErrorsAreNotEvents) {
  std::vector<Event> ev = Events("INFO 06-12 12:00:00 [worker.py:3] loading weights\nsome text\n\n");
  EXPECT_TRUE(ev.empty());
}

}  // namespace
}  // namespace vigil::diagnose
