// The seeds' decision tree, applied to a Job. Each rule adds findings; the verdict is the finding
// with the highest score (a rule's certainty that it names the root cause, 0..100).
//
// Order: 1 heartbeat crimer (ERROR CQE > STUCK > LOST, NOTE time window, mutual LOST =
// network); 2 ranks of each failing comm (silent ranks, first erroring rank, missing logs);
// 3 all ranks timed out → op/count/dtype mismatch at the same index, else error-time gap against
// HCCL_EXEC_TIMEOUT; 4 two streams on one comm; 5 SDMA EI0012 (destroy before sync / buffer too
// small / link); 6 EI0011 vs CCL buffer OOM; 7 error CQE EI0013 endpoints and peer exit;
// 8 link establishment (EI0006 missing ranks, EI0019 port, EI0005 parameter).
#pragma once

#include <string>
#include <vector>

#include "diagnose/job_model.h"

namespace vigil::diagnose {

struct RankRef {
  std::string role;      // "root cause", "peer", "late", "silent", "reporter", ...
  std::string uid;       // "IP/ID" when known
  std::string group;     // communicator identifier
  int64_t rank = -1;
  int64_t pid = -1;
  std::string node;      // log root folder
  std::string host;      // host IP when known
  int64_t device = -1;
};

struct Evidence {
  Loc loc;
  std::string file;
  std::string text;
  std::string note;      // why this line matters
};

struct Finding {
  std::string fault;       // stable id: "heartbeat_lost", "op_mismatch", ... (JSON "fault")
  std::string title;       // one line
  std::string summary;     // what happened, with names and numbers
  std::string advice;      // what to do
  std::string code;        // catalogue code the advice draws on ("EI0012"), may be empty
  std::string cls;         // knowledge-base class id ("process", "network", ...; JSON "class")
  std::string kb;          // knowledge-base entry id the verdict rests on, may be empty
  std::string confidence;  // "high" | "medium" | "low"
  int score = 0;
  Micros time = kNoTime;
  std::vector<RankRef> ranks;
  std::vector<Evidence> evidence;
  std::vector<std::pair<std::string, std::string>> facts;  // extra key/values for JSON
};

std::vector<Finding> ApplyRules(const Job& job);

// Human-readable name of a rank: "127.10.0.1/1 (rank 1, pid 2111666)".
std::string DescribeRank(const RankRef& r);

}  // namespace vigil::diagnose
