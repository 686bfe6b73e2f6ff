// The shared libraries an ELF program names in its dynamic section (DT_NEEDED), read from the
// file: how `vigil run` tells an MPI program (one that links libmpi) from the others.
#pragma once

#include <string>
#include <vector>

namespace vigil::cli {

// Fills *needed with the DT_NEEDED names of a 64-bit little-endian ELF file, in order. False
// with *error when the file cannot be read or is not such an ELF (a script, a static program
// has no dynamic section and gives true with nothing needed).
bool ReadNeededLibraries(const std::string& path, std::vector<std::string>* needed,
                         std::string* error);

// The first needed library that makes the program an MPI program (a name starting "libmpi":
// libmpi.so.40, libmpich.so.12, libmpi_cxx.so ...), or "" when there is none or the file is no
// readable ELF.
std::string MpiLibraryOf(const std::string& path);

}  // namespace vigil::cli
