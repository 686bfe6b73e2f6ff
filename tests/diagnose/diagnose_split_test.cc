// A large file is read in pieces by several threads (scanner.h, min_piece_bytes): the result must
// be what one pass over the file gives, and the same content as one file or as several files must
// give the same verdict.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "diagnose/diagnose.h"

namespace vigil::diagnose {
namespace {
namespace fs = std::filesystem;

class Tree {
 public:
  Tree() {
    char tmpl[] = "/tmp/vigil_split_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~Tree() { fs::remove_all(path_); }
  std::string Write(const std::string& rel, const std::string& text) {
    fs::path p = fs::path(path_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string path(const std::string& rel = "") const {
    return rel.empty() ? path_ : path_ + "/" + rel;
  }

 private:
  std::string path_;
};

std::string Stamp(long long us) {
  long long s = us / 1000000, frac = us % 1000000;
  char b[64];
  std::snprintf(b, sizeof(b), "2025-10-24-%02lld:%02lld:%02lld.%03lld.%03lld", s / 3600 % 24,
                s / 60 % 60, s % 60, frac / 1000, frac % 1000);
  return b;
}

// A busy run log: four processes on two communicators, Entry lines whose stream changes now and
// then (stream statistics and switches must survive the cuts), more errors than the per-file cap,
// CRLF and glued records, a line longer than the 4 MiB read buffer, and the task-exception lines
// of a timeout at the end.
std::string BusyLog() {
  std::string t;
  long long us = 11LL * 3600 * 1000000;
  const char* ops[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
  const std::string groups[] = {"127.10.0.1%enp_60000_0_1761275812718970",
                                "127.10.0.1%enp_60001_0_1761275812718971"};
  for (int pid = 100; pid < 104; ++pid) {
    t += "[INFO] HCCL(" + std::to_string(pid) + ",python):" + Stamp(us) +
         " [externalinput.cc:1] [" + std::to_string(pid) +
         "][HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [300]\n";
    for (int g = 0; g < 2; ++g)
      t += "[INFO] HCCL(" + std::to_string(pid) + ",python):" + Stamp(us) + " [op_base.cc:1292] [" +
           std::to_string(pid) + "]Entry-HcclCommInitRootInfoInner:ranks[4], rank[" +
           std::to_string(pid - 100) + "], rootinfo: host ip[127.10.0.1] port[6000" +
           std::to_string(g) + "] nicDeploy[1] identifier[" + groups[g] + "], deviceLogicId[" +
           std::to_string(pid - 100) + "]\n";
  }
  for (int i = 0; i < 6000; ++i) {
    us += 997;
    for (int pid = 100; pid < 104; ++pid) {
      const int g = i % 3 == 0 ? 1 : 0;
      const char* op = ops[i % 4];
      const int stream = (i / 700 + pid) % 3 == 0 ? 7 : 2;
      std::string line = "[INFO] HCCL(" + std::to_string(pid) + ",python):" + Stamp(us + pid) +
                         " [hccl_opbase_atrace_info.cc:56][" + std::to_string(pid) + "]Entry-Hccl" +
                         op + ": tag[" + op + "_" + groups[g] +
                         "], sendBuf[0x1241d3dcdc00], recvBuf[0x124702f40200], count[" +
                         std::to_string(1024 + i % 5) +
                         "], dataType[float32], op[sum], localRank[" + std::to_string(pid - 100) +
                         "], streamId[" + std::to_string(stream) +
                         "],comm[0xfffe380078d0], deviceLogicId[0]";
      t += line;
      if (i % 97 == 0) continue;  // glued: the next record on the same line
      t += i % 5 == 0 ? "\r\n" : "\n";
    }
    if (i % 40 == 0)
      t += "[ERROR] HCCL(" + std::to_string(100 + i % 4) + ",python):" + Stamp(us) +
           " [adapter.cc:77] [" + std::to_string(100 + i % 4) +
           "]rtStreamSynchronize failed, ret[" + std::to_string(i) + "]\n";
    if (i % 500 == 0)
      t += "[INFO] RUNTIME(100,python):" + Stamp(us) + " [api.cc:1] 100 noise 中文 text\n";
    if (i == 3000) t += "\x01\x02junk " + std::string(5 << 20, 'x') + "\n";
  }
  for (int pid = 100; pid < 104; ++pid) {
    us += 300LL * 1000000;
    t += "[ERROR] HCCL(" + std::to_string(pid) + ",python):" + Stamp(us) +
         " [task_exception_handler.cc:908] [" + std::to_string(pid) +
         "][TaskExecStage][Timeout][Host]Task run failed, base information is streamID:[2], "
         "taskID[21], tag[AllReduce_" +
         groups[0] + "], AlgType(level 0-1-2):[fullmesh-ring-NHR].\n";
  }
  t += "[INFO] HCCL(100,python):" + Stamp(us) + " [x.cc:1] [100]last line without a newline";
  return t;
}

nlohmann::json DiagnoseJson(const std::vector<std::string>& inputs, int threads, uint64_t min_piece) {
  DiagnoseOptions o;
  o.inputs = inputs;
  o.threads = threads;
  o.min_piece_bytes = min_piece;
  nlohmann::json j = RenderJson(Diagnose(o));
  j["input"].erase("seconds");
  return j;
}

std::string VerdictKey(const nlohmann::json& j) {
  const nlohmann::json& v = j["verdict"];
  if (v.is_null()) return "none";
  std::string k = v["fault"].get<std::string>() + " " + v["code"].get<std::string>() + " " +
                  v["title"].get<std::string>();
  for (const auto& r : v["ranks"])
    k += " | " + r["role"].get<std::string>() + " rank " + r["rank"].dump() + " pid " +
         r["pid"].dump();
  return k;
}

// Read in pieces of 64 KiB by 2 or 3 threads, the file gives exactly the one-pass result: every
// count, line number, op ordinal, stream statistic and piece of evidence.
TEST(DiagnoseSplit, PiecesOfOneFileGiveTheOnePassResult) {
  Tree d;
  std::string text = BusyLog();
  std::string file = d.Write("node0/run/plog/plog-100_20251024110000000.log", text);
  ASSERT_GT(text.size(), 8u << 20);
  nlohmann::json whole = DiagnoseJson({file}, 1, 1ull << 40);
  ASSERT_FALSE(whole["verdict"].is_null());
  EXPECT_GT(whole["input"]["dropped_events"].get<uint64_t>(), 0u);  // the error cap was reached
  EXPECT_EQ(whole["input"]["overlong_lines"].get<uint64_t>(), 1u);
  for (int threads : {2, 3}) {
    nlohmann::json split = DiagnoseJson({file}, threads, 64 << 10);
    EXPECT_EQ(split, whole) << "threads " << threads << "\n" << split.dump(1).substr(0, 4000);
  }
}

// The seed's AllReduce-vs-AllGather mismatch, its eight files concatenated into one big file with
// unrelated noise, read whole or in pieces, and the same content split into five files: one
// verdict, the fixture's own.
TEST(DiagnoseSplit, OneFileOrSplitFilesGiveTheSameVerdict) {
  const fs::path fixture = fs::path(VIGIL_DIAG_FIXTURES) / "mismatch";
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(fixture))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string content;
  std::string noise;
  for (int i = 0; i < 40000; ++i)
    noise += "[INFO] RUNTIME(7,python):2025-10-24-11:10:00.000.000 [api.cc:1] 7 noise line " +
             std::to_string(i) + "\n";
  content += noise;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    content += ss.str();
    if (!content.ends_with('\n')) content += '\n';
    content += noise;
  }
  Tree d;
  std::string one = d.Write("one/node0/debug/plog/plog-all.log", content);
  // Five files cut at line boundaries.
  size_t pos = 0;
  for (int k = 0; k < 5; ++k) {
    size_t end = k == 4 ? content.size() : content.find('\n', content.size() * (k + 1) / 5) + 1;
    d.Write("five/node0/debug/plog/plog-all." + std::to_string(k) + ".log",
            content.substr(pos, end - pos));
    pos = end;
  }
  std::string ref = VerdictKey(DiagnoseJson({fixture.string()}, 2, 32ull << 20));
  EXPECT_NE(ref.find("op_mismatch"), std::string::npos) << ref;
  EXPECT_EQ(VerdictKey(DiagnoseJson({one}, 1, 32ull << 20)), ref);
  EXPECT_EQ(VerdictKey(DiagnoseJson({one}, 2, 32 << 10)), ref);
  EXPECT_EQ(VerdictKey(DiagnoseJson({d.path("five")}, 2, 32ull << 20)), ref);
  EXPECT_EQ(VerdictKey(DiagnoseJson({d.path("five")}, 3, 16 << 10)), ref);
}

}  // namespace
}  // namespace vigil::diagnose
