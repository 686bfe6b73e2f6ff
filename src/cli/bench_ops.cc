#include "cli/bench_ops.h"

#include <algorithm>
#include <cstring>

namespace vigil::cli::bench {

namespace {

unsigned char* At(void* p, uint64_t elems, size_t ws) {
  return static_cast<unsigned char*>(p) + elems * ws;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // may carry into the exponent: right
  return static_cast<uint16_t>(sign | h);
}

uint16_t FloatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

// Writes v as one element of type t.
void Store(unsigned char* dst, HcclDataType t, int64_t v) {
  switch (t) {
    case HCCL_DATA_TYPE_INT8: { int8_t x = static_cast<int8_t>(v); std::memcpy(dst, &x, 1); break; }
    case HCCL_DATA_TYPE_UINT8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(dst, &x, 1); break; }
    case HCCL_DATA_TYPE_INT16: { int16_t x = static_cast<int16_t>(v); std::memcpy(dst, &x, 2); break; }
    case HCCL_DATA_TYPE_UINT16: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(dst, &x, 2); break; }
    case HCCL_DATA_TYPE_INT32: { int32_t x = static_cast<int32_t>(v); std::memcpy(dst, &x, 4); break; }
    case HCCL_DATA_TYPE_UINT32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(dst, &x, 4); break; }
    case HCCL_DATA_TYPE_INT64: std::memcpy(dst, &v, 8); break;
    case HCCL_DATA_TYPE_UINT64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(dst, &x, 8); break; }
    case HCCL_DATA_TYPE_FP16: { uint16_t x = FloatToHalf(static_cast<float>(v)); std::memcpy(dst, &x, 2); break; }
    case HCCL_DATA_TYPE_BFP16: { uint16_t x = FloatToBf16(static_cast<float>(v)); std::memcpy(dst, &x, 2); break; }
    case HCCL_DATA_TYPE_FP32: { float x = static_cast<float>(v); std::memcpy(dst, &x, 4); break; }
    case HCCL_DATA_TYPE_FP64: { double x = static_cast<double>(v); std::memcpy(dst, &x, 8); break; }
    default: break;
  }
}

bool IsUnsigned(HcclDataType t) {
  return t == HCCL_DATA_TYPE_UINT8 || t == HCCL_DATA_TYPE_UINT16 || t == HCCL_DATA_TYPE_UINT32 ||
         t == HCCL_DATA_TYPE_UINT64;
}

bool IsFloat(HcclDataType t) {
  return t == HCCL_DATA_TYPE_FP16 || t == HCCL_DATA_TYPE_BFP16 || t == HCCL_DATA_TYPE_FP32 ||
         t == HCCL_DATA_TYPE_FP64;
}

int64_t Value(uint32_t r, uint32_t key, HcclReduceOp op, bool uns) {
  if (op == HCCL_REDUCE_PROD) {
    if ((r + key) % 5 == 0) return 2;
    if (!uns && (r * 3 + key) % 7 == 0) return -1;
    return 1;
  }
  const int64_t v = static_cast<int64_t>((r * 7 + key) % 9);
  return uns ? v : v - 4;
}

// key(i, s) = (13 i + 7 floor(i / 1024) + 11 s) mod 315, walked incrementally: neighbouring
// elements differ, and blocks 1024 elements apart differ too (a misplaced block shows).
struct KeyWalk {
  static constexpr uint32_t kP = 315;
  uint64_t i;
  uint32_t k;
  KeyWalk(uint64_t i0, uint32_t salt)
      : i(i0),
        k(static_cast<uint32_t>((13 * (i0 % kP) + 7 * ((i0 >> 10) % kP) + 11 * (salt % kP)) % kP)) {}
  void Next() {
    ++i;
    k += 13;
    if ((i & 1023) == 0) k += 7;
    if (k >= kP) k -= kP;
  }
};

template <typename T>
void FillT(T* dst, const unsigned char* table, uint64_t i0, uint64_t n, uint32_t salt) {
  const T* t = reinterpret_cast<const T*>(table);
  KeyWalk w(i0, salt);
  for (uint64_t j = 0; j < n; ++j, w.Next()) dst[j] = t[w.k];
}

// Counts differing elements; for floats +0 and -0 are equal.
template <typename T>
uint64_t CompareT(const T* dst, const unsigned char* table, uint64_t i0, uint64_t n,
                  uint32_t salt, bool is_float) {
  const T* t = reinterpret_cast<const T*>(table);
  constexpr T kSign = static_cast<T>(T{1} << (sizeof(T) * 8 - 1));
  KeyWalk w(i0, salt);
  uint64_t wrong = 0;
  for (uint64_t j = 0; j < n; ++j, w.Next()) {
    const T a = dst[j], b = t[w.k];
    if (a != b && !(is_float && static_cast<T>(a | kSign) == kSign && static_cast<T>(b | kSign) == kSign)) {
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace

const std::vector<OpInfo>& AllOps() {
  static const std::vector<OpInfo> kOps = {
      {Op::kAllReduce, "allreduce", "AllReduce", true, false, false, true, true},
      {Op::kAllGather, "allgather", "AllGather", false, false, true, true, true},
      {Op::kReduceScatter, "reducescatter", "ReduceScatter", true, false, true, true, true},
      {Op::kBroadcast, "broadcast", "Broadcast", false, true, false, false, true},
      {Op::kReduce, "reduce", "Reduce", true, true, false, true, true},
      {Op::kAlltoAll, "alltoall", "AlltoAll", false, false, true, true, false},
      {Op::kAlltoAllV, "alltoallv", "AlltoAllV", false, false, true, true, false},
      {Op::kAllGatherV, "allgatherv", "AllGatherV", false, false, true, true, true},
      {Op::kReduceScatterV, "reducescatterv", "ReduceScatterV", true, false, true, true, true},
      {Op::kScatter, "scatter", "Scatter", false, true, true, true, true},
      {Op::kSendRecv, "sendrecv", "SendRecv", false, false, false, true, false},
  };
  return kOps;
}

const OpInfo* FindOp(const std::string& name) {
  for (const OpInfo& o : AllOps()) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

double BusFactor(Op op, uint32_t n) {
  const double d = static_cast<double>(n);
  switch (op) {
    case Op::kAllReduce: return 2.0 * (d - 1) / d;
    case Op::kAllGather: case Op::kAllGatherV: case Op::kReduceScatter:
    case Op::kReduceScatterV: case Op::kAlltoAll: case Op::kAlltoAllV: case Op::kScatter:
      return (d - 1) / d;
    case Op::kBroadcast: case Op::kReduce: case Op::kSendRecv: return 1.0;
  }
  return 1.0;
}

namespace {
struct TypeName {
  HcclDataType type;
  const char* name;  // printed
  const char* alias;
  const char* alias2;
};
const TypeName kTypeNames[] = {
    {HCCL_DATA_TYPE_INT8, "int8", "char", "int8_t"},
    {HCCL_DATA_TYPE_UINT8, "uint8", "uint8_t", "byte"},
    {HCCL_DATA_TYPE_INT16, "int16", "short", "int16_t"},
    {HCCL_DATA_TYPE_UINT16, "uint16", "uint16_t", "ushort"},
    {HCCL_DATA_TYPE_INT32, "int32", "int", "int32_t"},
    {HCCL_DATA_TYPE_UINT32, "uint32", "uint", "uint32_t"},
    {HCCL_DATA_TYPE_INT64, "int64", "long", "int64_t"},
    {HCCL_DATA_TYPE_UINT64, "uint64", "ulong", "uint64_t"},
    {HCCL_DATA_TYPE_FP16, "half", "fp16", "float16"},
    {HCCL_DATA_TYPE_BFP16, "bfloat16", "bf16", "bfp16"},
    {HCCL_DATA_TYPE_FP32, "float", "fp32", "float32"},
    {HCCL_DATA_TYPE_FP64, "double", "fp64", "float64"},
};
}  // namespace

bool ParseDataType(const std::string& s, HcclDataType* out) {
  for (const TypeName& t : kTypeNames) {
    if (s == t.name || s == t.alias || s == t.alias2) {
      *out = t.type;
      return true;
    }
  }
  return false;
}

const char* DataTypeName(HcclDataType type) {
  for (const TypeName& t : kTypeNames) {
    if (t.type == type) return t.name;
  }
  return "?";
}

bool ParseReduceOp(const std::string& s, HcclReduceOp* out) {
  if (s == "sum") *out = HCCL_REDUCE_SUM;
  else if (s == "prod") *out = HCCL_REDUCE_PROD;
  else if (s == "max") *out = HCCL_REDUCE_MAX;
  else if (s == "min") *out = HCCL_REDUCE_MIN;
  else return false;
  return true;
}

const char* ReduceOpName(HcclReduceOp op) {
  switch (op) {
    case HCCL_REDUCE_SUM: return "sum";
    case HCCL_REDUCE_PROD: return "prod";
    case HCCL_REDUCE_MAX: return "max";
    case HCCL_REDUCE_MIN: return "min";
    default: return "?";
  }
}

size_t DataTypeBytes(HcclDataType t) {
  switch (t) {
    case HCCL_DATA_TYPE_INT8: case HCCL_DATA_TYPE_UINT8: return 1;
    case HCCL_DATA_TYPE_INT16: case HCCL_DATA_TYPE_UINT16: case HCCL_DATA_TYPE_FP16:
    case HCCL_DATA_TYPE_BFP16: return 2;
    case HCCL_DATA_TYPE_INT32: case HCCL_DATA_TYPE_UINT32: case HCCL_DATA_TYPE_FP32: return 4;
    case HCCL_DATA_TYPE_INT64: case HCCL_DATA_TYPE_UINT64: case HCCL_DATA_TYPE_FP64: return 8;
    default: return 0;
  }
}

Shape ShapeFor(Op op, uint64_t size_bytes, HcclDataType type, uint32_t n) {
  const uint64_t ws = DataTypeBytes(type);
  Shape s;
  switch (op) {
    case Op::kAllGather: case Op::kAllGatherV: case Op::kReduceScatter:
    case Op::kReduceScatterV: case Op::kAlltoAll: case Op::kAlltoAllV: case Op::kScatter: {
      s.count = std::max<uint64_t>(1, size_bytes / (ws * n));
      s.total_count = s.count * n;
      s.bytes = s.total_count * ws;
      const size_t block = s.count * ws, all = s.bytes;
      const bool gather = op == Op::kAllGather || op == Op::kAllGatherV;
      const bool a2a = op == Op::kAlltoAll || op == Op::kAlltoAllV;
      s.send_bytes = gather ? block : all;
      s.recv_bytes = (gather || a2a) ? all : block;
      break;
    }
    default:
      s.count = std::max<uint64_t>(1, size_bytes / ws);
      s.total_count = s.count;
      s.bytes = s.count * ws;
      s.send_bytes = op == Op::kBroadcast ? 0 : s.bytes;
      s.recv_bytes = s.bytes;
      break;
  }
  return s;
}

HcclResult Launch(const Call& c, const Buffers& b, HcclComm comm, aclrtStream stream) {
  const uint64_t cnt = c.shape.count;
  const size_t ws = DataTypeBytes(c.type);
  const uint32_t n = c.nranks, me = c.rank;
  std::vector<uint64_t> counts, displs;
  if (c.op == Op::kAllGatherV || c.op == Op::kReduceScatterV || c.op == Op::kAlltoAllV) {
    counts.assign(n, cnt);
    for (uint32_t r = 0; r < n; ++r) displs.push_back(r * cnt);
  }
  switch (c.op) {
    case Op::kAllReduce: {
      void* in = c.in_place ? b.recv : b.send;
      return HcclAllReduce(in, b.recv, cnt, c.type, c.redop, comm, stream);
    }
    case Op::kReduce: {
      void* in = c.in_place ? b.recv : b.send;
      return HcclReduce(in, b.recv, cnt, c.type, c.redop, c.root, comm, stream);
    }
    case Op::kBroadcast:
      return HcclBroadcast(b.recv, cnt, c.type, c.root, comm, stream);
    case Op::kAllGather: {
      void* in = c.in_place ? At(b.recv, me * cnt, ws) : b.send;
      return HcclAllGather(in, b.recv, cnt, c.type, comm, stream);
    }
    case Op::kAllGatherV: {
      void* in = c.in_place ? At(b.recv, me * cnt, ws) : b.send;
      return HcclAllGatherV(in, cnt, b.recv, counts.data(), displs.data(), c.type, comm, stream);
    }
    case Op::kReduceScatter: {
      void* out = c.in_place ? At(b.send, me * cnt, ws) : b.recv;
      return HcclReduceScatter(b.send, out, cnt, c.type, c.redop, comm, stream);
    }
    case Op::kReduceScatterV: {
      void* out = c.in_place ? At(b.send, me * cnt, ws) : b.recv;
      return HcclReduceScatterV(b.send, counts.data(), displs.data(), out, cnt, c.type, c.redop,
                                comm, stream);
    }
    case Op::kScatter: {
      void* out = c.in_place ? At(b.send, me * cnt, ws) : b.recv;
      return HcclScatter(b.send, out, cnt, c.type, c.root, comm, stream);
    }
    case Op::kAlltoAll:
      return HcclAlltoAll(b.send, cnt, c.type, b.recv, cnt, c.type, comm, stream);
    case Op::kAlltoAllV:
      return HcclAlltoAllV(b.send, counts.data(), displs.data(), c.type, b.recv, counts.data(),
                           displs.data(), c.type, comm, stream);
    case Op::kSendRecv: {
      HcclSendRecvItem items[2] = {
          {HCCL_SEND, b.send, cnt, c.type, (me + 1) % n},
          {HCCL_RECV, b.recv, cnt, c.type, (me + n - 1) % n},
      };
      return HcclBatchSendRecv(items, 2, comm, stream);
    }
  }
  return HCCL_E_NOT_SUPPORT;
}

Checker::Checker(HcclDataType type, HcclReduceOp redop, uint32_t nranks)
    : type_(type), ws_(DataTypeBytes(type)), nranks_(nranks) {
  const bool uns = IsUnsigned(type);
  input_.assign(nranks, std::vector<unsigned char>(kPeriod * ws_));
  reduced_.assign(kPeriod * ws_, 0);
  for (uint32_t key = 0; key < kPeriod; ++key) {
    int64_t acc = 0;
    for (uint32_t r = 0; r < nranks; ++r) {
      const int64_t v = Value(r, key, redop, uns);
      Store(&input_[r][key * ws_], type, v);
      if (r == 0) {
        acc = v;
      } else {
        switch (redop) {
          case HCCL_REDUCE_SUM: acc += v; break;
          case HCCL_REDUCE_PROD: acc *= v; break;
          case HCCL_REDUCE_MAX: acc = std::max(acc, v); break;
          case HCCL_REDUCE_MIN: acc = std::min(acc, v); break;
          default: break;
        }
      }
    }
    Store(&reduced_[key * ws_], type, acc);
  }
}

void Checker::Fill(void* dst, uint32_t src, uint64_t i0, uint64_t n, uint32_t salt) const {
  const unsigned char* t = input_[src].data();
  switch (ws_) {
    case 1: FillT(static_cast<uint8_t*>(dst), t, i0, n, salt); break;
    case 2: FillT(static_cast<uint16_t*>(dst), t, i0, n, salt); break;
    case 4: FillT(static_cast<uint32_t*>(dst), t, i0, n, salt); break;
    default: FillT(static_cast<uint64_t*>(dst), t, i0, n, salt); break;
  }
}

uint64_t Checker::Compare(const void* dst, int src, uint64_t i0, uint64_t n, uint32_t salt) const {
  const unsigned char* t = src < 0 ? reduced_.data() : input_[static_cast<uint32_t>(src)].data();
  const bool f = IsFloat(type_);
  switch (ws_) {
    case 1: return CompareT(static_cast<const uint8_t*>(dst), t, i0, n, salt, f);
    case 2: return CompareT(static_cast<const uint16_t*>(dst), t, i0, n, salt, f);
    case 4: return CompareT(static_cast<const uint32_t*>(dst), t, i0, n, salt, f);
    default: return CompareT(static_cast<const uint64_t*>(dst), t, i0, n, salt, f);
  }
}

// 0x7B in every byte is none of the reference values in any dtype (int8 123, fp32 1.3e36, ...).
void Checker::Poison(void* dst, size_t bytes) const { std::memset(dst, 0x7B, bytes); }

void Checker::Prepare(const Call& c, const Buffers& b, uint32_t s) const {
  const uint64_t cnt = c.shape.count;
  const uint32_t n = c.nranks, me = c.rank;
  switch (c.op) {
    case Op::kAllReduce: case Op::kReduce:
      if (c.in_place) {
        Fill(b.recv, me, 0, cnt, s);
      } else {
        Poison(b.recv, cnt * ws_);
        Fill(b.send, me, 0, cnt, s);
      }
      break;
    case Op::kBroadcast:
      if (me == c.root) Fill(b.recv, c.root, 0, cnt, s);
      else Poison(b.recv, cnt * ws_);
      break;
    case Op::kAllGather: case Op::kAllGatherV:
      Poison(b.recv, n * cnt * ws_);
      Fill(c.in_place ? At(b.recv, me * cnt, ws_) : b.send, me, 0, cnt, s);
      break;
    case Op::kReduceScatter: case Op::kReduceScatterV:
      if (!c.in_place) Poison(b.recv, cnt * ws_);
      Fill(b.send, me, 0, n * cnt, s);
      break;
    case Op::kScatter:
      if (me == c.root) Fill(b.send, c.root, 0, n * cnt, s);
      else if (c.in_place) Poison(b.send, n * cnt * ws_);
      if (!c.in_place) Poison(b.recv, cnt * ws_);
      break;
    case Op::kAlltoAll: case Op::kAlltoAllV:
      Poison(b.recv, n * cnt * ws_);
      for (uint32_t j = 0; j < n; ++j) Fill(At(b.send, j * cnt, ws_), me, 0, cnt, s + j);
      break;
    case Op::kSendRecv:
      Poison(b.recv, cnt * ws_);
      Fill(b.send, me, 0, cnt, s);
      break;
  }
}

uint64_t Checker::Verify(const Call& c, const Buffers& b, uint32_t s) const {
  const uint64_t cnt = c.shape.count;
  const uint32_t n = c.nranks, me = c.rank;
  switch (c.op) {
    case Op::kAllReduce:
      return Compare(b.recv, -1, 0, cnt, s);
    case Op::kReduce:
      return me == c.root ? Compare(b.recv, -1, 0, cnt, s) : 0;
    case Op::kBroadcast:
      return Compare(b.recv, static_cast<int>(c.root), 0, cnt, s);
    case Op::kAllGather: case Op::kAllGatherV: {
      uint64_t wrong = 0;
      for (uint32_t r = 0; r < n; ++r) {
        wrong += Compare(At(b.recv, r * cnt, ws_), static_cast<int>(r), 0, cnt, s);
      }
      return wrong;
    }
    case Op::kReduceScatter: case Op::kReduceScatterV: {
      const void* out = c.in_place ? At(b.send, me * cnt, ws_) : b.recv;
      return Compare(out, -1, me * cnt, cnt, s);
    }
    case Op::kScatter: {
      const void* out = c.in_place ? At(b.send, me * cnt, ws_) : b.recv;
      return Compare(out, static_cast<int>(c.root), me * cnt, cnt, s);
    }
    case Op::kAlltoAll: case Op::kAlltoAllV: {
      uint64_t wrong = 0;
      for (uint32_t r = 0; r < n; ++r) {
        wrong += Compare(At(b.recv, r * cnt, ws_), static_cast<int>(r), 0, cnt, s + me);
      }
      return wrong;
    }
    case Op::kSendRecv:
      return Compare(b.recv, static_cast<int>((me + n - 1) % n), 0, cnt, s);
  }
  return 0;
}

}  // namespace vigil::cli::bench
