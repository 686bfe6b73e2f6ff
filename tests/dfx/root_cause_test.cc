// The root-cause screen line (dfx/root_cause.h) without a job: its words come from the
// knowledge-base entry of the event's status, and the base's own "vigil.root_cause_line" pattern
// reads every field back, whatever is known or not.
#include "dfx/root_cause.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "diagnose/kb_matcher.h"

namespace vigil::dfx {
namespace {

// The fields the knowledge base's own pattern for the line reads back (through the analyzer's
// matcher, as `vigil diagnose` reads them); nullopt when it does not match.
std::optional<diagnose::KbFields> Fields(const std::string& line) {
  const kb::Entry* e = kb::Get().Find("vigil.root_cause_line");
  diagnose::KbFields f;
  if (e == nullptr || !diagnose::KbMatcher::Get().Fields(*e, line, &f)) return std::nullopt;
  return f;
}

// A small base of its own: the line's entry from the real one, and a LOST entry of known words.
kb::KnowledgeBase TestBase(const std::string& lost_id) {
  const std::string classes =
      R"({"classes": [{"id": "process", "name": "p", "meaning": "m"},
                      {"id": "network", "name": "n", "meaning": "m"}]})";
  const std::string entries = R"({"entries": [{"id": ")" + lost_id + R"(", "family": ")" +
                              lost_id.substr(0, lost_id.find('.')) + R"(",
      "component": "HCCL", "class": "process", "role": "cause", "title": "Heartbeat lost",
      "meaning": "A neighbour stopped beating. Second sentence, not on the screen.",
      "causes": ["c"], "checks": ["k"], "actions": ["a"], "symptom_of": [], "leads_to": [],
      "patterns": []}]})";
  std::vector<std::string> errors;
  kb::KnowledgeBase base = kb::KnowledgeBase::Parse({classes, entries}, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  return base;
}

HbEvent Lost(WallClock::time_point now) {
  HbEvent e;
  e.crimer = "127.0.0.1/2";
  e.informer = "127.0.0.1/1";
  e.status = HbStatus::kLost;
  e.arrival = now;
  e.discovered_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() -
      3'104'000);
  return e;
}

TEST(RootCauseLine, WordsFromTheEntryAllFieldsReadBack) {
  const auto now = WallClock::now();
  RootCause c;
  c.event = Lost(now);
  c.rank = 2;
  c.pid = 5678;
  c.exited = true;
  c.informer_rank = 1;
  const std::string line = FormatRootCauseLine(c, TestBase("hccl.heartbeat_lost"), now);
  EXPECT_EQ(line,
            "Vigil_Root_Cause(hccl.heartbeat_lost): rank 2 (127.0.0.1/2, pid 5678, exited) LOST, "
            "class process: A neighbour stopped beating; informer rank 1 (127.0.0.1/1), 3104 ms "
            "after the event.");
  const auto g = Fields(line);
  ASSERT_TRUE(g) << line;
  EXPECT_EQ(g->kb, "hccl.heartbeat_lost");
  EXPECT_EQ(g->rank, 2);
  EXPECT_EQ(g->ip, "127.0.0.1");
  EXPECT_EQ(g->device, 2);
  EXPECT_EQ(g->pid, 5678);
  EXPECT_TRUE(g->exited);
  EXPECT_EQ(g->status, "LOST");
  EXPECT_EQ(g->informer_rank, 1);
  EXPECT_EQ(g->informer_ip, "127.0.0.1");
  EXPECT_EQ(g->elapsed_ms, 3104);
}

TEST(RootCauseLine, UnknownRanksAndPidStillRead) {
  const auto now = WallClock::now();
  RootCause c;
  c.event = Lost(now);
  c.event.crimer = "10.0.0.7/3#4242";  // two ranks on one device: the pid in the uid
  c.event.status = HbStatus::kCqe;
  const std::string line = FormatRootCauseLine(c, TestBase("hccl.heartbeat_lost"), now);
  const auto g = Fields(line);
  ASSERT_TRUE(g) << line;
  EXPECT_EQ(g->rank, -1);  // "?"
  EXPECT_NE(line.find("rank ? ("), std::string::npos) << line;
  EXPECT_EQ(g->ip, "10.0.0.7");
  EXPECT_EQ(g->device, 3);
  EXPECT_EQ(g->pid, -1);
  EXPECT_FALSE(g->exited);
  EXPECT_EQ(g->status, "ERROR CQE");
  EXPECT_EQ(g->informer_rank, -1);
  EXPECT_NE(line.find("informer rank ? ("), std::string::npos) << line;
}

TEST(RootCauseLine, NoEntryNoWords) {
  const kb::KnowledgeBase base = TestBase("hccl.heartbeat_lost");
  ASSERT_NE(RootCauseEntry(base, HbStatus::kLost), nullptr);
  EXPECT_EQ(RootCauseEntry(base, HbStatus::kStuck), nullptr);
  EXPECT_EQ(RootCauseEntry(base, HbStatus::kOk), nullptr);
  RootCause c;
  c.event = Lost(WallClock::now());
  c.event.status = HbStatus::kStuck;
  const std::string line = FormatRootCauseLine(c, base, WallClock::now());
  EXPECT_NE(line.find("Vigil_Root_Cause(unknown): rank ? (127.0.0.1/2) STUCK, class unknown; "),
            std::string::npos)
      << line;
  EXPECT_TRUE(Fields(line)) << line;
}

// The shipped base has an entry, a class and words for every status the heartbeat reports.
TEST(RootCauseLine, ShippedBaseCoversEveryStatus) {
  for (HbStatus s : {HbStatus::kLost, HbStatus::kStuck, HbStatus::kCqe}) {
    const kb::Entry* e = RootCauseEntry(kb::Get(), s);
    ASSERT_NE(e, nullptr) << HbStatusName(s);
    EXPECT_NE(kb::Get().Class(e->cls), nullptr) << e->id;
    EXPECT_FALSE(e->meaning.empty()) << e->id;
  }
  EXPECT_EQ(RootCauseEntry(kb::Get(), HbStatus::kLost)->cls, "process");
}

}  // namespace
}  // namespace vigil::dfx
