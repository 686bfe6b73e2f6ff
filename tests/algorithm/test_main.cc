// Logs of these tests go to a temporary folder, never to ~/ascend/log.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
  std::string made;  // removed at the end: ctest runs every test in a process of its own
  if (getenv("ASCEND_PROCESS_LOG_PATH") == nullptr) {
    char dir[] = "/tmp/vigil_alg_test_XXXXXX";
    if (mkdtemp(dir) != nullptr) {
      made = dir;
      setenv("ASCEND_PROCESS_LOG_PATH", dir, 1);
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (!made.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(made, ec);
  }
  return rc;
}
