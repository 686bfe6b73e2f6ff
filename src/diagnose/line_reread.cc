// Reads one line of an input file again at a byte offset the scan recorded: the evidence lines
// of a report, read back only for the few findings printed (the scan keeps offsets, not text).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <string_view>

#include "diagnose/file_text.h"
#include "diagnose/record.h"
#include "diagnose/scanner.h"
#include "diagnose/text_util.h"

#if defined(VIGIL_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace vigil::diagnose {

std::string ReadLineAt(const std::string& path, uint64_t offset, size_t max_len) {
  if (path == "-") return {};
  // Non-blocking and regular files only: a FIFO input cannot be read twice (and would block).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return {};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return {};
  }
  std::string buf(max_len, '\0');
  ssize_t n = -1;
  std::string text;
  if (!path.ends_with(".gz") && (ReadUtf16Text(fd, static_cast<uint64_t>(st.st_size), &text) ||
                                  ReadCrOnlyText(fd, static_cast<uint64_t>(st.st_size), &text))) {
    // The offset is in the text converted (to UTF-8, to '\n' ends), as the scan read it.
    ::close(fd);
    if (offset >= text.size()) return {};
    buf = text.substr(offset, max_len);
    n = static_cast<ssize_t>(buf.size());
  } else if (path.ends_with(".gz")) {
#if defined(VIGIL_HAVE_ZLIB)
    // The offset is in the decompressed text: gzseek decompresses up to it (a few evidence lines).
    gzFile gz = ::gzdopen(fd, "rb");
    if (gz == nullptr) {
      ::close(fd);
      return {};
    }
    if (::gzseek(gz, static_cast<z_off_t>(offset), SEEK_SET) >= 0)
      n = ::gzread(gz, buf.data(), static_cast<unsigned>(buf.size()));
    ::gzclose(gz);  // closes fd
#else
    ::close(fd);
#endif
  } else {
    n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset));
    ::close(fd);
  }
  if (n <= 0) return {};
  buf.resize(static_cast<size_t>(n));
  std::string_view v(buf);
  size_t nl = v.find('\n');
  if (nl != std::string_view::npos) v = v.substr(0, nl);
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  // Stop at the next glued record.
  for (size_t p = 1; p < v.size(); ++p) {
    if (v[p] == '[' && IsRecordStart(v.substr(p))) {
      v = v.substr(0, p);
      break;
    }
  }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return Printable(v, max_len);
}

}  // namespace vigil::diagnose
