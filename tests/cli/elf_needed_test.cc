// DT_NEEDED reading: the test program itself, and ELF files written here with chosen needs.
#include "cli/elf_needed.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace vigil::cli {
namespace {

class ElfNeededTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vigil_elf_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A minimal 64-bit ELF: one PT_LOAD over the whole file, a PT_DYNAMIC (unless `dynamic` is
  // false) with one DT_NEEDED per name, DT_STRTAB and DT_STRSZ, then the string table.
  std::string WriteElf(const std::string& name, const std::vector<std::string>& needed,
                       bool dynamic = true) {
    const uint64_t base = 0x400000;
    const uint64_t phoff = sizeof(Elf64_Ehdr);
    const uint16_t phnum = dynamic ? 2 : 1;
    const uint64_t dynoff = phoff + phnum * sizeof(Elf64_Phdr);
    const uint64_t ndyn = needed.size() + 3;
    const uint64_t stroff = dynoff + ndyn * sizeof(Elf64_Dyn);
    std::string strtab(1, '\0');
    std::vector<uint64_t> name_at;
    for (const std::string& n : needed) {
      name_at.push_back(strtab.size());
      strtab += n;
      strtab += '\0';
    }
    const uint64_t size = stroff + strtab.size();

    std::string out(size, '\0');
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_DYN;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = phoff;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = phnum;
    std::memcpy(out.data(), &eh, sizeof(eh));
    Elf64_Phdr load{};
    load.p_type = PT_LOAD;
    load.p_vaddr = base;
    load.p_filesz = size;
    load.p_memsz = size;
    std::memcpy(out.data() + phoff, &load, sizeof(load));
    if (dynamic) {
      Elf64_Phdr dyn{};
      dyn.p_type = PT_DYNAMIC;
      dyn.p_offset = dynoff;
      dyn.p_vaddr = base + dynoff;
      dyn.p_filesz = ndyn * sizeof(Elf64_Dyn);
      std::memcpy(out.data() + phoff + sizeof(Elf64_Phdr), &dyn, sizeof(dyn));
      std::vector<Elf64_Dyn> entries;
      for (uint64_t at : name_at) entries.push_back({DT_NEEDED, {at}});
      entries.push_back({DT_STRTAB, {base + stroff}});
      entries.push_back({DT_STRSZ, {strtab.size()}});
      entries.push_back({DT_NULL, {0}});
      std::memcpy(out.data() + dynoff, entries.data(), entries.size() * sizeof(Elf64_Dyn));
    }
    std::memcpy(out.data() + stroff, strtab.data(), strtab.size());
    return WriteFile(name, out);
  }

  std::string WriteFile(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(ElfNeededTest, ReadsTheLibrariesThisProgramNeeds) {
  std::vector<std::string> needed;
  std::string error;
  ASSERT_TRUE(ReadNeededLibraries("/proc/self/exe", &needed, &error)) << error;
  EXPECT_NE(std::find(needed.begin(), needed.end(), "libc.so.6"), needed.end());
  EXPECT_EQ(MpiLibraryOf("/proc/self/exe"), "");
}

TEST_F(ElfNeededTest, ListsEveryNeededNameInOrder) {
  const std::string path = WriteElf("prog", {"libhccl.so", "libacl_rt.so", "libmpi.so.40"});
  std::vector<std::string> needed;
  std::string error;
  ASSERT_TRUE(ReadNeededLibraries(path, &needed, &error)) << error;
  EXPECT_EQ(needed, (std::vector<std::string>{"libhccl.so", "libacl_rt.so", "libmpi.so.40"}));
}

TEST_F(ElfNeededTest, AProgramThatLinksLibmpiIsAnMpiProgram) {
  EXPECT_EQ(MpiLibraryOf(WriteElf("ompi", {"libhccl.so", "libmpi.so.40", "libc.so.6"})),
            "libmpi.so.40");
  EXPECT_EQ(MpiLibraryOf(WriteElf("mpich", {"libmpich.so.12"})), "libmpich.so.12");
  EXPECT_EQ(MpiLibraryOf(WriteElf("cxx", {"libmpi_cxx.so.40", "libmpi.so.40"})),
            "libmpi_cxx.so.40");
}

TEST_F(ElfNeededTest, OtherProgramsAreNot) {
  EXPECT_EQ(MpiLibraryOf(WriteElf("plain", {"libhccl.so", "libascendcl.so", "libc.so.6"})), "");
  // A library whose name merely contains "mpi" does not count.
  EXPECT_EQ(MpiLibraryOf(WriteElf("other", {"libgompi.so.1"})), "");
}

TEST_F(ElfNeededTest, AStaticProgramNeedsNothing) {
  std::vector<std::string> needed = {"stale"};
  std::string error;
  EXPECT_TRUE(ReadNeededLibraries(WriteElf("static", {}, false), &needed, &error)) << error;
  EXPECT_TRUE(needed.empty());
}

TEST_F(ElfNeededTest, ScriptsMissingFilesAndDamagedElvesAreErrors) {
  std::vector<std::string> needed;
  std::string error;
  EXPECT_FALSE(
      ReadNeededLibraries(WriteFile("script", "#!/bin/sh\nexec mpirun \"$@\"\n"), &needed, &error));
  EXPECT_NE(error.find("not an ELF"), std::string::npos) << error;
  EXPECT_EQ(MpiLibraryOf((dir_ / "script").string()), "");

  EXPECT_FALSE(ReadNeededLibraries((dir_ / "absent").string(), &needed, &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;

  // Cut short inside the dynamic section, or inside the names: an error, never a crash.
  const std::string whole = WriteElf("whole", {"libmpi.so.40"});
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut :
       {size_t{10}, sizeof(Elf64_Ehdr) + 8, sizeof(Elf64_Ehdr) + 130, bytes.size() - 8}) {
    const std::string path = WriteFile("cut" + std::to_string(cut), bytes.substr(0, cut));
    EXPECT_FALSE(ReadNeededLibraries(path, &needed, &error)) << "cut at " << cut;
    EXPECT_EQ(MpiLibraryOf(path), "") << "cut at " << cut;
  }
}

}  // namespace
}  // namespace vigil::cli
