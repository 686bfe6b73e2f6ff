// `vigil run` for MPI programs. A program that links libmpi (or any with --mpi / --mpirun)
// learns its rank from MPI, not from RANK_ID, so `vigil run` hands the start to mpirun:
//   mpirun -n N --oversubscribe --bind-to none [--host H1:N1,...] -x NAME... PROGRAM ARGS
// (Open MPI; MPICH's Hydra gets -n N [-hosts ...] -envlist NAME,... PROGRAM ARGS), in a process
// group of its own, with the launcher's HCCL_*/ASCEND_*/VIGIL_* variables, the log folder and
// every --env passed on, and Open MPI's run-as-root variables when started by root. Signals go
// to mpirun, --timeout stops the whole group, and the exit status is mpirun's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::cli {

// Resolves a command name the way execvp does: as given when it holds a '/', else the first
// executable regular file of that name on `path_list` (PATH's value). "" when none.
std::string FindProgram(const std::string& name, const std::string& path_list);

enum class MpiFlavor { kOpenMpi, kHydra };

// Which mpirun wrote this `mpirun --version` text (Open MPI unless it names Hydra, MPICH or
// Intel MPI).
MpiFlavor FlavorFromVersion(const std::string& version_text);

struct MpirunPlan {
  std::string mpirun;  // path of mpirun
  MpiFlavor flavor = MpiFlavor::kOpenMpi;
  uint32_t nranks = 0;
  std::string hosts;                   // "H1:N1,H2:N2", or "" for this host alone
  std::vector<std::string> env_names;  // variables the ranks get from mpirun's environment
  std::vector<std::string> command;    // PROGRAM ARGS
};

// The argv that starts the plan (argv[0] is plan.mpirun).
std::vector<std::string> MpirunArgv(const MpirunPlan& plan);

struct MpiRunRequest {
  std::string reason;  // why MPI: "it links libmpi.so.40" / "--mpi"
  std::string mpirun;  // --mpirun, or "" for mpirun on PATH
  uint32_t nranks = 0;
  std::string hosts;
  std::vector<std::string> user_env;  // names given with --env
  std::vector<std::string> command;
  uint32_t timeout_s = 0;
  std::string log_dir;
  bool quiet = false;
};

// Starts the ranks through mpirun and waits for it; returns mpirun's exit code (2 when mpirun
// cannot be found or started, 124 after --timeout).
int RunThroughMpirun(const MpiRunRequest& request);

}  // namespace vigil::cli
