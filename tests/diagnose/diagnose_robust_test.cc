// `vigil diagnose` on a hostile log tree, through the command line: dangling and looping symlinks,
// a FIFO with no writer (in a folder and named explicitly), a socket, a device, binary junk, a
// file whose read fails, a path longer than PATH_MAX, gzip rotated plogs (one truncated), and the
// seed's LOST example rewritten with CRLF, glued records, junk lines and a truncated last line.
// The command must exit 0 with the clean fixture's verdict, and its text and JSON outputs must
// count and name every input it could not read, with the reason.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "diagnose/walker.h"

#if defined(VIGIL_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace {
namespace fs = std::filesystem;

struct CmdResult {
  int rc = -1;
  std::string out;
};

// Runs the diagnose command with a bound on its time (timeout(1) exits 124 if it hangs).
CmdResult Diagnose(const std::string& args) {
  std::string cmd =
      std::string("timeout 120 ") + VIGIL_DIAG_TOOL + " --no-progress " + args + " 2>/dev/null";
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
}

// The seed fixture's lines, made messy the way real files are: CRLF, two records glued on one
// line, a Chinese prose line, a binary line, and a record cut short at the end without a newline.
std::string Messy(const std::string& clean) {
  std::vector<std::string> ls = Lines(clean);
  std::string out = "训练任务日志 (continued from the previous file)\r\n";
  for (size_t i = 0; i < ls.size(); ++i) {
    out += ls[i];
    if (i + 1 < ls.size() && i % 2 == 0) {
      out += ls[++i];  // glued: the next record follows on the same physical line
    }
    out += "\r\n";
    static const char kJunk[] = "\x01\x02\xff\xfe binary\0junk";  // with an inner NUL
    if (i == 0) out += std::string(kJunk, sizeof(kJunk) - 1) + "\r\n";
  }
  out += "[ERROR] HCCL(835695,all_re";  // truncated last line, no newline
  return out;
}

#if defined(VIGIL_HAVE_ZLIB)
void WriteGz(const fs::path& p, const std::string& text, size_t cut) {
  fs::create_directories(p.parent_path());
  gzFile gz = gzopen(p.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(gz);
  if (cut > 0) fs::resize_file(p, fs::file_size(p) - cut);
}
#endif

// A file under folders nested so deep that its path is longer than PATH_MAX (the folder's own
// path stays shorter, so the walker lists it and then cannot stat it). Built with *at() calls:
// the path cannot be used whole. Returns the file's path.
std::string DeepFile(const fs::path& base) {
  fs::create_directories(base);
  int fd = open(base.c_str(), O_RDONLY | O_DIRECTORY);
  std::string path = base.string();
  auto descend = [&](const std::string& level) {
    mkdirat(fd, level.c_str(), 0755);
    int next = openat(fd, level.c_str(), O_RDONLY | O_DIRECTORY);
    close(fd);
    fd = next;
    path += "/" + level;
  };
  // Folders up to PATH_MAX - 100 bytes, then a 250-byte name.
  while (path.size() + 201 < PATH_MAX - 100) descend(std::string(200, 'd'));
  descend(std::string(PATH_MAX - 100 - path.size() - 1, 'e'));
  std::string name = std::string(246, 'f') + ".log";
  int f = openat(fd, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const char line[] = "[INFO] HCCL(1,x):2025-10-23-17:20:00.000.000 [a.cc:1] [1]deep\n";
  EXPECT_EQ(write(f, line, sizeof(line) - 1), static_cast<ssize_t>(sizeof(line) - 1));
  close(f);
  close(fd);
  return path + "/" + name;
}

// Removes the tree even when an assertion returns early (rm copes with the over-long path).
struct RemoveTree {
  std::string path;
  ~RemoveTree() {
    int rc = system(("rm -rf '" + path + "'").c_str());
    (void)rc;
  }
};

std::string VerdictKey(const nlohmann::json& j) {
  const nlohmann::json& v = j["verdict"];
  if (v.is_null()) return "none";
  std::string k = v["fault"].get<std::string>() + " " + v["code"].get<std::string>();
  for (const auto& r : v["ranks"])
    k += " | " + r["role"].get<std::string>() + " rank " + r["rank"].dump() + " pid " +
         r["pid"].dump() + " host " + r["host"].get<std::string>();
  return k;
}

TEST(DiagnoseRobust, HostileTreeIsAnalysedAndUnreadableInputsAreNamed) {
  char tmpl[] = "/tmp/vigil_robust_XXXXXX";  // short: a socket path must fit in sun_path
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path d(tmpl);
  RemoveTree cleanup{d.string()};
  const fs::path m = d / "m";
  const fs::path clean = fs::path(VIGIL_DIAG_FIXTURES) / "lost";

  // The seed's LOST example, messy.
  for (const auto& e : fs::recursive_directory_iterator(clean))
    if (e.is_regular_file()) WriteFile(m / fs::relative(e.path(), clean), Messy(ReadAll(e.path())));

  // name (suffix of the path) -> what the reason must say.
  std::map<std::string, std::string> expect;
  const fs::path plog = m / "node0/run/plog";
  WriteFile(plog / "junk.log", std::string("\x7f"
                                           "ELF\x02\x01\x01\0\0\0\x00\x01\x02\x03\x04",
                                           16) +
                                   "\n\xff\xfe\n");
  expect["junk.log"] = "no log records (binary data)";
  fs::create_symlink(d / "nowhere/plog-1.log", plog / "dangling.log");
  expect["dangling.log"] = "dangling symlink";
  fs::create_symlink("selfloop.log", plog / "selfloop.log");
  expect["selfloop.log"] = "symlink loop";
  fs::create_directory_symlink("..", m / "node0/loop");
  expect["loop"] = "symlink to a folder already walked (loop)";
  ASSERT_EQ(mkfifo((plog / "fifo.log").c_str(), 0644), 0);
  expect["fifo.log"] = "not a regular file (FIFO)";
  ASSERT_EQ(mkfifo((m / "ctl").c_str(), 0644), 0);  // not log-like: counted, not named
  {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::string sp = (plog / "sock.log").string();
    ASSERT_LT(sp.size(), sizeof(a.sun_path));
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", sp.c_str());
    ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    close(s);
  }
  expect["sock.log"] = "not a regular file (socket)";
  fs::create_directory_symlink("/", m / "node0/rootfs");  // the whole machine: not walked
  expect["rootfs"] = "symlink to / or a kernel pseudo filesystem";
  fs::create_directory_symlink("/proc", m / "node0/proc");
  expect["node0/proc"] = "symlink to / or a kernel pseudo filesystem";
  fs::create_symlink("/dev/zero", plog / "zero.log");  // endless if it were read
  expect["zero.log"] = "not a regular file (character device)";
  // A regular file whose read fails even for root: the reading process's own memory at 0.
  fs::create_symlink("/proc/self/mem", plog / "mem.log");
  expect["mem.log"] = "read error: Input/output error";
  std::string deep = DeepFile(m / "deep");
  ASSERT_GT(deep.size(), static_cast<size_t>(PATH_MAX));
  expect[deep.substr(deep.size() - 40)] = "cannot stat: File name too long";
  WriteFile(m / "notes.bin", "not a log");  // counted, not named
  // Rotated plogs compressed by logrotate: one read, one truncated (read up to the cut, named).
  const std::string other =
      "[INFO] RUNTIME(4242,python):2025-10-23-17:10:00.000.000 [api.cc:1] 4242 rtSetDevice ok\n";
#if defined(VIGIL_HAVE_ZLIB)
  std::string many;
  for (int i = 0; i < 2000; ++i) many += other;
  WriteGz(m / "node7/run/plog/plog-4242_20251023170000000.log.1.gz", many, 0);
  WriteGz(m / "node7/run/plog/plog-4242_20251023160000000.log.2.gz", many, 64);
  expect["plog-4242_20251023160000000.log.2.gz"] = "gzip:";
#else
  WriteFile(m / "node7/run/plog/plog-4242_20251023170000000.log.1.gz", "\x1f\x8b not read");
  expect["plog-4242_20251023170000000.log.1.gz"] = "compressed";
#endif
  // A FIFO named on the command line is read; with no writer it is empty, at once.
  ASSERT_EQ(mkfifo((d / "pipe.log").c_str(), 0644), 0);
  expect["pipe.log"] = "no log records";

  const std::string args = m.string() + " " + (d / "pipe.log").string();
  CmdResult json = Diagnose("--json " + args);
  CmdResult text = Diagnose(args);
  CmdResult ref = Diagnose("--json " + clean.string());

  ASSERT_EQ(ref.rc, 0) << ref.out;
  ASSERT_EQ(json.rc, 0) << json.out;
  ASSERT_EQ(text.rc, 0) << text.out;
  nlohmann::json j = nlohmann::json::parse(json.out);
  nlohmann::json rj = nlohmann::json::parse(ref.out);
  // The verdict is the clean fixture's (heartbeat LOST of rank 1, found by rank 2).
  EXPECT_EQ(VerdictKey(j), VerdictKey(rj));
  EXPECT_NE(VerdictKey(j).find("heartbeat_lost"), std::string::npos) << VerdictKey(j);
  // Every record of the messy files was found (the truncated one has no valid header).
  EXPECT_GE(j["input"]["records"].get<uint64_t>(), rj["input"]["records"].get<uint64_t>());
  EXPECT_GE(j["input"]["binary_lines"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["input"]["ignored_files"].get<uint64_t>(), 2u);  // notes.bin, ctl

  // JSON: exactly the expected inputs are named, each with its reason.
  const nlohmann::json& nr = j["input"]["not_read"];
  EXPECT_EQ(nr.size(), expect.size()) << nr.dump(1);
  for (const auto& [name, reason] : expect) {
    bool found = false;
    for (const auto& e : nr) {
      std::string path = e["path"].get<std::string>();
      if (path.ends_with(name)) {
        found = true;
        EXPECT_NE(e["reason"].get<std::string>().find(reason), std::string::npos)
            << path << ": " << e["reason"];
      }
    }
    EXPECT_TRUE(found) << name << " not named in\n" << nr.dump(1);
  }
  // Text: the same count and names.
  EXPECT_NE(text.out.find("NOT READ OR EMPTY (" + std::to_string(expect.size()) + " file(s))"),
            std::string::npos)
      << text.out;
  for (const auto& [name, reason] : expect)
    EXPECT_NE(text.out.find(name + ": " + reason), std::string::npos) << name << "\n" << text.out;
  EXPECT_NE(text.out.find("VERDICT"), std::string::npos) << text.out;
}

}  // namespace

// Host system logs have no extension; their rotated and renamed copies are read too, other
// extension-less files are not.
TEST(DiagnoseRobust, HostSystemLogsAreCandidates) {
  using vigil::diagnose::LooksLikeLog;
  for (const char* p : {"n/messages", "n/messages-20250101", "n/messages.1", "n/messages_0x40F84E00",
                        "n/syslog", "n/syslog.2", "n/dmesg", "n/kern.log", "crash/vmcore-dmesg.txt"})
    EXPECT_TRUE(LooksLikeLog(p)) << p;
  for (const char* p : {"n/messagesbin", "n/ctl", "n/notes.bin", "n/kernel", "n/npu_0_details.csv"})
    EXPECT_FALSE(LooksLikeLog(p)) << p;
}
