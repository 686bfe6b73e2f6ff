// The harness: device and communicator setup, the loop over sizes, timing and the table.
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "hccl/hccl_comm.h"
#include "mpi_c.h"
#include "values.h"

namespace hccl_test {

namespace {

// What hccl_test prints when a size's calls fail.
void PrintOpFailure() {
  printf(
      "hccl_op_base execute failed, see the logs under ASCEND_PROCESS_LOG_PATH "
      "(default ~/ascend/log)\n");
}

// A job id every rank derives alike from the root info (for -s; any shared value does).
uint64_t JobIdOf(const HcclRootInfo& info) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < 64; ++i)
    h = (h ^ static_cast<unsigned char>(info.internal[i])) * 16777619u;
  const uint64_t tag = 11;  // marks the id as hccl_test's, as the high half
  return (tag << 32) | h;
}

}  // namespace

Bench::Bench() {
  memset(&phys_prop_, 0, sizeof(phys_prop_));
}

Bench::~Bench() {
  FreeHostBuffers();
}

int Bench::ElementSize() const {
  return DtypeBytes(opt_.dtype);
}

void Bench::TurnCheckOff(const char* why) {
  opt_.check = 0;
  if (rank_ == opt_.root && !check_off_warned_) {
    printf("Warning: %s, No verification is performed.\n", why);
    check_off_warned_ = true;
  }
}

int Bench::HostBuffer(void** p, uint64_t bytes) {
  HT_ACL(aclrtMallocHost(p, bytes));
  return 0;
}

int Bench::ReadBack(const void* dev, uint64_t bytes, void** host) {
  HT_ACL(aclrtMallocHost(host, bytes));
  HT_ACL(aclrtMemcpy(*host, bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
  return 0;
}

void Bench::FreeHostBuffers() {
  void** bufs[] = {&host_in_, &expected_, &readback_};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); ++i) {
    if (*bufs[i] != nullptr) aclrtFreeHost(*bufs[i]);
    *bufs[i] = nullptr;
  }
}

int Bench::InitDevice() {
  HT_ACL(aclInit(nullptr));
  HT_ACL(aclrtSetDevice(static_cast<int32_t>(device_)));
  // On the Ascend910B family (names longer than "Ascend910B"), floats overflow to inf/nan
  // instead of saturating, as hccl_test asks.
  const char* soc = aclrtGetSocName();
  if (soc == nullptr) {
    printf("aclrtGetSocName failed");
    return -1;
  }
  if (strlen(soc) > strlen("Ascend910B") && strncmp(soc, "Ascend910B", 10) == 0) {
    HT_ACL(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_INFNAN));
  }
  HT_ACL(aclrtCreateEvent(&start_event_));
  HT_ACL(aclrtCreateEvent(&end_event_));
  HT_ACL(aclrtCreateStream(&stream_));
  if (opt_.only_device_time) {
    HT_ACL(aclrtCreateStream(&sync_stream_));
    HT_ACL(aclrtCreateEventWithFlag(&sync_event_, ACL_EVENT_SYNC));
  }
  // Stop the stream at its first failed task.
  HT_ACL(aclrtSetStreamFailureMode(stream_, 1));
  return 0;
}

int Bench::DestroyDevice() {
  if (sync_stream_ != nullptr) HT_ACL(aclrtDestroyStream(sync_stream_));
  if (sync_event_ != nullptr) HT_ACL(aclrtDestroyEvent(sync_event_));
  sync_stream_ = nullptr;
  sync_event_ = nullptr;
  HT_ACL(aclrtDestroyStream(stream_));
  HT_ACL(aclrtDestroyEvent(start_event_));
  HT_ACL(aclrtDestroyEvent(end_event_));
  HT_ACL(aclrtResetDevice(static_cast<int32_t>(device_)));
  return 0;
}

int Bench::InitComm() {
  HcclRootInfo info;
  memset(&info, 0, sizeof(info));
  static const char kInvalid[] = "invalid";
  MPI_Request request;
  if (rank_ == opt_.root) {
    printf("the minbytes is %llu, maxbytes is %llu, iters is %d, warmup_iters is %d\n",
           static_cast<unsigned long long>(plan_.min_bytes),
           static_cast<unsigned long long>(plan_.max_bytes), opt_.iters, opt_.warmup_iters);
    const HcclResult got = HcclGetRootInfo(&info);
    if (got != HCCL_SUCCESS) memcpy(info.internal, kInvalid, sizeof(kInvalid));
    // The others wait in the broadcast: they learn of a failure from its content.
    MPI_Ibcast(&info, HCCL_ROOT_INFO_BYTES, MPI_CHAR, opt_.root, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    if (got != HCCL_SUCCESS) {
      printf("Process %d HcclGetRootInfo failed, notify other process to exit\n", opt_.root);
      return got;
    }
  } else {
    MPI_Ibcast(&info, HCCL_ROOT_INFO_BYTES, MPI_CHAR, opt_.root, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    if (memcmp(info.internal, kInvalid, sizeof(kInvalid)) == 0) {
      printf("Process %d received invalid data from root process %d\n", rank_, opt_.root);
      return -1;
    }
  }
  if (opt_.nslb || opt_.symmetric_memory) return InitCommWithConfig(info);
  HT_HCCL(HcclCommInitRootInfo(nranks_, &info, rank_, &comm_));
  return 0;
}

int Bench::InitCommWithConfig(const HcclRootInfo& info) {
  const uint32_t kNslbConfigVersion = 7;  // the config version that carries hcclJobID
  if (opt_.nslb && HcclGetCommConfigCapability() < kNslbConfigVersion) {
    printf("The current version of hccl_test does not support the nslb-dp capability.\n");
    HT_HCCL(HcclCommInitRootInfo(nranks_, &info, rank_, &comm_));
    return 0;
  }
  HcclCommConfig config;
  HcclCommConfigInit(&config);
  config.hcclWorldRankID = static_cast<uint32_t>(rank_);
  config.hcclOpExpansionMode = 0;
  if (opt_.nslb) {
    config.hcclJobID = JobIdOf(info);
  } else {
    // The window every rank registers, in whole GB, at least the default stride of 16.
    const uint64_t gb = 1024ULL * 1024 * 1024;
    config.hcclSymWinMaxMemSizePerRank = std::max<uint64_t>(16, (SymmetricBytes() + gb - 1) / gb);
  }
  HT_HCCL(HcclCommInitRootInfoConfig(nranks_, &info, rank_, &config, &comm_));
  return 0;
}

uint64_t Bench::LargestPlannedSize(bool inclusive) const {
  // As hccl_test sizes its reservations: the loop's last value, which for the zero-copy range
  // (inclusive) is the first size past -e.
  uint64_t s = plan_.min_bytes;
  if (opt_.step_bytes_given && plan_.step_bytes == 0 && plan_.step_factor <= 1.0) return s;
  while (inclusive ? s <= plan_.max_bytes : s < plan_.max_bytes) {
    const uint64_t next = plan_.Next(s);
    if (next <= s) break;
    s = next;
  }
  return s;
}

int Bench::Run() {
  int rc = 0;
  if (opt_.zero_copy) {
    rc = ReserveZeroCopyRange();
    if (rc != 0) {
      DestroyDevice();
      return rc;
    }
  }
  rc = InitComm();
  if (rc == 0) {
    if (opt_.zero_copy) {
      const HcclResult hr = HcclCommSetMemoryRange(comm_, range_base_, range_bytes_, 0, 0);
      if (hr != HCCL_SUCCESS) {
        printf("[%s][%d] HcclCommSetMemoryRange failed.\n", __FUNCTION__, __LINE__);
        rc = hr;
      }
    }
    if (rc == 0) {
      rc = RegisterSymmetricWindow();
      const uint64_t elem = static_cast<uint64_t>(ElementSize());
      for (data_size_ = plan_.min_bytes; rc == 0 && data_size_ <= plan_.max_bytes;) {
        cur_ = Plan((data_size_ + elem - 1) / elem);
        rc = ExtendZeroCopyMapping(cur_.send_bytes, cur_.recv_bytes);
        if (rc == 0) rc = AllocateBuffers(cur_.send_bytes, cur_.recv_bytes);
        if (rc == 0) {
          rc = RunOneSize();
          if (rc != 0) PrintOpFailure();
        }
        const int freed = FreeBuffers();
        FreeHostBuffers();
        if (rc == 0) rc = freed;
        const uint64_t next = plan_.Next(data_size_);
        if (next <= data_size_) break;  // -i 0: one size
        data_size_ = next;
      }
      const int released = ReleaseZeroCopy();
      const int deregistered = DeregisterSymmetricWindow();
      if (rc == 0) rc = released != 0 ? released : deregistered;
    }
    if (opt_.zero_copy) HcclCommUnsetMemoryRange(comm_, range_base_);
    const HcclResult destroyed = HcclCommDestroy(comm_);
    if (rc == 0) rc = destroyed;
  }
  if (range_base_ != nullptr) aclrtReleaseMemAddress(range_base_);
  range_base_ = nullptr;
  const int down = DestroyDevice();
  if (rc == 0) rc = down;
  return rc != 0 ? rc : (failures_ != 0 ? -1 : 0);
}

int Bench::RunOneSize() {
  if (!TakesReduceOp() && opt_.reduce_op_given && rank_ == opt_.root) {
    printf(
        "Warning: The -o,--op <sum/prod/min/max> option does not take effect. Check the cmd "
        "parameter.\n");
  }
  SkipCheckOnOverflow();
  int rc = HostBuffer(&host_in_, cur_.send_bytes);
  if (rc == 0) rc = FillInput();
  if (rc == 0) rc = CopyInput();
  if (rc != 0) return rc;
  if (opt_.check >= 1) {
    rc = WriteExpected();
    if (rc != 0) return rc;
  }
  float ms = 0;
  rc = TimedCalls(&ms);
  if (rc != 0) return rc;
  int errors = 0;
  if (opt_.check >= 1) {
    // The timed calls ran on their own output: check one call on fresh input.
    if (opt_.iters != 0 || opt_.warmup_iters != 0) {
      rc = CopyInput();
      if (rc != 0) return rc;
      HT_HCCL(Call());
      HT_ACL(aclrtSynchronizeStream(stream_));
    }
    errors = Verify();
    if (errors < 0) return errors;
  }
  return Report(ms, errors);
}

int Bench::CopyInput() {
  if (!InputOnThisRank() || cur_.send_bytes == 0) return 0;
  HT_ACL(aclrtMemcpy(send_, cur_.send_bytes, host_in_, cur_.send_bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  return 0;
}

int Bench::TimedCalls(float* ms) {
  if (opt_.only_device_time) {
    // The stream waits until every call below is queued: the time is the device's alone.
    HT_ACL(aclrtStreamWaitEvent(stream_, sync_event_));
    HT_ACL(aclrtResetEvent(sync_event_, stream_));
  }
  for (int i = 0; i < opt_.warmup_iters; ++i) HT_HCCL(Call());
  HT_ACL(aclrtRecordEvent(start_event_, stream_));
  for (int i = 0; i < opt_.iters; ++i) HT_HCCL(Call());
  HT_ACL(aclrtRecordEvent(end_event_, stream_));
  if (opt_.only_device_time) {
    usleep(static_cast<useconds_t>(50 + 2 * opt_.warmup_iters + 2 * opt_.iters) * 1000);
    HT_ACL(aclrtRecordEvent(sync_event_, sync_stream_));
  }
  HT_ACL(aclrtSynchronizeStream(stream_));
  HT_ACL(aclrtEventElapsedTime(ms, start_event_, end_event_));
  return 0;
}

int Bench::Report(float ms, int errors) {
  const double avg_us = static_cast<double>(ms) * 1000.0 / opt_.iters;
  const double gb_per_s = static_cast<double>(AlgBytes(cur_)) / avg_us * 1e-3;
  const unsigned long long size = static_cast<unsigned long long>(data_size_);
  const bool root = rank_ == opt_.root;
  const char* result = "NULL";
  if (opt_.check != 0) {
    result = errors != 0 ? "failed" : "success";
    if (errors != 0) {
      ++failures_;
      printf("local rank_id %d, check result failed, %-17llu | %-14.2f | %-20.5f | failed\n", rank_,
             size, avg_us, gb_per_s);
    }
  }
  if (root) {
    if (!header_printed_) {
      printf("%-15s | %-12s | %-18s | %s\n",
             "data_size(Bytes):", "aveg_time(us):", "alg_bandwidth(GB/s):", "check_result:");
      header_printed_ = true;
    }
    printf("%-17llu | %-14.2f | %-20.5f | %s\n", size, avg_us, gb_per_s, result);
  }
  return 0;
}

}  // namespace hccl_test
