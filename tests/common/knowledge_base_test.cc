#include "common/knowledge_base.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>

namespace vigil::kb {
namespace {

// A classes file and one entry that passes every check; the tests below break one thing each.
constexpr const char* kClasses = R"({"classes": [
  {"id": "timeout", "name": "t", "meaning": "m"},
  {"id": "network", "name": "n", "meaning": "m"}]})";

std::string EntryJson(const std::string& id, const std::string& extra = "",
                      const std::string& cls = "timeout") {
  return R"({"id": ")" + id + R"(", "family": "hccl", "component": "HCCL", "class": ")" + cls +
         R"(", "role": "symptom", "title": "T", "meaning": "M", "causes": ["c"],
            "checks": ["k"], "actions": ["a"])" +
         extra + "}";
}

std::string File(const std::vector<std::string>& entries) {
  std::string s = R"({"entries": [)";
  for (size_t i = 0; i < entries.size(); ++i) s += (i ? "," : "") + entries[i];
  return s + "]}";
}

// Parses classes + one file; returns the errors.
std::vector<std::string> ParseErrors(const std::string& file, KnowledgeBase* out = nullptr) {
  std::vector<std::string> errors;
  KnowledgeBase kb = KnowledgeBase::Parse({kClasses, file}, &errors);
  if (out != nullptr) *out = kb;
  return errors;
}

bool AnyContains(const std::vector<std::string>& errors, const std::string& what) {
  for (const auto& e : errors) {
    if (e.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(KnowledgeBase, EmbeddedLoadsWithoutErrors) {
  for (const std::string& e : LoadErrors()) ADD_FAILURE() << e;
  EXPECT_GT(Get().entries().size(), 20u);
  EXPECT_GE(Get().classes().size(), 10u);
}

TEST(KnowledgeBase, EveryEntryIsComplete) {
  const std::set<std::string> roles = {"cause", "symptom", "either"};
  for (const Entry& e : Get().entries()) {
    EXPECT_NE(Get().Class(e.cls), nullptr) << e.id;
    EXPECT_FALSE(e.meaning.empty()) << e.id;
    EXPECT_FALSE(e.title.empty()) << e.id;
    EXPECT_FALSE(e.causes.empty()) << e.id;
    EXPECT_FALSE(e.checks.empty()) << e.id;
    EXPECT_FALSE(e.actions.empty()) << e.id;
    EXPECT_TRUE(roles.count(e.role)) << e.id;
    // Un-coded entries are found by their patterns, or by a block reader that names itself.
    // Un-coded ids read "<family>.<slug>".
    // The analyzer's own verdicts (diagnose.json) are conclusions, not line shapes: no patterns.
    if (e.code.empty() && !e.id.starts_with("diagnose.")) {
      EXPECT_TRUE(!e.patterns.empty() || !e.reader.empty()) << e.id;
      EXPECT_EQ(e.id.rfind(e.family + ".", 0), 0u) << e.id;
    }
    for (const Pattern& p : e.patterns) EXPECT_FALSE(p.needle.empty()) << e.id;
  }
}

// Whether `to` follows from `from` along leads_to, or against symptom_of, in the embedded base.
bool Reaches(const std::string& from, const std::string& to) {
  std::set<std::string> seen = {from};
  std::deque<std::string> todo = {from};
  while (!todo.empty()) {
    const std::string id = todo.front();
    todo.pop_front();
    if (id == to) return true;
    std::vector<std::string> next;
    if (const Entry* e = Get().Find(id)) next = e->leads_to;
    for (const Entry& e : Get().entries()) {
      for (const std::string& s : e.symptom_of) {
        if (s == id) next.push_back(e.id);
      }
    }
    for (const std::string& n : next) {
      if (seen.insert(n).second) todo.push_back(n);
    }
  }
  return false;
}

TEST(KnowledgeBase, RelationsLeadFromFaultsToTheirTimeouts) {
  // A NIC port down ends, through error CQEs and notify-wait timeouts, in the watchdog's timeout.
  EXPECT_TRUE(Reaches("EJ0002", "hccl.heartbeat_error_cqe"));
  EXPECT_TRUE(Reaches("hccl.heartbeat_error_cqe", "EI0002"));
  EXPECT_TRUE(Reaches("EJ0002", "torch_npu.watchdog_timeout"));
  // A lost device ends in the peers' EI0002 through the heartbeat.
  EXPECT_TRUE(Reaches("EL0001", "hccl.heartbeat_lost"));
  EXPECT_TRUE(Reaches("EL0001", "EI0002"));
  // Nothing leads back from a timeout to the fault that caused it.
  EXPECT_FALSE(Reaches("EI0002", "EJ0002"));
  EXPECT_FALSE(Reaches("torch_npu.watchdog_timeout", "hccl.heartbeat_lost"));
  for (const char* id : {"EI0002", "torch_npu.watchdog_timeout", "runtime.fftsplus_timeout"}) {
    const Entry* e = Get().Find(id);
    ASSERT_NE(e, nullptr) << id;
    EXPECT_EQ(e->role, "symptom") << id;
    EXPECT_EQ(e->cls, "timeout") << id;
  }
}

TEST(KnowledgeBase, FindByIdAndCode) {
  const Entry* e = Get().Find("EI0002");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, "EI0002");
  EXPECT_EQ(e->cls, "timeout");
  EXPECT_EQ(e->role, "symptom");
  EXPECT_TRUE(e->has_hccl);
  EXPECT_EQ(Get().Find("no.such_entry"), nullptr);
  EXPECT_EQ(Get().Find(""), nullptr);
  ASSERT_NE(Get().Class("network"), nullptr);
  EXPECT_EQ(Get().Class("nonsense"), nullptr);
}

TEST(KnowledgeBase, ExplainPrintsTheWholeEntry) {
  const Entry* e = Get().Find("EI0002");
  ASSERT_NE(e, nullptr);
  const std::string text = Explain(*e);
  EXPECT_EQ(text.rfind("EI0002  Communication_Error_Timeout\n", 0), 0u) << text;
  EXPECT_NE(text.find("class: timeout"), std::string::npos) << text;
  EXPECT_NE(text.find(e->meaning), std::string::npos);
  EXPECT_NE(text.find(e->causes.front()), std::string::npos);
  EXPECT_NE(text.find(e->checks.front()), std::string::npos);
  EXPECT_NE(text.find(e->actions.front()), std::string::npos);
  // An un-coded entry says which literal to grep for.
  const Entry* lost = Get().Find("hccl.heartbeat_lost");
  ASSERT_NE(lost, nullptr);
  ASSERT_FALSE(lost->patterns.empty());
  EXPECT_NE(Explain(*lost).find("\"" + lost->patterns.front().needle + "\""), std::string::npos);
}

TEST(KnowledgeBase, ParseAcceptsAWellFormedFile) {
  KnowledgeBase kb;
  EXPECT_TRUE(ParseErrors(File({EntryJson("hccl.a"),
                                EntryJson("hccl.b",
                                          R"j(, "code": "EX0001", "symptom_of": ["hccl.a"],
                                   "patterns": [{"needle": "x", "re": "x(?P<rank>\\d+)"}])j")}),
                          &kb)
                  .empty());
  ASSERT_EQ(kb.entries().size(), 2u);
  EXPECT_EQ(kb.Find("EX0001"), kb.Find("hccl.b"));
  EXPECT_EQ(kb.Find("hccl.b")->patterns.size(), 1u);
}

TEST(KnowledgeBase, ParseReportsBadJson) {
  EXPECT_TRUE(AnyContains(ParseErrors("{\"entries\": [ {"), "not a JSON object"));
  EXPECT_TRUE(AnyContains(ParseErrors("{\"something\": 1}"), "neither"));
}

TEST(KnowledgeBase, ParseReportsDuplicateIds) {
  KnowledgeBase kb;
  auto errors = ParseErrors(File({EntryJson("hccl.a"), EntryJson("hccl.a")}), &kb);
  EXPECT_TRUE(AnyContains(errors, "duplicate id \"hccl.a\""));
  EXPECT_EQ(kb.entries().size(), 1u);  // the first one is kept
  errors = ParseErrors(
      File({EntryJson("hccl.a", R"(, "code": "EX1")"), EntryJson("hccl.b", R"(, "code": "EX1")")}));
  EXPECT_TRUE(AnyContains(errors, "already another entry's"));
}

TEST(KnowledgeBase, ParseReportsUnknownClass) {
  KnowledgeBase kb;
  auto errors = ParseErrors(File({EntryJson("hccl.a", "", "weather")}), &kb);
  EXPECT_TRUE(AnyContains(errors, "class \"weather\""));
  EXPECT_TRUE(kb.entries().empty());
}

TEST(KnowledgeBase, ParseReportsUnknownRelations) {
  auto errors = ParseErrors(File({EntryJson("hccl.a", R"(, "symptom_of": ["hccl.nope"])"),
                                  EntryJson("hccl.b", R"(, "leads_to": ["hccl.gone"])")}));
  EXPECT_TRUE(AnyContains(errors, "symptom_of names unknown id \"hccl.nope\""));
  EXPECT_TRUE(AnyContains(errors, "leads_to names unknown id \"hccl.gone\""));
}

TEST(KnowledgeBase, ParseReportsMissingFields) {
  for (const char* field : {"\"class\"", "\"meaning\"", "\"title\"", "\"role\""}) {
    std::string e = EntryJson("hccl.a");
    const size_t at = e.find(field);
    ASSERT_NE(at, std::string::npos);
    e.replace(at, std::string(field).size(), "\"unused\"");
    KnowledgeBase kb;
    auto errors = ParseErrors(File({e}), &kb);
    EXPECT_TRUE(AnyContains(errors, std::string("missing ") + field)) << field;
    EXPECT_TRUE(kb.entries().empty()) << field;
  }
  // Causes, checks and actions need at least one item each.
  for (const char* list : {"causes", "checks", "actions"}) {
    std::string e = EntryJson("hccl.a");
    const std::string key = std::string("\"") + list + "\": [\"";
    const size_t at = e.find(key);
    ASSERT_NE(at, std::string::npos);
    e.replace(at, key.size() + 3, std::string("\"") + list + "\": []");
    auto errors = ParseErrors(File({e}));
    EXPECT_TRUE(AnyContains(errors, std::string("\"") + list + "\" needs at least")) << e;
  }
  EXPECT_TRUE(AnyContains(ParseErrors(File({R"({"family": "hccl"})"})), "missing \"id\""));
}

TEST(KnowledgeBase, ParseReportsBadPatternsRolesAndScreenTexts) {
  EXPECT_TRUE(
      AnyContains(ParseErrors(File({EntryJson("hccl.a", R"(, "patterns": [{"re": "x"}])")})),
                  "missing \"needle\""));
  EXPECT_TRUE(AnyContains(
      ParseErrors(File(
          {EntryJson("hccl.a", R"j(, "patterns": [{"needle": "x", "re": "(?P<rnak>\\d+)"}])j")})),
      "group \"rnak\""));
  std::string bad_role = EntryJson("hccl.a");
  bad_role.replace(bad_role.find("symptom"), 7, "victim");
  EXPECT_TRUE(AnyContains(ParseErrors(File({bad_role})), "role \"victim\""));
  // Whom a line is about: self (the default) or the peer of the printing rank's link.
  EXPECT_TRUE(AnyContains(ParseErrors(File({EntryJson("hccl.a", R"(, "about": "them")")})),
                          "about \"them\""));
  KnowledgeBase kb;
  EXPECT_TRUE(ParseErrors(File({EntryJson("hccl.a", R"(, "about": "peer")"), EntryJson("hccl.b")}),
                          &kb)
                  .empty());
  ASSERT_NE(kb.Find("hccl.a"), nullptr);
  EXPECT_TRUE(kb.Find("hccl.a")->about_peer);
  EXPECT_FALSE(kb.Find("hccl.b")->about_peer);
  // A screen template whose placeholders and argument names differ in number.
  EXPECT_TRUE(AnyContains(ParseErrors(File({EntryJson("EX0001", R"(, "code": "EX0001", "hccl": {
          "stage": "TaskExecStage", "message": "a {} b {}", "arg_names": "one",
          "cause": "N/A", "solution": "N/A", "advice": "x"})")})),
                          "placeholders"));
}

}  // namespace
}  // namespace vigil::kb
