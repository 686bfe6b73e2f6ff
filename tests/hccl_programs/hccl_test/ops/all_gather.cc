// all_gather_test: HcclAllGather; rank r sends r+1 everywhere, every rank must receive block i
// holding i+1.
#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class AllGatherBench : public Bench {
 protected:
  Layout Plan(uint64_t elements) const override {
    Layout l;
    l.count = (elements + nranks_ - 1) / nranks_;
    l.block_bytes = l.count * ElementSize();
    l.send_bytes = l.block_bytes;
    l.recv_bytes = l.block_bytes * nranks_;
    return l;
  }
  uint64_t AlgBytes(const Layout& l) const override { return l.block_bytes * nranks_; }
  void SkipCheckOnOverflow() override {
    if (CopyCheckOverflows(opt_.dtype, nranks_)) TurnCheckOff("The initdata overflows");
  }
  int FillInput() override {
    FillValue(host_in_, cur_.count, opt_.dtype, rank_ + 1);
    return 0;
  }
  int WriteExpected() override {
    if (HostBuffer(&expected_, cur_.recv_bytes) != 0) return -1;
    for (int i = 0; i < nranks_; ++i) {
      FillValue(static_cast<char*>(expected_) + i * cur_.block_bytes, cur_.count, opt_.dtype,
                i + 1);
    }
    return 0;
  }
  HcclResult Call() override {
    return HcclAllGather(send_, recv_, cur_.count, static_cast<HcclDataType>(opt_.dtype), comm_,
                         stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.recv_bytes, &readback_) != 0) return -1;
    return Compare(CopyCompare(opt_.dtype), readback_, expected_, cur_.count * nranks_, opt_.check);
  }
};

}  // namespace

Bench* MakeBench() {
  return new AllGatherBench;
}

}  // namespace hccl_test
