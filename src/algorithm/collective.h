// Collective algorithms over the transport's links, Gloo-style: each algorithm is plain code over
// Progress() (send/recv all at once) plus the reduction kernels, one small file each
// (ring_allreduce.cc, mesh_allreduce.cc, hd_allreduce.cc, pairwise_alltoall.cc, ...).
//
// Algorithms read and write the user's buffers directly and stage received data in `scratch`
// (the communicator's CCL buffer, HCCL_BUFFSIZE bytes): a message larger than the scratch is
// moved in pieces. Every copy or reduction that touches device memory goes through
// rt::DeviceMemory's checked path, so a freed CCL buffer (comm destroyed before sync) or a user
// buffer smaller than count fails with HCCL_E_RUNTIME and AlgResult::copy filled (EI0012).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hccl/hccl_types.h"
#include "runtime/device_memory.h"
#include "transport/link.h"

namespace vigil::alg {

enum class Algo { kAuto, kRing, kMesh, kHalvingDoubling, kPairwise, kStar, kHierarchical };
// HCCL's level names: "ring", "fullmesh", "H-D", "pairwise", "star". kHierarchical: levels run
// different algorithms (algorithm/hierarchical.h names them); "hierarchical".
const char* AlgoName(Algo algo);
bool ParseAlgoName(const std::string& name, Algo* out);

// A header the layer above sends with an op's transfers (the op-consistency fingerprint), so
// that it costs no round of its own. The op's byte stream on a link, in each direction, starts
// with the `bytes` of `mine` when
//  - the link goes to one of `peers` (the ring neighbours): always, in the op's first Flush,
//    ahead of that Flush's data on the link or alone;
//  - or the op moves data on the link in that direction: ahead of its first transfer.
// Both ends of a link agree on that as long as they run the same op. `hook` runs on every
// header received, before any data behind it is taken; it sets arrived[i] once peers[i]'s
// header matched and `passed` once both did. On links that cannot take data back
// (!Link::can_retract, TCP) data waits as a notify handshake would: to peers[i] until
// arrived[i], to other members until `passed`. `exchanged` tells the caller whether the
// algorithm carried it (an algorithm that moves nothing does not).
// Point-to-point ops name any number of peers and tell each one something else (the items
// between the two): then `peer_list`/`arrived_list` hold the npeers entries instead of
// peers/arrived, and the header for member i is at mine + i * mine_stride.
struct OpHeader {
  const void* mine = nullptr;
  size_t bytes = 0;
  uint32_t npeers = 0;
  uint32_t peers[2] = {0, 0};
  transport::HeadHook hook;
  bool arrived[2] = {false, false};
  bool passed = false;
  bool exchanged = false;
  size_t mine_stride = 0;
  const uint32_t* peer_list = nullptr;
  bool* arrived_list = nullptr;

  uint32_t peer(uint32_t k) const { return peer_list ? peer_list[k] : peers[k]; }
  bool* arrived_flag(uint32_t k) { return arrived_list ? &arrived_list[k] : &arrived[k]; }
  const void* mine_for(uint32_t member) const {
    return static_cast<const char*>(mine) + member * mine_stride;
  }
  // Clears what an op changed (arrived, passed, exchanged), for the next op of the same peers:
  // a layer above that keeps one header per communicator need not rebuild it.
  void StartOver() {
    arrived[0] = arrived[1] = false;
    passed = false;
    exchanged = false;
  }
};

// Task-level tracking (HCCL_DIAGNOSE_ENABLE=1): every transfer an op ran, as HCCL caches the
// tasks of its ops. A send is HCCL's Memcpy into the peer, a receive its Notify Wait for the
// peer's data; a transfer of an op header alone is the notify handshake of the op's start.
enum class TaskState : uint8_t { kDone, kFailed, kPending };
struct TaskRecord {
  uint32_t id = 0;          // 1, 2, ... in the order the op posted them
  uint32_t remote = 0;      // the peer's rank in the communicator
  bool send = false;
  bool header_only = false;
  transport::LinkType link = transport::LinkType::kShm;
  TaskState state = TaskState::kDone;
  uint64_t head = 0;   // of which an op header
  uint64_t bytes = 0;  // head and body
  uint64_t done = 0;   // moved when the op ended
};
// "Memcpy", "Notify Record", "Notify Wait" (HCCL's task type names).
const char* TaskTypeName(const TaskRecord& task);
const char* TaskStateName(TaskState state);  // "done", "failed", "pending"
struct TaskLog {
  static constexpr size_t kMaxTasks = 256;  // the newest are kept; `total` counts them all
  std::vector<TaskRecord> tasks;
  uint64_t total = 0;
  void Add(const TaskRecord& t) {
    if (tasks.size() >= kMaxTasks) tasks.erase(tasks.begin(), tasks.begin() + kMaxTasks / 2);
    tasks.push_back(t);
    ++total;
  }
  // The task the op failed on (nullptr when none failed).
  const TaskRecord* failed() const {
    for (const TaskRecord& t : tasks) {
      if (t.state == TaskState::kFailed) return &t;
    }
    return nullptr;
  }
};

// The ranks an algorithm runs over. links[i] is the link to member i (nullptr for self).
struct Group {
  uint32_t rank = 0;
  uint32_t size = 1;
  std::vector<transport::Link*> links;
  transport::WaitPolicy wait;
  OpHeader* header = nullptr;  // optional; see OpHeader
  // Optional, hierarchical AllReduce/AllGather/ReduceScatter: the header of the inter-host level,
  // carried by that level's transfers (its sub-group's members are the hosts).
  OpHeader* inter_header = nullptr;
  TaskLog* tasks = nullptr;    // optional: record every transfer (HCCL_DIAGNOSE_ENABLE=1)
  // Non-zero: the layer above checked the op's user buffers and scratch against the
  // device-memory map when the op began (comm's Execute), and this was the map's generation
  // then (rt::DeviceMemory::Generation). The algorithm does not check them again, and its copies
  // and reductions, still guarded, look their ranges up only once the map has changed since.
  uint64_t ranges_checked_at = 0;
  // The communicator's hcclAlgo (HcclCommConfig), in HCCL_ALGO's form; null or empty: HCCL_ALGO.
  const std::string* algo_spec = nullptr;
};

struct Scratch {
  void* base = nullptr;
  size_t bytes = 0;
};

// Why an algorithm failed: a transfer (timeout, abort, broken link) or a checked copy.
struct AlgResult {
  HcclResult code = HCCL_SUCCESS;
  transport::ProgressError progress;
  rt::CopyFault copy;
  size_t copy_bytes = 0;
  const void* copy_src = nullptr;
  const void* copy_dst = nullptr;
};

// Picks the algorithm for an op from size and rank count (HCCL_ALGO may force one). `bytes` is
// the op's whole message: AllReduce count*size, AllGather the gathered output, ReduceScatter
// the input. The result is what the op will really run (AlgoName of it goes into the AlgType):
//  AllReduce:     p == 1 -> ring; p <= 8 and bytes <= 512 -> fullmesh in one round (every
//                 rank reduces every vector); bytes <= 64 KiB -> H-D (recursive doubling);
//                 p <= 8 -> fullmesh; power-of-two p and bytes <= 16 MiB -> H-D; else ring.
//  AllGather:     p <= 8 -> fullmesh; power-of-two p and bytes <= 16 MiB -> H-D; else ring.
//  ReduceScatter: p <= 8 -> fullmesh; else ring (H-D reduce-scatter is not implemented: ring).
//  Broadcast / Reduce: bytes <= 64 KiB -> binomial tree (reported "H-D"); else pipelined chain
//                 ("ring"); a Broadcast whose links are all shared memory then reads from the
//                 root in one step instead (lent buffer, single copy: broadcast.cc).
// HCCL_ALGO ("ring", "level0:ring", "level0:NA;level1:H-D_R", "allreduce=level0:fullmesh/
// allgather=..." ...) forces an algorithm: the entry for this op if there is one, else the
// op-less one; the first level that is not NA wins. NHR/NB/AHC map to H-D, pipeline to ring.
// A value that names nothing known, or an algorithm the op lacks, means automatic (one warning).
// `spec`: a communicator's own value of that form (hcclAlgo); null or empty: HCCL_ALGO.
Algo ChooseAllReduce(uint32_t nranks, size_t bytes, const std::string* spec = nullptr);
Algo ChooseAllGather(uint32_t nranks, size_t bytes, const std::string* spec = nullptr);
Algo ChooseReduceScatter(uint32_t nranks, size_t bytes, const std::string* spec = nullptr);
Algo ChooseBroadcast(uint32_t nranks, size_t bytes, const std::string* spec = nullptr);
Algo ChooseReduce(uint32_t nranks, size_t bytes, const std::string* spec = nullptr);
// The HCCL_ALGO-form value in force: `spec` when it says something, else HCCL_ALGO.
const std::string& AlgoSpec(const std::string* spec);

// The operations, for PeersFor.
enum class CollOp {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kScatter,
  kAllGatherV,
  kReduceScatterV,
  kAlltoAllV,
  kBarrier,
};
// The members `rank` exchanges data with when running `op` with `algo` (kAuto: every member).
// Ring: the two neighbours; Barrier: rank +- 2^k; H-D AllReduce: its fold and exchange partners;
// everything else: every other member. Sorted, without `rank` itself.
std::vector<uint32_t> PeersFor(CollOp op, Algo algo, uint32_t rank, uint32_t size);

// All ops: kAuto picks with Choose*. Errors: HCCL_E_PARA/PTR/NOT_SUPPORT for bad arguments,
// the Progress code (AlgResult::progress) when a transfer fails, times out or is aborted,
// HCCL_E_RUNTIME (AlgResult::copy) when a checked copy or reduction faults. `scratch` must be
// the same size on every rank (piece sizes are derived from it).
// send and recv may be the same buffer (in place). Counts are elements of `type`.
HcclResult AllReduce(Algo algo, Group& g, const void* send, void* recv, uint64_t count,
                     HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result);
// send holds size*recv_count elements; recv gets this rank's reduced block. In place: recv may
// be send + rank*recv_count (or send itself).
HcclResult ReduceScatter(Algo algo, Group& g, const void* send, void* recv, uint64_t recv_count,
                         HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result);
// recv gets size*send_count elements, rank r's block at r*send_count. In place: send may be
// recv + rank*send_count.
HcclResult AllGather(Algo algo, Group& g, const void* send, void* recv, uint64_t send_count,
                     HcclDataType type, Scratch scratch, AlgResult* result);
HcclResult Broadcast(Group& g, void* buf, uint64_t count, HcclDataType type, uint32_t root,
                     Scratch scratch, AlgResult* result);
// recv significant only at root.
HcclResult Reduce(Group& g, const void* send, void* recv, uint64_t count, HcclDataType type,
                  HcclReduceOp op, uint32_t root, Scratch scratch, AlgResult* result);
// send (size*recv_count elements) significant only at root.
HcclResult Scatter(Group& g, const void* send, void* recv, uint64_t recv_count, HcclDataType type,
                   uint32_t root, Scratch scratch, AlgResult* result);
HcclResult AllGatherV(Group& g, const void* send, uint64_t send_count, void* recv,
                      const uint64_t* recv_counts, const uint64_t* recv_displs, HcclDataType type,
                      Scratch scratch, AlgResult* result);
HcclResult ReduceScatterV(Group& g, const void* send, const uint64_t* send_counts,
                          const uint64_t* send_displs, void* recv, uint64_t recv_count,
                          HcclDataType type, HcclReduceOp op, Scratch scratch, AlgResult* result);
// Counts and displacements in elements; pairwise exchange (step k: send to rank+k, recv from
// rank-k).
HcclResult AlltoAllV(Group& g, const void* send, const uint64_t* send_counts,
                     const uint64_t* send_displs, HcclDataType send_type, void* recv,
                     const uint64_t* recv_counts, const uint64_t* recv_displs,
                     HcclDataType recv_type, Scratch scratch, AlgResult* result);
HcclResult Barrier(Group& g, AlgResult* result);

// One point-to-point item of a batch (HcclSend/HcclRecv/HcclBatchSendRecv).
struct P2pItem {
  bool send = false;
  void* buf = nullptr;
  uint64_t count = 0;
  HcclDataType type = HCCL_DATA_TYPE_INT8;
  uint32_t peer = 0;
};
// All items progress together; items to one peer in one direction complete in order.
HcclResult SendRecv(Group& g, const std::vector<P2pItem>& items, Scratch scratch,
                    AlgResult* result);

}  // namespace vigil::alg
