// `vigil bench` building blocks: the collectives it measures (how a size maps to counts and
// buffers, nccl-tests' bus-bandwidth factor, the in-place layout) and the data that checks them.
//
// Data: rank r's input element i of a block with salt s is V(r, key(i, s)), a small integer
// (|v| <= 4, or a product factor in {-1, 1, 2}), so every reduction is exact in every dtype. The
// key has period 315 in its own space, so the reduction over ranks of any element is one lookup
// in a 315-entry table, and filling or checking 64 MiB costs one pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hccl/hccl.h"

namespace vigil::cli::bench {

enum class Op {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAlltoAll,
  kAlltoAllV,
  kAllGatherV,
  kReduceScatterV,
  kScatter,
  kSendRecv,
};

struct OpInfo {
  Op op;
  const char* name;        // CLI name: "allreduce"
  const char* title;       // table header: "AllReduce"
  bool reduces;            // takes -o
  bool rooted;             // takes --root
  bool blocks;             // the size is split into nranks blocks (allgather, alltoall, ...)
  bool out_of_place;       // has a distinct out-of-place form
  bool in_place;           // has an in-place form
};

const std::vector<OpInfo>& AllOps();
const OpInfo* FindOp(const std::string& name);

// nccl-tests' busbw / algbw for this op on n ranks.
double BusFactor(Op op, uint32_t nranks);

bool ParseDataType(const std::string& s, HcclDataType* out);
bool ParseReduceOp(const std::string& s, HcclReduceOp* out);
const char* DataTypeName(HcclDataType t);  // nccl-tests' spelling: "float", "half", "int8", ...
const char* ReduceOpName(HcclReduceOp op);  // "sum", ...
size_t DataTypeBytes(HcclDataType t);

// One row of the sweep: element counts and buffer bytes for this rank.
struct Shape {
  uint64_t count = 0;        // per-block (or per-buffer) element count the API takes
  uint64_t total_count = 0;  // nccl-tests' "count" column (elements of the larger buffer)
  uint64_t bytes = 0;        // nccl-tests' "size" column
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
};
Shape ShapeFor(Op op, uint64_t size_bytes, HcclDataType type, uint32_t nranks);

// The buffers of one rank. send/recv hold the out-of-place pair; in place uses recv (or send
// for ops whose output lives inside the input, like ReduceScatter).
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
  size_t send_cap = 0;
  size_t recv_cap = 0;
};

struct Call {
  Op op;
  HcclDataType type;
  HcclReduceOp redop;
  uint32_t root;
  uint32_t rank;
  uint32_t nranks;
  bool in_place;
  Shape shape;
};

// Issues one collective on the stream (asynchronous, like the HCCL API).
HcclResult Launch(const Call& c, const Buffers& b, HcclComm comm, aclrtStream stream);

// The check of one call: Prepare fills the inputs (salted) and poisons the outputs; Verify
// counts the output elements of this rank that differ from the reference.
class Checker {
 public:
  Checker(HcclDataType type, HcclReduceOp redop, uint32_t nranks);
  void Prepare(const Call& c, const Buffers& b, uint32_t salt) const;
  uint64_t Verify(const Call& c, const Buffers& b, uint32_t salt) const;

 private:
  static constexpr uint32_t kPeriod = 315;  // lcm(9, 5, 7): the value patterns' periods
  // Writes elements [i0, i0 + n) of source rank src's block with salt s to dst.
  void Fill(void* dst, uint32_t src, uint64_t i0, uint64_t n, uint32_t salt) const;
  // Counts mismatches of dst against the table (src rank, or the reduction when src < 0).
  uint64_t Compare(const void* dst, int src, uint64_t i0, uint64_t n, uint32_t salt) const;
  void Poison(void* dst, size_t bytes) const;

  HcclDataType type_;
  size_t ws_;
  uint32_t nranks_;
  std::vector<std::vector<unsigned char>> input_;  // [rank][key * ws_]
  std::vector<unsigned char> reduced_;              // [key * ws_]
};

}  // namespace vigil::cli::bench
