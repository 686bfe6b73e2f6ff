// What a piece of a large file, read in parallel (scanner.h), must know of the lines before its
// first: the free-text reader's traceback state reaches back a bounded number of lines that are
// not plog records (FreeTextReader::Prime). Those lines are read again here, backwards from the
// piece's start in growing windows, so a traceback cut by the start keeps its context.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::diagnose {

// pread's contract: up to n bytes at offset into p; 0 at the end; -1 with errno on error.
using ReadAtFn = std::function<ssize_t(char* p, size_t n, uint64_t offset)>;

// How far back a piece looks for them: beyond it (a traceback followed by more than this many
// bytes of plog records before the cut) the piece starts without that context.
inline constexpr uint64_t kMaxContextBytes = 1u << 20;

// The last `count` lines before file offset `start` (a line start) that the parser does not take
// as plog records, oldest first, each without its '\r' (as FileParser::Line passes them), as
// views into *buf. Reads at most max_bytes back; a line cut by that limit is left out.
std::vector<std::string_view> FreeLinesBefore(const ReadAtFn& read_at, uint64_t start, size_t count,
                                              uint64_t max_bytes, std::string* buf);

// The line that ends just before `at` (a line start), or the one that starts there (without
// its '\n'); empty when longer than `max_len` or at the file's edge.
std::string LineNextTo(const ReadAtFn& read_at, uint64_t at, bool before, size_t max_len);

}  // namespace vigil::diagnose
