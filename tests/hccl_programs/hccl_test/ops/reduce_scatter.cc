// reduce_scatter_test: HcclReduceScatter; rank r receives the reduction of block r of every
// rank's input. Inputs: block i holds i+1 (so rank r expects the reduction of r+1), except for
// prod and int8, where every element holds kValue.
#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class ReduceScatterBench : public Bench {
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
  bool TakesReduceOp() const override { return true; }
  bool AlignsToRanks() const override { return true; }
  void SkipCheckOnOverflow() override {
    if (ReductionCheckOverflows(opt_.dtype, opt_.reduce_op, nranks_, true)) {
      TurnCheckOff("The calculation result overflows");
    }
  }
  bool SameValueEverywhere() const {
    return opt_.reduce_op == HCCL_REDUCE_PROD || opt_.dtype == HCCL_DATA_TYPE_INT8;
  }
  int FillInput() override {
    if (SameValueEverywhere()) {
      FillValue(host_in_, cur_.count * nranks_, opt_.dtype, kValue);
      return 0;
    }
    for (int i = 0; i < nranks_; ++i) {
      FillValue(static_cast<char*>(host_in_) + i * cur_.block_bytes, cur_.count, opt_.dtype, i + 1);
    }
    return 0;
  }
  int WriteExpected() override {
    if (HostBuffer(&expected_, cur_.block_bytes) != 0) return -1;
    const int v = SameValueEverywhere() ? kValue : rank_ + 1;
    FillReduced(expected_, cur_.count, opt_.dtype, opt_.reduce_op, v, nranks_);
    return 0;
  }
  HcclResult Call() override {
    return HcclReduceScatter(send_, recv_, cur_.count, static_cast<HcclDataType>(opt_.dtype),
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
  return new ReduceScatterBench;
}

}  // namespace hccl_test
