// Where the `vigil` tools keep and find a job's key (bootstrap/job_key.h).
//
// `vigil run` makes one key per run, hands it to every rank as VIGIL_JOB_KEY (the environment,
// never the command line of a local rank) and writes it to <log folder>/vigil-job.key, readable
// by its owner only, so that `vigil health` pointed at the run (its log folder, or HOST:PORT with
// ASCEND_PROCESS_LOG_PATH naming the folder) proves the same key to the ranks' listeners.
#pragma once

#include <string>

#include "bootstrap/job_key.h"

namespace vigil::cli {

inline constexpr const char* kJobKeyFileName = "vigil-job.key";

// Sets VIGIL_JOB_KEY to a new key unless it is set already. False with *error on failure.
bool EnsureJobKeyInEnvironment(std::string* error);
// Writes VIGIL_JOB_KEY's key to dir/vigil-job.key (mode 0600). False with *error on failure.
bool WriteJobKeyFile(const std::string& dir, std::string* error);

// The key `vigil health` proves, first found of: --rootinfo-file (HcclRootInfo bytes),
// VIGIL_JOB_KEY, VIGIL_ROOT_INFO (hex), VIGIL_ROOT_INFO_FILE, vigil-job.key in `folder` or its
// parent. None: the all-zero key (answered only by keyless jobs). *from names the source for
// messages ("VIGIL_JOB_KEY", a path, "no key"); never the key. False with *error when a source
// that is named exists but is unreadable or malformed.
bool FindJobKey(const std::string& rootinfo_file, const std::string& folder, auth::JobKey* key,
                std::string* from, std::string* error);

}  // namespace vigil::cli
