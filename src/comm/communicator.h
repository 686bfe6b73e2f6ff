// The communicator: identity (identifier, rank, size), the CCL buffer (2 x HCCL_BUFFSIZE, charged
// to the device budget), the transport's links made lazily the first time an (op, algorithm)
// runs, and the turning of an op into a task on the user's stream.
//
// Lifetime: the handle owns a shared_ptr; every queued op task owns one too, so HcclCommDestroy
// before aclrtSynchronizeStream never frees state under a running op. Destroy marks the CCL
// buffer freed in the device memory map at once (the op's next checked copy fails with EI0012,
// as on a device) but unmaps it and closes the links only when the last op lets go.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "algorithm/hierarchical.h"
#include "common/env_config.h"
#include "bootstrap/root_info.h"
#include "comm/consistency.h"
#include "comm/exec_mutex.h"
#include "comm/check_ring.h"
#include "comm/memory_ranges.h"
#include "comm/op.h"
#include "comm/op_retry.h"
#include "common/dtype.h"
#include "runtime/stream.h"
#include "transport/link.h"

namespace vigil::comm {

struct CommOptions {
  uint32_t nranks = 0;
  uint32_t rank = 0;
  bootstrap::RootInfo root;
  uint32_t buffsize_mb = 200;     // effective: HcclCommConfig.hcclBufferSize, else HCCL_BUFFSIZE
  uint32_t exec_timeout_s = 1836; // effective: hcclExecTimeOut, else HCCL_EXEC_TIMEOUT
  std::string user_name;          // hcclCommName
  // The rest of HcclCommConfig, as read (api/hccl_config.cc); HcclConfigGetInfo reports them.
  std::string udi;                // hcclUdi, logged
  std::string algo;               // hcclAlgo ("" = HCCL_ALGO)
  uint32_t deterministic = 0;     // hcclDeterministic, else HcclSetConfig's
  uint32_t op_expansion_mode = 0; // hcclOpExpansionMode as given (ops always run on the host)
  uint64_t sym_win_max_gb = 16;   // hcclSymWinMaxMemSizePerRank
  int32_t device = 0;
  std::string host_ip;  // the links' address; "" = picked (HCCL_IF_IP, HCCL_SOCKET_IFNAME, ...)
  // HCCL_OP_RETRY_ENABLE / HCCL_OP_RETRY_PARAMS, or the config's hcclRetryEnable/Params.
  OpRetryConfig retry = Env().op_retry;
};

// Why Create failed, so the API layer can raise the right EI code.
struct InitFailure {
  enum class Kind { kNone, kBufferOom, kRendezvous, kTransport } kind = Kind::kNone;
  std::string detail;
};

// A user buffer an op reads or writes on this rank, for the op-start range check.
struct BufferUse {
  const void* ptr;
  size_t bytes;
  const char* name;  // "input", "output", ...
};

// What the user buffers of most ops follow from (those without per-rank counts or items). The
// default key is a Barrier's, which has none.
// The index of an algorithm (and hierarchical plan) in CommInfo::alg_types.
uint32_t AlgTypeIndex(alg::Algo algo, const alg::HierPlan& plan);

struct BufferKey {
  OpType type = OpType::kBarrier;
  const void* send = nullptr;
  const void* recv = nullptr;
  uint64_t count = 0;
  HcclDataType dtype = HCCL_DATA_TYPE_FP32;
  uint32_t root = 0;
  bool operator==(const BufferKey&) const = default;
};

// VIGIL_DIRECT_MAX_BYTES (default 4096; 0 turns the direct exchange off): the largest op a
// 2-rank communicator on shm moves through its link's direct slots (communicator_direct.cc).
size_t DirectBytesFromEnv();

class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  static HcclResult Create(const CommOptions& options, std::shared_ptr<Communicator>* out,
                           InitFailure* failure);
  ~Communicator();

  uint32_t rank() const { return options_.rank; }
  uint32_t size() const { return options_.nranks; }
  int32_t device() const { return options_.device; }
  const std::string& identifier() const { return options_.root.identifier; }
  // The job key its connections prove (bootstrap/job_key.h); never to be logged.
  const auth::JobKey& job_key() const { return options_.root.key; }
  const std::string& user_name() const { return options_.user_name; }
  uint32_t buffsize_mb() const { return options_.buffsize_mb; }
  const CommOptions& options() const { return options_; }
  uint32_t host_count() const { return host_count_; }
  // Which ranks share a host (same host_id), for the hierarchical algorithms.
  const alg::HostLayout& host_layout() const { return layout_; }
  const std::vector<bootstrap::RankInfo>& ranks() const { return ranks_; }
  // The names every op record of this communicator shares (op.h).
  const std::shared_ptr<const CommInfo>& info() const { return info_; }

  // Queues the op on `stream`; returns once queued. HCCL_E_PARA after Destroy. The op's task
  // keeps the communicator alive with `comm`, the caller's reference moved in (another one, from
  // shared_from_this, would cost an atomic compare-exchange per op).
  // may_inline: the caller is the op's API call itself (not a group's end or a graph replay),
  // so the op may run at once on its thread (comm/communicator_enqueue.cc).
  static HcclResult Enqueue(std::shared_ptr<Communicator>&& comm, OpDesc&& op,
                            rt::Stream* stream, const void* handle, bool may_inline = false);
  // HcclCommDestroy. Idempotent.
  void Destroy();
  // First error of any op so far (HCCL_SUCCESS when none): HcclGetCommAsyncError.
  HcclResult async_error() const { return async_error_.load(); }
  // Makes every op waiting on a peer end with `code` (heartbeat: a rank was lost).
  void Abort(HcclResult code);
  bool aborted() const { return abort_.load() != 0; }
  // Ops queued on this rank and not ended yet (VigilCommShrink waits for them).
  uint64_t in_flight() const {
    const uint64_t ended = ended_.load(std::memory_order_acquire);
    const uint64_t queued = next_index_.load(std::memory_order_acquire) - 1;
    return queued > ended ? queued - ended : 0;
  }
  // HcclCommSuspend / HcclCommResume: a suspended communicator takes no new op (the API layer
  // refuses them); ops queued before run to their end.
  bool suspended() const { return suspended_.load(std::memory_order_acquire); }
  void set_suspended(bool on) { suspended_.store(on, std::memory_order_release); }
  // HcclCommSetMemoryRange / HcclCommActivateCommMemory.
  MemoryRanges& memory_ranges() { return memory_ranges_; }
  // For tests and fault injection: the transport.
  transport::Transport* transport() { return transport_.get(); }
  // The early op-consistency report (comm/consistency.h); from HCCL_DFS_CONFIG at creation.
  // Off, the op headers still travel and a mismatch times out instead (as in HCCL).
  bool consistency_check() const { return consistency_check_.load(); }
  void set_consistency_check(bool on) { consistency_check_.store(on); }

  // ---- op retry (comm/op_retry.h) ----
  bool retry_enabled() const { return retry_.on; }
  // The heartbeat's liveness probe: whether rank `r` has exited (blocks <= 600 ms).
  void set_peer_exited_probe(std::function<bool(uint32_t)> probe);
  // A data link's error, from the heartbeat (any thread): true when an op retry takes it over
  // (the link's level is covered), so no ERROR CQE is raised now; a retry that gives up
  // reports it then (Transport::ReportLinkError).
  bool HoldLinkErrorForRetry(const transport::LinkError& error);

 private:
  explicit Communicator(const CommOptions& options);
  // `algo` and `plan`: what Enqueue picked (and named in the op's record).
  aclError Execute(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                   const alg::HierPlan& plan);
  // The op's user buffers against the memory map (under exec_mu_): *unchanged when they are
  // those checked last and the map's generation is still `checked_at` (nothing looked up);
  // else the first of them (listed in uses_) that is freed, unmapped or too small, or nullptr.
  const BufferUse* FaultyUserBuffer(const OpDesc& op, const BufferKey& key, uint64_t checked_at,
                                    bool* unchanged);
  // Records the op's buffers (uses_) as those checked last, at generation `checked_at`.
  void NoteBuffersChecked(const OpDesc& op, const BufferKey& key, uint64_t checked_at);
  // Execute's body, with exec_mu_ held by the caller.
  aclError ExecuteHeld(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                       const alg::HierPlan& plan);
  // ---- the direct exchange (communicator_direct.cc) ----
  // Whether the op goes through the direct slots of the link to the peer: the same answer on
  // both ranks for one op (it depends on the op and on the link's agreed limit alone).
  static constexpr bool DirectOp(OpType type) {
    return type == OpType::kAllReduce || type == OpType::kBroadcast ||
           type == OpType::kAllGather || type == OpType::kReduceScatter ||
           type == OpType::kReduce || type == OpType::kAlltoAll;
  }
  // The byte count compared with the limit is a rank's part (AllGather, ReduceScatter,
  // AlltoAll: a block). An AlltoAll whose two types differ takes the generic path, which
  // judges them; a peer whose types agree goes direct, and the two ops' fingerprints differ.
  bool DirectFits(const OpDesc& op) const {
    if (!direct_ready_.load(std::memory_order_acquire) || !DirectOp(op.type) || op.count == 0 ||
        (op.type == OpType::kAlltoAll && op.recv_dtype != op.dtype)) {
      return false;
    }
    return op.count * DataTypeSize(op.dtype) <= direct_max_.load(std::memory_order_relaxed);
  }
  // Once the link to the peer exists (2 ranks): whether and up to which size ops go direct.
  void NoteDirectLink();
  // The op through the slots, under exec_mu_, its start recorded (direct_start_/_deadline_):
  // posts this rank's part (unless `posted`: an inline run did), waits for the peer's and
  // combines, recording the op's end as ExecuteHeld does (success or failure). `bounded`: gives
  // up waiting at direct_give_back_ (nothing recorded) with kDirectPending.
  static constexpr aclError kDirectPending = -3;
  static constexpr aclError kDirectNotRun = -4;
  aclError RunDirect(const OpDesc& op, const OpRecord& record, uint64_t seq, bool posted,
                     bool bounded);
  // What this rank posts for the op (*bytes of it; nullptr with 0: nothing but the number), and
  // its output made from its input and the peer's part.
  const void* DirectPart(const OpDesc& op, size_t* bytes) const;
  void FinishDirect(const OpDesc& op, const void* theirs);
  // RunDirect's wait for the peer's part; null with *rc set when the op ended (failed) or,
  // bounded, is still pending. *came: the clock read of the spin that saw the part come, or
  // kUnread when the wait last yielded or slept (left as it was when it read no clock).
  static constexpr SteadyClock::time_point kUnread = SteadyClock::time_point::min();
  const void* AwaitDirect(const OpDesc& op, const OpRecord& record, uint64_t seq, bool bounded,
                          uint64_t* check, size_t* bytes, aclError* rc,
                          SteadyClock::time_point* came);
  // The peer sent ring bytes instead (its op does not go direct): judged by their op header.
  const void* RingInstead(const OpDesc& op, const OpRecord& record, uint64_t seq, aclError* rc);
  // A message of the peer that is not this op's (its check word differs, it runs ahead, or it
  // sent ring bytes): the op ends as the op-consistency check says (*rc), or false when it is
  // this op after all.
  bool JudgeDirectHead(const OpDesc& op, const OpRecord& record, uint64_t seq, const void* head,
                       aclError* rc);
  // The op on the caller's thread (an idle stream, its buffers valid): kDone, kPending
  // (posted; the stream stays claimed and exec_mu_ held until ResumeDirect runs from its queue)
  // or kNotRun (nothing done: queue it).
  enum class InlineRun { kNotRun, kDone, kPending };
  // `now`: a clock read just made (the op's start).
  InlineRun TryRunDirect(const OpDesc& op, const OpRecord& record, rt::Stream* stream,
                         SteadyClock::time_point now);
  // A direct op's start on the running thread: takes exec_mu_ without waiting, checks that the
  // op may go direct now, records its start (`now`, else a clock read) and runs it for up to
  // `budget`. kDirectNotRun (nothing done, exec_mu_ free), kDirectPending (posted, exec_mu_
  // held for ResumeDirect), or the op's result (ended; *detail set on failure).
  aclError StartDirect(const OpDesc& op, const OpRecord& record, SteadyClock::duration budget,
                       std::string* detail,
                       std::optional<SteadyClock::time_point> now = std::nullopt);
  // The rest of a posted op: its wait and combine, for up to `budget` (kDirectPending: still
  // posted, exec_mu_ still held) or, with none, to its end.
  aclError ResumeDirect(const OpDesc& op, const OpRecord& record,
                        std::optional<SteadyClock::duration> budget);
  // An op's queued task. A direct op run by its enqueuer (rt::RunningQueued) is bounded: it
  // returns rt::kTaskNotDone when the peer is late (*posted then says it posted) or it cannot go
  // direct now (the worker's or a Synchronize's run then takes it through Execute).
  aclError RunQueuedOp(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                       const alg::HierPlan& plan, bool* posted);

  // A short reason for the algorithm choice ([SelectAlg] line).
  std::string ChoiceReason(const OpDesc& op, alg::Algo algo) const;
  // An op's end, however it ends, under exec_mu_ (one writer).
  void CountEnded() {
    ended_.store(ended_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // How an op fails (ExecuteHeld and the direct exchange): records it (observers, async error)
  // and returns the stream error. FailTransfer: a transfer that failed or timed out (no retry);
  // FailMismatch: the op-consistency check found another op on `check.remote_rank`.
  aclError FailOp(const OpRecord& record, const std::shared_ptr<alg::TaskLog>& tasks,
                  OpFailure::Kind kind, HcclResult code);
  aclError FailTransfer(const OpRecord& record, const std::shared_ptr<alg::TaskLog>& tasks,
                        const transport::ProgressError& pe, HcclResult rc);
  aclError FailMismatch(const OpDesc& op, const OpRecord& record,
                        const std::shared_ptr<alg::TaskLog>& tasks, const ConsistencyResult& check);
  HcclResult RunAlgorithm(const OpDesc& op, alg::Algo algo, const alg::HierPlan& plan,
                          alg::Group& group, alg::AlgResult* result);
  // kHierarchical fills *plan (the algorithm of each level).
  alg::Algo PickAlgorithm(const OpDesc& op, alg::HierPlan* plan) const;
  // Whether ops of this type would run in levels of one rank a host (PickAlgorithm then runs
  // the inter-host level flat over all ranks).
  bool LevelsAreOneRankAHost(OpType type) const;
  // PickAlgorithm through a per-op-type cache of the last choice by message size (Enqueue):
  // the hit inline, the miss (PickAndCache) out of line.
  alg::Algo CachedAlgorithm(const OpDesc& op, alg::HierPlan* plan) const;
  alg::Algo PickAndCache(const OpDesc& op, uint64_t bytes, alg::HierPlan* plan) const;
  std::string AlgTypeString(alg::Algo algo, const alg::HierPlan& plan) const;
  // Whether (op type, algorithm) has its links already (a collective's, once linked): every op
  // asks, so the answer is inline and the linking itself (EnsureLinks) out of line.
  bool Linked(OpType type, alg::Algo algo) const {
    const unsigned bit = static_cast<unsigned>(type) * 8 + static_cast<unsigned>(algo);
    return (established_bits_[bit / 64].load(std::memory_order_acquire) >> (bit % 64)) & 1;
  }
  // *connected: set when it had to connect (the op's start time is then stale).
  // `policy`: how Connect waits (null: HCCL_CONNECT_TIMEOUT); an op retry re-making links
  // reports its own failure (no EI0006).
  HcclResult EnsureLinks(const OpDesc& op, alg::Algo algo, const std::string& tag,
                         OpFailure* failure, bool* connected,
                         const transport::ConnectPolicy* policy = nullptr);
  void RecordError(HcclResult code);
  // Before the data exchange: the fingerprint exchange with the ring neighbours. HCCL_SUCCESS
  // or the failure (filled) to end the op with.
  HcclResult CheckConsistency(const OpDesc& op, const OpRecord& record, alg::Group& group,
                              OpFailure* failure);
  // Closes every link of this communicator so that peers waiting on this rank fail at once
  // instead of after HCCL_EXEC_TIMEOUT; later ops fail fast naming `why`.
  void CloseLinks(const std::string& why);
  // The check is off and a separate fingerprint exchange found `peer` in another op: wait as
  // a held transfer would (deadline or abort) and say so.
  transport::ProgressError WaitOut(uint32_t peer, const alg::Group& group);

  // ---- op retry (op_retry.cc) ----
  // kCommitted: the link failed in the commit after every rank had the op's data (a rank that
  // returned it refused the retry): the op is complete.
  enum class RetryStep { kRetried, kCommitted, kFailed, kNotRetryable };
  void InitRetry();
  transport::NoticeVerdict OnRetryNotice(const transport::RetryNotice& notice);
  // At a collective's start (seq: its sequence number): registers it, copies in-place inputs.
  void RetryBeginOp(const OpDesc& op, uint64_t seq);
  // An attempt failed (pe, rc): re-makes the links and restores the inputs (kRetried: run the
  // op again), or gives up (kFailed: *failure says why, the op fails with failure->code), or
  // the failure is none a retry covers (kNotRetryable: fail as without retry).
  RetryStep RetryAfterFailure(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                              const transport::ProgressError& pe, HcclResult rc,
                              OpFailure* failure);
  // The attempt and its commit succeeded: the op is complete (logs the recovery if it took
  // retries). True (kept for an op that would have to run again).
  bool RetryCommit(const OpRecord& record);
  void LogRecovered(const OpRecord& record, uint64_t seq);
  // The op failed without a retry (or gave it up): link errors held for it are reported now,
  // and until the next op.
  void ReportHeldLinkErrors();

  CommOptions options_;
  std::vector<bootstrap::RankInfo> ranks_;
  std::vector<transport::Endpoint> endpoints_;
  uint32_t host_count_ = 1;
  alg::HostLayout layout_;
  std::unique_ptr<transport::Transport> transport_;

  void* ccl_base_ = nullptr;  // 2 x buffsize: input half then output half
  size_t ccl_bytes_ = 0;

  std::atomic<uint64_t> next_index_{1};
  std::atomic<uint64_t> ended_{0};  // ops whose Execute returned
  std::atomic<bool> destroyed_{false};
  std::atomic<bool> suspended_{false};
  MemoryRanges memory_ranges_;
  std::atomic<int> abort_{0};
  std::atomic<HcclResult> async_error_{HCCL_SUCCESS};

  std::mutex links_mu_;
  // (op type, algorithm) pairs already linked, as bits (type * 8 + algorithm): read without a
  // lock by every op.
  std::atomic<uint64_t> established_bits_[2] = {0, 0};

  // Ops of one communicator must not run at once (they share links and the CCL buffer).
  ExecMutex exec_mu_;
  std::atomic<uint32_t> running_stream_{0};
  std::atomic<int> running_type_{0};  // OpType of the op running (its tag: info_->tags[type])
  std::set<std::pair<uint32_t, uint32_t>> reported_stream_pairs_;

  std::atomic<bool> consistency_check_{true};
  OpRetryState retry_;
  bool diagnose_enable_ = false;  // HCCL_DIAGNOSE_ENABLE: record every op's tasks
  uint64_t coll_seq_ = 0;  // collectives that reached the check; under exec_mu_
  // Per-op records reused under exec_mu_ instead of built per op (their strings): the failure
  // (written only when an op fails; reset before the next) and the algorithm's result.
  OpFailure failure_;
  bool failure_dirty_ = false;
  alg::AlgResult alg_result_;
  FingerprintHeader fingerprint_;  // the running collective's header (Reset per op); exec_mu_
  CheckRing check_ring_;           // the ring the check runs along, its fold into levels
  P2pHeader p2p_;                  // the running p2p op's header (Reset per op); exec_mu_
  std::atomic<bool> links_closed_{false};
  std::string closed_reason_;  // under links_mu_

  // Per-op strings built once at creation (formatting them cost ~1500 instructions per op, and
  // copying them into every record a heap allocation each): the tag of each op type and the
  // AlgType of each algorithm and hierarchical plan.
  std::shared_ptr<const CommInfo> info_;
  // The last algorithm choice of each op type: the choice depends only on the op type, its
  // message size and what is fixed at creation (ranks, hosts, HCCL_ALGO), and costs ~90
  // instructions. Packed (bytes << 10 | level1 << 7 | level0 << 4 | algo << 1 | 1) so that
  // enqueuers on two threads read and write it without a lock; 0 = none.
  mutable std::array<std::atomic<uint64_t>, kOpTypeCount> alg_cache_{};
  // The op-start range check (under exec_mu_): the running op's user buffers, and those of the
  // last op that passed it with the map's generation before it (rt::DeviceMemory::Generation).
  // An op on the same buffers while the map is unchanged looks nothing up: a training loop
  // reuses its buffers op after op, and the lookups cost ~150 instructions an op.
  std::vector<BufferUse> uses_;
  std::vector<BufferUse> checked_uses_;
  uint64_t checked_at_ = 0;
  BufferKey checked_key_;  // that op's key, when its buffers follow from it (else none)
  // The group the algorithms run over, reused by every op (under exec_mu_): its link table is
  // not allocated per op. Whether that table holds a link to every other rank (then no op looks
  // any up).
  alg::Group group_;
  bool group_links_complete_ = false;
  // transport::WaitPolicy::spin: off when this host runs more of the comm's ranks than it has
  // cores (the peer we wait for then usually needs our core).
  bool spin_wait_ = true;

  // The direct exchange (2 ranks on shm): the link, the largest op it carries (0: none), set
  // once under exec_mu_ and then read by enqueuers (direct_ready_ publishes them).
  transport::Link* direct_link_ = nullptr;
  std::atomic<size_t> direct_max_{0};
  std::atomic<bool> direct_ready_{false};
  bool direct_noted_ = false;     // NoteDirectLink looked at the link (under exec_mu_)
  size_t direct_option_ = 0;      // what this rank offered the link (TransportOptions)
  // The direct op running (under exec_mu_): its start, deadline and check word.
  SteadyClock::time_point direct_start_;
  SteadyClock::time_point direct_deadline_ = SteadyClock::time_point::max();
  uint64_t direct_check_ = 0;
  SteadyClock::time_point direct_moved_;  // when a wait last moved this thread off its CPU
  // A bounded wait gives the op back to the stream then (AwaitDirect).
  SteadyClock::time_point direct_give_back_ = SteadyClock::time_point::max();
};

}  // namespace vigil::comm
