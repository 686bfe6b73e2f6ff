// scatter_test: HcclScatter from the root rank (-r); the root's block i holds i+1, and rank r
// must receive r+1.
#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class ScatterBench : public Bench {
 protected:
  Layout Plan(uint64_t elements) const override {
    Layout l;
    l.count = (elements + nranks_ - 1) / nranks_;
    l.block_bytes = l.count * ElementSize();
    l.send_bytes = l.block_bytes * nranks_;
    l.recv_bytes = l.block_bytes;
    return l;
  }
  uint64_t AlgBytes(const Layout& l) const override { return l.block_bytes * nranks_; }
  bool InputOnThisRank() const override { return rank_ == opt_.root; }
  void SkipCheckOnOverflow() override {
    if (CopyCheckOverflows(opt_.dtype, nranks_)) TurnCheckOff("The initdata overflows");
  }
  int FillInput() override {
    if (rank_ != opt_.root) return 0;
    for (int i = 0; i < nranks_; ++i) {
      FillValue(static_cast<char*>(host_in_) + i * cur_.block_bytes, cur_.count, opt_.dtype, i + 1);
    }
    return 0;
  }
  int WriteExpected() override {
    if (HostBuffer(&expected_, cur_.block_bytes) != 0) return -1;
    FillValue(expected_, cur_.count, opt_.dtype, rank_ + 1);
    return 0;
  }
  HcclResult Call() override {
    return HcclScatter(send_, recv_, cur_.count, static_cast<HcclDataType>(opt_.dtype),
                       static_cast<uint32_t>(opt_.root), comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.block_bytes, &readback_) != 0) return -1;
    return Compare(CopyCompare(opt_.dtype), readback_, expected_, cur_.count, opt_.check);
  }
};

}  // namespace

Bench* MakeBench() {
  return new ScatterBench;
}

}  // namespace hccl_test
