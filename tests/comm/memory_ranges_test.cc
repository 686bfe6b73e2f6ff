// comm::MemoryRanges: what HcclCommSetMemoryRange and HcclCommActivateCommMemory keep.
#include "comm/memory_ranges.h"

#include <gtest/gtest.h>

namespace {

using vigil::comm::MemoryRanges;

TEST(MemoryRangesTest, RangesDoNotOverlap) {
  MemoryRanges m;
  EXPECT_EQ(m.Set(0x10000, 0x1000), "");
  EXPECT_EQ(m.Set(0x12000, 0x1000), "");
  EXPECT_NE(m.Set(0x10800, 0x100), "");   // inside the first
  EXPECT_NE(m.Set(0xf000, 0x1001), "");   // runs into the first
  EXPECT_NE(m.Set(0x11fff, 0x2), "");     // runs into the second
  EXPECT_EQ(m.Set(0x11000, 0x1000), "");  // exactly between them
  EXPECT_NE(m.Set(0x20000, 0), "");
  EXPECT_NE(m.Set(~uintptr_t{0} - 4, 16), "");  // wraps
  EXPECT_EQ(m.range_count(), 3u);
}

TEST(MemoryRangesTest, PiecesLieInsideRangesAndGoBeforeThem) {
  MemoryRanges m;
  const void* handle = &m;
  ASSERT_EQ(m.Set(0x10000, 0x4000), "");
  EXPECT_NE(m.Activate(0x8000, 0x100, handle), "");   // outside any range
  EXPECT_NE(m.Activate(0x13000, 0x2000, handle), "");  // past the range's end
  EXPECT_NE(m.Activate(0x10000, 0x100, nullptr), "");
  EXPECT_EQ(m.Activate(0x10000, 0x1000, handle), "");
  EXPECT_EQ(m.Activate(0x11000, 0x1000, handle), "");
  EXPECT_NE(m.Activate(0x10800, 0x1000, handle), "");  // overlaps both
  EXPECT_TRUE(m.Activated(0x10010, 0x100));
  EXPECT_FALSE(m.Activated(0x10f00, 0x200));  // spans two pieces
  EXPECT_FALSE(m.Activated(0x12000, 0x10));
  EXPECT_NE(m.Unset(0x10000), "");  // pieces still active
  EXPECT_NE(m.Deactivate(0x10001), "");
  EXPECT_EQ(m.Deactivate(0x10000), "");
  EXPECT_EQ(m.Deactivate(0x11000), "");
  EXPECT_EQ(m.active_count(), 0u);
  EXPECT_EQ(m.Unset(0x10000), "");
  EXPECT_NE(m.Unset(0x10000), "");
  EXPECT_EQ(m.range_count(), 0u);
}

}  // namespace
