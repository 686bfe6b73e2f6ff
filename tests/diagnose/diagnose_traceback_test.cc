// The exception a Python traceback ends with (python_exception.h), and the last-resort event the
// free-text reader makes of it when no knowledge-base entry knows the line. Example lines are of
// the forms in tests/diagnose/ascend_fd/kg_traceback_worker*.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/python_exception.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

TEST(Traceback, ExceptionType) {
  EXPECT_EQ(TracebackExceptionType("RuntimeError: MemcpyAsync failed!"), "RuntimeError");
  EXPECT_EQ(TracebackExceptionType("aaaaaaaaaaaa InitError: MemcpyAsync failed!"), "InitError");
  EXPECT_EQ(TracebackExceptionType("111111111 TimeException: MemcpyAsync failed!"), "TimeException");
  EXPECT_EQ(TracebackExceptionType("ray.exceptions.RayTaskError(RayActorError): ray::main_task() (pid=1)"),
            "ray.exceptions.RayTaskError");
  EXPECT_EQ(TracebackExceptionType("Exception: ASCEND_OPP_PATH environment variable is not set."), "Exception");
  EXPECT_EQ(TracebackExceptionType("KeyError"), "KeyError");
  EXPECT_EQ(TracebackExceptionType("Error: something"), "");
  EXPECT_EQ(TracebackExceptionType("raise Exception(f\"x is not set\")"), "");
  EXPECT_EQ(TracebackExceptionType("Error Message is"), "");
  EXPECT_EQ(TracebackExceptionType("ErrorCode: 5"), "");
  EXPECT_EQ(TracebackExceptionType("the ValueErrors: were many"), "");
}

std::vector<Event> WithKb(const std::string& text, const std::string& kb) {
  std::vector<Event> out;
  for (Event& e : ParseText(text, 0).events)
    if (e.kb == kb) out.push_back(std::move(e));
  return out;
}

TEST(Traceback, UnknownExceptionEndingATracebackIsAnEvent) {
  const std::string tb =
      "Traceback (most recent call last):\n"
      "  File \"/cache/train.py\", line 558, in pretrain\n"
      "    iteration = train(*train_args)\n"
      "ValueError: bad sample in shard 7\n"
      "some later line\n"
      "OtherError: not part of a traceback\n";
  std::vector<Event> ev = WithKb(tb, "python.uncaught_exception");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].status, "ValueError");
  EXPECT_EQ(ev[0].loc.line, 4u);
  EXPECT_NE(ev[0].context.find("train.py"), std::string::npos) << ev[0].context;
  // No traceback: the same line alone is not an event.
  EXPECT_TRUE(WithKb("ValueError: bad sample in shard 7\n", "python.uncaught_exception").empty());
}

}  // namespace
}  // namespace vigil::diagnose
