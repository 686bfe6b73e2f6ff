// alltoallv_test: HcclAlltoAllV with count/nranks elements to and from every peer at block
// offsets; rank r sends r+1, and block i of what a rank receives must hold i+1.
#include <vector>

#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class AlltoAllVBench : public Bench {
 protected:
  Layout Plan(uint64_t elements) const override {
    const uint64_t n = static_cast<uint64_t>(nranks_);
    const uint64_t align = elements >= n * kBlockAlign ? n * kBlockAlign : n;
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
    const uint64_t per_peer = cur_.count / nranks_;
    counts_.assign(nranks_, per_peer);
    displs_.resize(nranks_);
    for (int i = 0; i < nranks_; ++i) displs_[i] = i * per_peer;
    FillValue(host_in_, cur_.count, opt_.dtype, rank_ + 1);
    return 0;
  }
  HcclResult Call() override {
    const HcclDataType t = static_cast<HcclDataType>(opt_.dtype);
    return HcclAlltoAllV(send_, counts_.data(), displs_.data(), t, recv_, counts_.data(),
                         displs_.data(), t, comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.recv_bytes, &readback_) != 0) return -1;
    return CheckBlocksByRank(readback_, counts_.data(), displs_.data(), nranks_, opt_.dtype, rank_,
                             opt_.check);
  }

 private:
  static const uint64_t kBlockAlign = 128;
  std::vector<uint64_t> counts_;  // the same for sending and receiving
  std::vector<uint64_t> displs_;
};

}  // namespace

Bench* MakeBench() {
  return new AlltoAllVBench;
}

}  // namespace hccl_test
