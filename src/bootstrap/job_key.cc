#include "bootstrap/job_key.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <fmt/format.h>

#include <cstring>
#include <mutex>

#include "bootstrap/auth.h"
#include "common/env_config.h"
#include "log/plog.h"

namespace vigil::auth {

namespace {

struct KeyState {
  std::mutex mu;
  bool have_process_key = false;
  JobKey process_key;
  std::vector<JobKey> known;
};

KeyState& State() {
  static KeyState* state = new KeyState();  // never destroyed: used by threads at exit
  return *state;
}

void AdoptLocked(KeyState& s, const JobKey& key) {
  for (const JobKey& k : s.known) {
    if (k == key) return;
  }
  if (s.known.size() >= 64) return;  // a process joins a handful of jobs, not thousands
  s.known.push_back(key);
}

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// VIGIL_JOB_KEY as a key; false (and *error) when it is set but malformed. *set: present.
bool EnvKey(JobKey* out, bool* set, std::string* error) {
  *set = false;
  const EnvConfig& env = Env();
  if (env.job_key.empty()) {
    // Env() keeps the default of a malformed value: say so instead of running without a key.
    for (const auto& bad : env.invalid) {
      if (bad.name == "VIGIL_JOB_KEY") {
        if (error) *error = "VIGIL_JOB_KEY is invalid: expected " + bad.expected;
        return false;
      }
    }
    return true;
  }
  if (!ParseJobKeyHex(env.job_key, out)) {
    if (error) *error = "VIGIL_JOB_KEY is invalid: expected 32 hex digits (a 128-bit key)";
    return false;
  }
  *set = true;
  return true;
}

}  // namespace

bool GenerateJobKey(JobKey* out, std::string* error) {
  JobKey key;
  size_t got = 0;
  for (int tries = 0; got < key.bytes.size() && tries < 16; ++tries) {
    ssize_t n = getrandom(key.bytes.data() + got, key.bytes.size() - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      if (error) *error = fmt::format("getrandom failed: {} (errno {})", strerror(errno), errno);
      return false;
    }
  }
  if (got < key.bytes.size()) {
    if (error) *error = "getrandom returned too few bytes";
    return false;
  }
  key.given = true;
  *out = key;
  return true;
}

bool ParseJobKeyHex(const std::string& hex, JobKey* out) {
  if (hex.size() != 2 * kKeyBytes) return false;
  JobKey key;
  for (size_t i = 0; i < kKeyBytes; ++i) {
    const int hi = Nibble(hex[2 * i]), lo = Nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    key.bytes[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  key.given = true;
  *out = key;
  return true;
}

std::string JobKeyHex(const JobKey& key) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(2 * kKeyBytes, '0');
  for (size_t i = 0; i < kKeyBytes; ++i) {
    out[2 * i] = kDigits[key.bytes[i] >> 4];
    out[2 * i + 1] = kDigits[key.bytes[i] & 15];
  }
  return out;
}

uint64_t JobKeyId(const JobKey& key) {
  static const char kLabel[] = "vigil job key id";
  uint8_t mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  InitCrypto();
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()),
       reinterpret_cast<const uint8_t*>(kLabel), sizeof(kLabel) - 1, mac, &len);
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id |= static_cast<uint64_t>(mac[i]) << (8 * i);
  OPENSSL_cleanse(mac, sizeof(mac));
  return id;
}

bool ProcessJobKey(JobKey* out, std::string* error) {
  bool set = false;
  JobKey key;
  if (!EnvKey(&key, &set, error)) return false;
  KeyState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (set) {
    AdoptLocked(s, key);
    *out = key;
    return true;
  }
  if (!s.have_process_key || !s.process_key.given) {
    // A keyless (rank-table) communicator gives no key to pass on: make a real one.
    if (!GenerateJobKey(&key, error)) return false;
    s.process_key = key;
    s.have_process_key = true;
    AdoptLocked(s, key);
  }
  *out = s.process_key;
  return true;
}

void AdoptJobKey(const JobKey& key) {
  KeyState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  AdoptLocked(s, key);
  if (!s.have_process_key && key.given) {
    s.process_key = key;
    s.have_process_key = true;
  }
}

std::vector<JobKey> KnownJobKeys() {
  KeyState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.known;
}

bool RankTableJobKey(JobKey* out, std::string* error) {
  bool set = false;
  JobKey key;
  if (!EnvKey(&key, &set, error)) return false;
  if (!set) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      HCCL_RUN_WARNING("[InitGroupStage][Auth]VIGIL_JOB_KEY is not set: this rank-table job has no "
                       "job key, so its connections (rendezvous, data links, heartbeat, health) "
                       "are not authenticated; anyone who can reach its ports can join");
    });
    key = JobKey();
  }
  AdoptJobKey(key);
  *out = key;
  return true;
}

void ResetJobKeysForTesting() {
  KeyState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.have_process_key = false;
  s.process_key = JobKey();
  s.known.clear();
}

}  // namespace vigil::auth
