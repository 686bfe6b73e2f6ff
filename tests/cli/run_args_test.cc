// Where `vigil run`'s own words end and the program's begin.
#include "cli/run_args.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace vigil::cli {
namespace {

using Args = std::vector<std::string>;

// A "run" subcommand with options of each kind vigil run has.
class RunArgsTest : public ::testing::Test {
 protected:
  RunArgsTest() {
    CLI::App* run = app_.add_subcommand("run");
    run->add_option("-n,--nranks", nranks_);
    run->add_option("--log-dir", dir_);
    run->add_option("--env", env_);
    run->add_flag("-q,--quiet", quiet_);
    run->add_flag("--mpi", mpi_);
    run->add_option("command", command_);
    app_.add_subcommand("diagnose");
  }
  Args Separated(Args args) {
    SeparateRunCommand(app_, &args);
    return args;
  }

  CLI::App app_;
  uint32_t nranks_ = 0;
  std::string dir_;
  std::vector<std::string> env_;
  bool quiet_ = false;
  bool mpi_ = false;
  std::vector<std::string> command_;
};

TEST_F(RunArgsTest, TheProgramsOwnOptionsStayItsOwn) {
  EXPECT_EQ(Separated({"run", "-n", "4", "./bin/all_reduce_test", "-n", "20", "-b", "8K"}),
            (Args{"run", "-n", "4", "--", "./bin/all_reduce_test", "-n", "20", "-b", "8K"}));
}

TEST_F(RunArgsTest, EveryFormOfRunsOptionsIsSkipped) {
  EXPECT_EQ(Separated({"run", "-n4", "-q", "--log-dir=/tmp/x", "--env", "A=1", "--mpi", "--nranks",
                       "2", "prog", "-q"}),
            (Args{"run", "-n4", "-q", "--log-dir=/tmp/x", "--env", "A=1", "--mpi", "--nranks", "2",
                  "--", "prog", "-q"}));
}

TEST_F(RunArgsTest, ASeparatorAlreadyThereIsKept) {
  const Args args = {"run", "-n", "4", "--", "prog", "-n", "1"};
  EXPECT_EQ(Separated(args), args);
}

TEST_F(RunArgsTest, UnknownOptionsAndOtherCommandsAreLeftToTheParser) {
  const Args unknown = {"run", "--bogus", "prog", "-n", "1"};
  EXPECT_EQ(Separated(unknown), unknown);
  const Args diagnose = {"diagnose", "logs", "-n", "1"};
  EXPECT_EQ(Separated(diagnose), diagnose);
  EXPECT_EQ(Separated({}), Args{});
}

TEST_F(RunArgsTest, TheSeparatedWordsParse) {
  Args args = Separated({"run", "-n", "4", "prog", "-n", "20", "--mpi"});
  std::reverse(args.begin(), args.end());
  app_.parse(args);
  EXPECT_EQ(nranks_, 4u);
  EXPECT_FALSE(mpi_);
  EXPECT_EQ(command_, (Args{"prog", "-n", "20", "--mpi"}));
}

}  // namespace
}  // namespace vigil::cli
