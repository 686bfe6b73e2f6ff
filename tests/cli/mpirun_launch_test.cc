// How `vigil run` finds mpirun, tells Open MPI from Hydra, and the command line it builds.
#include "cli/mpirun_launch.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace vigil::cli {
namespace {

TEST(MpirunLaunchTest, FindsAnExecutableOnThePathList) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("vigil_find_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string tool = (dir / "fake-mpirun").string();
  const std::string plain = (dir / "plain").string();
  std::ofstream(tool) << "#!/bin/sh\n";
  std::ofstream(plain) << "not a program\n";
  chmod(tool.c_str(), 0755);
  chmod(plain.c_str(), 0644);
  const std::string list = "/nonexistent:" + dir.string();
  EXPECT_EQ(FindProgram("fake-mpirun", list), tool);
  EXPECT_EQ(FindProgram("plain", list), "");  // not executable
  EXPECT_EQ(FindProgram("absent", list), "");
  EXPECT_EQ(FindProgram("", list), "");
  // A name with a '/' is taken as it is, as execvp does.
  EXPECT_EQ(FindProgram("./bin/all_reduce_test", list), "./bin/all_reduce_test");
  std::filesystem::remove_all(dir);
}

TEST(MpirunLaunchTest, TellsOpenMpiFromHydra) {
  EXPECT_EQ(FlavorFromVersion("mpirun (Open MPI) 4.1.4\n\nReport bugs to ..."),
            MpiFlavor::kOpenMpi);
  EXPECT_EQ(FlavorFromVersion("HYDRA build details:\n    Version: 4.0.2\n"), MpiFlavor::kHydra);
  EXPECT_EQ(FlavorFromVersion("Intel(R) MPI Library for Linux* OS, Version 2021.6"),
            MpiFlavor::kHydra);
  EXPECT_EQ(FlavorFromVersion(""), MpiFlavor::kOpenMpi);  // unknown: the common one
}

TEST(MpirunLaunchTest, OpenMpiCommandOversubscribesAndPassesTheEnvironment) {
  MpirunPlan plan;
  plan.mpirun = "mpirun";
  plan.nranks = 4;
  plan.env_names = {"ASCEND_PROCESS_LOG_PATH", "HCCL_BUFFSIZE"};
  plan.command = {"./bin/all_reduce_test", "-b", "8K", "-e", "64M"};
  EXPECT_EQ(MpirunArgv(plan),
            (std::vector<std::string>{"mpirun", "-n", "4", "--oversubscribe", "--bind-to", "none",
                                      "-x", "ASCEND_PROCESS_LOG_PATH", "-x", "HCCL_BUFFSIZE",
                                      "./bin/all_reduce_test", "-b", "8K", "-e", "64M"}));
  plan.hosts = "node1:2,node2:2";
  plan.env_names.clear();
  plan.command = {"prog"};
  EXPECT_EQ(MpirunArgv(plan),
            (std::vector<std::string>{"mpirun", "-n", "4", "--oversubscribe", "--bind-to", "none",
                                      "--host", "node1:2,node2:2", "prog"}));
}

TEST(MpirunLaunchTest, HydraCommandUsesItsOwnOptions) {
  MpirunPlan plan;
  plan.mpirun = "/opt/mpich/bin/mpirun";
  plan.flavor = MpiFlavor::kHydra;
  plan.nranks = 8;
  plan.hosts = "a:4,b:4";
  plan.env_names = {"ASCEND_PROCESS_LOG_PATH", "VIGIL_TRANSPORT"};
  plan.command = {"prog", "-p", "8"};
  EXPECT_EQ(
      MpirunArgv(plan),
      (std::vector<std::string>{"/opt/mpich/bin/mpirun", "-n", "8", "-hosts", "a:4,b:4", "-envlist",
                                "ASCEND_PROCESS_LOG_PATH,VIGIL_TRANSPORT", "prog", "-p", "8"}));
}

}  // namespace
}  // namespace vigil::cli
