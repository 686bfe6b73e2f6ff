// Device memory: budget, address map (live / freed / overflow), register, bad frees, and a
// Free racing copies.
#include "runtime/device_memory.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "rt_test_util.h"

namespace vigil::rt {
namespace {

class DeviceMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("VIGIL_DEVICE_MEMORY");
    testing::UseTempLogDir();
  }
  void TearDown() override {
    unsetenv("VIGIL_DEVICE_MEMORY");
    ReloadEnvForTesting();
  }
  DeviceMemory& mem = DeviceMemory::Instance();
};

TEST_F(DeviceMemoryTest, AllocIsAlignedZeroedAndLive) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 1000, &p), ACL_SUCCESS);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<char*>(p)[i], 0);
  AddrCheck c = mem.Check(p, 1000);
  EXPECT_EQ(c.state, AddrState::kLive);
  EXPECT_EQ(c.device, 0);
  EXPECT_EQ(c.alloc_size, 1000u);
  EXPECT_EQ(c.purpose, "user");
  EXPECT_EQ(mem.Check(static_cast<char*>(p) + 10, 990).state, AddrState::kLive);
  EXPECT_EQ(mem.Free(p), ACL_SUCCESS);
}

TEST_F(DeviceMemoryTest, BudgetExhaustionFailsWithOneErrorLine) {
  setenv("VIGIL_DEVICE_MEMORY", "1M", 1);
  ReloadEnvForTesting();
  ASSERT_EQ(mem.Budget(), 1u << 20);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(mem.Alloc(1, 600 << 10, &a), ACL_SUCCESS);
  EXPECT_EQ(mem.UsedBytes(1), 600u << 10);
  const int before = testing::CountRuntimeErrors();
  EXPECT_EQ(mem.Alloc(1, 600 << 10, &b), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 1);
  std::string line = testing::LastRuntimeError();
  EXPECT_NE(line.find("device 1"), std::string::npos) << line;
  EXPECT_NE(line.find("size=614400"), std::string::npos) << line;
  EXPECT_NE(line.find("used=614400"), std::string::npos) << line;
  EXPECT_NE(line.find("budget=1048576"), std::string::npos) << line;
  // Budgets are per device.
  void* other = nullptr;
  ASSERT_EQ(mem.Alloc(2, 600 << 10, &other), ACL_SUCCESS);
  EXPECT_EQ(mem.Free(other), ACL_SUCCESS);
  // Freeing returns the budget.
  EXPECT_EQ(mem.Free(a), ACL_SUCCESS);
  EXPECT_EQ(mem.UsedBytes(1), 0u);
  ASSERT_EQ(mem.Alloc(1, 600 << 10, &b), ACL_SUCCESS);
  EXPECT_EQ(mem.Free(b), ACL_SUCCESS);
}

TEST_F(DeviceMemoryTest, AclMallocBudgetAndMemInfo) {
  setenv("VIGIL_DEVICE_MEMORY", "64K", 1);
  ReloadEnvForTesting();
  ASSERT_EQ(aclrtSetDevice(5), ACL_SUCCESS);
  size_t free_bytes = 0;
  size_t total = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), ACL_SUCCESS);
  EXPECT_EQ(total, 64u << 10);
  EXPECT_EQ(free_bytes, 64u << 10);
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 16 << 10, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), ACL_SUCCESS);
  EXPECT_EQ(free_bytes, (48u << 10) - 32);  // aclrtMalloc pads 32 bytes, as CANN
  void* q = nullptr;
  const int before = testing::CountRuntimeErrors();
  EXPECT_EQ(aclrtMalloc(&q, 64 << 10, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 1);
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(5), ACL_SUCCESS);
}

TEST_F(DeviceMemoryTest, CopyIntoFreedMemoryFaultsAndCopiesNothing) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 4096, &p, "CCL input buffer"), ACL_SUCCESS);
  ASSERT_EQ(mem.Free(p), ACL_SUCCESS);
  AddrCheck c = mem.Check(p, 16);
  EXPECT_EQ(c.state, AddrState::kFreed);
  EXPECT_EQ(c.purpose, "CCL input buffer");
  EXPECT_EQ(c.alloc_base, reinterpret_cast<uintptr_t>(p));

  std::vector<char> host(128, 'x');
  CopyFault fault;
  EXPECT_EQ(mem.CheckedCopy(p, host.data(), 128, &fault), ACL_ERROR_RT_SYS_DMA);
  EXPECT_TRUE(fault.faulted);
  EXPECT_TRUE(fault.on_dst);
  EXPECT_EQ(fault.check.state, AddrState::kFreed);
  std::string text = DescribeCopyFault(fault, p, host.data(), 128);
  EXPECT_NE(text.find("freed"), std::string::npos);
  EXPECT_NE(text.find("CCL input buffer"), std::string::npos);

  // Source side: reading freed memory into a host buffer leaves the host buffer untouched.
  std::vector<char> out(128, 'y');
  EXPECT_EQ(mem.CheckedCopy(out.data(), static_cast<char*>(p) + 64, 128, &fault),
            ACL_ERROR_RT_SYS_DMA);
  EXPECT_FALSE(fault.on_dst);
  EXPECT_EQ(out, std::vector<char>(128, 'y'));

  // A host range that only overlaps the freed range's tail is caught too.
  EXPECT_EQ(mem.Check(static_cast<char*>(p) - 8, 16).state, AddrState::kFreed);
}

// The per-op guards (with_purpose=false, CheckedCopy) remember each thread's last live hits;
// a Free or Unregister between two guards must show at once, on every thread.
TEST_F(DeviceMemoryTest, RepeatedGuardsSeeAFreeAtOnce) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 4096, &p, "user"), ACL_SUCCESS);
  std::vector<char> host(64, 'z');
  CopyFault fault;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(mem.Check(p, 64, false).state, AddrState::kLive);
    EXPECT_EQ(mem.CheckedCopy(p, host.data(), 64, &fault), ACL_SUCCESS);
  }
  EXPECT_EQ(mem.Check(p, 8192, false).state, AddrState::kOverflow);  // same allocation, too long
  ASSERT_EQ(mem.Free(p), ACL_SUCCESS);
  EXPECT_EQ(mem.Check(p, 64, false).state, AddrState::kFreed);
  EXPECT_EQ(mem.CheckedCopy(p, host.data(), 64, &fault), ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(fault.check.state, AddrState::kFreed);

  // Registered memory, checked from another thread before and after the Unregister.
  const size_t len = 64 << 10;
  void* shm = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shm, MAP_FAILED);
  ASSERT_EQ(mem.Register(0, shm, len, "CCL buffer"), ACL_SUCCESS);
  std::atomic<int> stage{0};
  AddrState before = AddrState::kHost, after = AddrState::kHost;
  std::thread other([&] {
    mem.Check(shm, 16, false);
    before = mem.Check(shm, 16, false).state;
    stage.store(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (stage.load() != 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    after = mem.Check(shm, 16, false).state;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stage.load() != 1 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_EQ(mem.Unregister(shm), ACL_SUCCESS);
  stage.store(2);
  other.join();
  EXPECT_EQ(before, AddrState::kLive);
  EXPECT_EQ(after, AddrState::kFreed);
  munmap(shm, len);
}

TEST_F(DeviceMemoryTest, CopyPastTheEndOfAnAllocationOverflows) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 100, &p), ACL_SUCCESS);
  std::vector<char> host(256, 'z');
  CopyFault fault;
  EXPECT_EQ(mem.CheckedCopy(p, host.data(), 100, &fault), ACL_SUCCESS);
  EXPECT_FALSE(fault.faulted);
  EXPECT_EQ(std::memcmp(p, host.data(), 100), 0);
  std::memset(p, 0, 100);
  EXPECT_EQ(mem.CheckedCopy(static_cast<char*>(p) + 50, host.data(), 100, &fault),
            ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(fault.check.state, AddrState::kOverflow);
  EXPECT_EQ(fault.check.alloc_size, 100u);
  EXPECT_EQ(static_cast<char*>(p)[50], 0);  // nothing copied
  // Starting in the page padding after the allocation is past its end as well.
  EXPECT_EQ(mem.Check(static_cast<char*>(p) + 100, 1).state, AddrState::kOverflow);
  EXPECT_EQ(mem.Free(p), ACL_SUCCESS);
}

TEST_F(DeviceMemoryTest, HostMemoryIsUnchecked) {
  std::vector<char> a(64, 'a');
  std::vector<char> b(64, 'b');
  EXPECT_EQ(mem.Check(a.data(), 64).state, AddrState::kHost);
  CopyFault fault;
  EXPECT_EQ(mem.CheckedCopy(b.data(), a.data(), 64, &fault), ACL_SUCCESS);
  EXPECT_EQ(a, b);
  EXPECT_EQ(mem.CheckedCopy(b.data(), a.data(), 0, &fault), ACL_SUCCESS);
}

TEST_F(DeviceMemoryTest, BadFreesFailWithOneErrorLineEach) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 256, &p), ACL_SUCCESS);
  int before = testing::CountRuntimeErrors();
  EXPECT_EQ(mem.Free(static_cast<char*>(p) + 8), ACL_ERROR_RT_MEMORY_FREE);  // interior
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 1);
  EXPECT_NE(testing::LastRuntimeError().find("interior"), std::string::npos);
  int local = 0;
  EXPECT_EQ(mem.Free(&local), ACL_ERROR_RT_MEMORY_FREE);  // foreign
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 2);
  EXPECT_NE(testing::LastRuntimeError().find("foreign"), std::string::npos);
  EXPECT_EQ(mem.Free(p), ACL_SUCCESS);
  EXPECT_EQ(mem.Free(p), ACL_ERROR_RT_MEMORY_FREE);  // double
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 3);
  EXPECT_NE(testing::LastRuntimeError().find("double free"), std::string::npos);
  EXPECT_EQ(mem.Free(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(testing::CountRuntimeErrors(), before + 4);
}

TEST_F(DeviceMemoryTest, RegisterChargesBudgetAndUnregisterMarksFreed) {
  setenv("VIGIL_DEVICE_MEMORY", "1M", 1);
  ReloadEnvForTesting();
  const size_t len = 512 << 10;
  void* shm = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shm, MAP_FAILED);
  ASSERT_EQ(mem.Register(3, shm, len, "CCL output buffer"), ACL_SUCCESS);
  EXPECT_EQ(mem.UsedBytes(3), len);
  EXPECT_EQ(mem.Check(shm, len).state, AddrState::kLive);
  EXPECT_EQ(mem.Register(3, static_cast<char*>(shm) + 4096, 4096, "overlap"),
            ACL_ERROR_INVALID_PARAM);
  void* big = nullptr;
  EXPECT_EQ(mem.Alloc(3, 600 << 10, &big), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(mem.Free(shm), ACL_ERROR_RT_MEMORY_FREE);  // registered memory is not ours to free
  ASSERT_EQ(mem.Unregister(shm), ACL_SUCCESS);
  EXPECT_EQ(mem.UsedBytes(3), 0u);
  EXPECT_EQ(mem.Unregister(shm), ACL_ERROR_RT_MEMORY_FREE);
  // Freed from Unregister on, even while the caller still has it mapped (comm destroyed with
  // an op in flight), and after the caller unmapped it.
  EXPECT_EQ(mem.Check(shm, 8).state, AddrState::kFreed);
  munmap(shm, len);
  AddrCheck c = mem.Check(static_cast<char*>(shm) + 100, 8);
  EXPECT_EQ(c.state, AddrState::kFreed);
  EXPECT_EQ(c.purpose, "CCL output buffer");
  std::vector<char> host(8, 1);
  CopyFault fault;
  EXPECT_EQ(mem.CheckedCopy(static_cast<char*>(shm) + 100, host.data(), 8, &fault),
            ACL_ERROR_RT_SYS_DMA);
  // Mapped again at the same address and registered again: the freed record is dropped.
  void* again = mmap(shm, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(again, shm);
  const size_t freed_before = mem.FreedRecordCount();
  ASSERT_EQ(mem.Register(3, shm, len, "CCL output buffer"), ACL_SUCCESS);
  EXPECT_EQ(mem.FreedRecordCount(), freed_before - 1);
  EXPECT_EQ(mem.Check(shm, 8).state, AddrState::kLive);
  ASSERT_EQ(mem.Unregister(shm), ACL_SUCCESS);
  munmap(shm, len);
}

TEST_F(DeviceMemoryTest, UnregisteredAddressReusedByHostMemoryIsHost) {
  const size_t len = 64 << 10;
  // A private reservation around the buffer keeps the test's addresses to itself.
  char* area = static_cast<char*>(
      mmap(nullptr, 3 * len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  ASSERT_NE(area, MAP_FAILED);
  void* shm = mmap(area + len, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
                   -1, 0);
  ASSERT_EQ(shm, area + len);
  ASSERT_EQ(mem.Register(0, shm, len, "CCL input buffer"), ACL_SUCCESS);
  ASSERT_EQ(mem.Unregister(shm), ACL_SUCCESS);
  EXPECT_EQ(mem.Check(shm, len).state, AddrState::kFreed);  // caller's mapping still there
  munmap(shm, len);
  EXPECT_EQ(mem.Check(shm, len).state, AddrState::kFreed);  // hole
  // Like a later host malloc whose new mapping covers the same addresses.
  void* host = mmap(area, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                    -1, 0);
  ASSERT_EQ(host, area);
  EXPECT_EQ(mem.Check(shm, len).state, AddrState::kHost);
  std::vector<char> src(len, 3);
  CopyFault fault;
  EXPECT_EQ(mem.CheckedCopy(shm, src.data(), len, &fault), ACL_SUCCESS);
  munmap(area, 3 * len);
}

TEST_F(DeviceMemoryTest, UnregisterAndUnmapFaultsAtOnce) {
  const size_t len = 64 << 10;
  void* shm = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shm, MAP_FAILED);
  ASSERT_EQ(mem.Register(4, shm, len, "CCL input buffer"), ACL_SUCCESS);
  ASSERT_EQ(mem.UnregisterAndUnmap(shm), ACL_SUCCESS);
  EXPECT_EQ(mem.UsedBytes(4), 0u);
  AddrCheck c = mem.Check(shm, len);
  EXPECT_EQ(c.state, AddrState::kFreed);
  EXPECT_EQ(c.device, 4);
  std::vector<char> src(len, 3);
  CopyFault fault;
  EXPECT_EQ(mem.CheckedCopy(shm, src.data(), len, &fault), ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(mem.UnregisterAndUnmap(shm), ACL_ERROR_RT_MEMORY_FREE);
  void* unaligned = nullptr;
  ASSERT_EQ(mem.Alloc(4, 64, &unaligned), ACL_SUCCESS);
  EXPECT_EQ(mem.UnregisterAndUnmap(unaligned), ACL_ERROR_RT_MEMORY_FREE);  // not registered
  EXPECT_EQ(mem.Free(unaligned), ACL_SUCCESS);
}

TEST_F(DeviceMemoryTest, FreedRecordsAreBounded) {
  for (size_t i = 0; i < DeviceMemory::kMaxFreedRecords + 200; ++i) {
    void* p = nullptr;
    ASSERT_EQ(mem.Alloc(0, 64, &p), ACL_SUCCESS);
    ASSERT_EQ(mem.Free(p), ACL_SUCCESS);
  }
  EXPECT_LE(mem.FreedRecordCount(), DeviceMemory::kMaxFreedRecords);
}

TEST_F(DeviceMemoryTest, GuardedRunsOnlyWhenRangesAreValid) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 256, &p), ACL_SUCCESS);
  bool ran = false;
  CopyFault fault;
  EXPECT_EQ(mem.Guarded(p, 256, p, 256, &fault, [&] { ran = true; }), ACL_SUCCESS);
  EXPECT_TRUE(ran);
  ran = false;
  EXPECT_EQ(mem.Guarded(p, 257, nullptr, 0, &fault, [&] { ran = true; }), ACL_ERROR_RT_SYS_DMA);
  EXPECT_FALSE(ran);
  EXPECT_EQ(mem.Free(p), ACL_SUCCESS);
}

// A Free racing copies into the same buffer: every copy either completes before the Free or
// fails cleanly after it; never a crash (run under TSan/ASan for the data-race half).
TEST_F(DeviceMemoryTest, ConcurrentFreeAndCheckedCopy) {
  std::vector<char> host(64 << 10, 'q');
  for (int round = 0; round < 20; ++round) {
    void* p = nullptr;
    ASSERT_EQ(mem.Alloc(0, host.size(), &p, "CCL input buffer"), ACL_SUCCESS);
    std::atomic<bool> go{false};
    std::atomic<int> ok{0};
    std::atomic<int> faulted{0};
    std::thread copier([&] {
      while (!go.load()) std::this_thread::yield();
      // Copy until the Free is seen (bounded in case it never is).
      for (int i = 0; i < 1000000 && faulted.load() == 0; ++i) {
        CopyFault fault;
        aclError rc = mem.CheckedCopy(p, host.data(), host.size(), &fault);
        (rc == ACL_SUCCESS ? ok : faulted).fetch_add(1);
      }
    });
    go = true;
    std::this_thread::sleep_for(std::chrono::microseconds(100 * (round % 5)));
    ASSERT_EQ(mem.Free(p), ACL_SUCCESS);
    copier.join();
    EXPECT_EQ(faulted.load(), 1);  // the first copy after the Free failed cleanly
  }
}

// A guard that runs lock-free (its ranges remembered live) still holds off a Free: the Free
// returns only after the guarded work is done, and the next guard sees the memory freed.
TEST_F(DeviceMemoryTest, FreeWaitsForALockFreeGuardInProgress) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 4096, &p, "user"), ACL_SUCCESS);
  std::atomic<int> stage{0};
  std::atomic<bool> work_done{false};
  CopyFault fault;
  std::thread worker([&] {
    CopyFault f;
    // The first guard looks the range up (and remembers it); the second runs lock-free.
    ASSERT_EQ(mem.Guarded(p, 64, nullptr, 0, &f, [] {}), ACL_SUCCESS);
    ASSERT_EQ(mem.Guarded(p, 64, nullptr, 0, &f,
                          [&] {
                            stage.store(1);
                            std::this_thread::sleep_for(std::chrono::milliseconds(50));
                            std::memset(p, 'w', 64);  // still mapped: the Free waits for us
                            work_done.store(true);
                          }),
              ACL_SUCCESS);
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (stage.load() != 1 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_EQ(mem.Free(p), ACL_SUCCESS);
  EXPECT_TRUE(work_done.load());
  worker.join();
  EXPECT_EQ(mem.Guarded(p, 64, nullptr, 0, &fault, [] {}), ACL_ERROR_RT_SYS_DMA);
  EXPECT_EQ(fault.check.state, AddrState::kFreed);
}

// A guard for ranges checked at a generation runs without looking them up while the map is
// unchanged, and checks them as Guarded does once anything changed (a Free included).
TEST_F(DeviceMemoryTest, GuardedSinceChecksAgainOnceTheMapChanged) {
  void* p = nullptr;
  ASSERT_EQ(mem.Alloc(0, 4096, &p, "user"), ACL_SUCCESS);
  const uint64_t gen = mem.Generation();
  EXPECT_NE(gen, 0u);
  ASSERT_EQ(mem.State(p, 4096), AddrState::kLive);
  CopyFault fault;
  bool ran = false;
  EXPECT_EQ(mem.GuardedSince(gen, p, 4096, nullptr, 0, &fault, [&] { ran = true; }), ACL_SUCCESS);
  EXPECT_TRUE(ran);
  EXPECT_FALSE(fault.faulted);
  // Another allocation moves the generation: the range is looked up again, still live.
  void* q = nullptr;
  ASSERT_EQ(mem.Alloc(0, 64, &q, "user"), ACL_SUCCESS);
  EXPECT_NE(mem.Generation(), gen);
  ran = false;
  EXPECT_EQ(mem.GuardedSince(gen, p, 4096, nullptr, 0, &fault, [&] { ran = true; }), ACL_SUCCESS);
  EXPECT_TRUE(ran);
  // Generation 0 (nothing checked) is Guarded: an overrun faults.
  ran = false;
  EXPECT_EQ(mem.GuardedSince(0, p, 4097, nullptr, 0, &fault, [&] { ran = true; }),
            ACL_ERROR_RT_SYS_DMA);
  EXPECT_FALSE(ran);
  EXPECT_EQ(fault.check.state, AddrState::kOverflow);
  // Freed after the check: the old generation no longer vouches for it.
  ASSERT_EQ(mem.Free(p), ACL_SUCCESS);
  ran = false;
  EXPECT_EQ(mem.GuardedSince(gen, p, 64, nullptr, 0, &fault, [&] { ran = true; }),
            ACL_ERROR_RT_SYS_DMA);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(fault.faulted);
  EXPECT_EQ(fault.check.state, AddrState::kFreed);
  EXPECT_EQ(mem.Free(q), ACL_SUCCESS);
}

// A host range a guard remembered stops being host once device memory is registered there.
TEST_F(DeviceMemoryTest, RememberedHostRangeSeesALaterRegistration) {
  const size_t len = 64 << 10;
  void* host = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(host, MAP_FAILED);
  std::vector<char> src(64, 'h');
  CopyFault fault;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(mem.State(host, 64), AddrState::kHost);
    EXPECT_EQ(mem.CheckedCopy(host, src.data(), 64, &fault), ACL_SUCCESS);
  }
  ASSERT_EQ(mem.Register(0, host, 4096, "CCL buffer"), ACL_SUCCESS);
  EXPECT_EQ(mem.State(host, 64), AddrState::kLive);
  EXPECT_EQ(mem.State(host, 8192), AddrState::kOverflow);
  EXPECT_EQ(mem.CheckedCopy(host, src.data(), 64, &fault), ACL_SUCCESS);
  ASSERT_EQ(mem.Unregister(host), ACL_SUCCESS);
  EXPECT_EQ(mem.State(host, 64), AddrState::kFreed);
  EXPECT_EQ(mem.CheckedCopy(host, src.data(), 64, &fault), ACL_ERROR_RT_SYS_DMA);
  munmap(host, len);
}

}  // namespace
}  // namespace vigil::rt
