// Where the send and receive buffers live, in the three ways hccl_test places them:
//  - plain: aclrtMalloc per size;
//  - zero copy (-z 1): one address range reserved up front (aclrtReserveMemAddress) and handed
//    to the communicator (HcclCommSetMemoryRange); as sizes grow, physical pieces are allocated,
//    mapped at the end of what is mapped, and activated (HcclCommActivateCommMemory);
//  - symmetric memory (-m 1): one mapped allocation for the largest size, registered as a
//    window (HcclCommSymWinRegister) on every rank.
#include <string.h>

#include "bench.h"
#include "hccl/hccl_comm.h"
#include "mpi_c.h"

namespace hccl_test {

namespace {

uint64_t RoundUp(uint64_t n, uint64_t to) {
  return (n + to - 1) / to * to;
}

// The memory kind hccl_test asks for: DDR on the SoCs without HBM, else HBM.
aclrtMemAttr MemAttrForSoc() {
  static const char* const kDdrSocs[] = {"Ascend310P", "Ascend310B", "Ascend610", "BS9SX1A",
                                         "BS9SX2A",    "MC61AM21A",  "AS31XM1X"};
  const char* soc = aclrtGetSocName();
  for (size_t i = 0; soc != nullptr && i < sizeof(kDdrSocs) / sizeof(kDdrSocs[0]); ++i) {
    if (strncmp(soc, kDdrSocs[i], strlen(kDdrSocs[i])) == 0) return ACL_DDR_MEM_HUGE;
  }
  return ACL_HBM_MEM_HUGE;
}

}  // namespace

int Bench::ReserveZeroCopyRange() {
  phys_prop_.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  phys_prop_.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  phys_prop_.memAttr = MemAttrForSoc();
  phys_prop_.location.id = device_;
  phys_prop_.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  phys_prop_.reserve = 0;
  if (aclrtMemGetAllocationGranularity(&phys_prop_, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM,
                                       &piece_granularity_) != ACL_SUCCESS ||
      piece_granularity_ == 0) {
    piece_granularity_ = 2 * 1024 * 1024;
  }
  const uint64_t elem = static_cast<uint64_t>(ElementSize());
  const Layout last = Plan((LargestPlannedSize(true) + elem - 1) / elem);
  range_bytes_ =
      RoundUp(last.send_bytes, piece_granularity_) + RoundUp(last.recv_bytes, piece_granularity_);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (aclrtGetMemInfo(phys_prop_.memAttr, &free_bytes, &total_bytes) != ACL_SUCCESS) {
    printf("Get ddr memory info failed.");
    return HCCL_E_MEMORY;
  }
  if (range_bytes_ > free_bytes) {
    printf(
        "Alloc memory size is larger than free memory, allocSize: %llu, freeMem: %zu, "
        "totalMem: %zu\n",
        static_cast<unsigned long long>(range_bytes_), free_bytes, total_bytes);
    return HCCL_E_MEMORY;
  }
  if (aclrtReserveMemAddress(&range_base_, range_bytes_, 0, nullptr, 1) != ACL_SUCCESS) {
    printf("[%s][%d] aclrtReserveMemAddress failed.\n", __FUNCTION__, __LINE__);
    range_base_ = nullptr;
    return -1;
  }
  return 0;
}

int Bench::ExtendZeroCopyMapping(uint64_t send_bytes, uint64_t recv_bytes) {
  if (!opt_.zero_copy || send_bytes + recv_bytes == 0) return 0;
  const uint64_t need =
      RoundUp(send_bytes, piece_granularity_) + RoundUp(recv_bytes, piece_granularity_);
  if (mapped_bytes_ >= need) return 0;
  const uint64_t grow = need - mapped_bytes_;
  void* at = static_cast<char*>(range_base_) + mapped_bytes_;
  aclrtDrvMemHandle handle = nullptr;
  const char* failed = nullptr;
  int rc = aclrtMallocPhysical(&handle, grow, &phys_prop_, 0);
  if (rc != ACL_SUCCESS) {
    failed = "aclrtMallocPhysical";
  } else if ((rc = aclrtMapMem(at, grow, 0, handle, 0)) != ACL_SUCCESS) {
    failed = "aclrtMapMem";
    aclrtFreePhysical(handle);
  } else if ((rc = HcclCommActivateCommMemory(comm_, at, grow, 0, handle, 0)) != HCCL_SUCCESS) {
    failed = "HcclCommActivateCommMemory";
    aclrtUnmapMem(at);
    aclrtFreePhysical(handle);
  }
  if (failed != nullptr) {
    printf("[%s][%d] %s failed.\n", __FUNCTION__, __LINE__, failed);
    ReleaseZeroCopy();
    return rc;
  }
  pieces_.push_back(std::make_pair(at, handle));
  mapped_bytes_ = need;
  return 0;
}

int Bench::ReleaseZeroCopy() {
  for (size_t i = 0; i < pieces_.size(); ++i) {
    HT_HCCL(HcclCommDeactivateCommMemory(comm_, pieces_[i].first));
    HT_ACL(aclrtUnmapMem(pieces_[i].first));
    HT_ACL(aclrtFreePhysical(pieces_[i].second));
  }
  pieces_.clear();
  mapped_bytes_ = 0;
  return 0;
}

uint64_t Bench::SymmetricBytes() {
  if (symmetric_bytes_ == 0) {
    const uint64_t elem = static_cast<uint64_t>(ElementSize());
    const Layout last = Plan((LargestPlannedSize(false) + elem - 1) / elem);
    symmetric_bytes_ = last.send_bytes + last.recv_bytes;
  }
  return symmetric_bytes_;
}

int Bench::RegisterSymmetricWindow() {
  if (!opt_.symmetric_memory) return 0;
  const uint64_t bytes = SymmetricBytes();
  int32_t device = 0;
  HT_ACL(aclrtGetDevice(&device));
  aclrtPhysicalMemProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  prop.memAttr = ACL_HBM_MEM_HUGE;
  prop.location.id = static_cast<uint32_t>(device);
  prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  size_t granularity = 0;
  if (aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                                       &granularity) != ACL_SUCCESS ||
      granularity == 0) {
    printf("[%s][%d] GetAllocationGranularity failed.\n", __FUNCTION__, __LINE__);
    return HCCL_E_RUNTIME;
  }
  const uint64_t alloc = RoundUp(bytes, granularity);
  if (aclrtReserveMemAddress(&window_base_, alloc, 0, nullptr, 1) != ACL_SUCCESS) {
    printf("[%s][%d] aclrtReserveMemAddress failed.\n", __FUNCTION__, __LINE__);
    window_base_ = nullptr;
    return HCCL_E_RUNTIME;
  }
  if (aclrtMallocPhysical(&window_handle_, alloc, &prop, 0) != ACL_SUCCESS) {
    printf("[%s][%d] aclrtMallocPhysical failed.\n", __FUNCTION__, __LINE__);
    aclrtReleaseMemAddress(window_base_);
    window_base_ = nullptr;
    return HCCL_E_RUNTIME;
  }
  if (aclrtMapMem(window_base_, alloc, 0, window_handle_, 0) != ACL_SUCCESS) {
    printf("[%s][%d] aclrtMapMem failed.\n", __FUNCTION__, __LINE__);
    aclrtFreePhysical(window_handle_);
    aclrtReleaseMemAddress(window_base_);
    window_base_ = nullptr;
    window_handle_ = nullptr;
    return HCCL_E_RUNTIME;
  }
  HT_HCCL(HcclCommSymWinRegister(comm_, window_base_, bytes, &window_, 1));
  return 0;
}

int Bench::DeregisterSymmetricWindow() {
  if (!opt_.symmetric_memory || window_base_ == nullptr) return 0;
  if (window_ != nullptr) HT_HCCL(HcclCommSymWinDeregister(window_));
  window_ = nullptr;
  // Every rank is done with every peer's window before any of them unmaps its own.
  MPI_Barrier(MPI_COMM_WORLD);
  HT_ACL(aclrtUnmapMem(window_base_));
  HT_ACL(aclrtFreePhysical(window_handle_));
  HT_ACL(aclrtReleaseMemAddress(window_base_));
  window_base_ = nullptr;
  window_handle_ = nullptr;
  return 0;
}

int Bench::AllocateBuffers(uint64_t send_bytes, uint64_t recv_bytes) {
  if (opt_.zero_copy) {
    send_ = range_base_;
    recv_ = static_cast<char*>(range_base_) + RoundUp(send_bytes, piece_granularity_);
  } else if (opt_.symmetric_memory) {
    send_ = window_base_;
    recv_ = static_cast<char*>(window_base_) + send_bytes;
  } else {
    if (send_bytes != 0) HT_ACL(aclrtMalloc(&send_, send_bytes, ACL_MEM_MALLOC_HUGE_ONLY));
    if (recv_bytes != 0) HT_ACL(aclrtMalloc(&recv_, recv_bytes, ACL_MEM_MALLOC_HUGE_ONLY));
  }
  return 0;
}

int Bench::FreeBuffers() {
  if (!opt_.zero_copy && !opt_.symmetric_memory) {
    if (send_ != nullptr) HT_ACL(aclrtFree(send_));
    if (recv_ != nullptr) HT_ACL(aclrtFree(recv_));
  }
  send_ = nullptr;
  recv_ = nullptr;
  return 0;
}

}  // namespace hccl_test
