// An input file whole, as text, where it cannot be read as a stream of lines: a small gzip file
// (flight-recorder dumps compressed beside the plogs), a log saved as UTF-16 (Windows Notepad's
// "Unicode", PowerShell's `>`), recognised by its byte-order mark or by every other byte being
// zero in ASCII text, and read as UTF-8; a file whose lines end in carriage returns alone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vigil::diagnose {

// Whether a file starting with `head` (its first bytes) is UTF-16; *big_endian says which order.
bool IsUtf16(std::string_view head, bool* big_endian);

// The UTF-8 text of UTF-16 `bytes` (a byte-order mark is dropped; unpaired surrogates and a
// trailing odd byte become U+FFFD).
std::string Utf16ToUtf8(std::string_view bytes, bool big_endian);

// Up to `size` bytes of the file at `fd` from its start (pread: the file offset is not moved);
// fewer when it is shorter or a read fails.
std::string PreadAll(int fd, uint64_t size);

// A UTF-16 file of at most 1 GiB at `fd` (read with pread; `size` bytes), as UTF-8 in *utf8.
// False, reading only its first bytes, when it is not UTF-16 or is larger.
bool ReadUtf16Text(int fd, uint64_t size, std::string* utf8);

// Whether text starting with `head` ends its lines with carriage returns alone (an old Mac's, or
// a copy through a tool that made them so): no '\n' in it and at least two '\r'.
bool IsCrOnly(std::string_view head);

// A file of at most 1 GiB whose lines end in '\r' alone, as text with '\n' ends (the same
// bytes otherwise, so offsets stay). False, reading only its first bytes, when it is not one.
bool ReadCrOnlyText(int fd, uint64_t size, std::string* text);

// `text`, or its copy in *buf with '\n' for every '\r' when its lines end in '\r' alone.
std::string_view WithLfEnds(std::string_view text, std::string* buf);

#if defined(VIGIL_HAVE_ZLIB)
// The whole decompressed content of the gzip file at `fd` (not closed), up to `limit` bytes.
bool GunzipAll(int fd, uint64_t limit, std::string* text);
#endif

}  // namespace vigil::diagnose
