// The job key: 128 random bits every rank of a job knows and strangers do not. Every connection
// of the job proves knowledge of it (bootstrap/auth.h) before anything else is read.
//
// Where a rank gets it:
//   - HcclGetRootInfo puts the process's job key into the root info's bytes, so it travels with
//     them (MPI broadcast, VIGIL_ROOT_INFO, a root-info file) to HcclCommInitRootInfo;
//   - the process's job key is VIGIL_JOB_KEY (32 hex digits; `vigil run` sets one per job) when
//     set, else the first key this process joined a communicator with, else a new random one;
//   - a rank-table job reads VIGIL_JOB_KEY; without it the job has no key: its connections run
//     the same exchange over an all-zero key, which proves nothing (one WARNING at init says so).
// The key is never written to logs, dumps or the wire; only its id (a one-way digest) is sent,
// so a listener serving several jobs' communicators picks the right key.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vigil::auth {

constexpr size_t kKeyBytes = 16;

struct JobKey {
  std::array<uint8_t, kKeyBytes> bytes{};
  bool given = false;  // false: no key (all zero): connections are not authenticated

  bool operator==(const JobKey& o) const { return bytes == o.bytes && given == o.given; }
};

// A new key from the OS's random source (getrandom). False with *error when it fails.
bool GenerateJobKey(JobKey* out, std::string* error);
// 32 hex digits (either case) -> key. False on anything else.
bool ParseJobKeyHex(const std::string& hex, JobKey* out);
// The key as 32 lower-case hex digits: for the launcher handing it to ranks (environment).
std::string JobKeyHex(const JobKey& key);
// Public id of a key (first 8 bytes of HMAC-SHA256(key, "vigil job key id")); safe to send/log.
uint64_t JobKeyId(const JobKey& key);

// The process's job key for a new root info: VIGIL_JOB_KEY, else the key adopted first, else a
// new random key (adopted). False with *error when VIGIL_JOB_KEY is malformed or the OS has no
// randomness to give.
bool ProcessJobKey(JobKey* out, std::string* error);
// Records a key this process joined a communicator with: listeners shared by communicators
// (the heartbeat's) accept it from now on; the first one becomes the process's job key when
// VIGIL_JOB_KEY is not set. Thread-safe.
void AdoptJobKey(const JobKey& key);
// Every key adopted so far (a handful at most).
std::vector<JobKey> KnownJobKeys();
// The key of a rank-table job: VIGIL_JOB_KEY, else none (given=false) and, once per process, the
// WARNING that its connections are unauthenticated. False with *error when VIGIL_JOB_KEY is
// malformed.
bool RankTableJobKey(JobKey* out, std::string* error);

// Tests only: forget adopted keys (VIGIL_JOB_KEY is re-read through the env layer).
void ResetJobKeysForTesting();

}  // namespace vigil::auth
