// Verdicts from knowledge-base evidence: every line the knowledge base recognised (coded screen
// errors in any layout, un-coded messages, HCCL's own conclusions), on whatever part of a job the
// logs cover — one rank's screen output is enough. Causal precedence: a cause-role entry (device,
// NIC, driver, process, memory, configuration) before a timeout is the root and the timeouts are
// its symptoms; with symptoms alone, the peer they waited on is the suspect and its logs are what
// to collect next. Runs after the plog rules and defers to their stronger findings.
#pragma once

#include <vector>

#include "diagnose/job_model.h"
#include "diagnose/rules.h"

namespace vigil::diagnose {

void RuleEvidence(const Job& job, std::vector<Finding>* findings);

// Fills the class and knowledge-base entry of a finding that still lacks them from its code's
// entry (the plog rules take theirs from data/kb/diagnose.json).
void ClassifyFindings(std::vector<Finding>* findings);

}  // namespace vigil::diagnose
