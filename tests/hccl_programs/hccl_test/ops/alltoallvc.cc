// alltoallvc_test: HcclAlltoAllVC with a send-count matrix of count/nranks everywhere; rank r
// sends r+1, and block i of what a rank receives (packed in rank order) must hold i+1.
#include <vector>

#include "bench.h"
#include "values.h"

namespace hccl_test {

namespace {

class AlltoAllVCBench : public Bench {
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
    // matrix[i * n + j]: what rank i sends to rank j.
    matrix_.assign(static_cast<size_t>(nranks_) * nranks_, cur_.count / nranks_);
    FillValue(host_in_, cur_.count, opt_.dtype, rank_ + 1);
    return 0;
  }
  HcclResult Call() override {
    const HcclDataType t = static_cast<HcclDataType>(opt_.dtype);
    return HcclAlltoAllVC(send_, matrix_.data(), t, recv_, t, comm_, stream_);
  }
  int Verify() override {
    if (ReadBack(recv_, cur_.recv_bytes, &readback_) != 0) return -1;
    std::vector<uint64_t> counts(nranks_);
    std::vector<uint64_t> displs(nranks_, 0);
    for (int i = 0; i < nranks_; ++i) {
      counts[i] = matrix_[static_cast<size_t>(i) * nranks_ + rank_];
      if (i > 0) displs[i] = displs[i - 1] + counts[i - 1];
    }
    return CheckBlocksByRank(readback_, counts.data(), displs.data(), nranks_, opt_.dtype, rank_,
                             opt_.check);
  }

 private:
  static const uint64_t kBlockAlign = 128;
  std::vector<uint64_t> matrix_;
};

}  // namespace

Bench* MakeBench() {
  return new AlltoAllVCBench;
}

}  // namespace hccl_test
