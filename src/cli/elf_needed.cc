#include "cli/elf_needed.h"

#include <elf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace vigil::cli {

namespace {

// Largest file read: programs are a few MB; the headers and dynamic section sit in the first
// pages, but the string table may be anywhere in the first mapped segment.
constexpr size_t kMaxRead = 256u << 20;

template <typename T>
bool At(const std::string& data, uint64_t offset, T* out) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
  std::memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

}  // namespace

bool ReadNeededLibraries(const std::string& path, std::vector<std::string>* needed,
                         std::string* error) {
  needed->clear();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return false;
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::string data;
  data.resize(static_cast<size_t>(std::min<std::streamoff>(std::max<std::streamoff>(size, 0),
                                                           static_cast<std::streamoff>(kMaxRead))));
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));

  Elf64_Ehdr eh;
  if (!At(data, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    *error = fmt::format("{} is not an ELF file", path);
    return false;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    *error = fmt::format("{} is not a 64-bit little-endian ELF file", path);
    return false;
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) {
    *error = fmt::format("{}: unexpected program header size {}", path, eh.e_phentsize);
    return false;
  }
  std::vector<Elf64_Phdr> loads;
  Elf64_Phdr dynamic{};
  bool have_dynamic = false;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!At(data, eh.e_phoff + uint64_t{i} * sizeof(Elf64_Phdr), &ph)) {
      *error = fmt::format("{}: program headers past the end of the file", path);
      return false;
    }
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) {
      dynamic = ph;
      have_dynamic = true;
    }
  }
  if (!have_dynamic) return true;  // static: needs nothing

  // DT_STRTAB is an address: the PT_LOAD segment holding it gives its file offset.
  std::vector<uint64_t> name_offsets;
  uint64_t strtab_addr = 0;
  bool have_strtab = false;
  const uint64_t entries = dynamic.p_filesz / sizeof(Elf64_Dyn);
  for (uint64_t i = 0; i < entries; ++i) {
    Elf64_Dyn d;
    if (!At(data, dynamic.p_offset + i * sizeof(Elf64_Dyn), &d)) {
      *error = fmt::format("{}: dynamic section past the end of the file", path);
      return false;
    }
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_NEEDED) name_offsets.push_back(d.d_un.d_val);
    if (d.d_tag == DT_STRTAB) {
      strtab_addr = d.d_un.d_ptr;
      have_strtab = true;
    }
  }
  if (name_offsets.empty()) return true;
  uint64_t strtab = 0;
  bool mapped = false;
  for (const Elf64_Phdr& ph : loads) {
    if (have_strtab && strtab_addr >= ph.p_vaddr && strtab_addr - ph.p_vaddr < ph.p_filesz) {
      strtab = ph.p_offset + (strtab_addr - ph.p_vaddr);
      mapped = true;
      break;
    }
  }
  if (!mapped) {
    *error = fmt::format("{}: the dynamic string table is in no loaded segment", path);
    return false;
  }
  for (uint64_t off : name_offsets) {
    if (strtab + off >= data.size()) {
      *error = fmt::format("{}: a needed library name lies past the end of the file", path);
      return false;
    }
    const char* name = data.data() + strtab + off;
    const size_t room = data.size() - strtab - off;
    const size_t len = strnlen(name, room);
    if (len == room) {
      *error = fmt::format("{}: a needed library name runs past the end of the file", path);
      return false;
    }
    needed->emplace_back(name, len);
  }
  return true;
}

std::string MpiLibraryOf(const std::string& path) {
  std::vector<std::string> needed;
  std::string error;
  if (!ReadNeededLibraries(path, &needed, &error)) return "";
  for (const std::string& lib : needed) {
    if (lib.rfind("libmpi", 0) == 0) return lib;
  }
  return "";
}

}  // namespace vigil::cli
