// Runs every collective of hccl/hccl.h on every dtype and reduce op and compares each result with
// a reference computed here. One rank per process under `vigil run`, or --threads N ranks as
// threads of one process (HCCL's sample style). Inputs are small integers, so every reference is
// exact in every dtype (fp16/bf16 included) and integer overflow wraps the same way on both sides.
// Exit code 0 only when every check matched.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "algorithm/reduce_kernel.h"  // only the fp16/bf16 conversions
#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace {

const HcclDataType kTypes[] = {
    HCCL_DATA_TYPE_INT8,   HCCL_DATA_TYPE_INT16,  HCCL_DATA_TYPE_INT32,  HCCL_DATA_TYPE_INT64,
    HCCL_DATA_TYPE_UINT8,  HCCL_DATA_TYPE_UINT16, HCCL_DATA_TYPE_UINT32, HCCL_DATA_TYPE_UINT64,
    HCCL_DATA_TYPE_FP16,   HCCL_DATA_TYPE_BFP16,  HCCL_DATA_TYPE_FP32,   HCCL_DATA_TYPE_FP64};
const HcclReduceOp kOps[] = {HCCL_REDUCE_SUM, HCCL_REDUCE_PROD, HCCL_REDUCE_MAX, HCCL_REDUCE_MIN};

size_t Size(HcclDataType t) {
  switch (t) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    default: return 8;
  }
}

bool IsUnsigned(HcclDataType t) {
  return t == HCCL_DATA_TYPE_UINT8 || t == HCCL_DATA_TYPE_UINT16 || t == HCCL_DATA_TYPE_UINT32 ||
         t == HCCL_DATA_TYPE_UINT64;
}

const char* TypeName(HcclDataType t) {
  switch (t) {
    case HCCL_DATA_TYPE_INT8: return "int8";
    case HCCL_DATA_TYPE_INT16: return "int16";
    case HCCL_DATA_TYPE_INT32: return "int32";
    case HCCL_DATA_TYPE_INT64: return "int64";
    case HCCL_DATA_TYPE_UINT8: return "uint8";
    case HCCL_DATA_TYPE_UINT16: return "uint16";
    case HCCL_DATA_TYPE_UINT32: return "uint32";
    case HCCL_DATA_TYPE_UINT64: return "uint64";
    case HCCL_DATA_TYPE_FP16: return "fp16";
    case HCCL_DATA_TYPE_BFP16: return "bf16";
    case HCCL_DATA_TYPE_FP32: return "fp32";
    default: return "fp64";
  }
}

const char* OpName(HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM: return "sum";
    case HCCL_REDUCE_PROD: return "prod";
    case HCCL_REDUCE_MAX: return "max";
    default: return "min";
  }
}

// The integer rank r contributes at element i (salt varies per check).
int64_t Value(uint32_t r, uint64_t i, uint32_t salt, HcclDataType t, HcclReduceOp op) {
  if (op == HCCL_REDUCE_PROD) {
    if ((r + i + salt) % 5 == 0) return 2;
    if (!IsUnsigned(t) && (r * 3 + i + salt) % 7 == 0) return -1;
    return 1;
  }
  const int64_t v = static_cast<int64_t>((r * 7 + i * 13 + salt) % 9);
  return IsUnsigned(t) ? v : v - 4;
}

void Store(void* buf, uint64_t i, HcclDataType t, int64_t v) {
  char* p = static_cast<char*>(buf) + i * Size(t);
  switch (t) {
    case HCCL_DATA_TYPE_INT8: { int8_t x = static_cast<int8_t>(v); memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_UINT8: { uint8_t x = static_cast<uint8_t>(v); memcpy(p, &x, 1); break; }
    case HCCL_DATA_TYPE_INT16: { int16_t x = static_cast<int16_t>(v); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_UINT16: { uint16_t x = static_cast<uint16_t>(v); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_INT32: { int32_t x = static_cast<int32_t>(v); memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_UINT32: { uint32_t x = static_cast<uint32_t>(v); memcpy(p, &x, 4); break; }
    case HCCL_DATA_TYPE_INT64: { memcpy(p, &v, 8); break; }
    case HCCL_DATA_TYPE_UINT64: { uint64_t x = static_cast<uint64_t>(v); memcpy(p, &x, 8); break; }
    case HCCL_DATA_TYPE_FP16: { uint16_t x = vigil::alg::FloatToHalf(static_cast<float>(v)); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_BFP16: { uint16_t x = vigil::alg::FloatToBf16(static_cast<float>(v)); memcpy(p, &x, 2); break; }
    case HCCL_DATA_TYPE_FP32: { float x = static_cast<float>(v); memcpy(p, &x, 4); break; }
    default: { double x = static_cast<double>(v); memcpy(p, &x, 8); break; }
  }
}

int64_t Combine(int64_t a, int64_t b, HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM: return a + b;
    case HCCL_REDUCE_PROD: return a * b;
    case HCCL_REDUCE_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}

// Reduction of every rank's value at element i.
int64_t Reduced(uint32_t n, uint64_t i, uint32_t salt, HcclDataType t, HcclReduceOp op) {
  int64_t acc = Value(0, i, salt, t, op);
  for (uint32_t r = 1; r < n; ++r) acc = Combine(acc, Value(r, i, salt, t, op), op);
  return acc;
}

using Buf = std::vector<char>;

class Checker {
 public:
  Checker(HcclComm comm, aclrtStream stream, uint32_t rank, uint32_t n, bool big, bool direct)
      : comm_(comm), stream_(stream), rank_(rank), n_(n), big_(big), direct_(direct) {}

  int Run() {
    if (direct_) Direct();
    for (HcclDataType t : kTypes) {
      for (HcclReduceOp op : kOps) {
        for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{1000}}) {
          AllReduce(t, op, count, false);
          AllReduce(t, op, count, true);
        }
        ReduceScatter(t, op, 1);
        ReduceScatter(t, op, 333);
        Reduce(t, op, 517, (salt_ % n_));
        ReduceScatterV(t, op);
      }
      AllGather(t, 1, false);
      AllGather(t, 777, false);
      AllGather(t, 64, true);
      Broadcast(t, 1001, salt_ % n_);
      Scatter(t, 129, (salt_ + 1) % n_);
      AllGatherV(t);
      AlltoAll(t, 37);
      AlltoAllV(t);
      AlltoAllVC(t);
      SendRecv(t, 99);
      BatchRing(t, 301);
    }
    if (big_) {
      // Larger than the CCL buffer (the tests run with HCCL_BUFFSIZE=1 -> 2 MiB).
      AllReduce(HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, 700001, false);
      AllReduce(HCCL_DATA_TYPE_BFP16, HCCL_REDUCE_MAX, 1500000, true);
      AllGather(HCCL_DATA_TYPE_INT8, 1200001, false);
      ReduceScatter(HCCL_DATA_TYPE_INT32, HCCL_REDUCE_SUM, 600001);
      Broadcast(HCCL_DATA_TYPE_FP64, 400003, n_ - 1);
      AlltoAll(HCCL_DATA_TYPE_FP32, 300001);
      BatchRing(HCCL_DATA_TYPE_UINT8, 3000001);
      // Blocks past the shm lend threshold (64 KiB a peer), every type and op: the reductions
      // whose pieces the peers read in place (single copy).
      for (HcclDataType t : kTypes) {
        for (HcclReduceOp op : kOps) {
          const uint64_t block = (80u << 10) / Size(t) + 3;
          AllReduce(t, op, block * n_ + 1, (block + op) % 2 == 0);
          ReduceScatter(t, op, block);
        }
      }
    }
    Expect("Barrier", HcclBarrier(comm_, stream_) == HCCL_SUCCESS && Sync());
    Expect("AllReduce count 0",
           HcclAllReduce(nullptr, nullptr, 0, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm_, stream_) ==
               HCCL_SUCCESS);
    std::printf("rank %u/%u: %d checks, %d wrong\n", rank_, n_, checks_, wrong_);
    std::fflush(stdout);
    return wrong_ == 0 ? 0 : 1;
  }

 private:
  bool Sync() { return aclrtSynchronizeStream(stream_) == ACL_SUCCESS; }

  void Expect(const std::string& what, bool ok) {
    ++checks_;
    if (!ok) {
      ++wrong_;
      if (wrong_ <= 20) std::printf("rank %u: WRONG %s\n", rank_, what.c_str());
    }
  }

  // Compares got with want element by element (bytes), naming the first difference.
  void Compare(const std::string& what, const Buf& got, const Buf& want, HcclDataType t) {
    ++checks_;
    if (got.size() == want.size() && memcmp(got.data(), want.data(), got.size()) == 0) return;
    ++wrong_;
    const size_t sz = Size(t);
    size_t at = 0;
    while (at + sz <= std::min(got.size(), want.size()) && memcmp(&got[at], &want[at], sz) == 0) at += sz;
    if (wrong_ <= 20) {
      std::printf("rank %u: WRONG %s: first difference at element %zu of %zu\n", rank_,
                  what.c_str(), at / sz, want.size() / sz);
    }
  }

  std::string Name(const char* op, HcclDataType t, uint64_t count, const char* extra = "") {
    return std::string(op) + " " + TypeName(t) + " count " + std::to_string(count) + extra;
  }

  Buf Fill(uint32_t r, uint64_t count, HcclDataType t, HcclReduceOp op, uint64_t offset = 0) {
    Buf b(count * Size(t));
    for (uint64_t i = 0; i < count; ++i) Store(b.data(), i, t, Value(r, i + offset, salt_, t, op));
    return b;
  }

  void AllReduce(HcclDataType t, HcclReduceOp op, uint64_t count, bool in_place) {
    ++salt_;
    Buf in = Fill(rank_, count, t, op), out(in.size(), 0), want(in.size());
    for (uint64_t i = 0; i < count; ++i) Store(want.data(), i, t, Reduced(n_, i, salt_, t, op));
    void* dst = in_place ? in.data() : out.data();
    HcclResult rc = HcclAllReduce(in.data(), dst, count, t, op, comm_, stream_);
    Expect(Name("AllReduce enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    Compare(Name("AllReduce", t, count, in_place ? " in-place " : " ") + OpName(op),
            in_place ? in : out, want, t);
  }

  // In place: the output is this rank's block of the input.
  void ReduceScatter(HcclDataType t, HcclReduceOp op, uint64_t count, bool in_place = false) {
    ++salt_;
    Buf in = Fill(rank_, count * n_, t, op), out(count * Size(t)), want(out.size());
    for (uint64_t i = 0; i < count; ++i) {
      Store(want.data(), i, t, Reduced(n_, rank_ * count + i, salt_, t, op));
    }
    void* dst = in_place ? in.data() + rank_ * count * Size(t) : out.data();
    HcclResult rc = HcclReduceScatter(in.data(), dst, count, t, op, comm_, stream_);
    Expect(Name("ReduceScatter enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    if (in_place) memcpy(out.data(), dst, out.size());
    Compare(Name("ReduceScatter", t, count, in_place ? " in-place " : " ") + OpName(op), out,
            want, t);
  }

  // In place: every rank passes its input as the output; the root's holds the result, the
  // others' keep their input.
  void Reduce(HcclDataType t, HcclReduceOp op, uint64_t count, uint32_t root,
              bool in_place = false) {
    ++salt_;
    Buf in = Fill(rank_, count, t, op), out(in.size()), want(in.size());
    for (uint64_t i = 0; i < count; ++i) Store(want.data(), i, t, Reduced(n_, i, salt_, t, op));
    const Buf input = in;
    HcclResult rc = HcclReduce(in.data(), in_place ? in.data() : out.data(), count, t, op, root,
                               comm_, stream_);
    Expect(Name("Reduce enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    const std::string what = Name("Reduce", t, count, in_place ? " in-place " : " ") + OpName(op) +
                             " root " + std::to_string(root);
    if (rank_ == root) Compare(what, in_place ? in : out, want, t);
    if (rank_ != root) Compare(what + " (input kept)", in, input, t);
  }

  // Around the largest part a 2-rank shm op moves through the link's direct slots (4 KiB a
  // rank, comm/communicator_direct.cc) and below it, every type, reduce op, root and placement:
  // the direct path (up to the edge) against the generic one (past it) and the references.
  void Direct() {
    constexpr uint64_t kDirectBytes = 4096;
    for (HcclDataType t : kTypes) {
      const uint64_t edge = kDirectBytes / Size(t);
      for (uint64_t count : {uint64_t{1}, uint64_t{3}, edge, edge + 1}) {
        for (HcclReduceOp op : kOps) {
          for (bool in_place : {false, true}) {
            AllReduce(t, op, count, in_place);
            ReduceScatter(t, op, count, in_place);
            for (uint32_t root = 0; root < n_; ++root) Reduce(t, op, count, root, in_place);
          }
        }
        AllGather(t, count, false);
        AllGather(t, count, true);
        for (uint32_t root = 0; root < n_; ++root) Broadcast(t, count, root);
        AlltoAll(t, count);
      }
    }
  }

  // Rank r's share in the V ops: r + 1 elements, some ranks 0.
  uint64_t VCount(uint32_t r) const { return (r % 3 == 1) ? 0 : r * 5 + 3; }

  void ReduceScatterV(HcclDataType t, HcclReduceOp op) {
    ++salt_;
    std::vector<uint64_t> counts(n_), displs(n_);
    uint64_t total = 0;
    for (uint32_t r = 0; r < n_; ++r) {
      counts[r] = VCount(r);
      displs[r] = total + 2;  // gaps between blocks
      total = displs[r] + counts[r];
    }
    Buf in = Fill(rank_, total, t, op), out(std::max<uint64_t>(counts[rank_], 1) * Size(t)),
        want(out.size());
    for (uint64_t i = 0; i < counts[rank_]; ++i) {
      Store(want.data(), i, t, Reduced(n_, displs[rank_] + i, salt_, t, op));
    }
    HcclResult rc = HcclReduceScatterV(in.data(), counts.data(), displs.data(), out.data(),
                                       counts[rank_], t, op, comm_, stream_);
    Expect(Name("ReduceScatterV enqueue", t, counts[rank_]), rc == HCCL_SUCCESS && Sync());
    out.resize(counts[rank_] * Size(t));
    want.resize(out.size());
    Compare(Name("ReduceScatterV", t, counts[rank_], " ") + OpName(op), out, want, t);
  }

  void AllGather(HcclDataType t, uint64_t count, bool in_place) {
    ++salt_;
    Buf mine = Fill(rank_, count, t, HCCL_REDUCE_SUM), out(count * n_ * Size(t)), want(out.size());
    for (uint32_t r = 0; r < n_; ++r) {
      for (uint64_t i = 0; i < count; ++i) Store(want.data(), r * count + i, t, Value(r, i, salt_, t, HCCL_REDUCE_SUM));
    }
    void* send = mine.data();
    if (in_place) {
      memcpy(out.data() + rank_ * count * Size(t), mine.data(), mine.size());
      send = out.data() + rank_ * count * Size(t);
    }
    HcclResult rc = HcclAllGather(send, out.data(), count, t, comm_, stream_);
    Expect(Name("AllGather enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    Compare(Name("AllGather", t, count, in_place ? " in-place" : ""), out, want, t);
  }

  void Broadcast(HcclDataType t, uint64_t count, uint32_t root) {
    ++salt_;
    Buf buf = rank_ == root ? Fill(root, count, t, HCCL_REDUCE_SUM) : Buf(count * Size(t), 0);
    Buf want = Fill(root, count, t, HCCL_REDUCE_SUM);
    HcclResult rc = HcclBroadcast(buf.data(), count, t, root, comm_, stream_);
    Expect(Name("Broadcast enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    Compare(Name("Broadcast", t, count, (" root " + std::to_string(root)).c_str()), buf, want, t);
  }

  void Scatter(HcclDataType t, uint64_t count, uint32_t root) {
    ++salt_;
    Buf in = rank_ == root ? Fill(root, count * n_, t, HCCL_REDUCE_SUM) : Buf();
    Buf out(count * Size(t)), want = Fill(root, count, t, HCCL_REDUCE_SUM, rank_ * count);
    HcclResult rc = HcclScatter(rank_ == root ? in.data() : nullptr, out.data(), count, t, root,
                                comm_, stream_);
    Expect(Name("Scatter enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    Compare(Name("Scatter", t, count, (" root " + std::to_string(root)).c_str()), out, want, t);
  }

  void AllGatherV(HcclDataType t) {
    ++salt_;
    std::vector<uint64_t> counts(n_), displs(n_);
    uint64_t total = 0;
    for (uint32_t r = 0; r < n_; ++r) {
      counts[r] = VCount(r);
      displs[r] = total + 1;
      total = displs[r] + counts[r];
    }
    Buf mine = Fill(rank_, std::max<uint64_t>(counts[rank_], 1), t, HCCL_REDUCE_SUM);
    Buf out(total * Size(t), 0), want(total * Size(t), 0);
    for (uint32_t r = 0; r < n_; ++r) {
      for (uint64_t i = 0; i < counts[r]; ++i) Store(want.data(), displs[r] + i, t, Value(r, i, salt_, t, HCCL_REDUCE_SUM));
    }
    HcclResult rc = HcclAllGatherV(mine.data(), counts[rank_], out.data(), counts.data(),
                                   displs.data(), t, comm_, stream_);
    Expect(Name("AllGatherV enqueue", t, total), rc == HCCL_SUCCESS && Sync());
    Compare(Name("AllGatherV", t, total), out, want, t);
  }

  // Element j of the block rank s sends to rank d.
  int64_t A2A(uint32_t s, uint32_t d, uint64_t j, HcclDataType t) {
    return Value(s * 31 + d, j, salt_, t, HCCL_REDUCE_SUM);
  }

  void AlltoAll(HcclDataType t, uint64_t count) {
    ++salt_;
    Buf in(count * n_ * Size(t)), out(in.size()), want(in.size());
    for (uint32_t d = 0; d < n_; ++d) {
      for (uint64_t j = 0; j < count; ++j) {
        Store(in.data(), d * count + j, t, A2A(rank_, d, j, t));
        Store(want.data(), d * count + j, t, A2A(d, rank_, j, t));
      }
    }
    HcclResult rc = HcclAlltoAll(in.data(), count, t, out.data(), count, t, comm_, stream_);
    Expect(Name("AlltoAll enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    Compare(Name("AlltoAll", t, count), out, want, t);
  }

  uint64_t Pair(uint32_t s, uint32_t d) const { return (s + 2 * d) % 4 == 3 ? 0 : (s * 3 + d) % 7 + 1; }

  void AlltoAllV(HcclDataType t) {
    ++salt_;
    std::vector<uint64_t> sc(n_), sd(n_), rc_(n_), rd(n_);
    uint64_t stotal = 0, rtotal = 0;
    for (uint32_t p = 0; p < n_; ++p) {
      sc[p] = Pair(rank_, p);
      sd[p] = stotal;
      stotal += sc[p] + 1;
      rc_[p] = Pair(p, rank_);
      rd[p] = rtotal;
      rtotal += rc_[p] + 2;
    }
    Buf in(std::max<uint64_t>(stotal, 1) * Size(t), 0), out(std::max<uint64_t>(rtotal, 1) * Size(t), 0),
        want(out.size(), 0);
    for (uint32_t p = 0; p < n_; ++p) {
      for (uint64_t j = 0; j < sc[p]; ++j) Store(in.data(), sd[p] + j, t, A2A(rank_, p, j, t));
      for (uint64_t j = 0; j < rc_[p]; ++j) Store(want.data(), rd[p] + j, t, A2A(p, rank_, j, t));
    }
    HcclResult rc = HcclAlltoAllV(in.data(), sc.data(), sd.data(), t, out.data(), rc_.data(),
                                  rd.data(), t, comm_, stream_);
    Expect(Name("AlltoAllV enqueue", t, stotal), rc == HCCL_SUCCESS && Sync());
    Compare(Name("AlltoAllV", t, rtotal), out, want, t);
  }

  void AlltoAllVC(HcclDataType t) {
    ++salt_;
    std::vector<uint64_t> matrix(n_ * n_);
    for (uint32_t s = 0; s < n_; ++s) {
      for (uint32_t d = 0; d < n_; ++d) matrix[s * n_ + d] = Pair(s, d);
    }
    uint64_t stotal = 0, rtotal = 0;
    for (uint32_t p = 0; p < n_; ++p) {
      stotal += matrix[rank_ * n_ + p];
      rtotal += matrix[p * n_ + rank_];
    }
    Buf in(std::max<uint64_t>(stotal, 1) * Size(t)), out(std::max<uint64_t>(rtotal, 1) * Size(t)),
        want(out.size());
    uint64_t so = 0, ro = 0;
    for (uint32_t p = 0; p < n_; ++p) {
      for (uint64_t j = 0; j < matrix[rank_ * n_ + p]; ++j) Store(in.data(), so++, t, A2A(rank_, p, j, t));
      for (uint64_t j = 0; j < matrix[p * n_ + rank_]; ++j) Store(want.data(), ro++, t, A2A(p, rank_, j, t));
    }
    HcclResult rc = HcclAlltoAllVC(in.data(), matrix.data(), t, out.data(), t, comm_, stream_);
    Expect(Name("AlltoAllVC enqueue", t, stotal), rc == HCCL_SUCCESS && Sync());
    out.resize(rtotal * Size(t));
    want.resize(out.size());
    Compare(Name("AlltoAllVC", t, rtotal), out, want, t);
  }

  // Even ranks send then receive, odd ranks the other way round: no deadlock for any size.
  void SendRecv(HcclDataType t, uint64_t count) {
    if (n_ < 2) return;
    ++salt_;
    const uint32_t next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
    Buf mine = Fill(rank_, count, t, HCCL_REDUCE_SUM), got(mine.size()),
        want = Fill(prev, count, t, HCCL_REDUCE_SUM);
    bool ok = true;
    if (rank_ % 2 == 0) {
      ok = ok && HcclSend(mine.data(), count, t, next, comm_, stream_) == HCCL_SUCCESS;
      ok = ok && HcclRecv(got.data(), count, t, prev, comm_, stream_) == HCCL_SUCCESS;
    } else {
      ok = ok && HcclRecv(got.data(), count, t, prev, comm_, stream_) == HCCL_SUCCESS;
      ok = ok && HcclSend(mine.data(), count, t, next, comm_, stream_) == HCCL_SUCCESS;
    }
    Expect(Name("Send/Recv enqueue", t, count), ok && Sync());
    if (n_ % 2 == 0 || true) Compare(Name("Send/Recv ring", t, count), got, want, t);
  }

  void BatchRing(HcclDataType t, uint64_t count) {
    if (n_ < 2) return;
    ++salt_;
    const uint32_t next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
    Buf mine = Fill(rank_, count, t, HCCL_REDUCE_SUM), got(mine.size()),
        want = Fill(prev, count, t, HCCL_REDUCE_SUM);
    HcclSendRecvItem items[2] = {{HCCL_SEND, mine.data(), count, t, next},
                                 {HCCL_RECV, got.data(), count, t, prev}};
    HcclResult rc = HcclBatchSendRecv(items, 2, comm_, stream_);
    Expect(Name("BatchSendRecv enqueue", t, count), rc == HCCL_SUCCESS && Sync());
    Compare(Name("BatchSendRecv ring", t, count), got, want, t);
  }

  HcclComm comm_;
  aclrtStream stream_;
  uint32_t rank_, n_;
  bool big_;
  bool direct_;
  uint32_t salt_ = 0;
  int checks_ = 0, wrong_ = 0;
};

// --rank-table FILE: the rank joins through HcclCommInitClusterInfo instead of the root info.
const char* g_rank_table = nullptr;

int RunRank(uint32_t rank, uint32_t n, const HcclRootInfo& root, bool big, bool direct) {
  if (aclrtSetDevice(static_cast<int32_t>(rank % 8)) != ACL_SUCCESS) return 10;
  aclrtStream stream;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 11;
  HcclComm comm;
  HcclResult rc = g_rank_table != nullptr ? HcclCommInitClusterInfo(g_rank_table, rank, &comm)
                                           : HcclCommInitRootInfo(n, &root, rank, &comm);
  if (rc != HCCL_SUCCESS) {
    std::printf("rank %u: comm init failed: %s\n", rank, HcclGetErrorString(rc));
    return 12;
  }
  uint32_t got_rank = 99, got_size = 0;
  HcclGetRankId(comm, &got_rank);
  HcclGetRankSize(comm, &got_size);
  int result = Checker(comm, stream, rank, n, big, direct).Run();
  if (got_rank != rank || got_size != n) result = 13;
  HcclResult async = HCCL_E_INTERNAL;
  if (HcclGetCommAsyncError(comm, &async) != HCCL_SUCCESS || async != HCCL_SUCCESS) result = 14;
  if (HcclCommDestroy(comm) != HCCL_SUCCESS) result = 15;
  aclrtDestroyStream(stream);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t threads = 0;
  bool big = false;
  bool direct = false;  // --direct: the small ops around the direct slots' limit first
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--direct") == 0) direct = true;
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = static_cast<uint32_t>(atoi(argv[++i]));
    if (strcmp(argv[i], "--big") == 0) big = true;
    if (strcmp(argv[i], "--rank-table") == 0 && i + 1 < argc) g_rank_table = argv[++i];
  }
  HcclRootInfo root;
  if (threads > 0) {
    if (HcclGetRootInfo(&root) != HCCL_SUCCESS) return 20;
    std::vector<int> results(threads, 0);
    std::vector<std::thread> pool;
    for (uint32_t r = 0; r < threads; ++r) {
      pool.emplace_back([&, r] { results[r] = RunRank(r, threads, root, big, direct); });
    }
    int rc = 0;
    for (uint32_t r = 0; r < threads; ++r) {
      pool[r].join();
      if (results[r] != 0) rc = results[r];
    }
    return rc;
  }
  uint32_t rank = 0, n = 0;
  if (!VigilLaunchRank(&rank, &n)) {
    std::fprintf(stderr, "collective_check: run under `vigil run -n N` or pass --threads N\n");
    return 2;
  }
  if (g_rank_table == nullptr && VigilLaunchRootInfo(rank, &root) != HCCL_SUCCESS) return 21;
  return RunRank(rank, n, root, big, direct);
}
