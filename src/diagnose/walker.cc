#include "diagnose/walker.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "diagnose/archive.h"

namespace vigil::diagnose {
namespace fs = std::filesystem;

namespace {

bool HasSuffix(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// A single .gz, read by the scanner when built with zlib (archives are IsArchiveName's).
bool IsUnreadGzip(const std::string& name) {
  return HasSuffix(name, ".gz") && !GzipSupported();
}

// Archives in walked folders are read up to this size (a checkpoint tarball is not logs);
// named ones whatever their size.
constexpr uint64_t kMaxWalkedArchive = 2ull << 30;
// An archive inside an archive inside an archive is read; one level deeper is named.
constexpr int kMaxArchiveDepth = 3;

// A file without an extension in a walked folder (split's part-000, a saved capture) is read when
// its start is text with the words of a log in it.
bool ReadsLikeLog(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (name.find('.') != std::string::npos) return false;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char buf[16384];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return false;
  const std::string_view s(buf, static_cast<size_t>(n));
  if (s.find('\0') != std::string_view::npos || s.find('\n') == std::string_view::npos)
    return false;
  for (std::string_view word : {"ERROR", "WARN", "INFO", "Error", "Traceback", "error"})
    if (s.find(word) != std::string_view::npos) return true;
  return false;
}

// The CANN log root above run/|debug/|security/, else the file's folder.
std::string NodeOf(const fs::path& p) {
  fs::path dir = p.parent_path();
  fs::path cur = dir;
  for (int up = 0; up < 4 && !cur.empty() && cur.has_filename(); ++up) {
    std::string n = cur.filename().string();
    if (n == "run" || n == "debug" || n == "security") return cur.parent_path().string();
    cur = cur.parent_path();
  }
  return dir.string();
}

const char* KindOf(mode_t m) {
  if (S_ISFIFO(m)) return "FIFO";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  return "special file";
}

// Why stat() failed on a path that lstat() may still see (a symlink whose target is missing or
// loops).
std::string StatFailure(const std::string& path, int err) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (err == ENOENT) return "dangling symlink (target missing)";
    if (err == ELOOP) return "symlink loop";
    return std::string("symlink target cannot be read: ") + std::strerror(err);
  }
  if (err == ENOENT) return "no such file or folder";
  return std::string("cannot stat: ") + std::strerror(err);
}

// A symlinked folder that leads to the root or into /proc, /sys and the like: walking it would
// read the whole machine (and kernel files that never end), not logs.
bool IsSystemFolder(const std::string& path, const struct stat& st) {
  struct stat root {};
  if (::stat("/", &root) == 0 && root.st_dev == st.st_dev && root.st_ino == st.st_ino) return true;
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEVPTS_SUPER_MAGIC:
    case BPF_FS_MAGIC:
      return true;
    default:
      return false;
  }
}

class Walker {
 public:
  explicit Walker(ScanResult* res) : res_(res) {}

  void Input(const std::string& arg) {
    seen_.clear();  // per input: overlapping inputs are de-duplicated by the scanner
    if (arg == "-") {
      res_->files.push_back({"-", "stdin", 0});
      return;
    }
    struct stat st {};
    if (::stat(arg.c_str(), &st) != 0) {
      Skip(arg, StatFailure(arg, errno));
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      Folder(arg, st);
      return;
    }
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
      Skip(arg, std::string("not a regular file (") + KindOf(st.st_mode) + ")");
      return;
    }
    Add(arg, st, true);
  }

 private:
  void Skip(const std::string& path, std::string reason) {
    res_->skipped.push_back({path, std::move(reason)});
  }

  void Add(const std::string& path, const struct stat& st, bool explicit_file) {
    if (IsArchiveName(path) && S_ISREG(st.st_mode)) {
      Archive(path, st, explicit_file);
      return;
    }
    if (IsUnreadGzip(path)) {
      Skip(path, "compressed (vigil was built without zlib: gunzip it first)");
      return;
    }
    if (!explicit_file && !LooksLikeLog(path) && !(S_ISREG(st.st_mode) && ReadsLikeLog(path))) {
      ++res_->ignored_files;
      return;
    }
    InputFile f;
    f.path = path;
    f.node = NodeOf(fs::path(path));
    f.size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
    f.regular = S_ISREG(st.st_mode);
    f.dev = static_cast<uint64_t>(st.st_dev);
    f.ino = static_cast<uint64_t>(st.st_ino);
    res_->files.push_back(std::move(f));
  }

  // An archive's log members, extracted and walked as a folder; they are shown under the
  // archive's path and opened at their copy.
  void Archive(const std::string& path, const struct stat& st, bool explicit_file) {
    if (!explicit_file && static_cast<uint64_t>(st.st_size) > kMaxWalkedArchive) {
      Skip(path, "an archive of more than 2 GiB in a folder: not read (name it to read it)");
      return;
    }
    if (depth_ >= kMaxArchiveDepth) {
      Skip(path, "an archive nested " + std::to_string(depth_) + " deep: not read");
      return;
    }
    if (res_->unpacked == nullptr) res_->unpacked = std::make_shared<ArchiveSpace>();
    std::string why;
    const std::string folder = res_->unpacked->Extract(path, res_, &why);
    struct stat fst {};
    if (folder.empty() || ::stat(folder.c_str(), &fst) != 0) {
      Skip(path, folder.empty() ? why : "extracted folder vanished");
      return;
    }
    const size_t first_file = res_->files.size(), first_skip = res_->skipped.size();
    auto seen = std::move(seen_);
    ++depth_;
    Folder(folder, fst);
    --depth_;
    seen_ = std::move(seen);
    auto shown = [&](const std::string& p) {
      return p.starts_with(folder) ? path + p.substr(folder.size()) : p;
    };
    for (size_t i = first_file; i < res_->files.size(); ++i) {
      InputFile& f = res_->files[i];
      if (f.open_path.empty()) f.open_path = f.path;
      f.path = shown(f.path);
      f.node = NodeOf(fs::path(f.path));
    }
    for (size_t i = first_skip; i < res_->skipped.size(); ++i)
      res_->skipped[i].path = shown(res_->skipped[i].path);
  }

  // An entry of a walked folder that is not usable: named when it looks like a log, else counted.
  void Unusable(const std::string& path, std::string reason) {
    if (LooksLikeLog(path)) {
      Skip(path, std::move(reason));
    } else {
      ++res_->ignored_files;
    }
  }

  // Depth-first with an explicit stack: log trees can be deep, and one bad folder must not end
  // the walk (std::filesystem::recursive_directory_iterator stops at the first folder it cannot
  // open).
  void Folder(const std::string& root, const struct stat& root_st) {
    seen_.insert({root_st.st_dev, root_st.st_ino});
    std::vector<std::string> stack{root};
    while (!stack.empty()) {
      std::string dir = std::move(stack.back());
      stack.pop_back();
      DIR* d = ::opendir(dir.c_str());
      if (d == nullptr) {
        Skip(dir, std::string("cannot read folder: ") + std::strerror(errno));
        continue;
      }
      const std::string prefix = dir.ends_with('/') ? dir : dir + "/";
      while (true) {
        errno = 0;
        struct dirent* e = ::readdir(d);
        if (e == nullptr) {
          if (errno != 0) Skip(dir, std::string("folder read stopped: ") + std::strerror(errno));
          break;
        }
        std::string_view name(e->d_name);
        if (name == "." || name == "..") continue;
        std::string path = prefix + e->d_name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) {
          // Removed since readdir, or a path longer than PATH_MAX: named whatever it is.
          Skip(path, std::string("cannot stat: ") + std::strerror(errno));
          continue;
        }
        bool link = S_ISLNK(st.st_mode);
        if (link && ::stat(path.c_str(), &st) != 0) {
          Unusable(path, StatFailure(path, errno));
          continue;
        }
        if (S_ISDIR(st.st_mode)) {
          if (link && IsSystemFolder(path, st)) {
            Skip(path, "symlink to / or a kernel pseudo filesystem (/proc, /sys, ...): not walked");
            continue;
          }
          if (!seen_.insert({st.st_dev, st.st_ino}).second) {
            Skip(path, link ? "symlink to a folder already walked (loop): not walked again"
                            : "folder already walked: not walked again");
            continue;
          }
          stack.push_back(std::move(path));
        } else if (S_ISREG(st.st_mode)) {
          Add(path, st, false);
        } else {
          Unusable(path, std::string("not a regular file (") + KindOf(st.st_mode) + "): not read");
        }
      }
      ::closedir(d);
    }
  }

  ScanResult* res_;
  std::set<std::pair<dev_t, ino_t>> seen_;  // folders walked for the current input
  int depth_ = 0;                           // archives being walked, one inside the other
};

}  // namespace

bool LooksLikeLog(const std::string& path) {
  fs::path p(path);
  std::string name = p.filename().string();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // A compressed log is its uncompressed name's ("npu_log.txt.gz"), a backup copy its original's.
  for (std::string_view suf : {".gz", ".bak", ".old", ".orig"})
    if (HasSuffix(name, suf) && name.size() > suf.size()) name.resize(name.size() - suf.size());
  for (std::string_view suf : {".log", ".txt", ".json", ".out", ".err", ".stdout", ".stderr"})
    if (HasSuffix(name, suf)) return true;
  // Rotated: "x.log.1", "x.log.2025-01-02", "x.log-20250102".
  if (name.find(".log.") != std::string::npos || name.find(".log-") != std::string::npos)
    return true;
  // Host system logs without an extension: messages, syslog, kern.log's siblings, dmesg and
  // their rotated or renamed copies (messages-20250101, messages.1, messages_case).
  for (std::string_view base : {"messages", "syslog", "dmesg", "kern"}) {
    if (name.starts_with(base) &&
        (name.size() == base.size() || std::string_view("-._").find(name[base.size()]) != std::string_view::npos))
      return true;
  }
  for (const auto& part : p.parent_path()) {
    std::string s = part.string();
    if (s == "plog" || s.starts_with("device-")) return true;
  }
  return false;
}

void WalkInputs(const std::vector<std::string>& inputs, ScanResult* res) {
  Walker w(res);
  for (const auto& in : inputs) w.Input(in);
}

}  // namespace vigil::diagnose
