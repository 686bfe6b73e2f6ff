// The transport tests' main: also the child process of the process tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "transport_test_util.h"

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--transport-child") {
    return vigil::transport::ChildMain(argv[2], static_cast<uint16_t>(std::stoi(argv[3])),
                                       static_cast<uint32_t>(std::stoul(argv[4])), argv[5]);
  }
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) vigil::transport::test::g_self_exe.assign(buf, static_cast<size_t>(n));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
