// ProcessGroupVigil: a c10d backend (torch 1.13's c10d::ProcessGroup) over Vigil's public HCCL C
// API, for CPU tensors. `import vigil_torch` registers it as "vigil", so
// `torch.distributed.init_process_group("vigil", ...)` runs an unchanged script on Vigil.
//
// - Rendezvous: through the c10d Store torch hands the backend: rank 0 calls HcclGetRootInfo and
//   sets it under "vigil_root_info", the others get it (blocking, the store's timeout).
// - One communicator and one stream per process group; every call enqueues its HCCL op(s) on that
//   stream, then an event, and returns a Work at once. The group's watcher thread
//   ("vigil_pg_wait") waits for the events in order and completes each Work and its Future
//   (copying results out of staging buffers first), so Works complete asynchronously.
// - Errors: once an op fails (a lost peer makes Vigil's heartbeat abort the communicator), that
//   Work and every later one fail with a RuntimeError carrying Vigil's root cause
//   (VigilCommGetLastErrorMessage: failed op, EI code, crimer rank, Cluster Exception Location).
// - Shrink: a group of the survivors after a rank is lost, over the communicator VigilCommShrink
//   makes (vigil_torch.shrink in Python); the old group's ops end first (aborted or waited for).
// - send/recv: queued and issued together as one HcclBatchSendRecv when a Work of them is waited
//   on or polled, at the end of a coalescing block (batch_isend_irecv), or before the next
//   collective; so isend/irecv pairs in any order cannot deadlock. Tags are not matched (per
//   peer, messages match in order, as in HCCL).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hccl/hccl.h"

namespace vigil_torch {

class Core;

// A Work of the vigil backend; completed by the group's watcher thread.
class WorkVigil : public c10d::Work {
 public:
  WorkVigil(std::shared_ptr<Core> core, int rank, c10d::OpType type,
            std::vector<at::Tensor> outputs);
  ~WorkVigil() override;

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  friend class Core;
  void Complete(const std::string& error);

  std::shared_ptr<Core> core_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_;               // inputs and staging, alive until done
  std::vector<std::function<void()>> after_;   // copies out of staging, on success
  aclrtEvent event_ = nullptr;
  uint64_t p2p_batch_ = 0;                     // send/recv: the batch it belongs to
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class ProcessGroupVigil : public c10d::ProcessGroup {
 public:
  ProcessGroupVigil(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  // A group over a communicator made already (Shrink's); takes it over.
  explicit ProcessGroupVigil(HcclComm comm);
  ~ProcessGroupVigil() override;

  const std::string getBackendName() const override { return "vigil"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;

  // The root-cause text of the communicator's failure ("" when none): tests and users.
  std::string LastError() const;

  // A group of the survivors (VigilCommShrink): every survivor calls it; `exclude` null means
  // the ranks Vigil's heartbeat knows lost; `abort` aborts this group's ops in flight first
  // (else they are waited for). Throws std::runtime_error when the survivors disagree. Blocks
  // up to HCCL_CONNECT_TIMEOUT + 5 s.
  c10::intrusive_ptr<ProcessGroupVigil> Shrink(const std::vector<uint32_t>* exclude, bool abort);

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace vigil_torch
