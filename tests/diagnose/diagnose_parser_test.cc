// Record splitting, field extraction and messy input: glued records, CRLF, binary junk,
// truncated lines, Chinese text, over-long lines, flight-recorder dumps, unreadable files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "diagnose/diagnose.h"
#include "diagnose/line_parser.h"
#include "diagnose/record.h"
#include "diagnose/scanner.h"

#if defined(VIGIL_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace vigil::diagnose {
namespace {

const char* kBase =
    "[ERROR] HCCL(2111667,all_reduce_test):2025-10-24-11:18:29.597.044 "
    "[task_exception_handler.cc:908] "
    "[2111667][TaskExecStage][Timeout][Host]Task run failed, base information is streamID:[2], "
    "taskID[21], "
    "tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], AlgType(level "
    "0-1-2):[fullmesh-ring-NHR].";
const char* kEntry =
    "[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 "
    "[hccl_opbase_atrace_info.cc:56][3017221]Entry-HcclAllReduce: "
    "tag[AllReduce_127.10.0.1%eth_60000_0_1741318944927847], sendBuf[0x1241d3dcdc00], "
    "recvBuf[0x124702f40200], "
    "count[10746295], dataType[float32], op[sum], localRank[0], streamId[7],comm[0xfffe380078d0], "
    "deviceLogicId[0]";

TEST(DiagnoseRecord, HeaderVariants) {
  Record r;
  ASSERT_TRUE(ParseRecord(kBase, &r));
  EXPECT_EQ(r.level, Level::kError);
  EXPECT_EQ(r.module, "HCCL");
  EXPECT_EQ(r.pid, 2111667);
  EXPECT_EQ(r.pname, "all_reduce_test");
  EXPECT_EQ(r.tid, 2111667);
  EXPECT_EQ(FormatTime(r.time), "2025-10-24-11:18:29.597.044");
  EXPECT_TRUE(r.content.starts_with("[TaskExecStage]"));

  // No spaces around brackets (seed's Cluster Exception line).
  ASSERT_TRUE(
      ParseRecord("[ERROR]HCCL(835695,all_reduce_test):2025-10-23-17:28:06.049.385[task_exception_"
                  "handler.cc:610]"
                  "[835695][TaskExecStage]x",
                  &r));
  EXPECT_EQ(r.pid, 835695);
  EXPECT_EQ(r.tid, 835695);
  EXPECT_EQ(r.content, "[TaskExecStage]x");
  // RUNTIME: bare tid.
  ASSERT_TRUE(ParseRecord(
      "[ERROR] RUNTIME(57096,python3.10):2025-05-12-20:55:44.705.025 [task_info.cc:1170]57288 "
      "PrintSdmaErrorInfoForFftsPlusTask:fftsplus",
      &r));
  EXPECT_EQ(r.module, "RUNTIME");
  EXPECT_EQ(r.tid, 57288);
  EXPECT_TRUE(r.content.starts_with("PrintSdma"));
  // HCCP: tid:N,
  ASSERT_TRUE(
      ParseRecord("[ERROR] HCCP(2040034,alltoall_test):2025-09-15-08:38:12.776.650 "
                  "[ra_hdc_lite.c:794]tid:2040458,"
                  "ra_hdc_lite_period_poll_cqe : x",
                  &r));
  EXPECT_EQ(r.tid, 2040458);
  // Screen line.
  ASSERT_TRUE(ParseRecord(
      "[PID: 3480365] 2025-12-24-14:10:31.094.189 Execution_Error_SDMA(EI0012): SDMA", &r));
  EXPECT_EQ(r.level, Level::kScreen);
  EXPECT_EQ(r.pid, 3480365);
  EXPECT_TRUE(r.content.starts_with("Execution_Error_SDMA"));
  // Not record starts.
  EXPECT_FALSE(IsRecordStart("[TaskExecStage][Timeout]"));
  EXPECT_FALSE(IsRecordStart("[INFO] hccl(1,"));
  EXPECT_FALSE(IsRecordStart("[INFO] HCCL(x,"));
  EXPECT_FALSE(IsRecordStart("["));
}

TEST(DiagnoseRecord, FieldsAndTimes) {
  EXPECT_EQ(Field("ranks[4], rank[2]", "rank").value(), "2");
  EXPECT_EQ(Field("host ip[127.10.0.1] port[60000]", "host ip").value(), "127.10.0.1");
  EXPECT_EQ(Field("Location[IP/ID]:[127.10.0.1/1], Arrival", "Location[IP/ID]:").value(),
            "127.10.0.1/1");
  EXPECT_EQ(Field("truncated tag[AllRed", "tag").value(), "AllRed");
  EXPECT_FALSE(Field("no field here", "tag").has_value());
  EXPECT_EQ(KeyValue("stream_id=2, report_stream_id=3", "stream_id").value(), "2");
  EXPECT_EQ(KeyValue("report_stream_id=3, stream_id=2", "stream_id").value(), "2");
  EXPECT_EQ(ParseCTime("Thu Oct 23 17:25:58 2025"), ParsePlogStamp("2025-10-23-17:25:58.000.000"));
  EXPECT_EQ(ParseCTime("Sun Oct  5 10:13:50 2025"), ParsePlogStamp("2025-10-05-10:13:50.000.000"));
  EXPECT_EQ(ParseCqeTime("2025-09-15 08:38:12.776654"),
            ParsePlogStamp("2025-09-15-08:38:12.776.654"));
  EXPECT_EQ(ParseFileStamp("20251024111652406"), ParsePlogStamp("2025-10-24-11:16:52.406.000"));
  EXPECT_EQ(ParsePlogStamp("2025-13-24-11:16:52.406.000"), kNoTime);
  EXPECT_EQ(FormatDuration(ParsePlogStamp("2025-10-24-22:08:58.890.365") -
                           ParsePlogStamp("2025-10-24-22:03:14.946.261")),
            "5 min 43 s");
}

TEST(DiagnoseRecord, GluedRecordsCrlfAndEntry) {
  std::string text = std::string(kEntry) + " " + kEntry + "\r\n" + kBase + "\r\n";
  FileResult r = ParseText(text, 0);
  EXPECT_EQ(r.lines, 2u);
  EXPECT_EQ(r.records, 3u);
  ASSERT_EQ(r.comms.size(), 1u);
  EXPECT_EQ(r.comms[0].total, 2);
  EXPECT_EQ(r.comms[0].group, "127.10.0.1%eth_60000_0_1741318944927847");
  const OpEntry& op = r.comms[0].recent.front();
  EXPECT_EQ(op.op, "AllReduce");
  EXPECT_EQ(op.count, 10746295u);
  EXPECT_EQ(op.dtype, "float32");
  EXPECT_EQ(op.stream, 7);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, EventKind::kTaskBase);
  EXPECT_EQ(r.events[0].tag, "AllReduce_127.10.0.1%enp_60000_0_1761275812718970");
  EXPECT_EQ(r.events[0].stage, "Timeout");
  EXPECT_EQ(r.events[0].engine, "Host");
  EXPECT_EQ(r.events[0].loc.line, 2u);
  // The second glued record's offset points at its own start.
  EXPECT_GT(r.comms[0].recent.back().loc.offset, 0u);
}

TEST(DiagnoseRecord, MessyInputNeverStops) {
  std::string text;
  text += "中文说明：HCCL集合通信库 日志如下\n";                               // Chinese prose
  static const char kBinary[] = "\x00\x01\x02\xff\xfe binary \x1b[0m junk";
  text += std::string(kBinary, sizeof(kBinary) - 1) + "\n";  // binary, a NUL first
  text += std::string(kBase).substr(0, 90) + "\n";    // truncated mid-header
  text += std::string(kEntry).substr(0, 200) + "\n";  // truncated mid-fields
  text +=
      "[ERROR] HCCL(1,进程名):2025-10-24-11:18:29.597.044 [a.cc:1] [1]中文内容 Task run failed, "
      "base information "
      "is streamID:[\xff\xfe";  // invalid UTF-8, no newline at EOF
  FileResult r = ParseText(text, 0);
  EXPECT_EQ(r.lines, 5u);
  EXPECT_GE(r.unparsed_lines, 2u);
  EXPECT_GE(r.binary_lines, 1u);
  EXPECT_GE(r.records, 2u);
  bool base = false;
  for (const Event& e : r.events) {
    if (e.kind == EventKind::kTaskBase) base = true;
    EXPECT_EQ(e.text.find('\xff'), std::string::npos);  // evidence text is printable
  }
  EXPECT_TRUE(base);
}

TEST(DiagnoseRecord, OverlongLineIsCut) {
  std::string text(9u << 20, 'x');
  text += "\n";
  text += kBase;
  FileResult r = ParseText(text, 0);
  EXPECT_GE(r.overlong_lines, 2u);
  EXPECT_EQ(r.events.size(), 1u);
}

TEST(DiagnoseRecord, EnvEchoes) {
  std::string text =
      "[INFO] HCCL(1,p):2025-10-24-11:16:50.000.000 [externalinput.cc:1] [1][HCCL_ENV] "
      "HCCL_EXEC_TIMEOUT set by environment to [300]\n"
      "[INFO] HCCL(1,p):2025-10-24-11:16:50.000.000 [externalinput.cc:1] [1][HCCL_ENV] "
      "HCCL_BUFFSIZE set by default to [200]M\n"
      "[INFO] HCCL(1,p):2025-10-24-11:16:50.000.000 [externalinput.cc:1] [1][HCCL_ENV] HCCL_IF_IP "
      "is not set\n";
  FileResult r = ParseText(text, 0);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].name, "HCCL_EXEC_TIMEOUT");
  EXPECT_EQ(r.events[0].value, "300");
  EXPECT_TRUE(r.events[0].from_env);
  EXPECT_EQ(r.events[1].value, "200");
  EXPECT_FALSE(r.events[1].from_env);
  EXPECT_EQ(r.events[2].detail, "not set");
}

// The three forms of HCCL's consistency-check line: parameter name, local and remote values.
TEST(DiagnoseRecord, ConsistencyCheckLineForms) {
  std::string text =
      "[ERROR] HCCL(1,p):2025-10-24-11:16:50.000.000 [rank_consistentcy_checker.cc:412] "
      "[1][RankConsistentcyChecker]"
      "[ReportCmdInfoCheckFailed]CMD information count check fail. local[1024], remote[2048]\n"
      "[ERROR] HCCL(1,p):2025-10-24-11:16:50.000.000 [rank_consistency_checker_v2.cc:160] "
      "[1][InitChannelStage]"
      "[ParameterConflict] CMD information ranktable check fail, ranktable_content local[11], "
      "remote[12].\n"
      "[ERROR] HCCL(1,p):2025-10-24-11:16:50.000.000 [rank_consistentcy_checker.cc:470] "
      "[1][RankConsistentcyChecker]"
      "[ReportCrcCheckFailed]CRC for hccl_config check fail. local[5], remote[6]\n";
  FileResult r = ParseText(text, 0);
  ASSERT_EQ(r.events.size(), 3u);
  for (const Event& e : r.events) EXPECT_EQ(e.kind, EventKind::kParamCheckFail);
  EXPECT_EQ(r.events[0].name, "count");
  EXPECT_EQ(r.events[0].local, "1024");
  EXPECT_EQ(r.events[0].remote, "2048");
  EXPECT_EQ(r.events[1].name, "ranktable_content");
  EXPECT_EQ(r.events[1].local, "11");
  EXPECT_EQ(r.events[1].remote, "12");
  EXPECT_EQ(r.events[2].name, "hccl_config CRC");
  EXPECT_EQ(r.events[2].remote, "6");
}

TEST(DiagnoseRecord, AivAndSdmaRuntimeLines) {
  std::string text =
      "[ERROR] RUNTIME(699131,python):2025-04-24-21:54:17.707.236 "
      "[davinci_kernel_task.cc:1268]699131 "
      "PrintErrorInfoForDavinciTask:[INIT][DEFAULT]Aicore kernel execute failed, device_id=0, "
      "stream_id=2, "
      "report_stream_id=2, task_id=55873, flip_num=2073, fault kernel_name=aiv_all_reduce_***, "
      "fault kernel info "
      "ext=aiv_all_reduce_910b_bfloat16_t, program id=42, hash=9645272693770703471.\n";
  FileResult r = ParseText(text, 0);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, EventKind::kAivKernel);
  EXPECT_EQ(r.events[0].stream, 2);
  EXPECT_EQ(r.events[0].task, 55873);
  EXPECT_EQ(r.events[0].name, "aiv_all_reduce_***");
  EXPECT_EQ(r.events[0].detail, "aiv_all_reduce_910b_bfloat16_t");
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/vigil_diag_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& rel, const std::string& text) {
    std::filesystem::path p = std::filesystem::path(path_) / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(DiagnoseScan, FlightRecorderDumpsShowCountMismatch) {
  TempDir d;
  auto dump = [](int rank, int count5) {
    std::string ops;
    for (int i = 0; i < 8; ++i) {
      ops += std::string(i ? "," : "") + "{\"index\":" + std::to_string(i) +
             ",\"tag\":\"AllReduce_g1\",\"count\":" + std::to_string(i == 5 ? count5 : 1024) +
             ",\"dataType\":\"float32\",\"streamId\":\"3\",\"enter\":\"2025-10-24-11:16:5" +
             std::to_string(i) + ".000.000\",\"state\":\"" + (i == 7 ? "running" : "done") + "\"}";
    }
    return "{\"schema\":\"vigil.flight/1\",\"comm\":\"g1\",\"rank\":" + std::to_string(rank) +
           ",\"rank_size\":2,\"pid\":" + std::to_string(100 + rank) + ",\"ops\":[" + ops + "]}";
  };
  d.Write("n0/flight_rank0.json", dump(0, 1024));
  d.Write("n1/flight_rank1.json", dump(1, 2048));
  d.Write("n1/not_ours.json", "{\"hello\": [1,2,3]}");
  DiagnoseOptions o;
  o.inputs = {d.path()};
  auto r = Diagnose(o);
  ASSERT_EQ(r.job.dumps.size(), 2u);
  const Finding* f = nullptr;
  for (const Finding& x : r.findings)
    if (x.fault == "count_mismatch") f = &x;
  ASSERT_NE(f, nullptr) << RenderText(r, true);
  EXPECT_NE(f->title.find("op #5"), std::string::npos) << f->title;
  bool not_ours_listed = false;
  for (const auto& s : r.job.skipped)
    not_ours_listed |= s.path.find("not_ours.json") != std::string::npos;
  EXPECT_TRUE(not_ours_listed);
}

TEST(DiagnoseScan, UnreadableAndRotatedFilesAreNamed) {
  TempDir d;
  d.Write("node0/run/plog/plog-1_20251024111652405.log", std::string(kEntry) + "\n");
  d.Write("node0/run/plog/plog-1_20251024111652406.log.1", std::string(kEntry) + "\n");  // rotated
  d.Write("node0/run/plog/plog-1_20251024111652407.log.gz", "\x1f\x8b compressed");
  d.Write("node0/run/plog/junk.log", std::string("\x00\x01\x02\x03\n", 5));
  d.Write("node0/notes.bin", "ignored");
  DiagnoseOptions o;
  o.inputs = {d.path(), d.path() + "/missing"};
  auto r = Diagnose(o);
  EXPECT_EQ(r.job.stats.op_entries, 2u);  // rotated file read and merged
  ASSERT_EQ(r.job.comms.size(), 1u);
  EXPECT_EQ(r.job.comms[0].members.size(), 1u);
  EXPECT_EQ(r.job.comms[0].members[0].ops.total, 2);
  std::string skipped;
  for (const auto& s : r.job.skipped) skipped += s.path + ": " + s.reason + "\n";
  // A .gz that is not valid gzip: named with zlib's reason, or as compressed without zlib.
  EXPECT_NE(skipped.find(GzipSupported() ? ".gz: gzip:" : ".gz: compressed"), std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find("junk.log: no log records (binary data)"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find("missing: no such file"), std::string::npos) << skipped;
  EXPECT_EQ(r.job.stats.ignored_files, 1u);
}

// Evidence lines are read back by offset: never from a FIFO (it would block), and from a gzip
// file at the offset in its decompressed text.
TEST(DiagnoseScan, ReadLineAtFifoAndGzip) {
  TempDir d;
  std::string fifo = d.path() + "/pipe.log";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(ReadLineAt(fifo, 0), "");
#if defined(VIGIL_HAVE_ZLIB)
  std::string gzpath = d.path() + "/plog-1.log.gz";
  std::string text = "first line\nsecond line\n";
  gzFile gz = gzopen(gzpath.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  EXPECT_EQ(ReadLineAt(gzpath, 11), "second line");
#endif
}

#if defined(VIGIL_HAVE_ZLIB)
// Rotated plogs compressed by logrotate: read through zlib and merged with the plain ones; a
// truncated one is read up to the cut and named.
TEST(DiagnoseScan, GzipRotatedFilesAreRead) {
  ASSERT_TRUE(GzipSupported());
  TempDir d;
  auto write_gz = [&](const std::string& rel, const std::string& text, size_t cut) {
    std::string path = d.path() + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    gzFile gz = gzopen(path.c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    gzclose(gz);
    if (cut > 0) std::filesystem::resize_file(path, std::filesystem::file_size(path) - cut);
  };
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += std::string(kEntry) + "\r\n";
  d.Write("node0/run/plog/plog-1_20251024111652405.log", std::string(kEntry) + "\n");
  write_gz("node0/run/plog/plog-1_20251024111652406.log.gz", lines, 0);
  write_gz("node0/run/plog/plog-1_20251024111652407.log.1.gz", lines, 0);
  write_gz("node1/run/plog/plog-2_20251024111652407.log.gz", lines, 64);  // truncated
  DiagnoseOptions o;
  o.inputs = {d.path()};
  auto r = Diagnose(o);
  EXPECT_EQ(r.job.stats.files, 4u);
  ASSERT_EQ(r.job.comms.size(), 1u);
  int64_t node0 = 0, node1 = 0;
  for (const Member& m : r.job.comms[0].members) {
    if (r.job.processes[m.proc].pid == 3015875 &&
        r.job.processes[m.proc].node.find("node0") != std::string::npos)
      node0 = m.ops.total;
    if (r.job.processes[m.proc].node.find("node1") != std::string::npos) node1 = m.ops.total;
  }
  EXPECT_EQ(node0, 2001);
  EXPECT_GT(node1, 900);  // all but the cut tail
  EXPECT_LT(node1, 1000);
  std::string skipped;
  for (const auto& s : r.job.skipped) skipped += s.path + ": " + s.reason + "\n";
  EXPECT_NE(skipped.find("plog-2_20251024111652407.log.gz: gzip:"), std::string::npos) << skipped;
}
#endif

TEST(DiagnoseScan, EmptyInputGivesNoVerdict) {
  TempDir d;
  d.Write("a.log", "");
  DiagnoseOptions o;
  o.inputs = {d.path()};
  auto r = Diagnose(o);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_NE(RenderText(r, false).find("no fault found"), std::string::npos);
  EXPECT_TRUE(RenderJson(r)["verdict"].is_null());
}

}  // namespace
}  // namespace vigil::diagnose
