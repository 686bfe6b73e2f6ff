// The runtime's EE codes, ACL's EH codes and Auto Tune's EC codes of the knowledge base: what a
// real screen line of each is recognised as, and that every added entry names its public source.
#include <gtest/gtest.h>

#include <string>

#include "common/knowledge_base.h"
#include "diagnose/scanner.h"

namespace vigil::diagnose {
namespace {

const Event* WithCode(const std::vector<Event>& ev, const std::string& code) {
  for (const Event& e : ev)
    if (e.code == code) return &e;
  return nullptr;
}

// Printed by the runtime's own unit test of its host-memory error (hicann/runtime,
// .claude/skills/errmsg-ut-setup/SKILL.md, "示例输出").
TEST(KbCodes, RuntimeHostMemoryLineIsMemory) {
  std::string text =
      "[PID: 12345] 2025-04-28-15:38:53.922.974 Resource_Error_Insufficient_Host_Memory(EE1013): \n"
      "Failed to allocate 1024 bytes host memory for Runtime.\n";
  std::vector<Event> ev = ParseText(text, 0).events;
  const Event* e = WithCode(ev, "EE1013");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kb, "EE1013");
  const kb::Entry* entry = kb::Get().Find(e->kb);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->cls, "memory");
  EXPECT_EQ(entry->component, "RUNTIME");
}

// Printed in the runtime's FAQ on EE1023 (hicann/runtime, docs/zh/FAQ/EE1023资源不足问题.md).
TEST(KbCodes, RuntimeResourceLineIsEnvironment) {
  std::vector<Event> ev =
      ParseText("    Resource_Error(EE1023): Alloc Stream resource failed. Reason: Too many streams are created.\n", 0)
          .events;
  const Event* e = WithCode(ev, "EE1023");
  ASSERT_NE(e, nullptr);
  const kb::Entry* entry = kb::Get().Find(e->kb);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->cls, "environment");
}

TEST(KbCodes, AddedFamiliesCarryTheirSourceAndClass) {
  struct Want {
    const char* code;
    const char* cls;
    const char* component;
    const char* source_part;
  } wants[] = {
      {"EE1005", "environment", "RUNTIME", "RTS-Errors/EE1005-Not_Supported.md"},
      {"EE1015", "environment", "RUNTIME", "RTS-Errors/EE1015-Package_Error_Incorrect_Driver_Version.md"},
      {"EE2002", "config", "RUNTIME", "RTS-Errors/EE2002-"},
      {"EH0004", "environment", "ACL", "ACL-Errors/EH0004-File_Operation_Error.md"},
      {"EH0010", "memory", "ACL", "ACL-Errors/EH0010-"},
      {"EC0010", "environment", "Auto Tune", "error_manager/error_code.json"},
      {"EC0009", "memory", "Auto Tune", "error_manager/error_code.json"},
  };
  for (const Want& w : wants) {
    const kb::Entry* e = kb::Get().Find(w.code);
    ASSERT_NE(e, nullptr) << w.code;
    EXPECT_EQ(e->cls, w.cls) << w.code;
    EXPECT_EQ(e->component, w.component) << w.code;
    EXPECT_NE(e->source.find(w.source_part), std::string::npos) << w.code << ": " << e->source;
    // --explain shows where the code was confirmed.
    EXPECT_NE(kb::Explain(*e).find("Source: " + e->source), std::string::npos) << w.code;
  }
  // Every EC code is Auto Tune's: the family is named for it, not the runtime.
  for (const kb::Entry& e : kb::Get().entries()) {
    if (e.code.starts_with("EC") && e.code.size() == 6) {
      EXPECT_EQ(e.family, "autotune") << e.code;
    }
  }
}

TEST(KbCodes, SourceMustBeText) {
  std::vector<std::string> errors;
  kb::KnowledgeBase::Parse({R"({"classes": [{"id": "config", "name": "c", "meaning": "m"}]})",
                            R"({"entries": [{"id": "EX0001", "family": "x", "component": "X", "class": "config",
                                "role": "cause", "title": "t", "meaning": "m", "causes": ["c"], "checks": ["k"],
                                "actions": ["a"], "source": 7}]})"},
                           &errors);
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors.front().find("source"), std::string::npos) << errors.front();
}

}  // namespace
}  // namespace vigil::diagnose
