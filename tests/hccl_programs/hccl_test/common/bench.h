// The harness every program of this stand-in shares: command line, device and communicator
// setup, the loop over data sizes, timing and the result table. One op is a subclass of Bench
// (ops/*.cc) that says how big its buffers are, what it writes into them, which HCCL call it
// times and what every rank must hold afterwards.
//
// The flow, per process (one MPI rank = one HCCL rank):
//   MPI_Init -> parse options -> rank/size from MPI, device = rank % npus -> check options
//   -> aclInit, aclrtSetDevice, events and stream -> HCCL_TEST_* / HCCL_BUFFSIZE from the env
//   -> root rank makes the root info, MPI broadcasts it -> HcclCommInitRootInfo(Config)
//   -> for each size: buffers, input, warm-up calls, [record start, N calls, record end],
//      aclrtEventElapsedTime, one more call on fresh input, check, one table row
//   -> HcclCommDestroy, aclrtResetDevice, aclFinalize, MPI_Finalize.
#ifndef HCCL_TEST_BENCH_H_
#define HCCL_TEST_BENCH_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <utility>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_prof.h"
#include "hccl/hccl.h"
#include "hccl/hccl_types.h"

namespace hccl_test {

// Prints where an ACL call failed and returns its code from the calling function.
#define HT_ACL(call)                                                                        \
  do {                                                                                      \
    aclError ht_rc_ = (call);                                                               \
    if (ht_rc_ != ACL_SUCCESS) {                                                            \
      printf("acl interface return err %s:%d, retcode: %d.\n", __FILE__, __LINE__, ht_rc_); \
      if (ht_rc_ == ACL_ERROR_RT_MEMORY_ALLOCATION) {                                       \
        printf(                                                                             \
            "memory allocation error, check whether the current memory space is "           \
            "sufficient.\n");                                                               \
      }                                                                                     \
      return ht_rc_;                                                                        \
    }                                                                                       \
  } while (0)

// The same for an HCCL call.
#define HT_HCCL(call)                                                                        \
  do {                                                                                       \
    HcclResult ht_rc_ = (call);                                                              \
    if (ht_rc_ != HCCL_SUCCESS) {                                                            \
      printf("hccl interface return err %s:%d, retcode: %d \n", __FILE__, __LINE__, ht_rc_); \
      return ht_rc_;                                                                         \
    }                                                                                        \
  } while (0)

// What the command line and the environment ask for (defaults as hccl_test's).
struct Options {
  long min_bytes_arg = 64L * 1024 * 1024;  // -b
  long max_bytes_arg = 64L * 1024 * 1024;  // -e
  long step_bytes_arg = 0;                 // -i
  bool step_bytes_given = false;
  double step_factor = 1.0;  // -f
  bool step_factor_given = false;
  int iters = 20;                   // -n
  int warmup_iters = 10;            // -w
  int reduce_op = HCCL_REDUCE_SUM;  // -o (-1: unknown name)
  bool reduce_op_given = false;
  int dtype = HCCL_DATA_TYPE_FP32;  // -d (-1: unknown name)
  int root = 0;                     // -r
  int check = 1;                    // -c: 0 off, 1 quiet, 2 verbose
  int npus = -1;                    // -p (default: the device count)
  bool npus_given = false;
  int zero_copy = 0;         // -z
  int symmetric_memory = 0;  // -m
  bool nslb = false;         // -s
  int only_device_time = 0;  // -t
  // From the environment.
  int profiling = 0;                     // HCCL_TEST_PROFILING
  unsigned long long buffsize_mb = 200;  // HCCL_BUFFSIZE
};

// The sizes the run steps through, after the checks and any rank-count alignment.
struct SizePlan {
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  uint64_t step_bytes = 0;
  double step_factor = 1.0;
  // The size after `size` (the next loop value); == size when the plan cannot advance.
  uint64_t Next(uint64_t size) const;
};

// Buffer sizes of one op at one data size.
struct Layout {
  uint64_t count = 0;        // the count passed to the HCCL call (per rank / per block)
  uint64_t block_bytes = 0;  // count * element size
  uint64_t send_bytes = 0;
  uint64_t recv_bytes = 0;
};

class Bench {
 public:
  Bench();
  virtual ~Bench();

  // 0 to go on, 1 after --help, -1 on a bad option (message printed).
  int ParseArgs(int argc, char* argv[]);
  // Rank, size and device from MPI and the device count (the count needs no aclInit).
  int FindPlace();
  int CheckOptions();
  int InitDevice();
  int ReadEnv();
  int Run();  // communicator, every size, teardown; 0 when every call and check passed
  int FinishEnv();

 protected:
  // --- what an op provides ---
  // Sizes for the element count of the current data size (ceil(data bytes / element size)).
  virtual Layout Plan(uint64_t elements) const = 0;
  // Bytes the bandwidth column divides by the time.
  virtual uint64_t AlgBytes(const Layout& l) const = 0;
  // True when the op takes -o (reductions); others warn that -o is ignored.
  virtual bool TakesReduceOp() const { return false; }
  // reduce_scatter and reduce_scatterv: sizes are aligned to the rank count.
  virtual bool AlignsToRanks() const { return false; }
  // Turns the check off for combinations whose expected values overflow.
  virtual void SkipCheckOnOverflow() {}
  // Writes this rank's input into host_in_ (cur_.send_bytes of host memory).
  virtual int FillInput() = 0;
  // False where the op reads no input (broadcast and scatter: ranks other than the root).
  virtual bool InputOnThisRank() const { return true; }
  // Fills expected_ (host) with what this rank must hold; called only when checking.
  virtual int WriteExpected() { return 0; }
  // One call of the op on stream_.
  virtual HcclResult Call() = 0;
  // Copies the result back and compares; the number of wrong elements (or blocks).
  virtual int Verify() = 0;

  // --- helpers for ops ---
  // hccl_test's "verification is off" switch: prints the warning once on the root rank.
  void TurnCheckOff(const char* why);
  // Input or expected buffer of n bytes in host memory (aclrtMallocHost), freed per size.
  int HostBuffer(void** p, uint64_t bytes);
  // Copies `bytes` of a device buffer into a fresh host buffer.
  int ReadBack(const void* dev, uint64_t bytes, void** host);
  int ElementSize() const;

  Options opt_;
  int rank_ = 0;
  int nranks_ = 0;
  uint32_t device_ = 0;
  uint32_t device_count_ = 0;
  HcclComm comm_ = nullptr;
  aclrtStream stream_ = nullptr;
  Layout cur_;              // the current size's layout
  uint64_t data_size_ = 0;  // the current size, as printed
  void* send_ = nullptr;    // device buffers of the current size
  void* recv_ = nullptr;
  void* host_in_ = nullptr;
  void* expected_ = nullptr;
  void* readback_ = nullptr;
  static const int kValue = 2;  // the value reductions start from on every rank

 private:
  int PlanSizes();
  int InitComm();
  int InitCommWithConfig(const HcclRootInfo& root_info);
  int RunOneSize();
  int CopyInput();
  int TimedCalls(float* ms);
  int Report(float ms, int errors);
  void FreeHostBuffers();
  int DestroyDevice();
  uint64_t LargestPlannedSize(bool inclusive) const;

  // Buffers (buffers.cc): plain aclrtMalloc, zero-copy (reserved range + physical pieces
  // activated in the communicator) or one registered symmetric window.
  int ReserveZeroCopyRange();
  int ExtendZeroCopyMapping(uint64_t send_bytes, uint64_t recv_bytes);
  int ReleaseZeroCopy();
  int RegisterSymmetricWindow();
  int DeregisterSymmetricWindow();
  int AllocateBuffers(uint64_t send_bytes, uint64_t recv_bytes);
  int FreeBuffers();
  uint64_t SymmetricBytes();

  SizePlan plan_;
  bool header_printed_ = false;
  bool check_off_warned_ = false;
  int failures_ = 0;
  aclrtEvent start_event_ = nullptr;
  aclrtEvent end_event_ = nullptr;
  aclrtEvent sync_event_ = nullptr;  // -t: holds the stream until every call is queued
  aclrtStream sync_stream_ = nullptr;
  aclprofConfig* prof_config_ = nullptr;
  // Zero copy.
  void* range_base_ = nullptr;
  uint64_t range_bytes_ = 0;
  uint64_t mapped_bytes_ = 0;
  size_t piece_granularity_ = 2 * 1024 * 1024;
  aclrtPhysicalMemProp phys_prop_;
  std::vector<std::pair<void*, aclrtDrvMemHandle> > pieces_;
  // Symmetric memory.
  void* window_base_ = nullptr;
  aclrtDrvMemHandle window_handle_ = nullptr;
  HcclCommSymWindow window_ = nullptr;
  uint64_t symmetric_bytes_ = 0;
};

// Defined by each program (ops/*.cc): the op it measures.
Bench* MakeBench();

}  // namespace hccl_test

#endif  // HCCL_TEST_BENCH_H_
