// Every collective over the in-process links, 1..8 ranks, against references computed here:
// odd sizes (0, 1, fewer elements than ranks, not divisible by ranks), messages much larger
// than the scratch (CCL buffer) and than the pipes (flow control), in place and out of place,
// every dtype and reduce op.
#include "algorithm/collective.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>

#include "coll_test_util.h"
#include "common/dtype.h"
#include "inproc_link.h"

namespace vigil::alg::test {
namespace {

constexpr size_t kPipe = 64u << 10;
constexpr size_t kSmallScratch = 1000;  // odd on purpose: slots get rounded

std::string Name(HcclDataType t) {
  return std::string(DataTypeName(t));
}
std::string Name(HcclReduceOp op) {
  return std::string(ReduceOpName(op));
}

struct Case {
  Algo algo = Algo::kAuto;
  uint32_t p = 1;
  uint64_t count = 0;
  HcclDataType type = HCCL_DATA_TYPE_FP32;
  HcclReduceOp op = HCCL_REDUCE_SUM;
  bool inplace = false;
  size_t scratch = kSmallScratch;
  size_t pipe = kPipe;
  uint32_t root = 0;
  std::string Str() const {
    return std::string(AlgoName(algo)) + " p=" + std::to_string(p) +
           " count=" + std::to_string(count) + " " + Name(type) + " " + Name(op) +
           (inplace ? " inplace" : " outofplace") + " scratch=" + std::to_string(scratch) +
           " root=" + std::to_string(root);
  }
};

void ExpectAll(const std::vector<HcclResult>& rc, const std::vector<AlgResult>& res,
               const Case& c) {
  for (size_t r = 0; r < rc.size(); ++r) {
    EXPECT_EQ(rc[r], HCCL_SUCCESS) << c.Str() << " rank " << r << ": " << res[r].progress.reason;
  }
}

void RunAllReduce(const Case& c) {
  const size_t es = DataTypeSize(c.type);
  World w(c.p, c.pipe);
  std::vector<Bytes> in(c.p), out(c.p);
  for (uint32_t r = 0; r < c.p; ++r) in[r] = MakeInput(c.type, c.op, 1, r, c.count);
  const Bytes want = Fold(in, c.type, c.op);
  std::vector<HcclResult> rc(c.p);
  std::vector<AlgResult> res(c.p);
  RunRanks(c.p, [&](uint32_t r) {
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Bytes send = in[r];
    Bytes recv(c.count * es, 0x5a);
    rc[r] = AllReduce(c.algo, g, send.data(), c.inplace ? send.data() : recv.data(), c.count,
                      c.type, c.op, Scratch{scratch.data(), scratch.size()}, &res[r]);
    out[r] = c.inplace ? send : recv;
    if (!c.inplace && send != in[r])
      ADD_FAILURE() << c.Str() << " rank " << r << " wrote its input";
  });
  ExpectAll(rc, res, c);
  for (uint32_t r = 0; r < c.p; ++r) {
    ASSERT_EQ(FirstDiff(out[r], want, es), -1) << c.Str() << " rank " << r;
  }
}

void RunReduceScatter(const Case& c) {
  const size_t es = DataTypeSize(c.type);
  const uint64_t rc_count = c.count;  // per rank
  World w(c.p, c.pipe);
  std::vector<Bytes> in(c.p), out(c.p);
  for (uint32_t r = 0; r < c.p; ++r) in[r] = MakeInput(c.type, c.op, 2, r, rc_count * c.p);
  const Bytes full = Fold(in, c.type, c.op);
  std::vector<HcclResult> rc(c.p);
  std::vector<AlgResult> res(c.p);
  RunRanks(c.p, [&](uint32_t r) {
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Bytes send = in[r];
    Bytes recv(rc_count * es, 0x5a);
    char* dst = c.inplace ? send.data() + r * rc_count * es : recv.data();
    rc[r] = ReduceScatter(c.algo, g, send.data(), dst, rc_count, c.type, c.op,
                          Scratch{scratch.data(), scratch.size()}, &res[r]);
    out[r].assign(dst, dst + rc_count * es);
  });
  ExpectAll(rc, res, c);
  for (uint32_t r = 0; r < c.p; ++r) {
    Bytes want(full.begin() + r * rc_count * es, full.begin() + (r + 1) * rc_count * es);
    ASSERT_EQ(FirstDiff(out[r], want, es), -1) << c.Str() << " rank " << r;
  }
}

void RunAllGather(const Case& c) {
  const size_t es = DataTypeSize(c.type);
  World w(c.p, c.pipe);
  std::vector<Bytes> in(c.p), out(c.p);
  Bytes want;
  for (uint32_t r = 0; r < c.p; ++r) {
    in[r] = MakeInput(c.type, c.op, 3, r, c.count);
    want.insert(want.end(), in[r].begin(), in[r].end());
  }
  std::vector<HcclResult> rc(c.p);
  std::vector<AlgResult> res(c.p);
  RunRanks(c.p, [&](uint32_t r) {
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Bytes recv(c.count * es * c.p, 0x5a);
    Bytes send = in[r];
    const char* src = send.data();
    if (c.inplace) {
      std::copy(in[r].begin(), in[r].end(), recv.begin() + r * c.count * es);
      src = recv.data() + r * c.count * es;
    }
    rc[r] = AllGather(c.algo, g, src, recv.data(), c.count, c.type,
                      Scratch{scratch.data(), scratch.size()}, &res[r]);
    out[r] = recv;
  });
  ExpectAll(rc, res, c);
  for (uint32_t r = 0; r < c.p; ++r) {
    ASSERT_EQ(FirstDiff(out[r], want, es), -1) << c.Str() << " rank " << r;
  }
}

void RunBroadcast(const Case& c) {
  const size_t es = DataTypeSize(c.type);
  World w(c.p, c.pipe);
  const Bytes want = MakeInput(c.type, c.op, 4, c.root, c.count);
  std::vector<Bytes> out(c.p);
  std::vector<HcclResult> rc(c.p);
  std::vector<AlgResult> res(c.p);
  RunRanks(c.p, [&](uint32_t r) {
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Bytes buf = r == c.root ? want : Bytes(c.count * es, 0x5a);
    rc[r] = Broadcast(g, buf.data(), c.count, c.type, c.root,
                      Scratch{scratch.data(), scratch.size()}, &res[r]);
    out[r] = buf;
  });
  ExpectAll(rc, res, c);
  for (uint32_t r = 0; r < c.p; ++r) {
    ASSERT_EQ(FirstDiff(out[r], want, es), -1) << c.Str() << " rank " << r;
  }
}

void RunReduce(const Case& c) {
  const size_t es = DataTypeSize(c.type);
  World w(c.p, c.pipe);
  std::vector<Bytes> in(c.p);
  for (uint32_t r = 0; r < c.p; ++r) in[r] = MakeInput(c.type, c.op, 5, r, c.count);
  const Bytes want = Fold(in, c.type, c.op);
  Bytes got;
  std::vector<HcclResult> rc(c.p);
  std::vector<AlgResult> res(c.p);
  RunRanks(c.p, [&](uint32_t r) {
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Bytes send = in[r];
    Bytes recv(c.count * es, 0x5a);
    char* dst = r != c.root ? nullptr : (c.inplace ? send.data() : recv.data());
    rc[r] = Reduce(g, send.data(), dst, c.count, c.type, c.op, c.root,
                   Scratch{scratch.data(), scratch.size()}, &res[r]);
    if (r == c.root) got = c.inplace ? send : recv;
  });
  ExpectAll(rc, res, c);
  ASSERT_EQ(FirstDiff(got, want, es), -1) << c.Str();
}

void RunScatter(const Case& c) {
  const size_t es = DataTypeSize(c.type);
  World w(c.p, c.pipe);
  const Bytes all = MakeInput(c.type, c.op, 6, c.root, c.count * c.p);
  std::vector<Bytes> out(c.p);
  std::vector<HcclResult> rc(c.p);
  std::vector<AlgResult> res(c.p);
  RunRanks(c.p, [&](uint32_t r) {
    Group g = MakeGroup(w, r);
    Bytes scratch(c.scratch);
    Bytes send = r == c.root ? all : Bytes();
    Bytes recv(c.count * es, 0x5a);
    rc[r] = Scatter(g, r == c.root ? send.data() : nullptr, recv.data(), c.count, c.type, c.root,
                    Scratch{scratch.data(), scratch.size()}, &res[r]);
    out[r] = recv;
  });
  ExpectAll(rc, res, c);
  for (uint32_t r = 0; r < c.p; ++r) {
    Bytes want(all.begin() + r * c.count * es, all.begin() + (r + 1) * c.count * es);
    ASSERT_EQ(FirstDiff(out[r], want, es), -1) << c.Str() << " rank " << r;
  }
}

// ---- AllReduce ----

class AllReduceSweep : public ::testing::TestWithParam<std::tuple<Algo, uint32_t>> {};

TEST_P(AllReduceSweep, SizesInPlaceAndSmallScratch) {
  const auto [algo, p] = GetParam();
  for (uint64_t count : std::vector<uint64_t>{0, 1, p - 1u, 5u * p + 3, 3001, 70001}) {
    if (algo == Algo::kStar && count > 3001) continue;  // star is for tiny messages
    for (bool inplace : {false, true}) {
      Case c;
      c.algo = algo;
      c.p = p;
      c.count = count;
      c.inplace = inplace;
      RunAllReduce(c);
      c.type = HCCL_DATA_TYPE_INT8;
      c.op = HCCL_REDUCE_PROD;
      c.scratch = 333;  // smaller than one piece per peer for most counts
      RunAllReduce(c);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, AllReduceSweep,
                         ::testing::Combine(::testing::Values(Algo::kRing, Algo::kMesh,
                                                              Algo::kHalvingDoubling, Algo::kStar,
                                                              Algo::kAuto),
                                            ::testing::Range(1u, 9u)),
                         [](const auto& info) {
                           std::string n = AlgoName(std::get<0>(info.param));
                           if (n == "H-D") n = "HD";
                           return n + "_" + std::to_string(std::get<1>(info.param));
                         });

class AllReduceTypes : public ::testing::TestWithParam<Algo> {};

TEST_P(AllReduceTypes, EveryTypeAndOp) {
  for (uint32_t p : {3u, 4u, 6u}) {
    for (HcclDataType t : kAllTypes) {
      for (HcclReduceOp op : kAllOps) {
        for (uint64_t count : {37ull, 17000ull}) {
          Case c;
          c.algo = GetParam();
          c.p = p;
          c.type = t;
          c.op = op;
          c.count = count;
          c.inplace = (count + p) % 2 == 0;
          c.scratch = 4096;
          RunAllReduce(c);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, AllReduceTypes,
                         ::testing::Values(Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling,
                                           Algo::kStar),
                         [](const auto& info) {
                           std::string n = AlgoName(info.param);
                           return n == "H-D" ? std::string("HD") : n;
                         });

TEST(AllReduce, LargeScratchAndTinyPipes) {
  // Scratch far larger than the pipes: flow control inside one piece.
  for (Algo algo : {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling}) {
    Case c;
    c.algo = algo;
    c.p = 5;
    c.count = 300001;
    c.scratch = 4u << 20;
    c.pipe = 1000;
    RunAllReduce(c);
  }
}

// ---- ReduceScatter / AllGather ----

class RsAgSweep : public ::testing::TestWithParam<std::tuple<Algo, uint32_t>> {};

TEST_P(RsAgSweep, SizesAndInPlace) {
  const auto [algo, p] = GetParam();
  for (uint64_t count : {0ull, 1ull, 7ull, 3001ull}) {
    for (bool inplace : {false, true}) {
      Case c;
      c.algo = algo;
      c.p = p;
      c.count = count;
      c.inplace = inplace;
      RunReduceScatter(c);
      RunAllGather(c);
      c.type = HCCL_DATA_TYPE_UINT16;
      c.op = HCCL_REDUCE_MAX;
      c.scratch = 100;
      RunReduceScatter(c);
      RunAllGather(c);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Algos, RsAgSweep,
                         ::testing::Combine(::testing::Values(Algo::kRing, Algo::kMesh,
                                                              Algo::kHalvingDoubling, Algo::kAuto),
                                            ::testing::Range(1u, 9u)),
                         [](const auto& info) {
                           std::string n = AlgoName(std::get<0>(info.param));
                           if (n == "H-D") n = "HD";
                           return n + "_" + std::to_string(std::get<1>(info.param));
                         });

TEST(ReduceScatter, EveryTypeAndOp) {
  for (Algo algo : {Algo::kRing, Algo::kMesh}) {
    for (uint32_t p : {3u, 5u}) {
      for (HcclDataType t : kAllTypes) {
        for (HcclReduceOp op : kAllOps) {
          Case c;
          c.algo = algo;
          c.p = p;
          c.type = t;
          c.op = op;
          c.count = 301;
          c.scratch = 512;
          c.inplace = op == HCCL_REDUCE_MAX;
          RunReduceScatter(c);
        }
      }
    }
  }
}

TEST(AllGather, EveryType) {
  for (Algo algo : {Algo::kRing, Algo::kMesh, Algo::kHalvingDoubling}) {
    for (uint32_t p : {3u, 4u}) {
      for (HcclDataType t : kAllTypes) {
        Case c;
        c.algo = algo;
        c.p = p;
        c.type = t;
        c.count = 1001;
        RunAllGather(c);
      }
    }
  }
}

// ---- Broadcast / Reduce / Scatter ----

class RootedSweep : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RootedSweep, BroadcastReduceScatter) {
  const uint32_t p = GetParam();
  for (uint32_t root : {0u, p - 1, p / 2}) {
    // 70001 fp32 (280 KB) takes the chain forms; 300001 bytes of int8 more than one chain piece.
    for (uint64_t count : std::vector<uint64_t>{0, 1, p - 1u, 7, 70001}) {
      Case c;
      c.p = p;
      c.root = root;
      c.count = count;
      RunBroadcast(c);
      RunReduce(c);
      RunScatter(c);
      c.inplace = true;
      c.type = HCCL_DATA_TYPE_INT64;
      c.op = HCCL_REDUCE_MIN;
      RunReduce(c);
    }
    Case big;
    big.p = p;
    big.root = root;
    big.type = HCCL_DATA_TYPE_INT8;
    big.count = 600001;
    RunBroadcast(big);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RootedSweep, ::testing::Range(1u, 9u));

TEST(Reduce, EveryTypeAndOp) {
  for (uint32_t p : {3u, 6u}) {
    for (HcclDataType t : kAllTypes) {
      for (HcclReduceOp op : kAllOps) {
        for (uint64_t count : {41ull, 40001ull}) {  // tree and chain
          Case c;
          c.p = p;
          c.type = t;
          c.op = op;
          c.count = count;
          c.root = 1;
          c.scratch = 2048;
          RunReduce(c);
        }
      }
    }
  }
}

// ---- V variants ----

struct VLayout {
  std::vector<uint64_t> counts, displs;
  uint64_t span = 0;
};

// Counts with zeros and a gap between blocks; seeded so every rank computes the same layout.
VLayout MakeLayout(uint32_t p, uint64_t seed, uint64_t scale) {
  VLayout l;
  uint64_t at = 3;
  for (uint32_t j = 0; j < p; ++j) {
    const uint64_t h = Mix(seed * 31 + j);
    const uint64_t n = h % 4 == 0 ? 0 : h % scale;
    l.counts.push_back(n);
    l.displs.push_back(at);
    at += n + h % 5;
  }
  l.span = at;
  return l;
}

TEST(AllGatherV, RanksAndLayouts) {
  for (uint32_t p = 1; p <= 8; ++p) {
    for (uint64_t scale : {3ull, 5000ull}) {
      for (bool inplace : {false, true}) {
        const VLayout l = MakeLayout(p, p * 7 + scale, scale);
        const HcclDataType t = HCCL_DATA_TYPE_FP16;
        const size_t es = 2;
        World w(p, kPipe);
        std::vector<Bytes> in(p), out(p);
        for (uint32_t r = 0; r < p; ++r) in[r] = MakeInput(t, HCCL_REDUCE_SUM, 7, r, l.counts[r]);
        std::vector<HcclResult> rc(p);
        RunRanks(p, [&](uint32_t r) {
          Group g = MakeGroup(w, r);
          Bytes scratch(kSmallScratch);
          Bytes recv(l.span * es, 0x11);
          const char* src = in[r].data();
          if (inplace) {
            std::copy(in[r].begin(), in[r].end(), recv.begin() + l.displs[r] * es);
            src = recv.data() + l.displs[r] * es;
          }
          AlgResult res;
          rc[r] = AllGatherV(g, src, l.counts[r], recv.data(), l.counts.data(), l.displs.data(), t,
                             Scratch{scratch.data(), scratch.size()}, &res);
          out[r] = recv;
        });
        Bytes want(l.span * es, 0x11);
        for (uint32_t j = 0; j < p; ++j) {
          std::copy(in[j].begin(), in[j].end(), want.begin() + l.displs[j] * es);
        }
        for (uint32_t r = 0; r < p; ++r) {
          ASSERT_EQ(rc[r], HCCL_SUCCESS) << "p=" << p << " rank " << r;
          ASSERT_EQ(FirstDiff(out[r], want, es), -1)
              << "p=" << p << " scale " << scale << " rank " << r;
        }
      }
    }
  }
}

TEST(ReduceScatterV, RanksLayoutsTypes) {
  for (uint32_t p = 1; p <= 8; ++p) {
    for (HcclDataType t : {HCCL_DATA_TYPE_FP32, HCCL_DATA_TYPE_BFP16, HCCL_DATA_TYPE_UINT32}) {
      for (HcclReduceOp op : kAllOps) {
        const uint64_t scale = op == HCCL_REDUCE_SUM ? 3000 : 40;
        const VLayout l = MakeLayout(p, p * 13 + op, scale);
        const size_t es = DataTypeSize(t);
        World w(p, kPipe);
        std::vector<Bytes> in(p), out(p);
        for (uint32_t r = 0; r < p; ++r) in[r] = MakeInput(t, op, 8, r, l.span);
        const Bytes full = Fold(in, t, op);
        std::vector<HcclResult> rc(p);
        RunRanks(p, [&](uint32_t r) {
          Group g = MakeGroup(w, r);
          Bytes scratch(kSmallScratch);
          Bytes recv(l.counts[r] * es, 0x22);
          AlgResult res;
          rc[r] = ReduceScatterV(g, in[r].data(), l.counts.data(), l.displs.data(), recv.data(),
                                 l.counts[r], t, op, Scratch{scratch.data(), scratch.size()}, &res);
          out[r] = recv;
        });
        for (uint32_t r = 0; r < p; ++r) {
          ASSERT_EQ(rc[r], HCCL_SUCCESS) << "p=" << p << " rank " << r;
          Bytes want(full.begin() + l.displs[r] * es,
                     full.begin() + (l.displs[r] + l.counts[r]) * es);
          ASSERT_EQ(FirstDiff(out[r], want, es), -1)
              << "p=" << p << " " << Name(t) << " " << Name(op) << " rank " << r;
        }
      }
    }
  }
}

TEST(AlltoAllV, PairwiseAllRanks) {
  for (uint32_t p = 1; p <= 8; ++p) {
    // count[i][j]: what rank i sends to rank j; one large block exceeds the pipe.
    auto count = [p](uint32_t i, uint32_t j) -> uint64_t {
      if (i == 0 && j == p - 1) return 40000;
      return (i * 3 + j * 5) % 7;
    };
    const HcclDataType t = HCCL_DATA_TYPE_INT32;
    const size_t es = 4;
    World w(p, kPipe);
    std::vector<Bytes> out(p);
    std::vector<HcclResult> rc(p);
    RunRanks(p, [&](uint32_t r) {
      Group g = MakeGroup(w, r);
      std::vector<uint64_t> sc(p), sd(p), rcn(p), rd(p);
      uint64_t s_at = 1, r_at = 2;
      for (uint32_t j = 0; j < p; ++j) {
        sc[j] = count(r, j);
        sd[j] = s_at;
        s_at += sc[j] + 1;
        rcn[j] = count(j, r);
        rd[j] = r_at;
        r_at += rcn[j] + 2;
      }
      Bytes send(s_at * es), recv(r_at * es, 0x33);
      for (uint32_t j = 0; j < p; ++j) {
        for (uint64_t k = 0; k < sc[j]; ++k) {
          const int32_t v = static_cast<int32_t>(r * 1000000 + j * 10000 + k);
          std::memcpy(send.data() + (sd[j] + k) * es, &v, es);
        }
      }
      AlgResult res;
      rc[r] = AlltoAllV(g, send.data(), sc.data(), sd.data(), t, recv.data(), rcn.data(), rd.data(),
                        t, Scratch{}, &res);
      for (uint32_t j = 0; j < p && rc[r] == HCCL_SUCCESS; ++j) {
        for (uint64_t k = 0; k < rcn[j]; ++k) {
          int32_t v;
          std::memcpy(&v, recv.data() + (rd[j] + k) * es, es);
          if (v != static_cast<int32_t>(j * 1000000 + r * 10000 + k)) {
            ADD_FAILURE() << "p=" << p << " rank " << r << " from " << j << " k " << k;
            return;
          }
        }
      }
    });
    for (uint32_t r = 0; r < p; ++r) ASSERT_EQ(rc[r], HCCL_SUCCESS) << "p=" << p;
  }
}

// ---- Barrier / SendRecv ----

TEST(Barrier, NobodyLeavesEarly) {
  for (uint32_t p = 1; p <= 8; ++p) {
    World w(p, kPipe);
    std::atomic<uint32_t> arrived{0};
    std::atomic<int> failures{0};
    RunRanks(p, [&](uint32_t r) {
      Group g = MakeGroup(w, r);
      for (uint32_t round = 1; round <= 20; ++round) {
        arrived.fetch_add(1);
        AlgResult res;
        if (Barrier(g, &res) != HCCL_SUCCESS) failures.fetch_add(1);
        if (arrived.load() < round * p) failures.fetch_add(1);
        // Second barrier so nobody starts the next round before all have checked.
        if (Barrier(g, &res) != HCCL_SUCCESS) failures.fetch_add(1);
      }
    });
    EXPECT_EQ(failures.load(), 0) << "p=" << p;
  }
}

TEST(SendRecv, RingOfBatchesLargerThanPipes) {
  for (uint32_t p = 1; p <= 8; ++p) {
    World w(p, 4096);
    std::atomic<int> bad{0};
    RunRanks(p, [&](uint32_t r) {
      Group g = MakeGroup(w, r);
      const uint32_t next = (r + 1) % p, prev = (r + p - 1) % p;
      const uint64_t sizes[] = {100000, 1, 0, 5000};
      std::vector<Bytes> out, in;
      std::vector<P2pItem> items;
      for (uint64_t n : sizes) {
        out.push_back(MakeInput(HCCL_DATA_TYPE_UINT8, HCCL_REDUCE_SUM, 9 + n, r, n));
        in.emplace_back(n);
      }
      // Receives listed first on purpose: the order of the list must not matter.
      for (size_t i = 0; i < in.size(); ++i) {
        items.push_back({false, in[i].data(), sizes[i], HCCL_DATA_TYPE_UINT8, prev});
      }
      for (size_t i = 0; i < out.size(); ++i) {
        items.push_back({true, out[i].data(), sizes[i], HCCL_DATA_TYPE_UINT8, next});
      }
      AlgResult res;
      if (SendRecv(g, items, Scratch{}, &res) != HCCL_SUCCESS) bad.fetch_add(1);
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] !=
            MakeInput(HCCL_DATA_TYPE_UINT8, HCCL_REDUCE_SUM, 9 + sizes[i], prev, sizes[i])) {
          bad.fetch_add(1);
        }
      }
    });
    EXPECT_EQ(bad.load(), 0) << "p=" << p;
  }
}

TEST(SendRecv, AllPairsShuffled) {
  for (uint32_t p : {2u, 3u, 5u, 8u}) {
    World w(p, 4096);
    std::atomic<int> bad{0};
    RunRanks(p, [&](uint32_t r) {
      Group g = MakeGroup(w, r);
      std::vector<Bytes> out(p), in(p);
      std::vector<P2pItem> items;
      for (uint32_t j = 0; j < p; ++j) {
        const uint64_t n = 10000 + r * 100 + j;  // what r sends to j
        out[j] = MakeInput(HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, 10, r * 16 + j, n);
        in[j].resize((10000 + j * 100 + r) * 2);
        items.push_back({true, out[j].data(), n, HCCL_DATA_TYPE_INT16, j});
        items.push_back({false, in[j].data(), 10000 + j * 100 + r, HCCL_DATA_TYPE_INT16, j});
      }
      std::shuffle(items.begin(), items.end(), std::mt19937(r));
      AlgResult res;
      if (SendRecv(g, items, Scratch{}, &res) != HCCL_SUCCESS) bad.fetch_add(1);
      for (uint32_t j = 0; j < p; ++j) {
        if (in[j] !=
            MakeInput(HCCL_DATA_TYPE_INT16, HCCL_REDUCE_SUM, 10, j * 16 + r, 10000 + j * 100 + r)) {
          bad.fetch_add(1);
        }
      }
    });
    EXPECT_EQ(bad.load(), 0) << "p=" << p;
  }
}

}  // namespace
}  // namespace vigil::alg::test
