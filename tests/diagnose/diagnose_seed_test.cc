// The seed documents' examples, rebuilt into per-rank plog folders (fixtures/, see
// make_fixtures.py), must give the seed's conclusions.
#include <gtest/gtest.h>

#include <string>

#include "common/error_codes.h"
#include "diagnose/diagnose.h"
#include "diagnose/flight_recorder.h"

namespace vigil::diagnose {
namespace {

DiagnoseResult RunCase(const std::string& name) {
  DiagnoseOptions o;
  o.inputs = {std::string(VIGIL_DIAG_FIXTURES) + "/" + name};
  o.threads = 2;
  return Diagnose(o);
}

const Finding* Find(const DiagnoseResult& r, const std::string& fault) {
  for (const Finding& f : r.findings)
    if (f.fault == fault) return &f;
  return nullptr;
}

bool HasRank(const Finding& f, int64_t rank) {
  for (const RankRef& r : f.ranks)
    if (r.rank == rank) return true;
  return false;
}

std::string Dump(const DiagnoseResult& r) {
  return RenderText(r, true);
}

TEST(DiagnoseSeed, HeartbeatLostNamesCrimer) {
  auto r = RunCase("lost");
  ASSERT_FALSE(r.findings.empty()) << Dump(r);
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "heartbeat_lost") << Dump(r);
  EXPECT_EQ(v.confidence, "high");
  ASSERT_FALSE(v.ranks.empty());
  EXPECT_EQ(v.ranks[0].uid, "127.10.0.1/1");
  EXPECT_EQ(v.ranks[0].pid, 835694);  // the crimer's own run log names it rank 1 / device 1
  EXPECT_EQ(v.ranks[0].rank, 1);
  EXPECT_EQ(FormatTime(v.time), "2025-10-23-17:25:58.000.000");               // Arrival Time
  EXPECT_NE(v.summary.find("127.10.0.1/2"), std::string::npos) << v.summary;  // discoverer
}

TEST(DiagnoseSeed, StuckNamesRank) {
  auto r = RunCase("stuck");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().fault, "process_stuck") << Dump(r);
  EXPECT_EQ(r.findings.front().ranks[0].uid, "127.10.0.1/1");
}

TEST(DiagnoseSeed, MutualLostIsNetwork) {
  auto r = RunCase("mutual_lost");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "network") << Dump(r);
  ASSERT_EQ(v.ranks.size(), 2u);
}

TEST(DiagnoseSeed, AllReduceVsAllGatherAtIndex21) {
  auto r = RunCase("mismatch");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "op_mismatch") << Dump(r);
  EXPECT_EQ(v.confidence, "high");
  ASSERT_EQ(v.ranks.size(), 1u) << Dump(r);
  EXPECT_EQ(v.ranks[0].rank, 1);
  EXPECT_EQ(v.ranks[0].pid, 2111666);
  EXPECT_NE(v.title.find("index 21"), std::string::npos) << v.title;
  EXPECT_NE(v.title.find("rank 1 called AllGather"), std::string::npos) << v.title;
  // All four ranks are found through their init Entry lines.
  ASSERT_EQ(r.job.comms.size(), 1u);
  EXPECT_EQ(r.job.comms[0].rank_size, 4);
  EXPECT_EQ(r.job.comms[0].members.size(), 4u);
  for (const Member& m : r.job.comms[0].members) EXPECT_TRUE(m.has_init);
}

TEST(DiagnoseSeed, ErrorGapExceedsExecTimeout) {
  auto r = RunCase("timeout_gap");
  EXPECT_EQ(r.job.exec_timeout_s, 300);
  EXPECT_TRUE(r.job.exec_timeout_from_log);
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "late_rank") << Dump(r);
  EXPECT_TRUE(HasRank(v, 1));
  EXPECT_FALSE(HasRank(v, 0));
  // 22:08:58.890 - 22:03:14.946: the seed's "5 min 40 s" (5 min 44 s exactly) against 300 s.
  EXPECT_NE(v.title.find("5 min 43 s"), std::string::npos) << v.title;
  EXPECT_NE(v.title.find("HCCL_EXEC_TIMEOUT 300 s"), std::string::npos) << v.title;
  bool gap_fact = false;
  for (const auto& [k, val] : v.facts)
    if (k == "gap_seconds") gap_fact = std::stod(val) > 340 && std::stod(val) < 345;
  EXPECT_TRUE(gap_fact);
}

TEST(DiagnoseSeed, TwoStreamsOnOneComm) {
  auto r = RunCase("two_streams");
  const Finding* f = Find(r, "multi_stream");
  ASSERT_NE(f, nullptr) << Dump(r);
  EXPECT_NE(f->title.find("streamId 2 and 7"), std::string::npos) << f->title;
  EXPECT_EQ(f->confidence, "high");
  EXPECT_EQ(f->evidence.size(), 2u);
  for (const Evidence& e : f->evidence)
    EXPECT_NE(e.text.find("Entry-HcclAllReduce"), std::string::npos) << e.text;
  // The glued records are two op entries, not one.
  EXPECT_EQ(r.job.stats.op_entries, 2u);
}

TEST(DiagnoseSeed, SdmaDestroyBeforeSync) {
  auto r = RunCase("sdma_destroy");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "destroy_before_sync") << Dump(r);
  EXPECT_EQ(v.ranks[0].pid, 57096);
  EXPECT_NE(v.evidence.front().text.find("Entry-HcclCommDestroy"), std::string::npos);
}

TEST(DiagnoseSeed, SdmaUserBufferTooSmall) {
  auto r = RunCase("sdma_buffer");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "buffer_too_small") << Dump(r);
  EXPECT_EQ(v.confidence, "high");
  EXPECT_NE(v.summary.find("receive buffer"), std::string::npos) << v.summary;
  EXPECT_EQ(v.ranks[0].pid, 3480365);
}

TEST(DiagnoseSeed, CqeBothEndpointsPeerExitedFirst) {
  auto r = RunCase("cqe");
  const Finding* f = Find(r, "error_cqe");
  ASSERT_NE(f, nullptr) << Dump(r);
  ASSERT_EQ(f->ranks.size(), 2u);
  EXPECT_EQ(f->ranks[0].pid, 2040034);
  EXPECT_EQ(f->ranks[0].host, "127.10.0.1");
  EXPECT_EQ(f->ranks[1].pid, 2041000);  // found through the rank table's device IP
  EXPECT_NE(f->title.find("127.11.0.1"), std::string::npos);
  EXPECT_NE(f->title.find("127.11.0.2"), std::string::npos);
  bool exited = false;
  for (const auto& [k, v] : f->facts)
    if (k == "peer_exited_first") exited = v == "true";
  EXPECT_TRUE(exited) << f->summary;
}

TEST(DiagnoseSeed, CqeScreenLineEndpointsNetworkFirst) {
  auto r = RunCase("cqe_screen");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "error_cqe") << Dump(r);
  EXPECT_NE(v.title.find("server 127.0.0.1 device 0 (device IP 127.10.0.1)"), std::string::npos)
      << v.title;
  EXPECT_NE(v.title.find("server 127.0.0.2 device 1 (device IP 127.10.0.2)"), std::string::npos)
      << v.title;
  EXPECT_NE(v.advice.find("network"), std::string::npos);
}

TEST(DiagnoseSeed, Ei0011AdvisesQpsPerConnection) {
  auto r = RunCase("ei0011");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "qp_memory") << Dump(r);
  EXPECT_EQ(v.code, "EI0011");
  EXPECT_NE(v.summary.find("HCCL_RDMA_QPS_PER_CONNECTION = 32"), std::string::npos) << v.summary;
  EXPECT_NE(v.advice.find("Lower HCCL_RDMA_QPS_PER_CONNECTION"), std::string::npos);
}

TEST(DiagnoseSeed, BufferOomAdvisesBuffsize) {
  auto r = RunCase("buffer_oom");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "buffer_oom") << Dump(r);
  EXPECT_NE(v.summary.find("4096 MB"), std::string::npos) << v.summary;  // 2 x 2048
  EXPECT_NE(v.advice.find("Lower HCCL_BUFFSIZE"), std::string::npos);
  EXPECT_EQ(Find(r, "qp_memory"), nullptr);
}

// A rank whose CCL buffer does not fit fails in init, after its CommInit entry line: the verdict
// names its communicator rank (the others' EI0006 name the same rank as missing).
TEST(DiagnoseSeed, BufferOomNamesTheRank) {
  auto r = RunCase("buffer_oom_rank");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "buffer_oom") << Dump(r);
  ASSERT_FALSE(v.ranks.empty()) << Dump(r);
  EXPECT_EQ(v.ranks[0].pid, 4202);
  EXPECT_EQ(v.ranks[0].rank, 2) << Dump(r);
  EXPECT_EQ(v.ranks[0].group, "oom_group");
}

TEST(DiagnoseSeed, LinkTimeoutNamesMissingRank) {
  auto r = RunCase("link_timeout");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "link_timeout") << Dump(r);
  EXPECT_NE(v.title.find("rank(s) 3 never connected"), std::string::npos) << v.title;
}

TEST(DiagnoseSeed, PortInUse) {
  auto r = RunCase("port_in_use");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().fault, "port_in_use") << Dump(r);
  EXPECT_NE(r.findings.front().title.find("60000"), std::string::npos);
}

TEST(DiagnoseSeed, ParameterMismatch) {
  auto r = RunCase("param_mismatch");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "param_mismatch") << Dump(r);
  EXPECT_NE(v.title.find("cclbufferSize"), std::string::npos) << v.title;
  EXPECT_NE(v.title.find("209715200"), std::string::npos);
}

// HCCL's own consistency-check lines as CANN writes them (enums as numbers, no comm or rank in
// the line): the ranks' local values, majority against minority, name the rank that called a
// different op; the tag line with a different op is the same finding, not a second one.
TEST(DiagnoseSeed, HcclCmdCheckNamesTheOddOp) {
  auto r = RunCase("cmd_check");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "op_mismatch") << Dump(r);
  EXPECT_EQ(v.code, "EI0005");
  EXPECT_EQ(v.confidence, "high");
  ASSERT_EQ(v.ranks.size(), 1u) << Dump(r);
  EXPECT_EQ(v.ranks[0].rank, 1);
  EXPECT_EQ(v.ranks[0].pid, 911);
  EXPECT_EQ(v.ranks[0].role, "root cause");
  EXPECT_NE(v.title.find("rank 1 has AllGather (the others: AllReduce)"), std::string::npos)
      << v.title;
  int op_findings = 0;
  for (const Finding& f : r.findings) op_findings += f.code == "EI0005" ? 1 : 0;
  EXPECT_EQ(op_findings, 1) << Dump(r);
}

TEST(DiagnoseSeed, HcclCmdCheckDataTypeNumbersAreNamed) {
  auto r = RunCase("cmd_check_dtype");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "dtype_mismatch") << Dump(r);
  ASSERT_EQ(v.ranks.size(), 1u) << Dump(r);
  EXPECT_EQ(v.ranks[0].rank, 3);
  EXPECT_EQ(v.ranks[0].pid, 923);
  EXPECT_NE(v.title.find("rank 3 has float16 (the others: float32)"), std::string::npos) << v.title;
}

std::string Fact(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.facts)
    if (k == key) return v;
  return {};
}

// F7 in Vigil's own log format: the entry times, not only the error times, name the late rank.
TEST(DiagnoseLate, EntryTimesNameTheLateRank) {
  auto r = RunCase("late_entry");
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "late_rank") << Dump(r);
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_EQ(v.ranks[0].rank, 2);
  EXPECT_EQ(v.ranks[0].pid, 7102);
  EXPECT_EQ(Fact(v, "index"), "4");
  EXPECT_EQ(Fact(v, "gap_seconds"), "400.000");
  EXPECT_EQ(Fact(v, "exec_timeout_seconds"), "300");
  EXPECT_EQ(Fact(v, "exec_timeout_source"), "log");
  EXPECT_NE(v.title.find("6 min 40 s"), std::string::npos) << v.title;
  EXPECT_NE(v.title.find("HCCL_EXEC_TIMEOUT 300 s"), std::string::npos) << v.title;
  ASSERT_GE(v.evidence.size(), 2u);
  EXPECT_NE(v.evidence[0].text.find("Entry-HcclAllReduce"), std::string::npos)
      << v.evidence[0].text;
  EXPECT_NE(v.evidence[0].text.find("11:27:10.002.030"), std::string::npos) << v.evidence[0].text;
  // The error-time rule does not add a second late_rank finding for the same comm.
  int late = 0;
  for (const Finding& f : r.findings) late += f.fault == "late_rank";
  EXPECT_EQ(late, 1) << Dump(r);
}

// Vigil's flight-recorder dumps (schema vigil.flight/1) alone: processes, ranks and the late
// entry at index 3 against the default timeout.
TEST(DiagnoseLate, FlightDumpsAlone) {
  auto r = RunCase("flight");
  ASSERT_EQ(r.job.dumps.size(), 2u);
  for (const FlightDump& d : r.job.dumps) {
    EXPECT_EQ(d.schema, "vigil.flight/1");
    EXPECT_EQ(d.rank_size, 2);
    EXPECT_EQ(d.host, "127.0.0.1");
    ASSERT_EQ(d.ops.size(), 4u);
    EXPECT_EQ(d.ops[3].state, "failed");
    EXPECT_EQ(d.ops[3].reduce, "sum");
    EXPECT_EQ(d.ops[3].root, -1);
    EXPECT_EQ(d.ops[3].leave, kNoTime);
    EXPECT_NE(d.ops[3].start, kNoTime);
  }
  ASSERT_EQ(r.job.comms.size(), 1u);
  ASSERT_EQ(r.job.comms[0].members.size(), 2u);
  ASSERT_FALSE(r.findings.empty());
  const Finding& v = r.findings.front();
  EXPECT_EQ(v.fault, "late_rank") << Dump(r);
  ASSERT_EQ(v.ranks.size(), 1u);
  EXPECT_EQ(v.ranks[0].rank, 1);
  EXPECT_EQ(v.ranks[0].pid, 8101);
  EXPECT_EQ(v.ranks[0].host, "127.0.0.1");
  EXPECT_EQ(Fact(v, "index"), "3");
  EXPECT_EQ(Fact(v, "exec_timeout_seconds"), "1836");
  EXPECT_EQ(Fact(v, "exec_timeout_source"), "default");
}

// The older, tolerant dump form still reads (single object, string numbers, micros times).
TEST(DiagnoseLate, OlderFlightFormStillAccepted) {
  std::vector<FlightDump> dumps;
  std::vector<RankTableDevice> table;
  ASSERT_TRUE(ParseJsonFile(R"({"comm":"g","rankId":"3","rank_size":"4","pid":"12","ops":[
      {"index":"0","type":"AllGather","count":"8","dtype":"int8","stream":"5","enter":1700000000000000,
       "state":"pending"}]})",
                            0, &dumps, &table));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].group, "g");
  EXPECT_EQ(dumps[0].rank, 3);
  EXPECT_EQ(dumps[0].rank_size, 4);
  EXPECT_EQ(dumps[0].pid, 12);
  ASSERT_EQ(dumps[0].ops.size(), 1u);
  EXPECT_EQ(dumps[0].ops[0].op, "AllGather");
  EXPECT_EQ(dumps[0].ops[0].dtype, "int8");
  EXPECT_EQ(dumps[0].ops[0].stream, 5);
  EXPECT_EQ(dumps[0].ops[0].enter, 1700000000000000);
  // An empty vigil.flight/1 dump (no comm yet) is ours, not text.
  dumps.clear();
  EXPECT_TRUE(
      ParseJsonFile(R"({"schema":"vigil.flight/1","pid":1,"comms":[]})", 0, &dumps, &table));
  EXPECT_TRUE(dumps.empty());
}

// "What to do" comes from Vigil's advice text in the catalogue, never HCCL's bare "N/A".
TEST(DiagnoseAdvice, CatalogueAdviceNotSolution) {
  for (const char* name : {"sdma_buffer", "ei0011", "cqe", "link_timeout", "port_in_use",
                           "param_mismatch", "timeout_gap", "mismatch", "late_entry"}) {
    auto r = RunCase(name);
    ASSERT_FALSE(r.findings.empty()) << name;
    for (const Finding& f : r.findings) {
      EXPECT_FALSE(f.advice.empty()) << name << " " << f.fault;
      EXPECT_EQ(f.advice.find("N/A"), std::string::npos)
          << name << " " << f.fault << ": " << f.advice;
    }
    const Finding& v = r.findings.front();
    const ErrorCodeInfo* info = v.code.empty() ? nullptr : FindErrorCode(v.code);
    if (info != nullptr && !info->advice.empty()) {
      EXPECT_NE(v.advice.find(std::string(info->advice)), std::string::npos)
          << name << ": " << v.advice;
    }
  }
}

TEST(DiagnoseSeed, JsonAndHtmlRender) {
  auto r = RunCase("mismatch");
  nlohmann::json j = RenderJson(r);
  EXPECT_EQ(j["schema"], "vigil.diagnose/1");
  EXPECT_EQ(j["verdict"]["fault"], "op_mismatch");
  EXPECT_EQ(j["verdict"]["ranks"][0]["rank"], 1);
  EXPECT_FALSE(j["verdict"]["evidence"].empty());
  EXPECT_GT(j["verdict"]["evidence"][0]["line"].get<int>(), 0);
  std::string html = RenderHtml(r);
  EXPECT_NE(html.find("data-fault=\"op_mismatch\""), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained, static
}

}  // namespace
}  // namespace vigil::diagnose
