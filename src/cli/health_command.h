// `vigil health [TARGET...]`: a cluster-wide view of a running job, asked through any of its
// ranks (like NCCL's RAS client). TARGET is HOST:PORT of a rank's heartbeat listener, or a log
// folder: the run logs name every rank's listener ("[Heartbeat]maintenance listener [ip:port]"),
// and the newest one that answers is used. The rank tells which ranks exist and where; every
// rank is then asked for its own state (ops entered/left, the op it is inside), and the events
// the job has seen (LOST / STUCK / ERROR CQE) are merged. Printed as a table, or --json.
#pragma once

#include <CLI/CLI.hpp>

namespace vigil::cli {

// Exit code: 0 all ranks answered and no abnormal event; 1 some rank abnormal or silent;
// 2 no rank could be reached.
void RegisterHealthCommand(CLI::App& app, int* exit_code);

}  // namespace vigil::cli
