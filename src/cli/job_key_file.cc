#include "cli/job_key_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "bootstrap/root_info.h"
#include "hccl/hccl_types.h"
#include "vigil/launch.h"

namespace vigil::cli {

namespace {

std::string EnvOf(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

bool KeyOfRootInfo(const HcclRootInfo& info, const std::string& what, auth::JobKey* key,
                   std::string* error) {
  bootstrap::RootInfo root;
  std::string why;
  if (bootstrap::DecodeRootInfo(info, &root, &why) != HCCL_SUCCESS) {
    *error = fmt::format("{}: {}", what, why);
    return false;
  }
  *key = root.key;
  return true;
}

bool KeyOfRootInfoFile(const std::string& path, auth::JobKey* key, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  HcclRootInfo info{};
  if (!in.read(info.internal, sizeof(info.internal))) {
    *error = fmt::format("cannot read a root info ({} bytes) from {}", sizeof(info.internal), path);
    return false;
  }
  return KeyOfRootInfo(info, path, key, error);
}

bool KeyOfKeyFile(const std::string& path, auth::JobKey* key, std::string* error) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (!auth::ParseJobKeyHex(text, key)) {
    *error = fmt::format("{} does not hold a job key (32 hex digits)", path);
    return false;
  }
  return true;
}

}  // namespace

bool EnsureJobKeyInEnvironment(std::string* error) {
  if (!EnvOf("VIGIL_JOB_KEY").empty()) return true;
  auth::JobKey key;
  if (!auth::GenerateJobKey(&key, error)) return false;
  setenv("VIGIL_JOB_KEY", auth::JobKeyHex(key).c_str(), 1);
  return true;
}

bool WriteJobKeyFile(const std::string& dir, std::string* error) {
  const std::string path = dir + "/" + kJobKeyFileName;
  const std::string text = EnvOf("VIGIL_JOB_KEY") + "\n";
  (void)unlink(path.c_str());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = fmt::format("cannot create {}: {}", path, std::strerror(errno));
    return false;
  }
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) *error = fmt::format("cannot write {}", path);
  return ok;
}

bool FindJobKey(const std::string& rootinfo_file, const std::string& folder, auth::JobKey* key,
                std::string* from, std::string* error) {
  *key = auth::JobKey();
  if (!rootinfo_file.empty()) {
    *from = rootinfo_file;
    return KeyOfRootInfoFile(rootinfo_file, key, error);
  }
  if (const std::string hex = EnvOf("VIGIL_JOB_KEY"); !hex.empty()) {
    *from = "VIGIL_JOB_KEY";
    if (!auth::ParseJobKeyHex(hex, key)) {
      *error = "VIGIL_JOB_KEY is not 32 hex digits";
      return false;
    }
    return true;
  }
  if (const std::string hex = EnvOf("VIGIL_ROOT_INFO"); !hex.empty()) {
    *from = "VIGIL_ROOT_INFO";
    HcclRootInfo info{};
    if (!VigilRootInfoFromHex(hex.c_str(), &info)) {
      *error = "VIGIL_ROOT_INFO is not a root info in hex";
      return false;
    }
    return KeyOfRootInfo(info, "VIGIL_ROOT_INFO", key, error);
  }
  if (const std::string path = EnvOf("VIGIL_ROOT_INFO_FILE"); !path.empty()) {
    *from = path;
    return KeyOfRootInfoFile(path, key, error);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!folder.empty()) {
    for (const fs::path& dir : {fs::path(folder), fs::path(folder).parent_path()}) {
      const fs::path file = dir / kJobKeyFileName;
      if (fs::is_regular_file(file, ec)) {
        *from = file.string();
        return KeyOfKeyFile(file.string(), key, error);
      }
    }
  }
  *from = "no key";
  return true;
}

}  // namespace vigil::cli
