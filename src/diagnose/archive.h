// Archives among `vigil diagnose`'s inputs: a job's logs as users attach them (logs.zip,
// plog.tar.gz, a single rank0.log.xz).
//
// An archive's log members (walker.h's LooksLikeLog, and archives inside it) are extracted with
// libarchive into a private folder and walked like a folder; the files are shown under the
// archive's name ("/data/logs.zip/run/plog/plog-1_x.log"), so the report points inside the
// archive, and opened at their extracted copy (InputFile::open_path). Other members are counted,
// not written. Members that could escape the folder (absolute paths, "..", links, devices) and
// encrypted ones are named with the reason; a damaged archive is read up to the damage and named.
// Extraction stops (and says so) at half the free space of the temporary folder's file system.
//
// The private folders live in $TMPDIR (else /tmp) as vigil-diagnose-<pid>-XXXXXX and are removed
// when the ArchiveSpace goes; folders of processes that no longer run (a killed diagnose) are
// removed when the next one is made.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace vigil::diagnose {

struct ScanResult;

// Whether vigil reads archives (built with libarchive).
bool ArchivesSupported();

// Whether a file's name says it is an archive or a single compressed file that libarchive
// reads: .zip .7z .rar .tar and tar with a compression (.tar.gz .tgz .tar.xz .txz .tar.bz2
// .tbz2 .tar.zst), and .xz .bz2 .zst .lz4 alone. A single .gz is not: the scanner reads it.
bool IsArchiveName(const std::string& name);

class ArchiveSpace {
 public:
  ArchiveSpace() = default;
  ~ArchiveSpace();
  ArchiveSpace(const ArchiveSpace&) = delete;
  ArchiveSpace& operator=(const ArchiveSpace&) = delete;

  // Extracts the log members of `path` into a new folder and returns it; "" with `*why` set
  // when nothing could be extracted (no temporary folder, not an archive). Members that are not
  // extracted are named in res->skipped (under "<path>/<member>") or counted in
  // res->ignored_files; a damaged archive is named in res->skipped with what was read.
  std::string Extract(const std::string& path, ScanResult* res, std::string* why);

  // The private folder, "" until the first extraction.
  const std::string& root() const { return root_; }

 private:
  bool MakeRoot(std::string* why);

  std::string root_;
  int folders_ = 0;
  uint64_t written_ = 0;  // bytes extracted, against the limit
  uint64_t limit_ = 0;
};

}  // namespace vigil::diagnose
