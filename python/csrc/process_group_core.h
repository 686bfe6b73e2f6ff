// The core of a vigil process group (process_group_vigil.h): its communicator, stream, pending
// send/recv and the watcher thread that completes Works in stream order, and the helpers it shares
// with the collectives. Internal to the extension.
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "process_group_vigil.h"
#include "vigil/ext.h"

namespace vigil_torch {

inline constexpr const char* kRootInfoKey = "vigil_root_info";

[[noreturn]] inline void Fail(const std::string& what) { throw std::runtime_error("vigil: " + what); }

inline HcclDataType ToHccl(at::ScalarType t) {
  switch (t) {
    case at::kChar: return HCCL_DATA_TYPE_INT8;
    case at::kShort: return HCCL_DATA_TYPE_INT16;
    case at::kInt: return HCCL_DATA_TYPE_INT32;
    case at::kLong: return HCCL_DATA_TYPE_INT64;
    case at::kByte: return HCCL_DATA_TYPE_UINT8;
    case at::kBool: return HCCL_DATA_TYPE_UINT8;  // 0/1 bytes; reductions mapped below
    case at::kHalf: return HCCL_DATA_TYPE_FP16;
    case at::kBFloat16: return HCCL_DATA_TYPE_BFP16;
    case at::kFloat: return HCCL_DATA_TYPE_FP32;
    case at::kDouble: return HCCL_DATA_TYPE_FP64;
    default: break;
  }
  Fail(std::string("dtype ") + c10::toString(t) + " is not supported");
}

inline HcclReduceOp ToHccl(const c10d::ReduceOp& op, at::ScalarType t) {
  const bool is_bool = t == at::kBool;
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    // On bools SUM is "any" and PRODUCT "all", as torch's NCCL backend maps them.
    case c10d::ReduceOp::SUM: return is_bool ? HCCL_REDUCE_MAX : HCCL_REDUCE_SUM;
    case c10d::ReduceOp::PRODUCT: return is_bool ? HCCL_REDUCE_MIN : HCCL_REDUCE_PROD;
    case c10d::ReduceOp::MIN: return HCCL_REDUCE_MIN;
    case c10d::ReduceOp::MAX: return HCCL_REDUCE_MAX;
    default: break;
  }
  Fail("reduce op " + std::to_string(static_cast<int>(static_cast<c10d::ReduceOp::RedOpType>(op))) +
       " is not supported (SUM, PRODUCT, MIN, MAX are)");
}

// The device of this process: the launcher's local rank when there is one, else the rank, within
// the runtime's device count (Vigil's logical devices are only names on a CPU).
inline int32_t PickDevice(int rank) {
  uint32_t count = 1;
  if (aclrtGetDeviceCount(&count) != ACL_SUCCESS || count == 0) count = 1;
  long local = rank;
  if (const char* v = std::getenv("LOCAL_RANK"); v != nullptr && *v != '\0') local = std::atol(v);
  return static_cast<int32_t>(local % static_cast<long>(count));
}

inline std::string ResultText(HcclResult rc) {
  const char* s = HcclGetErrorString(rc);
  return std::to_string(static_cast<int>(rc)) + " (" + (s != nullptr ? s : "?") + ")";
}

// ---- Core: the communicator, its stream, pending send/recv and the watcher thread ----------

class Core : public std::enable_shared_from_this<Core> {
 public:
  using EnqueueFn = std::function<HcclResult(HcclComm, aclrtStream)>;

  Core(int rank, int size) : rank_(rank), size_(size), device_(PickDevice(rank)) {}

  void Init(const c10::intrusive_ptr<c10d::Store>& store, std::chrono::milliseconds timeout) {
    EnsureDevice();
    HcclRootInfo root;
    if (rank_ == 0) {
      if (HcclResult rc = HcclGetRootInfo(&root); rc != HCCL_SUCCESS) {
        Fail("HcclGetRootInfo failed: " + ResultText(rc));
      }
      store->set(kRootInfoKey, std::vector<uint8_t>(root.internal, root.internal + sizeof(root.internal)));
    } else {
      const std::vector<uint8_t> got = store->get(kRootInfoKey);
      if (got.size() != sizeof(root.internal)) Fail("the store holds a root info of the wrong size");
      std::copy(got.begin(), got.end(), root.internal);
    }
    HcclCommConfig config;
    HcclCommConfigInit(&config);
    // torch's timeout bounds a stuck collective unless HCCL_EXEC_TIMEOUT says otherwise.
    const char* env = std::getenv("HCCL_EXEC_TIMEOUT");
    if ((env == nullptr || *env == '\0') && timeout.count() > 0) {
      config.hcclExecTimeOut = static_cast<uint32_t>(
          std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(timeout).count()));
    }
    if (HcclResult rc = HcclCommInitRootInfoConfig(static_cast<uint32_t>(size_), &root,
                                                   static_cast<uint32_t>(rank_), &config, &comm_);
        rc != HCCL_SUCCESS) {
      Fail("HcclCommInitRootInfoConfig failed on rank " + std::to_string(rank_) + ": " +
           ResultText(rc) + " (see the run log under ASCEND_PROCESS_LOG_PATH)");
    }
    if (aclError e = aclrtCreateStream(&stream_); e != ACL_SUCCESS) {
      HcclCommDestroy(comm_);
      comm_ = nullptr;
      Fail("aclrtCreateStream failed: " + std::to_string(e));
    }
    watcher_ = std::thread([this] { WatchLoop(); });
  }

  // Takes over a communicator made elsewhere (a shrink's).
  void Adopt(HcclComm comm) {
    EnsureDevice();
    comm_ = comm;
    if (aclError e = aclrtCreateStream(&stream_); e != ACL_SUCCESS) {
      HcclCommDestroy(comm_);
      comm_ = nullptr;
      Fail("aclrtCreateStream failed: " + std::to_string(e));
    }
    watcher_ = std::thread([this] { WatchLoop(); });
  }

  // VigilCommShrink of this group's communicator; the new one is the caller's.
  HcclComm Shrink(const std::vector<uint32_t>* exclude, bool abort) {
    EnsureDevice();
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_) Fail("the process group was destroyed");
    FlushP2pLocked();
    HcclComm next = nullptr;
    const HcclResult rc = VigilCommShrink(
        comm_, exclude != nullptr ? exclude->data() : nullptr,
        exclude != nullptr ? static_cast<uint32_t>(exclude->size()) : 0, nullptr, &next,
        abort ? VIGIL_SHRINK_ABORT : VIGIL_SHRINK_DEFAULT);
    if (rc != HCCL_SUCCESS) {
      Fail("VigilCommShrink failed on rank " + std::to_string(rank_) + ": " + ResultText(rc) +
           (rc == HCCL_E_PARA ? "; the survivors did not agree on the ranks to exclude (the "
                                "EI0005 line and the [Shrink] lines of the run log name each "
                                "rank's set)"
                              : "; see the run log under ASCEND_PROCESS_LOG_PATH"));
    }
    return next;
  }

  // Drains the watcher (every queued Work completes), then destroys the communicator.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shut_) return;
      FlushP2pLocked();
      shut_ = true;
    }
    {
      std::lock_guard<std::mutex> lock(wmu_);
      stop_ = true;
    }
    wcv_.notify_all();
    if (watcher_.joinable()) watcher_.join();
    if (stream_ != nullptr) {
      aclrtSynchronizeStream(stream_);
      aclrtDestroyStream(stream_);
      stream_ = nullptr;
    }
    if (comm_ != nullptr) {
      HcclCommDestroy(comm_);
      comm_ = nullptr;
    }
  }

  // Enqueues a collective: `enqueue` puts its HCCL op(s) on the stream, then the Work's event.
  c10::intrusive_ptr<c10d::Work> Submit(c10d::OpType type, std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keep,
                                        std::vector<std::function<void()>> after,
                                        const char* what, const EnqueueFn& enqueue) {
    EnsureDevice();
    auto work = c10::make_intrusive<WorkVigil>(shared_from_this(), rank_, type, std::move(outputs));
    work->keep_ = std::move(keep);
    work->after_ = std::move(after);
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_) Fail("the process group was destroyed");
    FlushP2pLocked();
    if (std::string err = StickyError(); !err.empty()) {
      work->Complete(err);  // the communicator is dead: fail now, queue nothing
      return work;
    }
    if (HcclResult rc = enqueue(comm_, stream_); rc != HCCL_SUCCESS) {
      Fail(std::string(what) + " failed on rank " + std::to_string(rank_) + ": " + ResultText(rc));
    }
    QueueLocked(work);
    return work;
  }

  // Queues a send or receive; it is issued with the others of its batch (header comment).
  c10::intrusive_ptr<c10d::Work> SubmitP2p(c10d::OpType type, const at::Tensor& tensor, int peer) {
    EnsureDevice();
    const bool is_send = type == c10d::OpType::SEND;
    if (peer < 0 || peer >= size_) Fail("peer rank " + std::to_string(peer) + " is out of range");
    at::Tensor buf = tensor.is_contiguous() ? tensor : tensor.contiguous();
    auto work = c10::make_intrusive<WorkVigil>(shared_from_this(), rank_, type,
                                               std::vector<at::Tensor>{tensor});
    work->keep_ = {buf};
    if (!is_send && !buf.is_same(tensor)) {
      at::Tensor out = tensor;
      work->after_.push_back([out, buf]() mutable { out.copy_(buf); });
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_) Fail("the process group was destroyed");
    if (std::string err = StickyError(); !err.empty()) {
      work->Complete(err);
      return work;
    }
    HcclSendRecvItem item;
    item.sendRecvType = is_send ? HCCL_SEND : HCCL_RECV;
    item.buf = buf.data_ptr();
    item.count = static_cast<uint64_t>(buf.numel());
    item.dataType = ToHccl(buf.scalar_type());
    item.remoteRank = static_cast<uint32_t>(peer);
    p2p_items_.push_back(item);
    work->p2p_batch_ = p2p_batch_;
    p2p_works_.push_back(work);
    return work;
  }

  // Issues the pending send/recv batch if `batch` is still pending.
  void FlushP2p(uint64_t batch) {
    std::lock_guard<std::mutex> lock(mu_);
    if (batch == p2p_batch_ && !coalescing_) FlushP2pLocked();
  }

  void SetCoalescing(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    coalescing_ = on;
    if (!on) FlushP2pLocked();
  }

  std::string LastError() const {
    if (comm_ == nullptr) return "";
    char buf[8192];
    if (VigilCommGetLastErrorMessage(comm_, buf, sizeof(buf)) != HCCL_SUCCESS) return "";
    return buf;
  }

  int rank() const { return rank_; }

 private:
  void EnsureDevice() {
    thread_local int32_t current = -1;
    if (current == device_) return;
    if (aclError e = aclrtSetDevice(device_); e != ACL_SUCCESS) {
      Fail("aclrtSetDevice(" + std::to_string(device_) + ") failed: " + std::to_string(e));
    }
    current = device_;
  }

  void FlushP2pLocked() {
    if (p2p_items_.empty()) return;
    std::vector<HcclSendRecvItem> items;
    items.swap(p2p_items_);
    std::vector<c10::intrusive_ptr<WorkVigil>> works;
    works.swap(p2p_works_);
    ++p2p_batch_;
    if (std::string err = StickyError(); !err.empty()) {
      for (auto& w : works) w->Complete(err);
      return;
    }
    HcclResult rc = HcclBatchSendRecv(items.data(), static_cast<uint32_t>(items.size()), comm_, stream_);
    if (rc != HCCL_SUCCESS) {
      const std::string err = "send/recv (HcclBatchSendRecv) failed on rank " +
                              std::to_string(rank_) + ": " + ResultText(rc);
      for (auto& w : works) w->Complete(err);
      return;
    }
    for (auto& w : works) QueueLocked(w);
  }

  // Records the Work's event behind its ops and hands it to the watcher. Under mu_ so that the
  // watcher's order is the stream's order.
  void QueueLocked(const c10::intrusive_ptr<WorkVigil>& work) {
    if (aclError e = aclrtCreateEvent(&work->event_); e != ACL_SUCCESS) {
      Fail("aclrtCreateEvent failed: " + std::to_string(e));
    }
    if (aclError e = aclrtRecordEvent(work->event_, stream_); e != ACL_SUCCESS) {
      Fail("aclrtRecordEvent failed: " + std::to_string(e));
    }
    {
      std::lock_guard<std::mutex> lock(wmu_);
      queue_.push_back(work);
    }
    wcv_.notify_one();
  }

  std::string StickyError() {
    std::lock_guard<std::mutex> lock(wmu_);
    return error_;
  }

  // Completes Works in stream order. After the first failed op every later Work fails with the
  // same root cause: Vigil aborts a communicator whose peer is lost, as torch's NCCL backend does.
  void WatchLoop() {
    pthread_setname_np(pthread_self(), "vigil_pg_wait");
    try {
      EnsureDevice();
    } catch (const std::exception&) {
      // Events are waited by handle; the device only names the thread's context.
    }
    for (;;) {
      c10::intrusive_ptr<WorkVigil> work;
      {
        std::unique_lock<std::mutex> lock(wmu_);
        wcv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        work = queue_.front();
        queue_.pop_front();
      }
      aclrtSynchronizeEvent(work->event_);
      aclrtDestroyEvent(work->event_);
      work->event_ = nullptr;
      HcclResult async = HCCL_SUCCESS;
      HcclGetCommAsyncError(comm_, &async);
      std::string err;
      {
        std::lock_guard<std::mutex> lock(wmu_);
        if (error_.empty() && async != HCCL_SUCCESS) error_ = BuildError(async);
        err = error_;
      }
      work->Complete(err);
    }
  }

  std::string BuildError(HcclResult async) const {
    std::string text = LastError();
    if (text.empty()) text = "communicator error " + ResultText(async);
    return "rank " + std::to_string(rank_) + ": " + text;
  }

  const int rank_;
  const int size_;
  const int32_t device_;
  HcclComm comm_ = nullptr;
  aclrtStream stream_ = nullptr;

  std::mutex mu_;  // enqueue order; pending send/recv
  bool shut_ = false;
  bool coalescing_ = false;
  std::vector<HcclSendRecvItem> p2p_items_;
  std::vector<c10::intrusive_ptr<WorkVigil>> p2p_works_;
  uint64_t p2p_batch_ = 1;

  std::mutex wmu_;  // watcher queue and the sticky error
  std::condition_variable wcv_;
  std::deque<c10::intrusive_ptr<WorkVigil>> queue_;
  bool stop_ = false;
  std::string error_;
  std::thread watcher_;
};

}  // namespace vigil_torch
