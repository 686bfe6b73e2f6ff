#include "diagnose/scanner.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "common/knowledge_base.h"
#include "diagnose/file_merge.h"
#include "diagnose/file_parse.h"
#include "diagnose/file_text.h"
#include "diagnose/free_text.h"
#include "diagnose/line_joins.h"
#include "diagnose/line_parser.h"
#include "diagnose/piece_context.h"
#include "diagnose/text_util.h"
#include "diagnose/walker.h"

#if defined(VIGIL_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace vigil::diagnose {
namespace fs = std::filesystem;

namespace {

constexpr size_t kChunk = 4u << 20;  // read size; also the longest line kept whole
constexpr uint64_t kMaxJsonBytes = 256ull << 20;

bool HasSuffix(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

bool IsGzip(const std::string& name) {
  return HasSuffix(name, ".gz");
}

// Per-file parse state: the file's results plus the map from (pid, group) to its CommOps.
class FileParser {
 public:
  FileParser(uint32_t file_index, FileResult* out) : file_(file_index), out_(out) {}

  void Line(std::string_view line, uint64_t offset) {
    ++out_->lines;
    ++line_no_;
    line = AsShown(line, &offset, &shown_);
    const bool continues = WrapContinues(line);
    line = gutter_.Strip(line, line_no_);
    // A piece's first line that ends the line before the piece: read with that line, by the
    // piece before (EndPiece).
    if (std::exchange(first_continues_, false) && continues) return;
    // A terminal's hard wrap inside parentheses: the two pieces are one line.
    if (!held_.empty()) {
      if (continues) held_.append(line);
      ShowHeld();
      if (continues) return;
    }
    // (Not a plog record: CANN writes those whole; a pasted copy's wrap cuts screen lines.)
    if (rp_.HeaderSlot(line) < 0 && !(line.starts_with('[') && IsRecordStart(line)) &&
        WrapOpens(line)) {
      held_.assign(line);
      held_offset_ = offset;
      held_line_ = line_no_;
      return;
    }
    Shown(line, offset);
  }

  // A piece of a file read in parallel: the line just before it (the piece before reads this
  // piece's first line with it when it wrapped), and the line just after it.
  void StartPiece(std::string_view before) {
    uint64_t offset = 1;
    std::string scratch;
    before = AsShown(before, &offset, &scratch);
    first_continues_ = !(before.starts_with('[') && IsRecordStart(before)) && WrapOpens(before);
  }
  bool Holding() const { return !held_.empty(); }
  void EndPiece(std::string_view after) {
    uint64_t offset = 1;
    std::string scratch;
    after = AsShown(after, &offset, &scratch);
    if (WrapContinues(after)) held_.append(gutter_.Strip(after, line_no_ + 1));
    ShowHeld();
  }

  // The line held for a wrap, at its own line number.
  void ShowHeld() {
    const std::string text = std::move(held_);
    held_.clear();
    const uint64_t now = line_no_;
    line_no_ = held_line_;
    Shown(text, held_offset_);
    line_no_ = now;
  }

  // A line as a screen showed it: without a terminal's redraws (progress bars ending in a
  // carriage return leave the text after the last one), the NULs a truncated-and-copied log
  // leaves before it, a byte-order mark, Docker's JSON or a terminal's colours. Records take
  // offsets within the line as shown, near enough to find it again.
  static std::string_view AsShown(std::string_view line, uint64_t* offset, std::string* scratch) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (std::memchr(line.data(), '\r', line.size()) != nullptr) {
      const size_t cr = line.rfind('\r');
      if (cr + 1 < line.size()) line.remove_prefix(cr + 1);
    }
    while (!line.empty() && line.front() == '\0') line.remove_prefix(1);
    if (*offset == 0 && line.starts_with("\xEF\xBB\xBF")) {
      line.remove_prefix(3);
      *offset = 3;
    }
    line = Unwrapped(line, scratch);
    // Zero-width characters a chat or a web page put into the copy (after '[' and '(', to let
    // it wrap): not part of the line. Only lines that hold their lead byte are looked at.
    if (std::memchr(line.data(), '\xE2', line.size()) != nullptr) {
      std::string clean;
      if (WithoutZeroWidth(line, &clean)) {
        *scratch = std::move(clean);
        line = *scratch;
      }
    }
    return line;
  }

  // Removes U+200B..U+200D and U+2060 (and a U+FEFF beside them); false when there were none.
  static bool WithoutZeroWidth(std::string_view line, std::string* out) {
    bool any = false;
    for (size_t i = 0; i < line.size();) {
      const std::string_view rest = line.substr(i);
      if (rest.starts_with("\xE2\x80\x8B") || rest.starts_with("\xE2\x80\x8C") ||
          rest.starts_with("\xE2\x80\x8D") || rest.starts_with("\xE2\x81\xA0") ||
          rest.starts_with("\xEF\xBB\xBF")) {
        if (!any) out->assign(line.substr(0, i));
        any = true;
        i += 3;
        continue;
      }
      if (any) out->push_back(line[i]);
      ++i;
    }
    return any;
  }

  // One physical line (or two a wrap cut) as shown, out of its copy's wrappers.
  void Shown(std::string_view line, uint64_t offset) {
    if (line.find("\\n") != std::string_view::npos) {
      // A multi-line message printed with its newlines escaped (a Python repr, a JSON string):
      // each piece is a line, under the first piece's launcher prefixes.
      std::vector<std::string_view> pieces = EscapedLines(line);
      if (!pieces.empty()) {
        LineContext ignored;
        const std::string_view rest = LineFormats::Get().StripPrefixes(pieces[0], &ignored);
        const std::string_view prefix = pieces[0].substr(0, rest.data() - pieces[0].data());
        for (size_t k = 0; k < pieces.size(); ++k) {
          const uint64_t at = offset + static_cast<uint64_t>(pieces[k].data() - line.data());
          if (k == 0 || prefix.empty()) {
            Logical(pieces[k], at);
          } else {
            escaped_.assign(prefix).append(pieces[k]);
            Logical(escaped_, at);
          }
        }
        return;
      }
    }
    Logical(line, offset);
  }

  // One line as shown: a plog record, screen output, or a record behind a launcher's prefix.
  void Logical(std::string_view line, uint64_t offset) {
    const int slot = rp_.HeaderSlot(line);
    if (slot >= 0 || (IsRecordStart(line) && !line.starts_with("[PID:"))) {
      Records(line, offset, slot);
      return;
    }
    if (free_.Wanted(line)) {
      // Not a plog record: screen output, a launcher's log, a traceback.
      std::string_view rest;
      LineContext ctx;
      size_t before = free_events_.size();
      if (free_.Read(line, Loc{file_, line_no_, offset}, &free_events_, &rest, &ctx)) {
        for (size_t i = before; i < free_events_.size(); ++i) AddFreeEvent(std::move(free_events_[i]));
        free_events_.clear();
        return;
      }
      // A plog record behind a launcher's prefix ("[rank0]: [ERROR] HCCL(...)").
      ctx_ = &ctx;
      Records(rest, offset + static_cast<uint64_t>(rest.data() >= line.data() && rest.data() < line.data() + line.size() ? rest.data() - line.data() : 0), -1);
      ctx_ = nullptr;
      return;
    }
    size_t start = FindRecordStart(line, 0);
    if (start != std::string_view::npos && start > 0) {
      // Who wrote a plog record that a launcher's prefix precedes.
      LineContext ctx;
      std::string_view rest = LineFormats::Get().StripPrefixes(line, &ctx);
      if (rest.data() == line.data() + start) {
        ctx_ = &ctx;
        Records(rest, offset + start, -1);
        ctx_ = nullptr;
        return;
      }
    }
    Records(line, offset, slot);
  }

  void Records(std::string_view line, uint64_t offset, int slot) {
    bool any = false;
    SplitRecords(
        line,
        [&](std::string_view rec) {
          any = true;
          RecordText(rec, offset + static_cast<uint64_t>(rec.data() - line.data()),
                     rec.data() == line.data() ? slot : -1);
        },
        [&](std::string_view prefix) {
          if (any) return;
          // Text before the first record (or a line with none): continuation, screen text,
          // Chinese prose, junk. Counted; control bytes mark it binary.
          if (Trim(prefix).empty()) return;
          ++out_->unparsed_lines;
          size_t n = std::min<size_t>(prefix.size(), 256);
          for (size_t i = 0; i < n; ++i) {
            unsigned char c = static_cast<unsigned char>(prefix[i]);
            if (c < 0x09 || (c > 0x0d && c < 0x20)) {
              ++out_->binary_lines;
              break;
            }
          }
        },
        slot >= 0);
  }

  // A line before this piece of the file (piece_context.h): for the free-text reader's state.
  void Prime(std::string_view line) {
    uint64_t offset = 1;  // not the file's first line
    std::string scratch;
    free_.Prime(AsShown(line, &offset, &scratch));  // as Line shows it (a redraw's text, ...)
  }

  // Puts each communicator's ring of recent ops in order (oldest first).
  void Finish() {
    if (!held_.empty()) ShowHeld();
    std::vector<Event> tail;
    free_.Finish(&tail);
    for (Event& e : tail) AddFreeEvent(std::move(e));
    if (gutter_.lines() >= 2) {
      // Line numbers: the first line of each run was read as a task label before the run showed.
      for (Event& e : out_->events)
        if (e.launcher_weak) e.launcher_rank = -1;
    }
    for (CommOps& c : out_->comms) {
      std::rotate(c.recent.begin(), c.recent.begin() + static_cast<std::ptrdiff_t>(c.ring_head),
                  c.recent.end());
      c.ring_head = 0;
    }
  }

 private:
  // The knowledge-base entries whose patterns occur in a record's content, as events.
  void KbPatterns(const Record& r, const Loc& loc, std::string_view text) {
    size_t before = free_events_.size();
    FreeTextReader::ReadRecordContent(r.content, loc, &free_events_);
    for (size_t i = before; i < free_events_.size(); ++i) {
      Event& k = free_events_[i];
      k.level = r.level;
      k.module = std::string(r.module);
      if (k.pid < 0) k.pid = r.pid;
      k.time = r.time;
      k.text = Printable(text, 1000);
      if (ctx_ != nullptr) FreeTextReader::ApplyContext(*ctx_, &k);
      if (out_->events.size() < kMaxEventsPerFile) out_->events.push_back(std::move(k));
      else ++out_->dropped_events;
    }
    free_events_.clear();
  }

  void RecordText(std::string_view text, uint64_t offset, int header_slot) {
    Record r;
    if (!rp_.Parse(text, &r, header_slot)) return;
    ++out_->records;
    Loc loc{file_, line_no_, offset};
    if (r.pid != last_pid_ || last_ps_ == nullptr) {
      last_ps_ = &out_->processes[r.pid];  // std::map: the pointer stays valid
      last_pid_ = r.pid;
    }
    ProcessSeen& ps = *last_ps_;
    ++ps.records;
    if (ps.pname.empty() && !r.pname.empty()) ps.pname = std::string(r.pname.substr(0, 64));
    if (r.time != kNoTime) {
      if (ps.first == kNoTime || r.time < ps.first) ps.first = r.time;
      if (r.time > ps.last) ps.last = r.time;
    }
    bool is_error = r.level == Level::kError || r.level == Level::kScreen;
    if (is_error) {
      ++ps.errors;
      if (ps.first_error == kNoTime || (r.time != kNoTime && r.time < ps.first_error)) {
        ps.first_error = r.time;
        ps.first_error_loc = loc;
        ps.first_error_text = Printable(text, 400);
      }
    }
    OpKey key;
    switch (ParseRecordContent(r, loc, &scratch_, &op_scratch_, &key)) {
      case Parsed::kNone:
        // EVENT records are progress notes except the device OS's fault events ("[TsdEVENT] Event
        // id=0x8c17a005."): only those are searched; a pattern scan of every EVENT record would
        // cost as much as reading them.
        // So are the device side's EVENT records (a negative pid), which are few: the port status
        // ("[EVENT] IMP(-2,IMP): ... rf_lf 1, pcs_err_cnt 5") names a faulty link.
        if (r.level == Level::kEvent &&
            (r.pid < 0 || r.content.find("Event id=0x") != std::string_view::npos))
          KbPatterns(r, loc, text);
        // HCCL's heartbeat traces its status changes at INFO ("[HCCL_TRACE]rank [..]: rank [..]
        // status[LOST] by rank [..]"): a cluster's root cause even when no ERROR line follows.
        if (r.level == Level::kInfo && r.content.find("[HCCL_TRACE]") != std::string_view::npos &&
            r.content.find("status[") != std::string_view::npos)
          KbPatterns(r, loc, text);
        return;
      case Parsed::kOp:
        AddOp(r, key);
        return;
      case Parsed::kEvent:
        break;
    }
    Event ev = std::move(scratch_);
    scratch_ = Event{};
    if (ctx_ != nullptr) FreeTextReader::ApplyContext(*ctx_, &ev);
    if ((ev.kind == EventKind::kScreenError || ev.kind == EventKind::kBufferOom) && ev.kb.empty()) {
      if (const kb::Entry* e = kb::Get().Find(ev.code)) ev.kb = e->id;
      ev.layout = "plog";
    }
    bool plain = ev.kind == EventKind::kError || ev.kind == EventKind::kRankInfo ||
                 ev.kind == EventKind::kWaitPeer || ev.kind == EventKind::kRootInfoFail ||
                 ev.kind == EventKind::kConnectedRanks;  // typed for the wait rules only
    if (plain && (r.level == Level::kError || r.level == Level::kWarning)) {
      // Knowledge-base patterns in an error record that no typed parser took.
      KbPatterns(r, loc, text);
    }
    if (ev.kind == EventKind::kError) {
      if (error_events_ >= kMaxErrorEventsPerFile) {
        ++out_->dropped_events;
        return;
      }
      ++error_events_;
    }
    if (out_->events.size() >= kMaxEventsPerFile) {
      ++out_->dropped_events;
      return;
    }
    ev.level = r.level;
    ev.module = std::string(r.module);
    ev.pid = r.pid;
    ev.time = r.time;
    ev.text = Printable(text, 1000);
    out_->events.push_back(std::move(ev));
  }

  // Appends op_scratch_ to its communicator. The hot path of a run log: the last communicator
  // and stream are remembered, and the ring of recent ops reuses its slots.
  void AddOp(const Record& r, const OpKey& key) {
    OpEntry& op = op_scratch_;
    bool by_ptr = key.group.empty();
    std::string_view name = by_ptr ? key.comm_ptr : key.group;
    if (last_comm_ == SIZE_MAX || r.pid != last_comm_pid_ || by_ptr != last_comm_by_ptr_ ||
        name != last_comm_name_) {
      std::string group = by_ptr ? "comm:" + std::string(key.comm_ptr) : std::string(key.group);
      auto mk = std::make_pair(r.pid, group);
      auto it = comm_index_.find(mk);
      if (it == comm_index_.end()) {
        it = comm_index_.emplace(mk, out_->comms.size()).first;
        CommOps c;
        c.group = group;
        c.comm_ptr = std::string(key.comm_ptr);
        c.pid = r.pid;
        c.recent.reserve(CommOps::kKeep);
        out_->comms.push_back(std::move(c));
      }
      last_comm_ = it->second;
      last_comm_pid_ = r.pid;
      last_comm_by_ptr_ = by_ptr;
      last_comm_name_.assign(name.data(), name.size());
      last_stream_ = nullptr;
    }
    CommOps& c = out_->comms[last_comm_];
    if (c.local_rank < 0) c.local_rank = op.local_rank;
    op.seq = c.total++;
    if (op.seq == 0) c.first = op;
    if (last_stream_ == nullptr || op.stream != last_stream_id_) {
      last_stream_ = &c.streams[op.stream];  // std::map: the pointer stays valid
      last_stream_id_ = op.stream;
    }
    StreamStat& st = *last_stream_;
    if (st.ops++ == 0) {
      st.first = op.time;
      st.first_loc = op.loc;
      st.first_op = op.op.view();
    }
    st.last = op.time;
    st.last_loc = op.loc;
    if (st.last_op != op.op.view()) st.last_op = op.op.view();
    if (!c.recent.empty()) {
      const OpEntry& prev = c.recent[(c.ring_head + c.recent.size() - 1) % c.recent.size()];
      if (prev.stream != op.stream) {
        ++c.stream_switches;
        Micros gap = op.time - prev.time;
        if (gap < 0) gap = -gap;
        if (c.min_switch_gap < 0 || gap < c.min_switch_gap) {
          c.min_switch_gap = gap;
          c.switch_loc_a = prev.loc;
          c.switch_loc_b = op.loc;
        }
      }
    }
    if (c.recent.size() < CommOps::kKeep) {
      c.recent.push_back(op);
    } else {
      c.recent[c.ring_head] = op;
      c.ring_head = (c.ring_head + 1) % CommOps::kKeep;
    }
    op = OpEntry{};  // trivially copyable now: a few stores
  }

  // An event read from a line that is not a plog record: counted for its process like a record.
  void AddFreeEvent(Event&& ev) {
    ++out_->records;
    ProcessSeen& ps = out_->processes[ev.pid];
    last_ps_ = nullptr;
    ++ps.records;
    if (ps.pname.empty() && !ev.launcher.empty()) ps.pname = ev.launcher.substr(0, 64);
    if (ev.time != kNoTime) {
      if (ps.first == kNoTime || ev.time < ps.first) ps.first = ev.time;
      if (ev.time > ps.last) ps.last = ev.time;
    }
    ++ps.errors;
    if (ps.first_error == kNoTime || (ev.time != kNoTime && ev.time < ps.first_error)) {
      ps.first_error = ev.time;
      ps.first_error_loc = ev.loc;
      ps.first_error_text = Printable(ev.text, 400);
    }
    if (out_->events.size() >= kMaxEventsPerFile) {
      ++out_->dropped_events;
      return;
    }
    out_->events.push_back(std::move(ev));
  }

  uint32_t file_;
  FileResult* out_;
  RecordParser rp_;
  FreeTextReader free_;
  std::vector<Event> free_events_;
  const LineContext* ctx_ = nullptr;  // the prefixes of the line being parsed, when it had some
  Event scratch_;
  OpEntry op_scratch_;
  int64_t last_pid_ = -1;
  ProcessSeen* last_ps_ = nullptr;
  uint64_t line_no_ = 0;
  std::string shown_;  // the line being parsed out of its wrappers, when it had some
  Gutter gutter_;
  std::string held_;  // a line a terminal may have wrapped, until the next one shows
  uint64_t held_offset_ = 0, held_line_ = 0;
  bool first_continues_ = false;  // the line before the piece may continue on its first
  std::string escaped_;        // a piece of an escaped multi-line message under its line's prefix
  size_t error_events_ = 0;
  std::map<std::pair<int64_t, std::string>, size_t> comm_index_;
  size_t last_comm_ = SIZE_MAX;
  int64_t last_comm_pid_ = -1;
  bool last_comm_by_ptr_ = false;
  std::string last_comm_name_;
  StreamStat* last_stream_ = nullptr;
  int32_t last_stream_id_ = -1;
};

// Feeds a byte stream to the parser line by line. `buf` is the worker's reusable buffer (kChunk
// bytes once used; an in-memory text shorter than that gets one byte more: the same lines).
// read_some returns the bytes read, 0 at the end, or -1 with errno set (EINTR retries).
// `start` is the stream's offset in its file (a line start). With a `stop_at`, the feed stops
// after the line that ends at or beyond it (the next line belongs to the next piece of the file).
// Returns the file offset where parsing stopped.
template <typename ReadFn>
uint64_t FeedStream(ReadFn&& read_some, FileParser* parser, FileResult* out, std::vector<char>* buf,
                    std::atomic<uint64_t>* progress, uint64_t start = 0,
                    uint64_t stop_at = UINT64_MAX) {
  if (buf->empty()) buf->resize(kChunk);
  size_t have = 0;
  uint64_t base = start;  // file offset of (*buf)[0]
  while (true) {
    ssize_t n = read_some(buf->data() + have, buf->size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (out->skip_reason.empty())
        out->skip_reason = std::string("read error: ") + std::strerror(errno);
      n = 0;  // parse what was read
    }
    if (progress != nullptr)
      progress->fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    out->bytes += static_cast<uint64_t>(n);
    have += static_cast<size_t>(n);
    bool eof = n == 0;
    const char* data = buf->data();
    size_t pos = 0;
    while (pos < have) {
      const void* nl = std::memchr(data + pos, '\n', have - pos);
      if (nl == nullptr) break;
      size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data);
      parser->Line(std::string_view(data + pos, end - pos), base + pos);
      pos = end + 1;
      if (base + pos >= stop_at) return base + pos;
    }
    if (eof) {
      if (pos < have) parser->Line(std::string_view(data + pos, have - pos), base + pos);
      return base + have;
    }
    if (pos == 0 && have == buf->size()) {
      // A line longer than the buffer (binary junk): cut it here.
      ++out->overlong_lines;
      parser->Line(std::string_view(data, have), base);
      pos = have;
    }
    std::memmove(buf->data(), data + pos, have - pos);
    base += pos;
    have -= pos;
  }
}

#if defined(VIGIL_HAVE_ZLIB)
// Reads a gzip file (all members; a plain file passes through) into the line splitter.
void FeedGzip(int fd, FileParser* parser, FileResult* out, std::vector<char>* buf,
              std::atomic<uint64_t>* progress) {
  int dup_fd = ::dup(fd);  // gzclose closes its descriptor; the caller closes fd
  gzFile gz = dup_fd < 0 ? nullptr : ::gzdopen(dup_fd, "rb");
  if (gz == nullptr) {
    if (dup_fd >= 0) ::close(dup_fd);
    out->skip_reason = "cannot open gzip stream";
    return;
  }
  ::gzbuffer(gz, 1u << 18);
  FeedStream(
      [&](char* p, size_t n) -> ssize_t {
        int got = ::gzread(gz, p, static_cast<unsigned>(std::min<size_t>(n, 1u << 30)));
        if (got < 0) {
          int err = 0;
          const char* msg = ::gzerror(gz, &err);
          out->skip_reason =
              std::string("gzip: ") + (msg != nullptr ? msg : "error") + " (read up to there)";
          errno = EIO;
          return -1;
        }
        if (got == 0) {
          // The end, or a truncated stream (zlib reports "unexpected end of file" only here).
          int err = Z_OK;
          const char* msg = ::gzerror(gz, &err);
          if (err != Z_OK && out->skip_reason.empty())
            out->skip_reason =
                std::string("gzip: ") + (msg != nullptr ? msg : "error") + " (read up to there)";
        }
        return got;
      },
      parser, out, buf, nullptr);
  // Progress counts file (compressed) bytes, like the total it is compared with.
  if (progress != nullptr) {
    struct stat st {};
    if (::fstat(fd, &st) == 0)
      progress->fetch_add(static_cast<uint64_t>(st.st_size), std::memory_order_relaxed);
  }
  ::gzclose(gz);
}

#endif

// A file read with nothing useful in it is named too.
void NoteIfEmpty(FileResult* out) {
  if (out->records == 0 && out->dumps.empty() && out->rank_table.empty() &&
      out->skip_reason.empty())
    out->skip_reason = out->binary_lines > 0 ? "no log records (binary data)" : "no log records";
}

void ParseFile(const InputFile& in, uint32_t index, FileResult* out, std::vector<char>* buf,
               std::atomic<uint64_t>* progress) {
  // O_NONBLOCK: a FIFO with no writer (or a file replaced by one since the walk) must not block
  // the open; reads block again once we know it is a regular file or a FIFO.
  int fd = in.path == "-" ? 0 : ::open(in.Opened().c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    out->skip_reason = std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  if (fd != 0) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
      out->skip_reason =
          S_ISDIR(st.st_mode) ? "is a folder now: not read" : "not a regular file: not read";
      ::close(fd);
      return;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  out->read = true;
  const bool gz = fd != 0 && IsGzip(in.path);
  if (std::string text; !gz && in.regular &&
                        (ReadUtf16Text(fd, in.size, &text) || ReadCrOnlyText(fd, in.size, &text))) {
    ::close(fd);
    *out = ParseText(text, index);
    out->bytes = in.size;
    if (progress != nullptr) progress->fetch_add(in.size, std::memory_order_relaxed);
    NoteIfEmpty(out);
    return;
  }
  const std::string plain = gz ? in.path.substr(0, in.path.size() - 3) : in.path;
  bool json = HasSuffix(plain, ".json");
  if (json && in.size <= kMaxJsonBytes) {
    std::string text;
    bool got_all = true;
    if (gz) {
#if defined(VIGIL_HAVE_ZLIB)
      got_all = GunzipAll(fd, kMaxJsonBytes, &text);
#endif
    } else {
      text = PreadAll(fd, in.size);
    }
    if (got_all && ParseJsonFile(text, index, &out->dumps, &out->rank_table)) {
      out->bytes = text.size();
      if (progress != nullptr) progress->fetch_add(in.size, std::memory_order_relaxed);
      ::close(fd);
      return;
    }
    // Not one of our JSON kinds: scan it as text (JSON-lines logs, captures).
  }
  FileParser parser(index, out);
  if (gz) {
#if defined(VIGIL_HAVE_ZLIB)
    FeedGzip(fd, &parser, out, buf, progress);
#endif
  } else {
    // read(2), not mmap: on this project's VMs touching mapped page-cache pages costs several
    // times the copy (2 GiB: 1.7 CPU-s mapped with MAP_POPULATE vs 0.6 CPU-s read into a buffer).
    if (fd != 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    FeedStream([fd](char* p, size_t n) { return ::read(fd, p, n); }, &parser, out, buf, progress);
  }
  parser.Finish();
  if (fd != 0) ::close(fd);
  NoteIfEmpty(out);
}

// One piece of a large plain file: the lines that start in [begin, end) (end = UINT64_MAX: to
// the end of the file, even if it grew). read_at(p, n, offset) is pread's contract.
template <typename ReadAtFn>
void ParseRange(ReadAtFn&& read_at, uint32_t index, uint64_t begin, uint64_t end, FileResult* out,
                std::vector<char>* buf, std::atomic<uint64_t>* progress) {
  out->read = true;
  // The first line start at or after begin: just past the first '\n' at or after begin - 1.
  uint64_t start = begin;
  if (begin > 0) {
    if (buf->empty()) buf->resize(kChunk);
    start = UINT64_MAX;  // none in this piece
    uint64_t at = begin - 1;
    while (at < end) {
      ssize_t n = read_at(buf->data(), buf->size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      const void* nl = std::memchr(buf->data(), '\n', static_cast<size_t>(n));
      if (nl != nullptr) {
        start = at + static_cast<uint64_t>(static_cast<const char*>(nl) - buf->data()) + 1;
        break;
      }
      at += static_cast<uint64_t>(n);
    }
  }
  if (start >= end) return;
  FileParser parser(index, out);
  if (start > 0) parser.StartPiece(LineNextTo(read_at, start, /*before=*/true, kMaxWrapLine));
  if (start > 0) {
    std::string before;
    for (std::string_view line : FreeLinesBefore(read_at, start, FreeTextReader::kContextLines,
                                                 kMaxContextBytes, &before))
      parser.Prime(line);
  }
  uint64_t pos = start;
  uint64_t stop = FeedStream(
      [&](char* p, size_t n) -> ssize_t {
        ssize_t got = read_at(p, n, pos);
        if (got > 0) pos += static_cast<uint64_t>(got);
        return got;
      },
      &parser, out, buf, progress, start, end);
  if (parser.Holding()) parser.EndPiece(LineNextTo(read_at, stop, /*before=*/false, kMaxWrapLine));
  parser.Finish();
  out->bytes = stop - start;  // what this piece owns, not what it read past its end
}

void ParsePiece(const InputFile& in, uint32_t index, uint64_t begin, uint64_t end, FileResult* out,
                std::vector<char>* buf, std::atomic<uint64_t>* progress) {
  int fd = ::open(in.Opened().c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    out->skip_reason = std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  ParseRange(
      [fd](char* p, size_t n, uint64_t off) { return ::pread(fd, p, n, static_cast<off_t>(off)); },
      index, begin, end, out, buf, progress);
  ::close(fd);
}

}  // namespace

namespace detail {

bool IsPlainText(const std::string& path) {
  return !IsGzip(path) && !HasSuffix(path, ".json");
}

void ReadWholeFile(const InputFile& in, uint32_t index, FileResult* out, std::vector<char>* buf,
                   std::atomic<uint64_t>* progress) {
  ParseFile(in, index, out, buf, progress);
}

void ReadFilePiece(const InputFile& in, uint32_t index, uint64_t begin, uint64_t end,
                   FileResult* out, std::vector<char>* buf, std::atomic<uint64_t>* progress) {
  ParsePiece(in, index, begin, end, out, buf, progress);
}

void NoteEmpty(FileResult* out) {
  NoteIfEmpty(out);
}

}  // namespace detail

bool GzipSupported() {
#if defined(VIGIL_HAVE_ZLIB)
  return true;
#else
  return false;
#endif
}

FileResult ParseText(std::string_view text, uint32_t file_index) {
  std::string lf;
  text = WithLfEnds(text, &lf);
  FileResult out;
  out.read = true;
  FileParser parser(file_index, &out);
  std::vector<char> buf(std::min(kChunk, text.size() + 1));
  size_t pos = 0;
  FeedStream(
      [&](char* p, size_t n) -> ssize_t {
        size_t k = std::min(n, text.size() - pos);
        std::memcpy(p, text.data() + pos, k);
        pos += k;
        return static_cast<ssize_t>(k);
      },
      &parser, &out, &buf, nullptr);
  parser.Finish();
  return out;
}

FileResult ParseTextInPieces(std::string_view text, uint32_t file_index, size_t pieces) {
  std::string lf;
  text = WithLfEnds(text, &lf);
  pieces = std::max<size_t>(1, pieces);
  std::vector<FileResult> parts(pieces);
  std::vector<char> buf(std::min(kChunk, text.size() + 1));
  auto read_at = [&](char* p, size_t n, uint64_t off) -> ssize_t {
    if (off >= text.size()) return 0;
    size_t k = std::min<size_t>(n, text.size() - off);
    std::memcpy(p, text.data() + off, k);
    return static_cast<ssize_t>(k);
  };
  for (size_t k = 0; k < pieces; ++k) {
    uint64_t begin = text.size() * k / pieces, end = text.size() * (k + 1) / pieces;
    ParseRange(read_at, file_index, begin, k + 1 == pieces ? UINT64_MAX : end, &parts[k], &buf,
               nullptr);
  }
  return MergeParts(std::move(parts));
}

}  // namespace vigil::diagnose
