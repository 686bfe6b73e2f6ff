// Command line and environment of the stand-in: the options, defaults, checks and messages of
// hccl_test (its build for every SoC but Ascend950, which has -a instead of -z/-s).
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench.h"
#include "mpi_c.h"
#include "values.h"

namespace hccl_test {

namespace {

// "64M", "8k", "1024", "0x100": a number (base 0) and at most one K/M/G suffix; -1 when bad.
long ParseSize(const char* text) {
  char* end = nullptr;
  const long n = strtol(text, &end, 0);
  long unit = 1;
  if (strlen(end) == 1) {
    switch (*end) {
      case 'K':
      case 'k':
        unit = 1024L;
        break;
      case 'M':
      case 'm':
        unit = 1024L * 1024;
        break;
      case 'G':
      case 'g':
        unit = 1024L * 1024 * 1024;
        break;
      default:
        return -1;
    }
  } else if (strlen(end) != 0) {
    return -1;
  }
  return n * unit;
}

// A count option: digits only, else -1 after saying which options want a positive integer.
long ParseCount(const char* text) {
  for (const char* p = text; *p != '\0'; ++p) {
    if (!isdigit(static_cast<unsigned char>(*p))) {
      printf(
          "Error:In judge all digit, Check whether the value of [-i -n -r -w -c -p] is a "
          "positive integer.\n");
      return -1;
    }
  }
  return strtol(text, nullptr, 0);
}

// -z and -m take a number; junk reads as 0.
int ParseSwitch(const char* text) {
  return static_cast<int>(strtol(text, nullptr, 10));
}

void PrintHelp() {
  printf("USAGE: ./test \n\t");
  printf("[-b,--minbytes <min size in bytes>] \n\t");
  printf("[-e,--maxbytes <max size in bytes>] \n\t");
  printf("[-i,--stepbytes <increment size>] \n\t");
  printf("[-f,--stepfactor <increment factor>] \n\t");
  printf("[-n,--iters <iteration count>] \n\t");
  printf("[-o,--op <sum/prod/min/max>] \n\t");
  printf(
      "[-d,--datatype <int8/int16/int32/fp16/fp32/int64/uint64/uint8/uint16/uint32/fp64/"
      "bfp16/int128/hif8/fp8e4m3/fp8e5m2/fp8e8m0>] \n\t");
  printf("[-r,--root <root>] \n\t");
  printf("[-w,--warmup_iters <warmup iteration count>] \n\t");
  printf("[-c,--check <result verification> 0:disabled 1:quiet 2:verbose (default 1)] \n\t");
  printf("[-p,--npus <npus used for one node>] \n\t");
  printf("[-m,--symmetric_memory  0:disabled 1:enabled.] \n\t");
  printf("[-z,--zero_copy  0:disabled 1:enabled.] \n\t");
  printf("[-s,--nslb  0:disabled 1:enabled.] \n\t");
  printf(
      "[-t, --onlydevicetime 0:disabled 1:enabled. When -t is 1,-n and -w must be less than "
      "or equal to 100.] \n\t");
  printf("[-h,--help]\n");
}

bool AllDigits(const char* s) {
  for (; *s != '\0'; ++s) {
    if (!isdigit(static_cast<unsigned char>(*s))) return false;
  }
  return true;
}

}  // namespace

uint64_t SizePlan::Next(uint64_t size) const {
  if (step_factor > 1.0) return static_cast<uint64_t>(size * step_factor);
  return size + step_bytes;
}

int Bench::ParseArgs(int argc, char* argv[]) {
  // hccl_test picks its option set by SoC before aclInit (Ascend950 has -a instead of -z/-s);
  // the stand-in asks the same way, so the runtime must answer then, and keeps the common set.
  const char* soc = aclrtGetSocName();
  if (soc != nullptr && strstr(soc, "Ascend950") != nullptr) {
    printf("Ascend950 options (-a) are not part of this stand-in; using -z/-s.\n");
  }
  static const struct option kLong[] = {{"op", required_argument, 0, 'o'},
                                        {"datatype", required_argument, 0, 'd'},
                                        {"minbytes", required_argument, 0, 'b'},
                                        {"maxbytes", required_argument, 0, 'e'},
                                        {"stepbytes", required_argument, 0, 'i'},
                                        {"stepfactor", required_argument, 0, 'f'},
                                        {"root", required_argument, 0, 'r'},
                                        {"iters", required_argument, 0, 'n'},
                                        {"warmup_iters", required_argument, 0, 'w'},
                                        {"check", required_argument, 0, 'c'},
                                        {"npus", required_argument, 0, 'p'},
                                        {"help", no_argument, 0, 'h'},
                                        {"onlydevicetime", required_argument, 0, 't'},
                                        {"symmetric_memory", required_argument, 0, 'm'},
                                        {"zero_copy", required_argument, 0, 'z'},
                                        {"nslb", required_argument, 0, 's'},
                                        {0, 0, 0, 0}};
  int c;
  int index = 0;
  while ((c = getopt_long(argc, argv, "o:d:b:e:i:f:r:n:w:c:p:z:s:t:m:h", kLong, &index)) != -1) {
    switch (c) {
      case 'b':
        opt_.min_bytes_arg = ParseSize(optarg);
        break;
      case 'e':
        opt_.max_bytes_arg = ParseSize(optarg);
        break;
      case 'i':
        opt_.step_bytes_given = true;
        opt_.step_bytes_arg = ParseCount(optarg);
        break;
      case 'f':
        opt_.step_factor_given = true;
        opt_.step_factor = strtof(optarg, nullptr);
        break;
      case 'n':
        opt_.iters = static_cast<int>(ParseCount(optarg));
        break;
      case 'w':
        opt_.warmup_iters = static_cast<int>(ParseCount(optarg));
        break;
      case 'o':
        opt_.reduce_op_given = true;
        opt_.reduce_op = ReduceOpFromName(optarg);
        break;
      case 'd':
        opt_.dtype = DtypeFromName(optarg);
        break;
      case 'r':
        opt_.root = static_cast<int>(ParseCount(optarg));
        break;
      case 'c':
        opt_.check = static_cast<int>(ParseCount(optarg));
        break;
      case 'p':
        opt_.npus = static_cast<int>(ParseCount(optarg));
        opt_.npus_given = true;
        break;
      case 'z':
        opt_.zero_copy = ParseSwitch(optarg);
        break;
      case 'm':
        opt_.symmetric_memory = ParseSwitch(optarg);
        break;
      case 's':
        opt_.nslb = true;
        break;
      case 't':
        opt_.only_device_time = static_cast<int>(ParseCount(optarg));
        break;
      case 'h':
        PrintHelp();
        return 1;
      default:
        printf("invalid option \n");
        printf("Try [-h --help] for more information.\n");
        return -1;
    }
  }
  if (optind < argc) {
    printf("non-option ARGV-elements: ");
    while (optind < argc) printf("%s ", argv[optind++]);
    printf("\n");
    return -1;
  }
  return 0;
}

int Bench::FindPlace() {
  MPI_Comm_size(MPI_COMM_WORLD, &nranks_);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  HT_ACL(aclrtGetDeviceCount(&device_count_));
  if (!opt_.npus_given) opt_.npus = static_cast<int>(device_count_);
  // HCCL_TEST_USE_DEVS="4,5,6,7": the devices this node's ranks take, in order.
  const char* devs = getenv("HCCL_TEST_USE_DEVS");
  if (devs != nullptr) {
    std::vector<int> ids;
    std::string list(devs);
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      ids.push_back(atoi(list.substr(start, comma - start).c_str()));
      start = comma + 1;
    }
    std::sort(ids.begin(), ids.end());
    device_ = static_cast<uint32_t>(ids[rank_ % ids.size()]);
  } else if (opt_.npus > 0) {
    device_ = static_cast<uint32_t>(rank_ % opt_.npus);
  }
  return 0;
}

int Bench::PlanSizes() {
  if (opt_.min_bytes_arg <= 0 || opt_.max_bytes_arg <= 0) {
    printf("invalid size specified for [-b,--minbytes] or [-e,--maxbytes]\n");
    return -1;
  }
  plan_.min_bytes = static_cast<uint64_t>(opt_.min_bytes_arg);
  plan_.max_bytes = static_cast<uint64_t>(opt_.max_bytes_arg);
  plan_.step_factor = opt_.step_factor;
  if (opt_.step_bytes_given && opt_.step_bytes_arg < 0) {
    printf("Error: [-i,--stepbytes] must be greater than or equal to 0.\n");
    return -1;
  }
  if (plan_.max_bytes < plan_.min_bytes) {
    printf(
        "invalid option: maxbytes < minbytes, Check the [-b,--minbytes] and [-e,--maxbytes] "
        "options.\n");
    return -1;
  }
  if (opt_.step_bytes_given) {
    plan_.step_bytes = static_cast<uint64_t>(opt_.step_bytes_arg);
  } else if (plan_.max_bytes == plan_.min_bytes) {
    plan_.step_bytes = 1;  // one size; a step keeps the loop finite
  } else {
    plan_.step_bytes = (plan_.max_bytes - plan_.min_bytes) / 10;
  }
  if (AlignsToRanks()) {
    // Sizes a multiple of the rank count; past 16 MiB, of 512 * rank count.
    const uint64_t n = static_cast<uint64_t>(nranks_);
    const uint64_t coarse = n * 512;
    auto align = [n, coarse](uint64_t b) {
      b = std::max(b, n);
      return b > 16ULL * 1024 * 1024 ? b / coarse * coarse : b / n * n;
    };
    plan_.min_bytes = align(plan_.min_bytes);
    plan_.max_bytes = align(plan_.max_bytes);
    plan_.step_bytes = (plan_.step_bytes + n - 1) / n * n;
  }
  if (opt_.step_factor_given && opt_.step_factor <= 1.0) {
    printf("Error: [-f,--stepfactor] Must be greater than 1.0f, Start step mod.\n");
    return -1;
  }
  if (opt_.step_factor_given && opt_.step_bytes_given) {
    printf(
        "Warning: [-f,--stepfactor] and [-i,--stepbytes] are set, [-f,--stepfactor] is "
        "enabled by default.\n");
  }
  return 0;
}

int Bench::CheckOptions() {
  if (PlanSizes() != 0) return -1;
  if (opt_.dtype == -1) {
    printf(
        "Error: [-d,--datatype] is invalid, Use [-h,--help] to check the correct input "
        "parameter.\n");
    return -1;
  }
  if (opt_.reduce_op == -1) {
    printf(
        "Error: [-o,--op] is invalid, Use [-h,--help] to check the correct input "
        "parameter.\n");
    return -1;
  }
  if (opt_.warmup_iters < 0) {
    printf(
        "Error: [-w,--warmup_iters] is invalid, warmup_iters must be greater than or equal "
        "to 0.\n");
    return -1;
  }
  if (opt_.iters < 0) {
    printf("Error: [-n,--iters] is invalid, iters must be greater than or equal to 0.\n");
    return -1;
  }
  if (opt_.root < 0 || opt_.root >= nranks_) {
    printf(
        "Error: [-r,--root <root>] is invalid, root rank must be greater than or equal to 0 "
        "and less than or equal to %d.\n",
        nranks_ - 1);
    return -1;
  }
  if (opt_.check < 0 || opt_.check > 2) {
    printf("Error: [-c,--check] is invalid, check should be 0 or 1 or 2\n");
    return -1;
  }
  if (device_count_ == 0) {
    printf("Error: The number of device is 0.Check whether the package is correct.\n");
    return -1;
  }
  if (opt_.npus < 1 || opt_.npus > static_cast<int>(device_count_)) {
    printf(
        "Error: [-p,--npus <npus used for one node>] is invalid, npus must be greater than "
        "or equal to 1 and less than or equal to %u.\n",
        device_count_);
    return -1;
  }
  if (opt_.only_device_time != 0 && opt_.only_device_time != 1) {
    printf("Error: [-t,--onlydevicetime] is invalid, onlydevicetime should be 0 or 1\n");
    return -1;
  }
  if (opt_.only_device_time == 1 && opt_.warmup_iters > 100) {
    printf(
        "Error: [-w,--warmup_iters] is invalid, onlydevicetime is 1, but warmup_iters > 100, "
        "warmup_iters must be less than or equal to 100, now warmup_iters is %d\n",
        opt_.warmup_iters);
    return -1;
  }
  if (opt_.only_device_time == 1 && opt_.iters > 100) {
    printf(
        "Error: [-n,--iters] is invalid, onlydevicetime is 1, but iters > 100, iters must be "
        "less than or equal to 100, now iters is %d\n",
        opt_.iters);
    return -1;
  }
  if (opt_.zero_copy != 0 && opt_.symmetric_memory != 0) {
    printf("Error: Zero-copy and symmetric memory cannot be enabled simultaneously.\n");
    return -1;
  }
  return 0;
}

int Bench::ReadEnv() {
  const char* prof = getenv("HCCL_TEST_PROFILING");
  if (prof != nullptr) {
    opt_.profiling = atoi(prof);
    if (!AllDigits(prof) || (opt_.profiling != 0 && opt_.profiling != 1)) {
      printf("Check whether HCCL_TEST_PROFILING is 0 or 1.\n");
      return -1;
    }
  }
  const char* buffsize = getenv("HCCL_BUFFSIZE");
  if (buffsize != nullptr) {
    if (!AllDigits(buffsize)) {
      printf("Check whether HCCL_BUFFSIZE is all digit.\n");
      return -1;
    }
    opt_.buffsize_mb = strtoull(buffsize, nullptr, 10);
    if (opt_.buffsize_mb == 0) {
      printf("Check whether HCCL_BUFFSIZE is 0 or too big.\n");
      return -1;
    }
    // -t holds every call until all are queued; a small CCL buffer cannot take that.
    if (opt_.only_device_time == 1 && opt_.buffsize_mb <= 100) {
      printf("Warning: -t is 1 but HCCL_BUFFSIZE <= 100MB , -t auto reset to 0!\n");
      opt_.only_device_time = 0;
    }
  }
  if (opt_.profiling == 1) {
    const char* path_env = getenv("HCCL_TEST_PROFILING_PATH");
    const std::string path = path_env != nullptr ? path_env : "/var/log/npu/profiling";
    aclprofInit(path.c_str(), path.size());
    uint32_t devices[1] = {device_};
    const uint64_t kinds = ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICORE_METRICS |
                           ACL_PROF_AICPU | ACL_PROF_HCCL_TRACE | ACL_PROF_MSPROFTX |
                           ACL_PROF_RUNTIME_API;
    prof_config_ = aclprofCreateConfig(devices, 1, ACL_AICORE_PIPE_UTILIZATION, nullptr, kinds);
    HT_ACL(aclprofStart(prof_config_));
  }
  // Op retry off unless the user chose otherwise: a benchmark should fail, not retry.
  if (getenv("HCCL_OP_RETRY_ENABLE") == nullptr &&
      setenv("HCCL_OP_RETRY_ENABLE", "L0:0, L1:0, L2:0", 1) != 0) {
    printf("setenv HCCL_OP_RETRY_ENABLE failed\n");
    return -1;
  }
  return 0;
}

int Bench::FinishEnv() {
  if (opt_.profiling == 1) {
    HT_ACL(aclprofStop(prof_config_));
    aclprofDestroyConfig(prof_config_);
    prof_config_ = nullptr;
    aclprofFinalize();
  }
  return 0;
}

}  // namespace hccl_test
