// The exception a Python traceback ends with (python_exception.h), and the last-resort event the
// free-text reader makes of it when no knowledge-base entry knows the line. Example lines are of
// the forms in tests/diagnose/ascend_fd/kg_traceback_worker*.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(Traceback, OtherOutputBetweenTheFramesAndTheExceptionKeepsIt) {
  // Another rank's lines between the last frame and its exception (a shared console).
  const std::string tb =
      "Traceback (most recent call last):\n"
      "  File \"/w/lmcache_ascend/v1/transfer.py\", line 88, in __init__\n"
      "    mem_handle = hccl_agent.register_mem(buffer_ptr, buffer_size)\n"
      "                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
      "(Worker_TP1 pid=74488) INFO 03-01 20:55:34 [worker.py:12] loading\n"
      "(Worker_TP1 pid=74488) INFO 03-01 20:55:34 [worker.py:13] still loading\n"
      "RuntimeError: Failed to register memory | HCCL Error Code: 19\n";
  std::vector<Event> ev = WithKb(tb, "python.uncaught_exception");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].status, "RuntimeError");
  EXPECT_NE(ev[0].context.find("transfer.py"), std::string::npos) << ev[0].context;
}

// A large file is read in pieces split at line starts (ParseTextInPieces, as the scanner does):
// a traceback whose frames end one piece and whose exception line starts the next still gives
// the exception its frames as context and its event, as one pass over the file does. Every cut
// between two lines of the traceback is tried, with plog records and other text around it.
TEST(Traceback, CutBetweenFramesAndExceptionKeepsTheContext) {
  const std::string head =
      "[INFO] HCCL(7,python):2025-10-24-11:00:00.000.000 [hccl.cc:1] [7]init done\n"
      "worker-1: some progress line\n";
  const std::string tb =
      "worker-1: Traceback (most recent call last):\n"
      "worker-1:   File \"/cache/train.py\", line 558, in pretrain\n"
      "worker-1:     iteration = train(*train_args)\n"
      "[INFO] HCCL(7,python):2025-10-24-11:00:01.000.000 [hccl.cc:2] [7]a record in between\n"
      "worker-1:   File \"/cache/loader.py\", line 12, in load\n"
      "worker-1:     dist.barrier()\n"
      "worker-1: ValueError: bad sample in shard 7\n";
  const std::string tail = "worker-1: after the traceback\n";
  const std::string text = head + tb + tail;
  const std::vector<Event> whole = WithKb(text, "python.uncaught_exception");
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_NE(whole[0].context.find("train.py"), std::string::npos) << whole[0].context;
  ASSERT_NE(whole[0].context.find("loader.py"), std::string::npos) << whole[0].context;
  // Two pieces, the second from the first line start at or after half the text: newlines
  // before or after it put that half at byte `cut` of the text.
  for (size_t cut = head.size() + 1; cut < head.size() + tb.size(); ++cut) {
    std::string padded = text + std::string(2 * cut > text.size() ? 2 * cut - text.size() : 0, '\n');
    if (2 * cut < text.size()) padded = std::string(text.size() - 2 * cut, '\n') + padded;
    std::vector<Event> one, two;
    for (Event& e : ParseText(padded, 0).events)
      if (e.kb == "python.uncaught_exception") one.push_back(std::move(e));
    for (Event& e : ParseTextInPieces(padded, 0, 2).events)
      if (e.kb == "python.uncaught_exception") two.push_back(std::move(e));
    ASSERT_EQ(one.size(), 1u) << "cut at " << cut;
    ASSERT_EQ(two.size(), 1u) << "cut at " << cut;
    EXPECT_EQ(two[0].context, one[0].context) << "cut at " << cut;
    EXPECT_EQ(two[0].loc.line, one[0].loc.line) << "cut at " << cut;
    EXPECT_EQ(two[0].status, "ValueError") << "cut at " << cut;
  }
}

}  // namespace
}  // namespace vigil::diagnose
