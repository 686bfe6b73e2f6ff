// Entry point shared by every program; the op comes from MakeBench() of its ops/*.cc.
#include <stdio.h>
#include <sys/time.h>

#include "bench.h"
#include "mpi_c.h"

namespace {

long long NowUs() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  return tv.tv_sec * 1000000LL + tv.tv_usec;
}

// `make HCCL_TEST_LOG_ENABLE` builds the programs with the time each phase took.
#ifdef HCCL_TEST_LOG_ENABLE
void LogPhase(const char* what, long long since_us) {
  printf("[hccl_test] %s took %lld us\n", what, NowUs() - since_us);
}
#else
void LogPhase(const char*, long long) {}
#endif

}  // namespace

int main(int argc, char* argv[]) {
  setlinebuf(stdout);  // rows appear as each size finishes
  long long t = NowUs();
  MPI_Init(&argc, &argv);
  LogPhase("MPI_Init", t);

  hccl_test::Bench* bench = hccl_test::MakeBench();
  int rc = bench->ParseArgs(argc, argv);
  bool env_read = false;
  if (rc == 1) {
    rc = 0;  // --help
  } else if (rc != 0) {
    printf("This is an error in parse_cmd_line.\n");
  } else if ((t = NowUs(), rc = bench->FindPlace()) != 0) {
    printf("This is an error in get_mpi_proc.\n");
  } else if ((LogPhase("rank and device lookup", t), rc = bench->CheckOptions()) != 0) {
    printf("This is an error in check_cmd_line.\n");
  } else if ((t = NowUs(), rc = bench->InitDevice()) != 0) {
    printf("This is an error in device_init.\n");
  } else {
    LogPhase("device init", t);
    rc = bench->ReadEnv();
    env_read = rc == 0;
    if (rc != 0) {
      printf("This is an error in get_env.\n");
    } else {
      t = NowUs();
      rc = bench->Run();
      LogPhase("test", t);
    }
  }
  if (env_read && bench->FinishEnv() != 0) {
    printf("This is an error in release_env_resource.\n");
    if (rc == 0) rc = -1;
  }
  delete bench;
  aclFinalize();
  MPI_Finalize();
  return rc == 0 ? 0 : 1;
}
