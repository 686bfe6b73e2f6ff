// broadcast_test: HcclBroadcast from the root rank (-r); the root's buffer holds kValue, and
// every rank's buffer must hold it afterwards.
#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class BroadcastBench : public Bench {
 protected:
  Layout Plan(uint64_t elements) const override {
    Layout l;
    l.count = elements;
    l.block_bytes = elements * ElementSize();
    l.send_bytes = l.block_bytes;
    l.recv_bytes = 0;  // in place
    return l;
  }
  uint64_t AlgBytes(const Layout& l) const override { return l.block_bytes; }
  bool InputOnThisRank() const override { return rank_ == opt_.root; }
  int FillInput() override {
    if (rank_ == opt_.root) FillValue(host_in_, cur_.count, opt_.dtype, kValue);
    return 0;
  }
  int WriteExpected() override {
    if (HostBuffer(&expected_, cur_.block_bytes) != 0) return -1;
    FillValue(expected_, cur_.count, opt_.dtype, kValue);
    return 0;
  }
  HcclResult Call() override {
    return HcclBroadcast(send_, cur_.count, static_cast<HcclDataType>(opt_.dtype),
                         static_cast<uint32_t>(opt_.root), comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(send_, cur_.block_bytes, &readback_) != 0) return -1;
    return Compare(CopyCompare(opt_.dtype), readback_, expected_, cur_.count, opt_.check);
  }
};

}  // namespace

Bench* MakeBench() {
  return new BroadcastBench;
}

}  // namespace hccl_test
