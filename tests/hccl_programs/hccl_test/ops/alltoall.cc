// alltoall_test: HcclAlltoAll of count/nranks elements per peer. The send buffer repeats an
// 8-byte pattern whatever the dtype, so every block a rank receives must be the same slice of
// the pattern: the one at its own block's offset.
#include <string.h>

#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class AlltoAllBench : public Bench {
 protected:
  Layout Plan(uint64_t elements) const override {
    // Counts a multiple of nranks, and of nranks * 128 for larger sizes or with -z.
    const uint64_t n = static_cast<uint64_t>(nranks_);
    const uint64_t align = elements >= n * kBlockAlign || opt_.zero_copy ? n * kBlockAlign : n;
    Layout l;
    l.count = (elements + align - 1) / align * align;
    l.block_bytes = l.count * ElementSize();
    l.send_bytes = l.block_bytes;
    l.recv_bytes = l.block_bytes;
    return l;
  }
  uint64_t AlgBytes(const Layout& l) const override { return l.block_bytes; }
  void SkipCheckOnOverflow() override {
    if (CopyCheckOverflows(opt_.dtype, nranks_)) TurnCheckOff("The initdata overflows");
  }
  int FillInput() override {
    // One pattern period, then doubling host-to-host copies of what is written.
    const uint64_t bytes = cur_.send_bytes;
    const uint64_t first = bytes < 8 ? bytes : 8;
    FillPattern(host_in_, first);
    char* p = static_cast<char*>(host_in_);
    for (uint64_t done = first; done < bytes;) {
      const uint64_t n = done < bytes - done ? done : bytes - done;
      HT_ACL(aclrtMemcpy(p + done, n, p, n, ACL_MEMCPY_HOST_TO_HOST));
      done += n;
    }
    return 0;
  }
  HcclResult Call() override {
    const uint64_t per_peer = cur_.count / nranks_;
    const HcclDataType t = static_cast<HcclDataType>(opt_.dtype);
    return HcclAlltoAll(send_, per_peer, t, recv_, per_peer, t, comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.recv_bytes, &readback_) != 0) return -1;
    return CheckPattern(readback_, cur_.recv_bytes, nranks_, rank_) ? 0 : 1;
  }

 private:
  static const uint64_t kBlockAlign = 128;
};

}  // namespace

Bench* MakeBench() {
  return new AlltoAllBench;
}

}  // namespace hccl_test
