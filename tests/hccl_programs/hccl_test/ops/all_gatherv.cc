// all_gatherv_test: HcclAllGatherV with equal blocks (recvCounts[i] = count, recvDispls[i] =
// i * count); data and expected values as all_gather_test's.
#include <vector>

#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class AllGatherVBench : public Bench {
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
    counts_.assign(nranks_, cur_.count);
    displs_.resize(nranks_);
    for (int i = 0; i < nranks_; ++i) displs_[i] = i * cur_.count;
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
    return HcclAllGatherV(send_, cur_.count, recv_, counts_.data(), displs_.data(),
                          static_cast<HcclDataType>(opt_.dtype), comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.recv_bytes, &readback_) != 0) return -1;
    return Compare(CopyCompare(opt_.dtype), readback_, expected_, cur_.count * nranks_, opt_.check);
  }

 private:
  std::vector<uint64_t> counts_;
  std::vector<uint64_t> displs_;
};

}  // namespace

Bench* MakeBench() {
  return new AllGatherVBench;
}

}  // namespace hccl_test
