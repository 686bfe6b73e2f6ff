// Finds log files under the inputs and parses them, in parallel, into per-file results.
//
// Inputs: folders (walked recursively by walker.h, which says which files are read and which are
// named as unusable), single files, "-" for stdin. Gzip files (rotated plogs) are decompressed on
// the fly when built with zlib; other compressed files and files that cannot be opened or read
// are not read (or read up to the error) and are listed with the reason, as are files in which no
// record was found. Nothing in the input stops the scan: every file is opened non-blocking (a
// FIFO with no writer reads as empty), and what is not a regular file or FIFO is not read.
//
// Files are read in 4 MiB chunks into a reusable buffer per worker (bounded memory whatever the
// file size; gzip files through zlib into the same buffer). Lines are split with memchr, records at
// every record start (one vectorized pass), and each record goes through ParseRecordContent, whose
// one-pass keyword filter rejects uninteresting records cheaply.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "diagnose/events.h"
#include "diagnose/flight_recorder.h"

namespace vigil::diagnose {

class ArchiveSpace;

struct InputFile {
  std::string path;  // as shown (an archive's member: "<archive>/<member path>")
  std::string node;  // CANN log root (folder above run/ debug/) or the file's folder
  uint64_t size = 0;
  bool regular = false;       // a regular file (else a FIFO or stdin: read as a stream)
  uint64_t dev = 0, ino = 0;  // one file reached by several paths (symlinks) is read once
  std::string open_path = {};  // where it is read when not at path (an extracted member), else ""

  const std::string& Opened() const { return open_path.empty() ? path : open_path; }
};

struct SkippedFile {
  std::string path;
  std::string reason;
};

struct StreamStat {
  int64_t ops = 0;
  Micros first = kNoTime, last = kNoTime;
  Loc first_loc, last_loc;
  std::string first_op, last_op;
};

// The op Entry lines of one communicator in one process of one file: totals, per-stream
// statistics, and the most recent ops (older ones are counted, not kept, to bound memory).
struct CommOps {
  static constexpr size_t kKeep = 256;
  std::string group;
  std::string comm_ptr;
  int64_t pid = -1;
  int32_t local_rank = -1;
  int64_t total = 0;
  // The last kKeep ops, oldest first once the file is parsed (a ring while it is parsed, so an
  // op costs no allocation); seq = ordinal within this file.
  std::vector<OpEntry> recent;
  size_t ring_head = 0;  // parse-time only: index of the oldest op when full
  std::map<int32_t, StreamStat> streams;
  int64_t stream_switches = 0;     // consecutive ops on different streams
  Micros min_switch_gap = -1;      // shortest time between two such ops
  Loc switch_loc_a, switch_loc_b;  // the pair with that gap
  OpEntry first;                   // the first op (joins the pieces of a split file)
};

// What one file says about one process.
struct ProcessSeen {
  std::string pname;
  Micros first = kNoTime, last = kNoTime;
  int64_t records = 0;
  int64_t errors = 0;
  Micros first_error = kNoTime;
  Loc first_error_loc;
  std::string first_error_text;
};

struct FileResult {
  bool read = false;
  std::string skip_reason;  // when not read (or read with no records)
  uint64_t bytes = 0, lines = 0, records = 0;
  uint64_t unparsed_lines = 0;  // lines with no record start (continuations, text, junk)
  uint64_t binary_lines = 0;    // of those, lines with control bytes
  uint64_t overlong_lines = 0;  // lines cut at the buffer size
  uint64_t dropped_events = 0;  // beyond the per-file caps
  std::vector<Event> events;
  std::vector<CommOps> comms;
  std::map<int64_t, ProcessSeen> processes;
  std::vector<FlightDump> dumps;
  std::vector<RankTableDevice> rank_table;
};

// Per-file caps on typed events (errors spam in real jobs): the first ones are kept, the others
// counted in dropped_events.
inline constexpr size_t kMaxEventsPerFile = 20000;
inline constexpr size_t kMaxErrorEventsPerFile = 64;

struct ScanOptions {
  int threads = 2;
  // A plain log file of at least twice the piece size is read as pieces in parallel, split at
  // line boundaries and merged back into one FileResult (the same as reading it whole). The
  // piece size is max(min_piece_bytes, total input / (4 * threads)).
  uint64_t min_piece_bytes = 32ull << 20;
  // Called on the calling thread about every 200 ms while files are read.
  std::function<void(uint64_t done_bytes, uint64_t total_bytes)> progress;
};

struct ScanResult {
  std::vector<InputFile> files;
  std::vector<FileResult> results;   // parallel to files
  std::vector<SkippedFile> skipped;  // not read at all
  uint64_t ignored_files = 0;        // not log-like, in walked folders
  uint64_t total_bytes = 0;
  std::shared_ptr<ArchiveSpace> unpacked;  // archives' extracted members (archive.h), if any
};

// Walks `inputs` and parses every log file found.
ScanResult Scan(const std::vector<std::string>& inputs, const ScanOptions& options);

// Whether .gz files are read (vigil built with zlib); otherwise they are listed as not read.
bool GzipSupported();

// Parses one in-memory text (tests, fuzzing). `file_index` is stored in every Loc.
FileResult ParseText(std::string_view text, uint32_t file_index);

// ParseText as the scanner reads a large file: in `pieces` pieces split at line boundaries,
// parsed separately and merged (tests: must equal ParseText).
FileResult ParseTextInPieces(std::string_view text, uint32_t file_index, size_t pieces);

// The text of one record for evidence: reads `path` at the line's byte offset. Empty on error.
std::string ReadLineAt(const std::string& path, uint64_t offset, size_t max_len = 1000);

}  // namespace vigil::diagnose
