// Virtual memory (aclrtReserveMemAddress, aclrtMallocPhysical, aclrtMapMem): mapped pieces are
// device memory, adjacent pieces of one reservation one range, holes and the reservation's end
// fault like unmapped device addresses; every misuse gives CANN's code and one ERROR line.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"
#include "runtime/device_memory.h"

namespace vigil::rt {
namespace {

#define EXPECT_ONE_ERROR(expr, code, needle)                                           \
  do {                                                                                 \
    const int before_ = testing::CountRuntimeErrors();                                 \
    EXPECT_EQ((expr), (code)) << #expr;                                                \
    EXPECT_EQ(testing::CountRuntimeErrors(), before_ + 1) << #expr;                    \
    std::string line_ = testing::LastRuntimeError();                                   \
    EXPECT_NE(line_.find(needle), std::string::npos) << #expr << " logged: " << line_; \
  } while (0)

class VirtualMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("VIGIL_DEVICE_MEMORY");
    testing::UseTempLogDir();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(
        aclrtMemGetAllocationGranularity(&prop_, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &page_),
        ACL_SUCCESS);
  }
  void TearDown() override {
    aclrtResetDevice(0);
    unsetenv("VIGIL_DEVICE_MEMORY");
    ReloadEnvForTesting();
  }
  // A physical allocation of `pages` pages mapped at page `at` of the reservation `base`.
  aclrtDrvMemHandle MapPages(char* base, size_t at, size_t pages) {
    aclrtDrvMemHandle h = nullptr;
    EXPECT_EQ(aclrtMallocPhysical(&h, pages * page_, &prop_, 0), ACL_SUCCESS);
    EXPECT_EQ(aclrtMapMem(base + at * page_, pages * page_, 0, h, 0), ACL_SUCCESS);
    return h;
  }
  void UnmapAndFree(char* at, aclrtDrvMemHandle h) {
    EXPECT_EQ(aclrtUnmapMem(at), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  }
  aclrtPhysicalMemProp prop_{ACL_MEM_HANDLE_TYPE_NONE,
                             ACL_MEM_ALLOCATION_TYPE_PINNED,
                             ACL_HBM_MEM_HUGE,
                             {0, ACL_MEM_LOCATION_TYPE_DEVICE},
                             0};
  size_t page_ = 0;
};

TEST_F(VirtualMemoryTest, GranularityIsThePageAndTwoMegabytes) {
  EXPECT_EQ(page_, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  size_t recommended = 0;
  ASSERT_EQ(aclrtMemGetAllocationGranularity(&prop_, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                                             &recommended),
            ACL_SUCCESS);
  EXPECT_EQ(recommended, size_t{2} << 20);
  EXPECT_ONE_ERROR(
      aclrtMemGetAllocationGranularity(&prop_, ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, &recommended),
      ACL_ERROR_INVALID_PARAM, "option");
  aclrtPhysicalMemProp ddr = prop_;
  ddr.memAttr = ACL_DDR_MEM_HUGE;
  EXPECT_ONE_ERROR(
      aclrtMemGetAllocationGranularity(&ddr, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &recommended),
      ACL_ERROR_INVALID_PARAM, "memAttr");
}

TEST_F(VirtualMemoryTest, MappedPiecesAreDeviceMemoryAndCopiesMaySpanAdjacentOnes) {
  char* base = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(reinterpret_cast<void**>(&base), 8 * page_, 0, nullptr, 1),
            ACL_SUCCESS);
  EXPECT_EQ(DeviceMemory::Instance().State(base, page_), AddrState::kUnmapped);
  // Mapped as hccl_test's zero-copy mode grows: one piece, then the next right after it.
  aclrtDrvMemHandle first = MapPages(base, 0, 2);
  aclrtDrvMemHandle second = MapPages(base, 2, 3);
  EXPECT_EQ(DeviceMemory::Instance().State(base, 2 * page_), AddrState::kLive);
  EXPECT_EQ(DeviceMemory::Instance().State(base, 5 * page_), AddrState::kLive);
  EXPECT_EQ(DeviceMemory::Instance().State(base + page_, 3 * page_), AddrState::kLive);

  std::vector<char> host(5 * page_);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<char>(i * 7);
  ASSERT_EQ(aclrtMemcpy(base, 5 * page_, host.data(), host.size(), ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);
  std::vector<char> back(5 * page_, 0);
  ASSERT_EQ(aclrtMemcpy(back.data(), back.size(), base, back.size(), ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS);
  EXPECT_EQ(back, host);
  // Across the seam, from the middle of one piece into the other, on a stream as well.
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemsetAsync(base + page_, 2 * page_, 9, 2 * page_, stream), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(base[page_], 9);
  EXPECT_EQ(base[3 * page_ - 1], 9);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);

  UnmapAndFree(base + 2 * page_, second);
  UnmapAndFree(base, first);
  EXPECT_EQ(aclrtReleaseMemAddress(base), ACL_SUCCESS);
}

TEST_F(VirtualMemoryTest, HolesAndTheReservationEndFault) {
  char* base = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(reinterpret_cast<void**>(&base), 4 * page_, 0, nullptr, 0),
            ACL_SUCCESS);
  aclrtDrvMemHandle low = MapPages(base, 0, 1);   // page 0
  aclrtDrvMemHandle high = MapPages(base, 2, 2);  // pages 2-3; page 1 is a hole
  std::vector<char> host(3 * page_, 'h');
  // From a piece into the hole: a fault, and nothing copied.
  EXPECT_ONE_ERROR(aclrtMemcpy(base, 2 * page_, host.data(), 2 * page_, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_RT_SYS_DMA, "touches unmapped virtual memory");
  EXPECT_EQ(base[0], 0);
  // Starting in the hole.
  EXPECT_ONE_ERROR(aclrtMemcpy(host.data(), page_, base + page_ + 8, 16, ACL_MEMCPY_DEVICE_TO_HOST),
                   ACL_ERROR_RT_SYS_DMA, "touches unmapped virtual memory");
  // Past the reservation's end, from its last piece.
  EXPECT_ONE_ERROR(
      aclrtMemcpy(base + 3 * page_, 2 * page_, host.data(), 2 * page_, ACL_MEMCPY_HOST_TO_DEVICE),
      ACL_ERROR_RT_SYS_DMA, "past the end");
  EXPECT_EQ(DeviceMemory::Instance().State(base + 2 * page_, 3 * page_), AddrState::kOverflow);
  // A host range reaching into the reservation is not host memory either.
  EXPECT_EQ(DeviceMemory::Instance().State(base - 16, 32), AddrState::kUnmapped);

  // A stream task faults the same way; the stream reports it at synchronize.
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  ASSERT_EQ(
      aclrtMemcpyAsync(base, 2 * page_, host.data(), 2 * page_, ACL_MEMCPY_HOST_TO_DEVICE, stream),
      ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);

  // Unmapped pieces are holes again; a released reservation is freed memory.
  UnmapAndFree(base + 2 * page_, high);
  EXPECT_EQ(DeviceMemory::Instance().State(base + 2 * page_, 8), AddrState::kUnmapped);
  UnmapAndFree(base, low);
  EXPECT_EQ(aclrtReleaseMemAddress(base), ACL_SUCCESS);
  EXPECT_EQ(DeviceMemory::Instance().State(base, 8), AddrState::kFreed);
  EXPECT_ONE_ERROR(aclrtMemcpy(base, 8, host.data(), 8, ACL_MEMCPY_HOST_TO_DEVICE),
                   ACL_ERROR_RT_SYS_DMA, "released virtual memory");
}

TEST_F(VirtualMemoryTest, MisusesGiveCannCodesAndOneErrorLine) {
  char* base = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(reinterpret_cast<void**>(&base), 4 * page_, 0, nullptr, 0),
            ACL_SUCCESS);
  aclrtDrvMemHandle h = MapPages(base, 0, 2);
  aclrtDrvMemHandle other = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&other, 2 * page_, &prop_, 0), ACL_SUCCESS);

  EXPECT_ONE_ERROR(aclrtMapMem(base + page_, 2 * page_, 0, other, 0), ACL_ERROR_RT_PARAM_INVALID,
                   "overlaps the mapping");
  EXPECT_ONE_ERROR(aclrtMapMem(base + 3 * page_, 2 * page_, 0, other, 0),
                   ACL_ERROR_RT_PARAM_INVALID, "runs past the end of its reservation");
  EXPECT_ONE_ERROR(aclrtMapMem(base + 2 * page_ + 8, 2 * page_, 0, other, 0),
                   ACL_ERROR_RT_PARAM_INVALID, "granularity");
  EXPECT_ONE_ERROR(aclrtMapMem(base + 2 * page_, page_, 0, other, 0), ACL_ERROR_RT_PARAM_INVALID,
                   "physical allocation's size");
  std::vector<char> not_reserved(4 * page_);
  EXPECT_ONE_ERROR(aclrtMapMem(not_reserved.data(), 2 * page_, 0, other, 0),
                   ACL_ERROR_RT_PARAM_INVALID, "not inside an address range reserved");
  EXPECT_ONE_ERROR(aclrtMapMem(base + 2 * page_, 2 * page_, 1, other, 0), ACL_ERROR_INVALID_PARAM,
                   "offset");
  EXPECT_ONE_ERROR(aclrtMapMem(base + 2 * page_, 2 * page_, 0, other, 1), ACL_ERROR_INVALID_PARAM,
                   "flags");

  EXPECT_ONE_ERROR(aclrtUnmapMem(base + 2 * page_), ACL_ERROR_RT_PARAM_INVALID,
                   "nothing is mapped there");
  EXPECT_ONE_ERROR(aclrtUnmapMem(base + page_), ACL_ERROR_RT_PARAM_INVALID,
                   "inside the mapping at");
  EXPECT_ONE_ERROR(aclrtReleaseMemAddress(base), ACL_ERROR_RT_PARAM_INVALID,
                   "still has 1 mapping(s)");
  EXPECT_ONE_ERROR(aclrtReleaseMemAddress(base + page_), ACL_ERROR_RT_PARAM_INVALID,
                   "is not the start of an address range reserved");
  EXPECT_ONE_ERROR(aclrtFreePhysical(h), ACL_ERROR_RT_PARAM_INVALID, "is still mapped at");
  EXPECT_ONE_ERROR(aclrtFree(base), ACL_ERROR_RT_MEMORY_FREE, "aclrtUnmapMem");
  int not_a_handle = 0;
  EXPECT_ONE_ERROR(aclrtFreePhysical(&not_a_handle), ACL_ERROR_RT_INVALID_HANDLE,
                   "not a physical allocation");
  EXPECT_ONE_ERROR(aclrtMapMem(base + 2 * page_, 2 * page_, 0, &not_a_handle, 0),
                   ACL_ERROR_RT_INVALID_HANDLE, "not a physical allocation");

  void* out = nullptr;
  EXPECT_ONE_ERROR(aclrtReserveMemAddress(&out, 0, 0, nullptr, 0), ACL_ERROR_INVALID_PARAM, "size");
  EXPECT_ONE_ERROR(aclrtReserveMemAddress(&out, page_, 4096, nullptr, 0), ACL_ERROR_INVALID_PARAM,
                   "alignment");
  EXPECT_ONE_ERROR(aclrtReserveMemAddress(&out, page_, 0, base, 0), ACL_ERROR_INVALID_PARAM,
                   "expectPtr");
  EXPECT_ONE_ERROR(aclrtReserveMemAddress(&out, page_, 0, nullptr, 2), ACL_ERROR_INVALID_PARAM,
                   "flags");
  aclrtPhysicalMemProp bad = prop_;
  bad.location.type = ACL_MEM_LOCATION_TYPE_HOST;
  EXPECT_ONE_ERROR(aclrtMallocPhysical(&other, page_, &bad, 0), ACL_ERROR_INVALID_PARAM,
                   "location.type");
  bad = prop_;
  bad.location.id = 99;
  EXPECT_ONE_ERROR(aclrtMallocPhysical(&other, page_, &bad, 0), ACL_ERROR_INVALID_PARAM,
                   "location.id");

  // Mapped after all the rejections: the failed calls changed nothing.
  ASSERT_EQ(aclrtMapMem(base + 2 * page_, 2 * page_, 0, other, 0), ACL_SUCCESS);
  UnmapAndFree(base + 2 * page_, other);
  UnmapAndFree(base, h);
  EXPECT_EQ(aclrtReleaseMemAddress(base), ACL_SUCCESS);
  EXPECT_ONE_ERROR(aclrtReleaseMemAddress(base), ACL_ERROR_RT_PARAM_INVALID, "released already");
  EXPECT_ONE_ERROR(aclrtFreePhysical(h), ACL_ERROR_RT_INVALID_HANDLE, "freed already");
}

TEST_F(VirtualMemoryTest, PhysicalMemoryCountsAgainstTheDeviceBudget) {
  setenv("VIGIL_DEVICE_MEMORY", "1M", 1);
  ReloadEnvForTesting();
  size_t free_before = 0, total = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, &free_before, &total), ACL_SUCCESS);
  EXPECT_EQ(total, size_t{1} << 20);
  aclrtDrvMemHandle h = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h, 512 << 10, &prop_, 0), ACL_SUCCESS);
  size_t free_after = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, &free_after, &total), ACL_SUCCESS);
  EXPECT_EQ(free_before - free_after, size_t{512} << 10);
  aclrtDrvMemHandle too_much = nullptr;
  EXPECT_ONE_ERROR(aclrtMallocPhysical(&too_much, 768 << 10, &prop_, 0),
                   ACL_ERROR_RT_MEMORY_ALLOCATION, "out of device memory");
  // Reserving address space costs no budget.
  void* base = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&base, size_t{64} << 20, 0, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtReleaseMemAddress(base), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreePhysical(h), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM_HUGE, &free_after, &total), ACL_SUCCESS);
  EXPECT_EQ(free_after, free_before);
}

}  // namespace
}  // namespace vigil::rt
