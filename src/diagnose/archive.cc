#include "diagnose/archive.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <vector>

#include "diagnose/scanner.h"
#include "diagnose/walker.h"

#if defined(VIGIL_HAVE_LIBARCHIVE)
#include <archive.h>
#include <archive_entry.h>
#endif

namespace vigil::diagnose {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFolderPrefix = "vigil-diagnose-";

bool EndsWith(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

// The name of a single compressed file once decompressed: "rank0.log.xz" -> "rank0.log".
std::string Decompressed(std::string name) {
  for (std::string_view suf : {".xz", ".bz2", ".zst", ".lz4", ".gz"}) {
    if (EndsWith(name, suf) && name.size() > suf.size())
      return name.substr(0, name.size() - suf.size());
  }
  return name;
}

// A member's path made relative and safe: "" when it is absolute or climbs out ("..").
std::string SafeMemberPath(std::string_view name) {
  if (name.empty() || name.front() == '/') return {};
  std::string out;
  size_t at = 0;
  while (at <= name.size()) {
    size_t slash = name.find('/', at);
    if (slash == std::string_view::npos) slash = name.size();
    std::string_view part = name.substr(at, slash - at);
    at = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return {};
    if (!out.empty()) out += '/';
    out += part;
  }
  return out;
}

std::string TempParent() {
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? std::string(t) : std::string("/tmp");
}

// Private folders of diagnose processes that no longer run (killed before they could clean up).
void RemoveOrphans(const std::string& parent) {
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kFolderPrefix)) continue;
    const char* digits = name.c_str() + kFolderPrefix.size();
    char* stop = nullptr;
    const long pid = std::strtol(digits, &stop, 10);
    if (stop == digits || *stop != '-' || pid <= 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(it->path(), ignored);
    }
  }
}

}  // namespace

bool IsArchiveName(const std::string& name) {
  for (std::string_view suf :
       {".zip", ".7z", ".rar", ".tar", ".tgz", ".txz", ".tbz2", ".tbz", ".tar.gz", ".tar.xz",
        ".tar.bz2", ".tar.zst", ".xz", ".bz2", ".zst", ".lz4"}) {
    if (EndsWith(name, suf)) return true;
  }
  return false;
}

ArchiveSpace::~ArchiveSpace() {
  if (root_.empty()) return;
  std::error_code ec;
  fs::remove_all(root_, ec);
}

bool ArchiveSpace::MakeRoot(std::string* why) {
  if (!root_.empty()) return true;
  const std::string parent = TempParent();
  RemoveOrphans(parent);
  std::string tmpl =
      parent + "/" + std::string(kFolderPrefix) + std::to_string(::getpid()) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    *why = "cannot make a temporary folder in " + parent + ": " + std::strerror(errno);
    return false;
  }
  root_ = tmpl;
  struct statvfs vfs {};
  limit_ = ::statvfs(root_.c_str(), &vfs) == 0
               ? static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize / 2
               : (4ull << 30);
  return true;
}

#if defined(VIGIL_HAVE_LIBARCHIVE)

bool ArchivesSupported() {
  return true;
}

std::string ArchiveSpace::Extract(const std::string& path, ScanResult* res, std::string* why) {
  if (!MakeRoot(why)) return {};
  struct archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_all(a);
  archive_read_support_format_raw(a);  // a single compressed file
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    *why = std::string("not an archive libarchive reads: ") + archive_error_string(a);
    archive_read_free(a);
    return {};
  }
  const std::string folder = root_ + "/a" + std::to_string(folders_++);
  std::error_code ec;
  fs::create_directories(folder, ec);
  auto name_skip = [&](const std::string& member, std::string reason) {
    res->skipped.push_back({path + "/" + member, std::move(reason)});
  };
  std::vector<char> buf(1 << 20);
  uint64_t members = 0;
  std::string damage;
  for (;;) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r == ARCHIVE_RETRY) continue;
    if (r < ARCHIVE_WARN) {  // ARCHIVE_FAILED, ARCHIVE_FATAL: the rest cannot be read
      damage = archive_error_string(a) != nullptr ? archive_error_string(a) : "read error";
      break;
    }
    ++members;
    const bool raw = archive_format(a) == ARCHIVE_FORMAT_RAW;
    if (raw && archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE) {
      // The raw reader takes any bytes: without a compression it is not an archive at all.
      *why = "not an archive libarchive reads (no archive format or compression found)";
      archive_read_free(a);
      fs::remove_all(folder, ec);
      return {};
    }
    const char* p = archive_entry_pathname(e);
    std::string member =
        raw ? Decompressed(fs::path(path).filename().string())
            : (p != nullptr ? std::string(p) : "member " + std::to_string(members));
    if (archive_entry_filetype(e) == AE_IFDIR) continue;
    const bool wanted = raw || LooksLikeLog(member) || IsArchiveName(member);
    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) != nullptr) {
      if (wanted)
        name_skip(member, "a link or special member of the archive: not extracted");
      else
        ++res->ignored_files;
      continue;
    }
    if (!wanted) {
      ++res->ignored_files;
      continue;
    }
    const std::string rel = SafeMemberPath(member);
    if (rel.empty()) {
      name_skip(member, "member path is absolute or leaves the archive (..): not extracted");
      continue;
    }
    if (archive_entry_is_encrypted(e)) {
      name_skip(member, "encrypted member: not read");
      continue;
    }
    const fs::path out = fs::path(folder) / rel;
    fs::create_directories(out.parent_path(), ec);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      name_skip(member, std::string("cannot extract: ") + std::strerror(errno));
      continue;
    }
    std::string failed;
    for (;;) {
      la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) {
        failed = archive_error_string(a) != nullptr ? archive_error_string(a) : "read error";
        break;
      }
      if (written_ + static_cast<uint64_t>(n) > limit_) {
        failed = "extraction stopped at half the free space of " + TempParent();
        break;
      }
      for (la_ssize_t off = 0; off < n;) {
        ssize_t w = ::write(fd, buf.data() + off, static_cast<size_t>(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          failed = std::string("cannot extract: ") + std::strerror(errno);
          break;
        }
        off += w;
        written_ += static_cast<uint64_t>(w);
      }
      if (!failed.empty()) break;
    }
    ::close(fd);
    if (!failed.empty()) {  // the member is read up to there; the archive's rest is not
      name_skip(member, failed + " (read up to there)");
      damage = failed;
      break;
    }
  }
  archive_read_free(a);
  if (!damage.empty()) {
    res->skipped.push_back({path, "archive read up to here: " + damage});
  }
  return folder;
}

#else

bool ArchivesSupported() {
  return false;
}

std::string ArchiveSpace::Extract(const std::string&, ScanResult*, std::string* why) {
  *why = "an archive (vigil was built without libarchive: extract it first)";
  return {};
}

#endif

}  // namespace vigil::diagnose
