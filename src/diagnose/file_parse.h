// What the scan of many files (scan.cc) needs of the reading of one (scanner.cc): a whole file,
// a piece of a large one, and the note on a file nothing was read from.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "diagnose/scanner.h"

namespace vigil::diagnose::detail {

// Neither compressed nor JSON: a file that can be read in pieces.
bool IsPlainText(const std::string& path);
void ReadWholeFile(const InputFile& in, uint32_t index, FileResult* out, std::vector<char>* buf,
                   std::atomic<uint64_t>* progress);
void ReadFilePiece(const InputFile& in, uint32_t index, uint64_t begin, uint64_t end,
                   FileResult* out, std::vector<char>* buf, std::atomic<uint64_t>* progress);
void NoteEmpty(FileResult* out);

}  // namespace vigil::diagnose::detail
