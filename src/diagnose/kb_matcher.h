// Recognises knowledge-base entries in a line by their patterns (data/kb/: a needle, then an RE2
// regex with named groups). The needles of all entries are searched in one pass, so a line that
// holds none costs one scan; regexes run only for the entries whose needle is there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/knowledge_base.h"

namespace vigil::diagnose {

// The named groups a pattern may carry, as read from one line (-1 / empty: absent).
struct KbFields {
  int64_t rank = -1, remote_rank = -1, src_rank = -1, dst_rank = -1, pid = -1, device = -1;
  int64_t seq = -1, timeout_ms = -1, elapsed_ms = -1, ret = -1, port = -1, informer_rank = -1;
  int64_t rank_size = -1, index = -1;
  std::string ip, remote_ip, op, group, tag, status, informer_ip;
  // A rank's identity and its peers (the plog forms of data/formats/plog_lines.json): its device
  // NIC's IP, its physical device id, its server's IP, its vNIC's IP, a peer's device id.
  std::string device_ip, phy_id, server_ip, vnic_ip, remote_device;
  std::string value;    // a setting's value (an environment variable's echo)
  std::string detail;   // a word qualifying the line ("failed")
  std::string ranks;    // a list of ranks, as printed ("[0000],[0002]")
  std::string time;     // a time the message carries, as printed
  std::string kb;       // an entry the line names (Vigil's root-cause line names the crimer's)
  bool exited = false;  // the line says the process exited
  bool from_env = false;  // the line says the value came from the environment
  void Merge(const KbFields& o);  // fills what this one lacks
};

// One pattern outside the knowledge base (a row of data/formats/): a needle, then an RE2 regex
// whose named groups are KbFields' (the same vocabulary as the knowledge base's patterns).
class FieldPattern {
 public:
  FieldPattern();
  ~FieldPattern();
  FieldPattern(FieldPattern&&) noexcept;
  FieldPattern& operator=(FieldPattern&&) noexcept;

  // False, with *error saying why, when both are empty, the regex does not compile or it names a
  // group KbFields does not have. An empty `re`: the needle alone matches; an empty needle: the
  // regex alone decides.
  bool Compile(std::string_view needle, std::string_view re, std::string* error);
  const std::string& needle() const;
  // Whether s holds the needle (if any) and the regex matches; the groups it read fill what *out lacks.
  bool Read(std::string_view s, KbFields* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct KbMatch {
  const kb::Entry* entry = nullptr;
  KbFields fields;
};

class KbMatcher {
 public:
  static const KbMatcher& Get();
  explicit KbMatcher(const kb::KnowledgeBase& base);
  ~KbMatcher();

  // Whether any entry's needle occurs in s (the cheap first test).
  bool AnyNeedle(std::string_view s) const;
  // The entries whose pattern matches s, at most `max` (one per entry), in knowledge-base order.
  std::vector<KbMatch> Match(std::string_view s, size_t max = 4) const;
  // The fields `entry`'s patterns read from s (a coded line: the code found the entry). False
  // when none matches.
  bool Fields(const kb::Entry& entry, std::string_view s, KbFields* out) const;

  // Patterns that did not compile (a test asserts there are none).
  const std::vector<std::string>& errors() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::diagnose
