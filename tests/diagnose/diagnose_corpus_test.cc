// Real logs (tests/diagnose/corpus/: public issue threads; tests/diagnose/ascend_fd/: the test
// cases of MindCluster's analyzer) against the verdict each must get (expect.json, format in
// corpus/README.md). One test per case.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/knowledge_base.h"
#include "diagnose/diagnose.h"

namespace fs = std::filesystem;
using vigil::diagnose::Diagnose;
using vigil::diagnose::DiagnoseOptions;
using vigil::diagnose::DiagnoseResult;
using vigil::diagnose::Finding;

namespace {

struct Case {
  std::string name;  // "<set>/<case>"
  fs::path dir;
};

// gtest prints a failing parameter with this (its bytes otherwise).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const char* set : {"corpus", "ascend_fd"}) {
    fs::path root = fs::path(VIGIL_DIAG_TESTS) / set;
    if (!fs::is_directory(root)) continue;
    for (const auto& d : fs::directory_iterator(root))
      if (d.is_directory() && fs::exists(d.path() / "expect.json"))
        out.push_back({std::string(set) + "/" + d.path().filename().string(), d.path()});
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return out;
}

nlohmann::json Load(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

std::string Describe(const DiagnoseResult& r) {
  if (r.findings.empty()) return "no finding";
  const Finding& f = r.findings[0];
  std::string s = "verdict: [" + f.cls + "/" + f.kb + "/" + f.fault + ", " + f.confidence + "] " + f.title;
  for (const auto& rr : f.ranks) s += "\n  " + rr.role + " rank " + std::to_string(rr.rank) + " node " + rr.node;
  return s;
}

class CorpusTest : public ::testing::TestWithParam<Case> {};

TEST_P(CorpusTest, GetsItsVerdict) {
  const Case& c = GetParam();
  nlohmann::json expect = Load(c.dir / "expect.json");
  ASSERT_TRUE(expect.contains("class")) << c.name << ": expect.json has no class";
  std::set<std::string> classes = {expect["class"].get<std::string>()};
  if (expect.contains("also"))
    for (const auto& a : expect["also"]) classes.insert(a.get<std::string>());
  for (const std::string& cls : classes)
    ASSERT_NE(vigil::kb::Get().Class(cls), nullptr) << c.name << ": unknown class " << cls;

  DiagnoseOptions o;
  o.inputs = {(c.dir / "logs").string()};
  o.threads = 1;
  DiagnoseResult r = Diagnose(o);
  std::string got = Describe(r);

  // Never a confident verdict of a wrong class, gap or not.
  if (!r.findings.empty() && r.findings[0].confidence == "high") {
    EXPECT_TRUE(classes.count(r.findings[0].cls)) << c.name << ": confidently wrong\n" << got;
  }
  if (expect.contains("gap")) GTEST_SKIP() << "known gap: " << expect["gap"].get<std::string>() << "\n" << got;

  ASSERT_FALSE(r.findings.empty()) << c.name << ": no finding";
  // Every finding is classed (the plog rules' classes come from data/kb/diagnose.json).
  for (const Finding& any : r.findings) EXPECT_FALSE(any.cls.empty()) << c.name << ": finding " << any.fault << " has no class";
  const Finding& f = r.findings[0];
  EXPECT_TRUE(classes.count(f.cls)) << c.name << ": expected class " << expect["class"] << "\n" << got;
  if (expect.contains("root_rank") && expect["root_rank"].is_number_integer()) {
    int64_t want = expect["root_rank"].get<int64_t>();
    bool named = false;
    for (const auto& rr : f.ranks) named = named || (rr.rank == want && rr.role != "reporter");
    EXPECT_TRUE(named) << c.name << ": root rank " << want << " not named\n" << got;
  }
  if (expect.contains("kb") && expect["kb"].is_string()) {
    std::string want = expect["kb"].get<std::string>();
    // The verdict rests on the entry: its own, or one of its evidence lines'.
    bool cited = f.kb == want || f.code == want;
    for (const auto& e : f.evidence) cited = cited || e.note.rfind(want + " ", 0) == 0;
    EXPECT_TRUE(cited) << c.name << ": expected the verdict to rest on " << want << "\n" << got;
  }
}

INSTANTIATE_TEST_SUITE_P(Real, CorpusTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
