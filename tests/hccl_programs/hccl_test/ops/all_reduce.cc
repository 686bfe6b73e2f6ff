// all_reduce_test: HcclAllReduce of `count` elements; every rank sends kValue everywhere and
// must receive its reduction over all ranks.
#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class AllReduceBench : public Bench {
 protected:
  Layout Plan(uint64_t elements) const override {
    Layout l;
    l.count = elements;
    l.block_bytes = elements * ElementSize();
    l.send_bytes = l.block_bytes;
    l.recv_bytes = l.block_bytes;
    return l;
  }
  uint64_t AlgBytes(const Layout& l) const override { return l.block_bytes; }
  bool TakesReduceOp() const override { return true; }
  void SkipCheckOnOverflow() override {
    if (ReductionCheckOverflows(opt_.dtype, opt_.reduce_op, nranks_, false)) {
      TurnCheckOff("The calculation result overflows");
    }
  }
  int FillInput() override {
    FillValue(host_in_, cur_.count, opt_.dtype, kValue);
    return 0;
  }
  int WriteExpected() override {
    if (HostBuffer(&expected_, cur_.block_bytes) != 0) return -1;
    FillReduced(expected_, cur_.count, opt_.dtype, opt_.reduce_op, kValue, nranks_);
    return 0;
  }
  HcclResult Call() override {
    return HcclAllReduce(send_, recv_, cur_.count, static_cast<HcclDataType>(opt_.dtype),
                         static_cast<HcclReduceOp>(opt_.reduce_op), comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.block_bytes, &readback_) != 0) return -1;
    return Compare(ReductionCompare(opt_.dtype, true), readback_, expected_, cur_.count,
                   opt_.check);
  }
};

}  // namespace

Bench* MakeBench() {
  return new AllReduceBench;
}

}  // namespace hccl_test
