// Logs as users attach them: a zip or tarball of a job's log folders, a single compressed log.
// The verdict must be the one the extracted folder gives, the evidence must point inside the
// archive, hostile members must stay inside the private folder, and nothing may be left behind.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/archive.h"
#include "diagnose/diagnose.h"

namespace vigil::diagnose {
namespace {
namespace fs = std::filesystem;

// vllm-project/vllm-ascend#4725's listen failure, as its plog prints it.
const std::string kListen =
    "[ERROR] HCCL(60570,python):2025-12-04-14:46:07.911.312 [hccl_socket.cc:106] "
    "[60570][HcclSocket]"
    "[Listen] socket type[0], listen on ip[192.2.2.195] and specific port[16666] fail.\n";

struct Member {
  std::string name;
  std::string data;
  unsigned type = AE_IFREG;  // AE_IFLNK: data is the target
};

// Writes an archive with libarchive: format "zip", "pax" or "raw", filter "none", "gzip", "xz".
void Write(const std::string& path, const std::string& format, const std::string& filter,
           const std::vector<Member>& members) {
  struct archive* a = archive_write_new();
  ASSERT_EQ(archive_write_set_format_by_name(a, format.c_str()), ARCHIVE_OK) << format;
  if (filter != "none") {
    ASSERT_EQ(archive_write_add_filter_by_name(a, filter.c_str()), ARCHIVE_OK);
  }
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK) << archive_error_string(a);
  for (const Member& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, m.type);
    archive_entry_set_perm(e, 0644);
    if (m.type == AE_IFLNK) {
      archive_entry_set_symlink(e, m.data.c_str());
      archive_entry_set_size(e, 0);
    } else {
      archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << m.name << ": " << archive_error_string(a);
    if (m.type == AE_IFREG && !m.data.empty()) {
      ASSERT_EQ(archive_write_data(a, m.data.data(), m.data.size()),
                static_cast<la_ssize_t>(m.data.size()));
    }
    archive_entry_free(e);
  }
  ASSERT_EQ(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

class DiagnoseArchive : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil-archive-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    const char* old = std::getenv("TMPDIR");
    old_tmpdir_ = old != nullptr ? old : "";
    had_tmpdir_ = old != nullptr;
    ::setenv("TMPDIR", (dir_ / "tmp").c_str(), 1);
  }
  void TearDown() override {
    if (had_tmpdir_)
      ::setenv("TMPDIR", old_tmpdir_.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    fs::remove_all(dir_);
  }
  static DiagnoseResult Run(const std::vector<std::string>& inputs) {
    DiagnoseOptions o;
    o.inputs = inputs;
    o.threads = 2;
    return Diagnose(o);
  }
  bool TmpIsEmpty() const { return fs::is_empty(dir_ / "tmp"); }
  std::string Skipped(const DiagnoseResult& r) const {
    std::string s;
    for (const SkippedFile& f : r.job.skipped) s += f.path + ": " + f.reason + "\n";
    return s;
  }

  fs::path dir_;
  std::string old_tmpdir_;
  bool had_tmpdir_ = false;
};

TEST_F(DiagnoseArchive, AZipGivesItsFoldersVerdictWithEvidenceInsideIt) {
  ASSERT_TRUE(ArchivesSupported());
  const std::string plog = "job/run/plog/plog-60570_20251204144600000.log";
  fs::create_directories(dir_ / "folder/job/run/plog");
  std::ofstream(dir_ / "folder" / plog) << kListen;
  const std::string zip = (dir_ / "logs.zip").string();
  Write(zip, "zip", "none", {{plog, kListen}, {"job/model.bin", std::string(4096, '\1')}});

  DiagnoseResult folder = Run({(dir_ / "folder").string()});
  ASSERT_FALSE(folder.findings.empty());
  {
    DiagnoseResult r = Run({zip});
    ASSERT_FALSE(r.findings.empty()) << Skipped(r);
    EXPECT_EQ(r.findings[0].title, folder.findings[0].title);
    ASSERT_FALSE(r.findings[0].evidence.empty());
    const Evidence& e = r.findings[0].evidence[0];
    EXPECT_EQ(e.file, zip + "/" + plog);
    EXPECT_NE(e.text.find("port[16666]"), std::string::npos) << e.text;  // re-read from the copy
    EXPECT_EQ(r.job.stats.ignored_files, 1u);  // model.bin: counted, not extracted
    EXPECT_NE(RenderText(r, false).find(zip + "/job"), std::string::npos);
    EXPECT_FALSE(TmpIsEmpty());  // the copies live as long as the result
  }
  EXPECT_TRUE(TmpIsEmpty());
}

TEST_F(DiagnoseArchive, TarballsNestedArchivesAndASingleCompressedLog) {
  const std::string plog = "run/plog/plog-60570_1.log";
  const std::string tgz = (dir_ / "plog.tar.gz").string();
  Write(tgz, "pax", "gzip", {{plog, kListen}});
  const std::string txz = (dir_ / "plog.tar.xz").string();
  Write(txz, "pax", "xz", {{plog, kListen}});
  const std::string one = (dir_ / "rank0.log.xz").string();
  Write(one, "raw", "xz", {{"data", kListen}});
  // A zip holding a tarball, as a job's collected logs often are.
  std::string inner;
  {
    std::ifstream in(tgz, std::ios::binary);
    inner.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string outer = (dir_ / "all.zip").string();
  Write(outer, "zip", "none", {{"node1/plog.tar.gz", inner}});

  for (const auto& [input, shown] : std::vector<std::pair<std::string, std::string>>{
           {tgz, tgz + "/" + plog},
           {txz, txz + "/" + plog},
           {one, (dir_ / "rank0.log.xz").string() + "/rank0.log"},
           {outer, outer + "/node1/plog.tar.gz/" + plog}}) {
    DiagnoseResult r = Run({input});
    ASSERT_FALSE(r.findings.empty()) << input << "\n" << Skipped(r);
    EXPECT_NE(r.findings[0].title.find("16666"), std::string::npos) << input;
    ASSERT_FALSE(r.findings[0].evidence.empty());
    EXPECT_EQ(r.findings[0].evidence[0].file, shown);
    EXPECT_FALSE(r.findings[0].evidence[0].text.empty());
  }
  EXPECT_TRUE(TmpIsEmpty());
}

TEST_F(DiagnoseArchive, HostileMembersStayInsideAndAreNamed) {
  const std::string tar = (dir_ / "evil.tar").string();
  Write(tar, "pax", "none",
        {{"../escape.log", kListen},
         {"/tmp/absolute.log", kListen},
         {"a/link.log", "/etc/passwd", AE_IFLNK},
         {"a/b/../../../up.log", kListen},
         {"a/ok.log", kListen}});
  DiagnoseResult r = Run({tar});
  const std::string skipped = Skipped(r);
  EXPECT_NE(skipped.find(tar + "/../escape.log: member path is absolute or leaves"),
            std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find(tar + "//tmp/absolute.log: member path"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find(tar + "/a/link.log: a link or special member"), std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find(tar + "/a/b/../../../up.log: member path"), std::string::npos) << skipped;
  EXPECT_FALSE(fs::exists(dir_ / "escape.log"));
  EXPECT_FALSE(fs::exists(dir_ / "up.log"));
  EXPECT_FALSE(fs::exists(dir_ / "tmp/escape.log"));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].evidence[0].file, tar + "/a/ok.log");
}

TEST_F(DiagnoseArchive, DamagedAndFalseArchivesAreNamed) {
  // The first member whole, the second cut (lines that do not compress away, so the cut lands
  // in the second member's data).
  std::string first = kListen, second;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    second += "[INFO] HCCL(60570,python):2025-12-04-14:46:08.000.000 [x.cc:1] [60570]" +
              std::to_string(x) + "\n";
  }
  const std::string tgz = (dir_ / "cut.tar.gz").string();
  Write(tgz, "pax", "gzip",
        {{"run/plog/plog-60570_1.log", first}, {"run/plog/plog-60570_2.log", second}});
  fs::resize_file(tgz, fs::file_size(tgz) / 2);
  std::ofstream(dir_ / "notes.zip") << "not a zip at all\n";
  DiagnoseResult r = Run({tgz, (dir_ / "notes.zip").string()});
  const std::string skipped = Skipped(r);
  EXPECT_NE(skipped.find(tgz + ": archive read up to here: "), std::string::npos) << skipped;
  EXPECT_NE(skipped.find(tgz + "/run/plog/plog-60570_2.log: "), std::string::npos) << skipped;
  EXPECT_NE(skipped.find((dir_ / "notes.zip").string() + ": not an archive"), std::string::npos)
      << skipped;
  ASSERT_FALSE(r.findings.empty()) << skipped;  // what was read before the cut
  EXPECT_NE(r.findings[0].title.find("16666"), std::string::npos);
}

TEST_F(DiagnoseArchive, AFolderLeftByAKilledRunIsRemoved) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // a pid that no longer runs
  const fs::path orphan = dir_ / "tmp" / ("vigil-diagnose-" + std::to_string(child) + "-abcdef");
  fs::create_directories(orphan / "a0");
  std::ofstream(orphan / "a0/x.log") << kListen;
  const fs::path alive =
      dir_ / "tmp" / ("vigil-diagnose-" + std::to_string(::getppid()) + "-abcdef");
  fs::create_directories(alive);
  const std::string zip = (dir_ / "logs.zip").string();
  Write(zip, "zip", "none", {{"x.log", kListen}});
  { DiagnoseResult r = Run({zip}); }
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(alive));  // its process still runs
  fs::remove_all(alive);
  EXPECT_TRUE(TmpIsEmpty());
}

TEST_F(DiagnoseArchive, ArchivesInAWalkedFolderAreRead) {
  fs::create_directories(dir_ / "job/node2");
  Write((dir_ / "job/node2/plog.zip").string(), "zip", "none",
        {{"run/plog/plog-60570_1.log", kListen}});
  DiagnoseResult r = Run({(dir_ / "job").string()});
  ASSERT_FALSE(r.findings.empty()) << Skipped(r);
  EXPECT_EQ(r.findings[0].evidence[0].file,
            (dir_ / "job/node2/plog.zip").string() + "/run/plog/plog-60570_1.log");
}

}  // namespace
}  // namespace vigil::diagnose
