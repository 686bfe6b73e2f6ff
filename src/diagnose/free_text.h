// Lines that are not CANN plog records: a rank's screen output, a launcher's interleaved log
// (vLLM, Ray, torchrun, Slurm prefixes), Python tracebacks, torch_npu's watchdog and logger
// lines. A line is read only when it carries an error code or a knowledge-base needle; its
// prefixes (line_formats) say which rank and process wrote it, its layout gives the code, time
// and message, and the knowledge base the entry and fields. Traceback frames printed right before
// an error line become its context. torchrun's failure summary is read as a block
// (elastic_summary.h).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/elastic_summary.h"
#include "diagnose/events.h"
#include "diagnose/line_formats.h"

namespace vigil::diagnose {

class FreeTextReader {
 public:
  // Whether a line that is not a plog record is worth Read(). Also notes traceback frames.
  bool Wanted(std::string_view line);

  // Reads one wanted line. Appends its events to *out (at most a few). When what is left after
  // the prefixes is a plog record, returns false and sets *rest to it and *ctx to what the
  // prefixes said: the caller parses the record and applies ApplyContext to its events.
  bool Read(std::string_view line, const Loc& loc, std::vector<Event>* out, std::string_view* rest,
            LineContext* ctx);

  // At the end of a file: what a block left open (torchrun's summary cut by the log's end).
  void Finish(std::vector<Event>* out);

  // A piece of a file read in parallel (scanner.h) starts with the lines before it given here,
  // in order, as Wanted() and Read() would see them but making no events: the last
  // kContextLines lines that are not plog records are enough for the traceback state (frames,
  // the open traceback) to be what one pass over the file has there. torchrun's summary is
  // followed by a reader of its own meanwhile: a block cut by the piece's start stays the
  // previous piece's (file_merge.h).
  void Prime(std::string_view line);
  // A traceback's frames chain with gaps of at most kFrameReach lines, and at most kFrames are
  // kept, so the context an error line takes lies within 3 * kFrameReach lines before its piece;
  // one more reach says whether the oldest of those frames began its traceback.
  static constexpr uint64_t kFrameReach = 40;  // lines after the last frame that still take it
  static constexpr size_t kFrames = 3;         // traceback frames kept as an error line's context
  static constexpr size_t kContextLines = 4 * kFrameReach;

  // Knowledge-base events in a plog record's content (ERROR/WARNING records: "ra rdma init
  // failed", "fftsplus task timeout", ...). Appends to *out.
  static void ReadRecordContent(std::string_view content, const Loc& loc, std::vector<Event>* out);

  // Puts what a line's prefixes said into an event parsed from the rest of the line.
  static void ApplyContext(const LineContext& ctx, Event* ev);

 private:
  // Whether the line just seen may be the exception line of the last traceback.
  bool TracebackOpen() const;

  ElasticSummary summary_;            // torchrun's failure summary, read as a block
  ElasticSummary prime_summary_;      // the same, for the lines given to Prime()
  bool summary_line_ = false;         // the line Wanted() saw belongs to it
  std::string clean_;                 // the line without ANSI colour sequences
  std::deque<std::string> frames_;    // the last traceback frames ("File "x.py", line 3, in f")
  uint64_t frames_line_ = 0;          // physical line of the last frame
  uint64_t closed_frames_line_ = 0;   // frames_line_ of the last traceback whose exception was read
  uint64_t line_no_ = 0;
};

}  // namespace vigil::diagnose
