// The fault knowledge base: every error code and un-coded message a distributed job meets (HCCL,
// HCCP, runtime, driver, framework, torch_npu, Vigil's own), with its class, meaning, causes,
// checks, actions and relations to other entries, and the patterns by which `vigil diagnose`
// recognises it in a log line. Data, not code: the JSON files of data/kb/ are compiled into the
// library (one copy, read by the library's screen errors and by `vigil diagnose`); a new entry is
// an edit of data/kb/, nothing else.
//
// Entry schema (data/kb/<family>.json: {"entries": [Entry...]}; data/kb/classes.json: classes):
//   id          unique: the code for coded entries ("EI0002"), else "<family>.<slug>"
//   code        the printed code when there is one ("EI0002", "EJ0001", "ERR02200"), else absent
//   family      hccl | hccp | runtime | driver | framework | torch_npu | vigil | ...
//   component   who prints it ("HCCL", "HCCP", "RUNTIME", "DRV", "torch_npu", "Vigil", ...)
//   class       one of classes.json's ids
//   role        "cause" (a root when present), "symptom" (usually a consequence of another
//               entry), "either"
//   title       short name (for HCCL codes: the screen title, "Communication_Error_Timeout")
//   meaning     one or two sentences, Vigil's words
//   causes, checks, actions   lists of sentences, Vigil's words
//   symptom_of  ids of entries this one is commonly a consequence of
//   leads_to    ids of entries this one commonly causes
//   source      (optional) the public catalogue the code was confirmed in: a URL, or
//               "owner/repo:path" of a public repository
//   reader      (optional) the analyzer's block reader that finds this entry from several
//               lines together ("torchrun_summary"); an un-coded entry has patterns or a reader
//   patterns    [{"needle": literal that must occur, "re": RE2 regex with named groups,
//               "fields_only": true when it only reads fields of a coded line}], used
//               by the analyzer for un-coded messages and for fields of coded ones. Named groups
//               the analyzer knows: rank, remote_rank, src_rank, dst_rank, pid, ip, remote_ip,
//               device, seq, op, group, tag, timeout_ms, timeout_s, elapsed_ms, ret, port, status,
//               kb (an entry id the line names), exited (present: the process is gone),
//               informer_rank, informer_ip (the rank that discovered a heartbeat event),
//               rank_size, index, device_ip (a device NIC's IP), phy_id (a physical device id),
//               server_ip, vnic_ip, remote_device, value, detail, ranks (a printed list),
//               time (as printed), from_env (present: the value came from the environment).
//               The plog forms of data/formats/plog_lines.json use the same vocabulary.
//   hccl        (HCCL's EI codes only) the texts the library prints on screen: stage, message
//               (fmt template), arg_names, cause, solution, screen_cause (bool), advice.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::kb {

struct Pattern {
  std::string needle;  // literal the line must contain (a cheap first test)
  std::string re;      // RE2 syntax; empty: the needle alone matches
  // Only reads fields of a line already known as this entry (by its code): a pattern whose
  // needle is not distinctive enough to recognise the entry on its own ("tag[").
  bool fields_only = false;
  // Recognises the entry only when no other entry's pattern (but fallbacks) matches the line: a
  // needle that marks a family of lines ("[RanktableCheck]") whose specific forms have entries.
  bool fallback = false;
};

struct Entry {
  std::string id, code, family, component, cls, role, title, meaning;
  std::string source;  // the public catalogue the entry was confirmed in (may be empty)
  std::string reader;  // the block reader that finds the entry (may be empty)
  std::vector<std::string> causes, checks, actions;
  std::vector<std::string> symptom_of, leads_to;
  std::vector<Pattern> patterns;
  // HCCL's screen texts (EI codes); empty for other entries.
  std::string stage, message, arg_names, hccl_cause, solution, advice;
  bool screen_cause = true;
  bool has_hccl = false;
  // "about": "peer": the line is about the other end of the printing rank's link (a remote
  // that did not send), not about the rank that printed it; the default is "self".
  bool about_peer = false;
};

struct ClassInfo {
  std::string id, name, meaning;
};

class KnowledgeBase {
 public:
  // By id, else by code (case-sensitive); nullptr when unknown.
  const Entry* Find(std::string_view id_or_code) const;
  const ClassInfo* Class(std::string_view id) const;
  const std::vector<Entry>& entries() const { return entries_; }
  const std::vector<ClassInfo>& classes() const { return classes_; }

  // Parses the JSON texts (one per data/kb/ file). Errors (bad JSON, a missing field, a
  // duplicate id, an unknown class or relation id) go to *errors; entries that are well formed
  // are kept. Used by Get() on the embedded files and by tests on edited copies.
  static KnowledgeBase Parse(const std::vector<std::string_view>& json_texts,
                             std::vector<std::string>* errors);

 private:
  std::vector<Entry> entries_;
  std::vector<ClassInfo> classes_;
  // Index into entries_ by id and by code (std::less<>: looked up by string_view).
  std::map<std::string, size_t, std::less<>> by_id_, by_code_;
};

// The knowledge base compiled into the library, parsed on first use (thread-safe). It must load
// without errors: a test checks the data files.
const KnowledgeBase& Get();

// What Parse() reported about the embedded files (empty when the data is sound).
const std::vector<std::string>& LoadErrors();

// One entry as `vigil diagnose --explain` prints it: code, title, class, meaning, causes, checks,
// actions, relations.
std::string Explain(const Entry& e);

}  // namespace vigil::kb
