// vigil diagnose's per-line readers on the lines of the input: launcher prefixes and coded-line
// layouts (line_formats), time stamps, error-code tokens, Python exception lines, screen-error
// fields, op tags and dtype names, and the free-text reader (tracebacks, torchrun summaries,
// knowledge-base phrases) fed line after line as the scanner feeds it.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "diagnose/free_text.h"
#include "diagnose/line_formats.h"
#include "diagnose/line_parser.h"
#include "diagnose/plog_forms.h"
#include "diagnose/python_exception.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  using namespace vigil::diagnose;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const LineFormats& formats = LineFormats::Get();
  FreeTextReader reader;
  std::vector<Event> events;
  uint64_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size() && line_no < 4096) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    Loc loc{0, line_no, pos};
    LineContext ctx;
    std::string_view rest = formats.StripPrefixes(line, &ctx);
    FUZZ_CHECK(rest.size() <= line.size());
    CodedLine coded;
    if (formats.MatchCoded(rest, &coded)) {
      Event ev;
      ParseScreenFields(coded.msg, &ev);
    }
    (void)ParseLineTime(rest);
    (void)HasCodeToken(rest);
    (void)TracebackExceptionType(line);
    std::string_view op, group;
    SplitTag(rest, &op, &group);
    (void)DtypeSize(rest);
    FreeTextReader::ReadRecordContent(rest, loc, &events);
    if (reader.Wanted(line)) {
      std::string_view record;
      LineContext record_ctx;
      (void)reader.Read(line, loc, &events, &record, &record_ctx);
    }
    if (events.size() > 1024) events.clear();
  }
  reader.Finish(&events);
  return 0;
}
