#include "comm/communicator.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>
#include <type_traits>

#include "bootstrap/socket.h"
#include "comm/consistency.h"
#include "comm/op_observer.h"
#include "comm/user_buffers.h"
#include "common/dtype.h"
#include "common/env_config.h"
#include "common/error_codes.h"
#include "common/hccl_result.h"
#include "common/tsc_clock.h"
#include "log/plog.h"
#include "runtime/device_memory.h"
#include "transport/link_base.h"

namespace vigil::comm {

namespace {

// Same value on every process of one machine (and boot) and network namespace: ranks that share
// it may use shm. A network namespace counts as a host of its own, so namespaces on one kernel
// (containers, the multi-host tests) talk TCP between them as separate machines would.
std::string HostId() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  char netns[64] = {0};
  if (readlink("/proc/thread-self/ns/net", netns, sizeof(netns) - 1) < 0) netns[0] = '\0';
  return std::string(name) + "/" + boot + "/" + netns;
}

aclError StreamErrorFor(OpFailure::Kind kind) {
  switch (kind) {
    case OpFailure::Kind::kCopyFault: return ACL_ERROR_RT_SYS_DMA;
    case OpFailure::Kind::kTimeout: return ACL_ERROR_RT_REPORT_TIMEOUT;
    case OpFailure::Kind::kLink: return ACL_ERROR_RT_SOCKET_CLOSE;
    case OpFailure::Kind::kAbort: return ACL_ERROR_RT_LOST_HEARTBEAT;
    case OpFailure::Kind::kParam: return ACL_ERROR_RT_PARAM_INVALID;
    case OpFailure::Kind::kResource: return ACL_ERROR_RT_MEMORY_ALLOCATION;
    case OpFailure::Kind::kOther: break;
  }
  return ACL_ERROR_RT_INTERNAL_ERROR;
}

std::string PtrText(const void* p) { return fmt::format("{}", fmt::ptr(p)); }

// Cores this process may run on.
size_t UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<size_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// A link the peer closed in order (its bye arrived): the peer gave the op up on purpose.
bool PeerClosed(transport::Link* link) {
  auto* base = dynamic_cast<transport::LinkBase*>(link);
  return base != nullptr && base->broken() && base->reason() == "the peer closed the link";
}

// CommInfo::alg_types: the flat algorithms by alg::Algo (kHierarchical last, not among them),
// then the hierarchical plans by (level0, level1).
constexpr uint32_t kAlgos = static_cast<uint32_t>(alg::Algo::kHierarchical) + 1;
constexpr uint32_t kHier = static_cast<uint32_t>(alg::Algo::kHierarchical);
static_assert(kHier == kAlgos - 1);

}  // namespace

uint32_t AlgTypeIndex(alg::Algo algo, const alg::HierPlan& plan) {
  if (algo != alg::Algo::kHierarchical) return static_cast<uint32_t>(algo);
  return kHier + static_cast<uint32_t>(plan.level0) * kAlgos + static_cast<uint32_t>(plan.level1);
}

Communicator::Communicator(const CommOptions& options) : options_(options) {}

HcclResult Communicator::Create(const CommOptions& options, std::shared_ptr<Communicator>* out,
                                InitFailure* failure) {
  std::shared_ptr<Communicator> comm(new Communicator(options));
  const EnvConfig& env = Env();

  // The CCL buffer first: a rank that cannot have one does not join, and the others name it.
  comm->ccl_bytes_ = static_cast<size_t>(options.buffsize_mb) * 2 * 1024 * 1024;
  void* base = mmap(nullptr, comm->ccl_bytes_, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    failure->kind = InitFailure::Kind::kBufferOom;
    failure->detail = fmt::format("mmap of {} bytes failed: {}", comm->ccl_bytes_, strerror(errno));
    return HCCL_E_MEMORY;
  }
  if (rt::DeviceMemory::Instance().Register(options.device, base, comm->ccl_bytes_,
                                            "CCL buffer") != ACL_SUCCESS) {
    munmap(base, comm->ccl_bytes_);
    failure->kind = InitFailure::Kind::kBufferOom;
    failure->detail = fmt::format(
        "CCL buffer of {} bytes (2 x HCCL_BUFFSIZE {}M) does not fit device {} memory: used {} of "
        "budget {} bytes",
        comm->ccl_bytes_, options.buffsize_mb, options.device,
        rt::DeviceMemory::Instance().UsedBytes(options.device),
        rt::DeviceMemory::Instance().Budget());
    return HCCL_E_MEMORY;
  }
  comm->ccl_base_ = base;
  comm->consistency_check_.store(env.inconsistent_check);
  comm->diagnose_enable_ = env.diagnose_enable;

  std::string ifname;
  transport::TransportOptions topts;
  topts.comm_id = options.root.identifier;
  topts.key = options.root.key;
  topts.self.rank = options.rank;
  topts.self.host_ip = options.host_ip.empty() ? net::PickHostIp(&ifname) : options.host_ip;
  topts.self.host_id = HostId();
  topts.self.pid = static_cast<uint32_t>(getpid());
  topts.self.device = options.device;
  topts.force_tcp = env.transport == "tcp";
  topts.qps_per_connection = env.qps_per_connection;
  topts.connect_timeout_s = env.connect_timeout_s;
  // The direct exchange lacks op retry and task tracking: off with them (on both ends of a
  // link, which takes the smaller offer).
  comm->direct_option_ = env.diagnose_enable || options.retry.any() ? 0 : DirectBytesFromEnv();
  topts.shm_direct_bytes = comm->direct_option_;
  topts.device = options.device;
  std::string error;
  HcclResult rc = transport::Transport::Create(topts, &comm->transport_, &error);
  if (rc != HCCL_SUCCESS) {
    failure->kind = InitFailure::Kind::kTransport;
    failure->detail = error;
    return rc;
  }

  bootstrap::RankInfo self;
  self.rank = options.rank;
  self.nranks = options.nranks;
  self.host_ip = topts.self.host_ip;
  self.host_id = topts.self.host_id;
  self.data_port = comm->transport_->listen_port();
  self.pid = topts.self.pid;
  self.device = options.device;
  self.buffsize_mb = options.buffsize_mb;
  self.exec_timeout_s = options.exec_timeout_s;
  self.transport = env.transport;
  self.op_check = env.inconsistent_check ? "on" : "off";
  rc = bootstrap::Rendezvous(options.root, self, &comm->ranks_, &error);
  if (rc != HCCL_SUCCESS) {
    failure->kind = InitFailure::Kind::kRendezvous;
    failure->detail = error;
    return rc;
  }

  std::set<std::string> hosts;
  std::vector<std::string> host_of_rank;
  for (const auto& r : comm->ranks_) {
    transport::Endpoint ep;
    ep.rank = r.rank;
    ep.host_ip = r.host_ip;
    ep.host_id = r.host_id;
    ep.port = r.data_port;
    ep.pid = r.pid;
    ep.device = r.device;
    comm->endpoints_.push_back(ep);
    hosts.insert(r.host_id);
    host_of_rank.push_back(r.host_id);
  }
  comm->host_count_ = static_cast<uint32_t>(hosts.size());
  comm->layout_ = alg::HostLayout::FromHostIds(host_of_rank, options.rank);
  comm->check_ring_.Init(comm->layout_, options.rank, comm->size());
  comm->spin_wait_ = comm->layout_.host >= comm->layout_.hosts.size() ||
                     comm->layout_.hosts[comm->layout_.host].size() <= UsableCpus();
  auto info = std::make_shared<CommInfo>();
  info->identifier = comm->identifier();
  info->user_name = comm->user_name();
  info->rank = comm->rank();
  info->nranks = comm->size();
  info->device = comm->device();
  for (size_t t = 0; t < kOpTypeCount; ++t) {
    info->tags[t] = fmt::format("{}_{}", OpTypeName(static_cast<OpType>(t)), comm->identifier());
  }
  for (uint32_t a = 0; a < kAlgos; ++a) {
    if (a == kHier) continue;
    info->alg_types.push_back(comm->AlgTypeString(static_cast<alg::Algo>(a), alg::HierPlan()));
  }
  for (uint32_t l0 = 0; l0 < kAlgos; ++l0) {
    for (uint32_t l1 = 0; l1 < kAlgos; ++l1) {
      const alg::HierPlan plan{static_cast<alg::Algo>(l0), static_cast<alg::Algo>(l1)};
      info->alg_types.push_back(comm->AlgTypeString(alg::Algo::kHierarchical, plan));
    }
  }
  comm->info_ = std::move(info);
  comm->InitRetry();
  *out = std::move(comm);
  return HCCL_SUCCESS;
}

Communicator::~Communicator() {
  if (transport_) transport_->Close();
  if (ccl_base_ != nullptr) {
    if (!destroyed_.load()) rt::DeviceMemory::Instance().Unregister(ccl_base_);
    munmap(ccl_base_, ccl_bytes_);
  }
}

void Communicator::Destroy() {
  if (destroyed_.exchange(true)) return;
  // Marks the CCL buffer freed now; an op still in flight faults on its next checked copy.
  if (ccl_base_ != nullptr) rt::DeviceMemory::Instance().Unregister(ccl_base_);
}

void Communicator::Abort(HcclResult code) {
  int expected = 0;
  abort_.compare_exchange_strong(expected, static_cast<int>(code));
  // HcclGetCommAsyncError reports it at once, even with no op in flight (as NCCL's
  // ncclCommGetAsyncError after a remote failure): the comm cannot complete another op.
  RecordError(code);
}

void Communicator::CloseLinks(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    if (links_closed_.load()) return;
    closed_reason_ = why;
    links_closed_.store(true);
  }
  HCCL_RUN_WARNING("[TaskExecStage]communicator[{}] rank[{}] closes its links: {}; the peers "
                   "waiting on this rank stop now instead of after HCCL_EXEC_TIMEOUT",
                   identifier(), rank(), why);
  if (transport_) transport_->Close();
}

transport::ProgressError Communicator::WaitOut(uint32_t peer, const alg::Group& group) {
  // As a held transfer does in Progress: until the deadline or the abort flag.
  while (SteadyClock::now() < group.wait.deadline && abort_.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  transport::ProgressError pe;
  pe.link = peer < group.links.size() ? group.links[peer] : nullptr;
  pe.timed_out = abort_.load() == 0;
  pe.code = pe.timed_out ? HCCL_E_TIMEOUT : ToHcclResult(abort_.load());
  pe.reason = fmt::format("timeout waiting for rank[{}], whose op header differs (the op "
                          "consistency check is off: HCCL_DFS_CONFIG inconsistent_check:off)",
                          peer);
  return pe;
}

void Communicator::RecordError(HcclResult code) {
  HcclResult expected = HCCL_SUCCESS;
  async_error_.compare_exchange_strong(expected, code);
}

HcclResult Communicator::EnsureLinks(const OpDesc& op, alg::Algo algo, const std::string& tag,
                                     OpFailure* failure, bool* connected,
                                     const transport::ConnectPolicy* policy) {
  static_assert(
      static_cast<int>(OpType::kBarrier) * 8 + static_cast<int>(alg::Algo::kHierarchical) < 128,
      "established_bits_ holds every (op type, algorithm) pair");
  const unsigned bit = static_cast<unsigned>(op.type) * 8 + static_cast<unsigned>(algo);
  if (Linked(op.type, algo)) return HCCL_SUCCESS;
  std::vector<transport::Endpoint> peers;
  if (op.type == OpType::kSend || op.type == OpType::kRecv || op.type == OpType::kBatchSendRecv) {
    std::set<uint32_t> wanted;
    for (const auto& item : op.items) wanted.insert(item.peer);
    for (uint32_t r : wanted) {
      if (r != rank()) peers.push_back(endpoints_[r]);
    }
  } else if (algo == alg::Algo::kHierarchical) {
    for (uint32_t r : alg::HierPeers(layout_, rank(), size())) peers.push_back(endpoints_[r]);
  } else {
    for (const auto& ep : endpoints_) {
      if (ep.rank != rank()) peers.push_back(ep);
    }
  }
  std::string error;
  *connected = true;
  // An abort (the heartbeat found a member LOST) ends the wait for links too: a peer that died
  // would otherwise be dialed until HCCL_CONNECT_TIMEOUT.
  transport::ConnectPolicy plain;
  plain.abort = &abort_;
  HcclResult rc = transport_->Connect(peers, tag, &error, policy != nullptr ? *policy : plain);
  if (rc != HCCL_SUCCESS) {
    failure->code = rc;
    failure->reason = error;
    if (policy != nullptr) return rc;  // the op retry reports it
    if (abort_.load() != 0 && rc == ToHcclResult(abort_.load())) {
      failure->kind = OpFailure::Kind::kAbort;
    } else if (rc == HCCL_E_MEMORY) {
      // *error is exactly EI0011's argument; the task-exception handler raises it.
      failure->kind = OpFailure::Kind::kResource;
    } else if (rc == HCCL_E_TIMEOUT) {
      // Link establishment, not execution: EI0006 (the transport logged the details).
      failure->kind = OpFailure::Kind::kOther;
      HCCL_ERROR("[InitChannelStage][Timeout]link establishment for op tag[{}] timed out after "
                 "HCCL_CONNECT_TIMEOUT[{}s]: {}",
                 tag, Env().connect_timeout_s, error);
      log::ScreenError("EI0006", {error});
    } else {
      failure->kind = OpFailure::Kind::kLink;
    }
    return rc;
  }
  // P2P links depend on the peers named, so only collectives are remembered by (op, algorithm).
  if (op.type != OpType::kSend && op.type != OpType::kRecv && op.type != OpType::kBatchSendRecv) {
    established_bits_[bit / 64].fetch_or(uint64_t{1} << (bit % 64), std::memory_order_release);
  }
  return HCCL_SUCCESS;
}

HcclResult Communicator::RunAlgorithm(const OpDesc& op, alg::Algo algo, const alg::HierPlan& plan,
                                      alg::Group& g, alg::AlgResult* result) {
  alg::Scratch scratch{ccl_base_, ccl_bytes_};
  if (algo == alg::Algo::kHierarchical) {
    switch (op.type) {
      case OpType::kAllReduce:
        return alg::HierAllReduce(plan, layout_, g, op.send, op.recv, op.count, op.dtype,
                                  op.reduce, scratch, result);
      case OpType::kReduceScatter:
        return alg::HierReduceScatter(plan, layout_, g, op.send, op.recv, op.count, op.dtype,
                                      op.reduce, scratch, result);
      case OpType::kAllGather:
        return alg::HierAllGather(plan, layout_, g, op.send, op.recv, op.count, op.dtype, scratch,
                                  result);
      case OpType::kBroadcast:
        return alg::HierBroadcast(plan, layout_, g, op.recv, op.count, op.dtype, op.root, scratch,
                                  result);
      case OpType::kReduce:
        return alg::HierReduce(plan, layout_, g, op.send, op.recv, op.count, op.dtype, op.reduce,
                               op.root, scratch, result);
      default:
        break;
    }
  }
  const OpLists& lists = op.lists();
  switch (op.type) {
    case OpType::kAllReduce:
      return alg::AllReduce(algo, g, op.send, op.recv, op.count, op.dtype, op.reduce, scratch,
                            result);
    case OpType::kBroadcast:
      return alg::Broadcast(g, op.recv, op.count, op.dtype, op.root, scratch, result);
    case OpType::kAllGather:
      return alg::AllGather(algo, g, op.send, op.recv, op.count, op.dtype, scratch, result);
    case OpType::kReduceScatter:
      return alg::ReduceScatter(algo, g, op.send, op.recv, op.count, op.dtype, op.reduce, scratch,
                                result);
    case OpType::kReduce:
      return alg::Reduce(g, op.send, op.recv, op.count, op.dtype, op.reduce, op.root, scratch,
                         result);
    case OpType::kScatter:
      return alg::Scatter(g, op.send, op.recv, op.count, op.dtype, op.root, scratch, result);
    case OpType::kAllGatherV:
      return alg::AllGatherV(g, op.send, op.count, op.recv, lists.recv_counts.data(),
                             lists.recv_displs.data(), op.dtype, scratch, result);
    case OpType::kReduceScatterV:
      return alg::ReduceScatterV(g, op.send, lists.send_counts.data(), lists.send_displs.data(),
                                 op.recv, op.count, op.dtype, op.reduce, scratch, result);
    case OpType::kAlltoAll: {
      // Equal blocks: the API left the per-rank lists out; they are made here.
      const uint64_t n = size();
      const uint64_t rcount = op.count * DataTypeSize(op.dtype) / DataTypeSize(op.recv_dtype);
      std::vector<uint64_t> sc(n, op.count), sd(n), rc(n, rcount), rd(n);
      for (uint64_t i = 0; i < n; ++i) {
        sd[i] = i * op.count;
        rd[i] = i * rcount;
      }
      return alg::AlltoAllV(g, op.send, sc.data(), sd.data(), op.dtype, op.recv, rc.data(),
                            rd.data(), op.recv_dtype, scratch, result);
    }
    case OpType::kAlltoAllV:
    case OpType::kAlltoAllVC:
      return alg::AlltoAllV(g, op.send, lists.send_counts.data(), lists.send_displs.data(),
                            op.dtype, op.recv, lists.recv_counts.data(), lists.recv_displs.data(),
                            op.recv_dtype, scratch, result);
    case OpType::kSend:
    case OpType::kRecv:
    case OpType::kBatchSendRecv:
      return alg::SendRecv(g, op.items, scratch, result);
    case OpType::kBarrier:
      return alg::Barrier(g, result);
  }
  return HCCL_E_NOT_SUPPORT;
}

aclError Communicator::Execute(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                               const alg::HierPlan& plan) {
  // One op of a communicator at a time: they share links and the CCL buffer. Two streams
  // feeding one communicator is a user bug HCCL leaves undefined; name it (fault F8).
  std::unique_lock<ExecMutex> exec_lock(exec_mu_, std::try_to_lock);
  if (!exec_lock.owns_lock()) {
    const uint32_t other_stream = running_stream_.load();
    if (other_stream != record.stream_id) {
      bool first;
      {
        std::lock_guard<std::mutex> lock(links_mu_);
        first = reported_stream_pairs_.insert({other_stream, record.stream_id}).second;
      }
      const std::string& other_tag = info_->tags[static_cast<size_t>(running_type_.load())];
      if (first) {
        HCCL_ERROR(
            "[TaskExecStage][InvalidArgument]communicator[{}] used from two streams at once: op "
            "tag[{}] index[{}] on streamId[{}] while tag[{}] runs on streamId[{}]; ops of one "
            "communicator must be ordered on one stream (or synchronized between streams)",
            identifier(), record.tag(), record.index, record.stream_id, other_tag, other_stream);
      }
    }
    exec_lock.lock();
  }
  return ExecuteHeld(op, record, algo, plan);
}

aclError Communicator::ExecuteHeld(const OpDesc& op, const OpRecord& record, alg::Algo algo,
                                   const alg::HierPlan& plan) {
  OpFailure& failure = failure_;
  std::shared_ptr<alg::TaskLog> tasks;
  if (diagnose_enable_) tasks = std::make_shared<alg::TaskLog>();
  auto fail = [&](OpFailure::Kind kind, HcclResult code) {
    return FailOp(record, tasks, kind, code);
  };
  // Counted when the op ends, however it ends, still under exec_mu_ (one writer: no RMW).
  struct Ended {
    std::atomic<uint64_t>& n;
    ~Ended() { n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  } ended{ended_};
  if (failure_dirty_) {
    failure_ = OpFailure{};
    failure_dirty_ = false;
  }
  running_stream_.store(record.stream_id);
  running_type_.store(static_cast<int>(op.type));  // its tag: info_->tags[type]
  // The op's one clock read: its observers' start time and its HCCL_EXEC_TIMEOUT deadline.
  SteadyClock::time_point start = TscNow();
  NotifyStart(record, start);

  // The map's generation before the op's buffers are checked: while it holds, the algorithm's
  // guards need not look them up again (Group::ranges_checked_at).
  const uint64_t checked_at = rt::DeviceMemory::Instance().Generation();
  // The same buffers as the op checked last, with the map unchanged since: they and the CCL
  // buffer are still live or host, and nothing needs looking up. An op with the same key as that
  // op (same shape and pointers) need not even list its buffers.
  const BufferKey key{op.type, op.send, op.recv, op.count, op.dtype, op.root};
  bool unchanged = false;
  const BufferUse* bad = FaultyUserBuffer(op, key, checked_at, &unchanged);
  // Every op stages through the CCL buffer first, as on a device: after HcclCommDestroy this
  // copy hits the freed buffer (EI0012), whatever the algorithm would do next.
  rt::CopyFault fault;
  const uint64_t header[2] = {record.index, static_cast<uint64_t>(op.type)};
  // Only the destination is checked: the source is this frame.
  if (rt::DeviceMemory::Instance().GuardedSince(
          unchanged ? checked_at : 0, ccl_base_, sizeof(header), nullptr, 0, &fault,
          [&] { std::memcpy(ccl_base_, header, sizeof(header)); }) != ACL_SUCCESS) {
    failure.copy_src = header;
    failure.copy_dst = ccl_base_;
    failure.copy_bytes = sizeof(header);
    failure.faulting_buffer = "CCL buffer";
    failure.reason = fmt::format("CCL buffer {} was freed (communicator destroyed?)",
                                 PtrText(ccl_base_));
    return fail(OpFailure::Kind::kCopyFault, HCCL_E_RUNTIME);
  }
  if (bad != nullptr) {
    const BufferUse& use = *bad;
    rt::AddrCheck check = rt::DeviceMemory::Instance().Check(use.ptr, use.bytes, false);
    check.state = rt::DeviceMemory::Instance().State(use.ptr, use.bytes);
    failure.copy_src = use.ptr;
    failure.copy_dst = use.ptr;
    failure.copy_bytes = use.bytes;
    failure.faulting_buffer = fmt::format("user {} buffer", use.name);
    failure.reason = fmt::format(
        "user {} buffer {} needs {} bytes but {}", use.name, PtrText(use.ptr), use.bytes,
        check.state == rt::AddrState::kFreed ? std::string("it was freed")
        : check.state == rt::AddrState::kUnmapped
            ? fmt::format("it touches unmapped virtual memory (beside the {} bytes at {:#x})",
                          check.alloc_size, check.alloc_base)
            : fmt::format("its allocation at {:#x} holds only {} bytes", check.alloc_base,
                          check.alloc_size));
    return fail(OpFailure::Kind::kCopyFault, HCCL_E_RUNTIME);
  }
  if (!unchanged) NoteBuffersChecked(op, key, checked_at);

  if (links_closed_.load()) {
    std::string why;
    {
      std::lock_guard<std::mutex> lock(links_mu_);
      why = closed_reason_;
    }
    failure.reason = fmt::format(
        "the links of communicator[{}] were closed after an earlier op failed ({}); destroy and "
        "re-create the communicator",
        identifier(), why);
    return fail(OpFailure::Kind::kAbort, HCCL_E_REMOTE);
  }

  bool connected = false;
  if (size() > 1 && !Linked(op.type, algo) &&
      EnsureLinks(op, algo, record.tag(), &failure, &connected) != HCCL_SUCCESS) {
    return fail(failure.kind, failure.code);
  }
  // Op retry's commit (a barrier over every rank) needs links the hierarchical plans lack.
  if (retry_.on && IsCheckedOp(op.type) && algo == alg::Algo::kHierarchical &&
      !Linked(OpType::kBarrier, alg::Algo::kRing)) {
    OpDesc commit;
    commit.type = OpType::kBarrier;
    if (EnsureLinks(commit, alg::Algo::kRing, record.tag(), &failure, &connected) !=
        HCCL_SUCCESS) {
      return fail(failure.kind, failure.code);
    }
  }
  // Link establishment (the first op of an algorithm) is not execution: the deadline counts
  // from its end, as before.
  if (connected) start = SteadyClock::now();

  // Op retry: the collective's sequence number (the ranks' shared name for it), and when retry
  // is on its registration and the copy of in-place inputs. An attempt that ends in
  // kRetryAttempt re-made the links: the op runs again.
  const bool retry = retry_.on && IsCheckedOp(op.type);
  const uint64_t seq = size() > 1 && IsCheckedOp(op.type) ? ++coll_seq_ : 0;
  // Two ranks on shm: a small collective goes through the link's direct slots instead
  // (communicator_direct.cc); both ranks decide alike (op retry and task tracking, which it
  // lacks, turn it off on the link for both).
  if (!direct_noted_ && size() == 2) NoteDirectLink();
  if (DirectFits(op)) {
    direct_start_ = start;
    direct_deadline_ = options_.exec_timeout_s > 0
                           ? start + std::chrono::seconds(options_.exec_timeout_s)
                           : SteadyClock::time_point::max();
    return RunDirect(op, record, seq, /*posted=*/false, /*bounded=*/false);
  }
  if (retry) RetryBeginOp(op, seq);
  constexpr aclError kRetryAttempt = -1;
  constexpr aclError kCommitted = -2;  // every rank had the op's data when a link failed
  auto attempt = [&]() -> aclError {
    if (retry && retry_.attempts > 0) start = SteadyClock::now();  // a new deadline
    retry_.committing = false;
    // The comm's group, reused by every op (we hold exec_mu_): what differs per op is set below.
    alg::Group& group = group_;
    group.rank = rank();
    group.size = size();
    group.header = nullptr;
    group.inter_header = nullptr;
    // A rank, once linked, keeps its link for the transport's life (never replaced or removed
    // before the transport goes): only the ranks not linked yet are looked up (a lock each), and
    // none once every one is.
    if (!group_links_complete_) {
      if (group.links.size() != size()) group.links.assign(size(), nullptr);
      bool complete = true;
      for (uint32_t r = 0; r < size(); ++r) {
        if (r != rank() && group.links[r] == nullptr) group.links[r] = transport_->link(r);
        if (r != rank() && group.links[r] == nullptr) complete = false;
      }
      group_links_complete_ = complete;
    }
    group.algo_spec = &options_.algo;
    group.wait.spin = spin_wait_;
    const uint32_t exec_timeout = options_.exec_timeout_s;
    if (exec_timeout > 0) {
      group.wait.deadline = start + std::chrono::seconds(exec_timeout);
    }
    group.wait.abort = &abort_;
    group.wait.abort2 = retry ? &retry_.interrupt : nullptr;
    group.tasks = tasks.get();
    // The user buffers were checked above and the CCL buffer (the scratch) by the header copy.
    group.ranges_checked_at = checked_at;

    // A transfer of the check or of the algorithm failed: timeout, abort, or a broken link.
    auto fail_transfer = [&](const transport::ProgressError& pe, HcclResult rc) {
      if (retry) {
        const RetryStep step = RetryAfterFailure(op, record, algo, pe, rc, &failure);
        if (step == RetryStep::kRetried) return kRetryAttempt;
        if (step == RetryStep::kCommitted) return kCommitted;
        if (step == RetryStep::kFailed) return fail(failure.kind, failure.code);
      } else if (retry_.on) {
        ReportHeldLinkErrors();
      }
      return FailTransfer(record, tasks, pe, rc);
    };

    // A mismatch the op-consistency check found: EI0005, and the links close so every rank stops.
    // Vigil's line names both sides; HCCL's "CMD information" lines follow for its grep habits.
    auto fail_mismatch = [&](const ConsistencyResult& check) {
      return FailMismatch(op, record, tasks, check);
    };

    // The fingerprints ride on the algorithm's first transfers (consistency.h). Hierarchical ops
    // run phases on sub-groups: AllReduce, AllGather and ReduceScatter fold the check into their
    // levels (check_ring.h), the others exchange in a round of their own.
    // The headers travel whether the check is on or not (consistency.h): off only silences the
    // report, and a mismatch then waits out HCCL_EXEC_TIMEOUT as HCCL's notify waits do.
    const bool report = consistency_check_.load();
    auto fail_check = [&](const ConsistencyResult& check) {
      if (report) return fail_mismatch(check);
      const transport::ProgressError pe = WaitOut(check.remote_rank, group);
      return fail_transfer(pe, pe.code);
    };
    // A peer retries this op before this rank's attempt moved anything: join it.
    // (Its reason is built only when used: a string of that length is a heap allocation.)
    auto asked = [] {
      transport::ProgressError pe;
      pe.code = HCCL_E_AGAIN;
      pe.reason = "a peer retries this op";
      return pe;
    };
    if (retry && retry_.interrupt.load() != 0) return fail_transfer(asked(), HCCL_E_AGAIN);
    FingerprintHeader* fingerprint = nullptr;
    P2pHeader* p2p = nullptr;
    bool folded = false;  // check_ring_ runs the check
    if (size() > 1 && IsCheckedOp(op.type)) {
      fingerprint = &fingerprint_;
      check_ring_.ResetFlat(fingerprint, MakeFingerprint(op, record.index, seq, rank()), rank(),
                            size(), report);
      if (algo == alg::Algo::kHierarchical && check_ring_.Folds(op.type)) {
        ConsistencyResult check;
        HcclResult crc = check_ring_.Start(fingerprint->mine(), report, &group, &check);
        if (crc != HCCL_SUCCESS && !check.mismatch) return fail_transfer(check.progress, crc);
        if (crc != HCCL_SUCCESS) return fail_check(check);
        fingerprint = nullptr;
        folded = true;
      } else if (algo == alg::Algo::kHierarchical) {
        ConsistencyResult check;
        HcclResult crc = check_ring_.Round(fingerprint->mine(), group, &check);
        if (crc != HCCL_SUCCESS && !check.mismatch) return fail_transfer(check.progress, crc);
        if (crc != HCCL_SUCCESS) return fail_check(check);
        fingerprint = nullptr;
      } else {
        group.header = fingerprint->header();
      }
    } else if (size() > 1 && IsP2pOp(op.type)) {
      p2p = &p2p_;
      p2p->Reset(op, record.index, rank(), size(), report);
      group.header = p2p->header();
    }

    for (transport::Link* link : group.links) {
      if (link != nullptr) link->MarkOpStart();
    }
    alg::AlgResult& result = alg_result_;  // the algorithm's Ctx resets it
    HcclResult rc = RunAlgorithm(op, algo, plan, group, &result);
    if (rc != HCCL_SUCCESS && fingerprint) fingerprint->SettleAfterFailure();
    if (fingerprint && fingerprint->result().mismatch) return fail_mismatch(fingerprint->result());
    if (folded && rc != HCCL_SUCCESS) check_ring_.inter().SettleAfterFailure();
    if (folded && check_ring_.inter().result().mismatch) {
      return fail_mismatch(check_ring_.inter().result());
    }
    if (p2p && p2p->result().mismatch) return fail_mismatch(p2p->result());
    if (rc == HCCL_SUCCESS && fingerprint && !fingerprint->exchanged()) {
      // The algorithm moved nothing on this rank (count 0): the neighbours still expect a frame.
      ConsistencyResult check;
      HcclResult crc = check_ring_.Round(fingerprint->mine(), group, &check);
      if (crc != HCCL_SUCCESS && !check.mismatch) return fail_transfer(check.progress, crc);
      if (crc != HCCL_SUCCESS) return fail_check(check);
    }
    if (rc != HCCL_SUCCESS) {
      if (!result.copy.faulted) return fail_transfer(result.progress, rc);
      failure.reason = result.progress.reason;
      if (result.progress.link != nullptr) {
        failure.remote_rank = result.progress.link->remote().rank;
        failure.link_type = transport::LinkTypeName(result.progress.link->type());
      }
      failure.copy_src = result.copy_src;
      failure.copy_dst = result.copy_dst;
      failure.copy_bytes = result.copy_bytes;
      failure.faulting_buffer = result.copy.check.purpose.empty() ? std::string("device memory")
                                                                  : result.copy.check.purpose;
      if (failure.reason.empty()) {
        failure.reason = fmt::format("copy of {} bytes hit {} memory at {}", result.copy_bytes,
                                     result.copy.check.state == rt::AddrState::kFreed ? "freed"
                                                                                      : "unmapped",
                                     PtrText(result.copy.on_dst ? result.copy_dst
                                                                : result.copy_src));
      }
      return fail(OpFailure::Kind::kCopyFault, HCCL_E_RUNTIME);
    }
    if (retry) {
      // The commit: no rank returns the op before every rank has all of its data (a barrier),
      // so a link that fails before finds every rank still inside the op, able to run it again.
      retry_.committing = true;
      group.header = nullptr;
      const HcclResult crc = alg::Barrier(group, &result);
      if (crc != HCCL_SUCCESS) return fail_transfer(result.progress, crc);
      if (!RetryCommit(record)) return fail_transfer(asked(), HCCL_E_AGAIN);
    }
    if (tasks) NotifyTasks(record, tasks);
    NotifyFinish(record, HCCL_SUCCESS, nullptr);
    return ACL_SUCCESS;
  };
  for (;;) {
    const aclError r = attempt();
    if (r == kCommitted) {
      if (tasks) NotifyTasks(record, tasks);
      NotifyFinish(record, HCCL_SUCCESS, nullptr);
      return ACL_SUCCESS;
    }
    if (r != kRetryAttempt) return r;
  }
}

aclError Communicator::FailOp(const OpRecord& record, const std::shared_ptr<alg::TaskLog>& tasks,
                              OpFailure::Kind kind, HcclResult code) {
  OpFailure& failure = failure_;
  failure_dirty_ = true;
  failure.kind = kind;
  failure.local_ip = endpoints_[rank()].host_ip;
  failure.local_device = device();
  if (failure.remote_rank >= 0 && failure.remote_rank < static_cast<int64_t>(size())) {
    failure.remote_ip = endpoints_[failure.remote_rank].host_ip;
    failure.remote_device = endpoints_[failure.remote_rank].device;
  }
  failure.code = code;
  RecordError(code);
  if (tasks) NotifyTasks(record, tasks);
  NotifyFinish(record, code, &failure);
  return StreamErrorFor(kind);
}

aclError Communicator::FailTransfer(const OpRecord& record,
                                    const std::shared_ptr<alg::TaskLog>& tasks,
                                    const transport::ProgressError& pe, HcclResult rc) {
  OpFailure& failure = failure_;
  failure.reason = pe.reason;
  if (pe.link != nullptr) {
    failure.remote_rank = pe.link->remote().rank;
    failure.link_type = transport::LinkTypeName(pe.link->type());
  }
  if (pe.timed_out || rc == HCCL_E_TIMEOUT ||
      (abort_.load() != 0 && rc == ToHcclResult(abort_.load()))) {
    // This rank gives the op up: a late peer must not complete it with what we sent.
    for (transport::Link* link : group_.links) {
      if (link != nullptr) link->AbandonOp();
    }
  }
  if (pe.timed_out || rc == HCCL_E_TIMEOUT) {
    // The timeout in force, for diagnose (F7: a rank later than HCCL_EXEC_TIMEOUT).
    failure.reason += fmt::format(", timeout[{}s]", options_.exec_timeout_s);
    return FailOp(record, tasks, OpFailure::Kind::kTimeout, HCCL_E_TIMEOUT);
  }
  if (abort_.load() != 0 && rc == ToHcclResult(abort_.load())) {
    return FailOp(record, tasks, OpFailure::Kind::kAbort, rc);
  }
  if (PeerClosed(pe.link)) {
    // The peer gave this op up (op inconsistency, destroyed communicator, or it followed a
    // peer of its own): follow it, so that every rank stops now.
    failure.reason = fmt::format(
        "peer rank[{}] closed its links while this op was exchanging data with it ({}); it "
        "gave the op up after an error of its own (see its log)",
        failure.remote_rank, pe.reason);
    CloseLinks(fmt::format("peer rank[{}] closed its links during op tag[{}] index[{}]",
                           failure.remote_rank, record.tag(), record.index));
    return FailOp(record, tasks, OpFailure::Kind::kAbort, HCCL_E_REMOTE);
  }
  if (rc == HCCL_E_REMOTE || rc == HCCL_E_TCP_TRANSFER || rc == HCCL_E_NETWORK) {
    return FailOp(record, tasks, OpFailure::Kind::kLink, HCCL_E_REMOTE);
  }
  return FailOp(record, tasks, OpFailure::Kind::kOther, rc);
}

aclError Communicator::FailMismatch(const OpDesc& op, const OpRecord& record,
                                    const std::shared_ptr<alg::TaskLog>& tasks,
                                    const ConsistencyResult& check) {
  OpFailure& failure = failure_;
  HCCL_ERROR(
      "[TaskExecStage][InvalidArgument]op inconsistent in communicator[{}] index[{}]: "
      "local rank[{}] {} tag[{}] streamId[{}]; remote rank[{}] {}; parameter[{}] local[{}] "
      "remote[{}]",
      identifier(), record.index, rank(), check.local_desc, record.tag(), record.stream_id,
      check.remote_rank, check.remote_desc, check.what.parameter, check.what.local,
      check.what.remote);
  for (const Mismatch& h : check.hccl) {
    const std::string suffix = h.parameter == "tag" ? "_" + identifier() : std::string();
    HCCL_ERROR("{}{}", kCmdCheckFailStage,
               RenderCmdCheckFail(h.parameter, h.local + suffix, h.remote + suffix));
  }
  log::ScreenError("EI0005", {std::string(OpTypeName(op.type)), identifier(),
                              check.what.parameter, check.what.local, check.what.remote});
  failure.remote_rank = check.remote_rank;
  failure.reason = fmt::format(
      "op inconsistent with rank[{}]: parameter[{}] local[{}] "
      "remote[{}]",
      check.remote_rank, check.what.parameter, check.what.local, check.what.remote);
  CloseLinks(fmt::format("op tag[{}] index[{}] is inconsistent with rank[{}]", record.tag(),
                         record.index, check.remote_rank));
  return FailOp(record, tasks, OpFailure::Kind::kParam, HCCL_E_PARA);
}

}  // namespace vigil::comm
