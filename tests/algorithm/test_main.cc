// Logs of these tests go to a temporary folder, never to ~/ascend/log.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

int main(int argc, char** argv) {
  if (getenv("ASCEND_PROCESS_LOG_PATH") == nullptr) {
    char dir[] = "/tmp/vigil_alg_test_XXXXXX";
    if (mkdtemp(dir) != nullptr) setenv("ASCEND_PROCESS_LOG_PATH", dir, 1);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
