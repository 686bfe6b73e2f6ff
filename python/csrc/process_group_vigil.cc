#include "process_group_vigil.h"

#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include <ATen/core/ivalue.h>

#include "process_group_core.h"
#include "vigil/ext.h"

namespace vigil_torch {

namespace {

void CheckCpu(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu()) Fail(std::string(what) + " must be a CPU tensor");
  if (t.layout() != at::kStrided) Fail(std::string(what) + " must be a dense tensor");
  (void)ToHccl(t.scalar_type());
}

const at::Tensor& Single(const std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.size() != 1) Fail(std::string(op) + " takes exactly one tensor per process");
  CheckCpu(tensors[0], op);
  return tensors[0];
}

}  // namespace

// ---- WorkVigil -------------------------------------------------------------------------------

WorkVigil::WorkVigil(std::shared_ptr<Core> core, int rank, c10d::OpType type,
                     std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      core_(std::move(core)),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

WorkVigil::~WorkVigil() {
  if (event_ != nullptr) aclrtDestroyEvent(event_);
}

bool WorkVigil::isCompleted() {
  if (p2p_batch_ != 0) core_->FlushP2p(p2p_batch_);
  return c10d::Work::isCompleted();
}

bool WorkVigil::wait(std::chrono::milliseconds timeout) {
  if (p2p_batch_ != 0) core_->FlushP2p(p2p_batch_);
  return c10d::Work::wait(timeout);
}

c10::intrusive_ptr<c10::ivalue::Future> WorkVigil::getFuture() {
  if (p2p_batch_ != 0) core_->FlushP2p(p2p_batch_);
  return future_;
}

void WorkVigil::Complete(const std::string& error) {
  std::string err = error;
  if (err.empty()) {
    try {
      for (auto& f : after_) f();
    } catch (const std::exception& e) {
      err = std::string("copying results out failed: ") + e.what();
    }
  }
  after_.clear();
  keep_.clear();
  if (err.empty()) {
    finish();
    future_->markCompleted(c10::IValue(outputs_));
  } else {
    auto eptr = std::make_exception_ptr(std::runtime_error("vigil: " + err));
    finish(eptr);
    future_->setError(eptr);
  }
}

// ---- ProcessGroupVigil -----------------------------------------------------------------------

ProcessGroupVigil::ProcessGroupVigil(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), core_(std::make_shared<Core>(rank, size)) {
  core_->Init(store, timeout);
  init();
}

namespace {

int CommRank(HcclComm comm) {
  uint32_t r = 0;
  if (HcclGetRankId(comm, &r) != HCCL_SUCCESS) Fail("HcclGetRankId failed");
  return static_cast<int>(r);
}

int CommSize(HcclComm comm) {
  uint32_t n = 0;
  if (HcclGetRankSize(comm, &n) != HCCL_SUCCESS) Fail("HcclGetRankSize failed");
  return static_cast<int>(n);
}

}  // namespace

ProcessGroupVigil::ProcessGroupVigil(HcclComm comm)
    : c10d::ProcessGroup(CommRank(comm), CommSize(comm)),
      core_(std::make_shared<Core>(CommRank(comm), CommSize(comm))) {
  core_->Adopt(comm);
  init();
}

c10::intrusive_ptr<ProcessGroupVigil> ProcessGroupVigil::Shrink(
    const std::vector<uint32_t>* exclude, bool abort) {
  return c10::make_intrusive<ProcessGroupVigil>(core_->Shrink(exclude, abort));
}

ProcessGroupVigil::~ProcessGroupVigil() {
  core_->Shutdown();
}

std::string ProcessGroupVigil::LastError() const {
  return core_->LastError();
}

namespace {

// A contiguous tensor to hand to HCCL in place of `t`, and, for outputs, the copy back.
struct Staged {
  at::Tensor buf;
  bool copied = false;
};
Staged Stage(const at::Tensor& t) {
  if (t.is_contiguous()) return {t, false};
  return {t.contiguous(), true};
}
void CopyBackIfStaged(const at::Tensor& t, const Staged& s, std::vector<std::function<void()>>* after) {
  if (!s.copied) return;
  at::Tensor out = t, buf = s.buf;
  after->push_back([out, buf]() mutable { out.copy_(buf); });
}

uint64_t Count(const at::Tensor& t) { return static_cast<uint64_t>(t.numel()); }

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = Single(tensors, "broadcast");
  if (opts.rootRank < 0 || opts.rootRank >= size_) Fail("broadcast root is out of range");
  Staged s = Stage(t);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(t, s, &after);
  const auto dt = ToHccl(t.scalar_type());
  const auto root = static_cast<uint32_t>(opts.rootRank);
  at::Tensor buf = s.buf;
  return core_->Submit(c10d::OpType::BROADCAST, tensors, {buf}, std::move(after), "HcclBroadcast",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclBroadcast(buf.data_ptr(), Count(buf), dt, root, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = Single(tensors, "allreduce");
  Staged s = Stage(t);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(t, s, &after);
  const auto dt = ToHccl(t.scalar_type());
  const auto op = ToHccl(opts.reduceOp, t.scalar_type());
  at::Tensor buf = s.buf;
  return core_->Submit(c10d::OpType::ALLREDUCE, tensors, {buf}, std::move(after), "HcclAllReduce",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclAllReduce(buf.data_ptr(), buf.data_ptr(), Count(buf), dt, op, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  std::vector<at::Tensor> bufs;
  std::vector<std::function<void()>> after;
  for (const at::Tensor& t : tensors) {
    CheckCpu(t, "allreduce_coalesced");
    Staged s = Stage(t);
    CopyBackIfStaged(t, s, &after);
    bufs.push_back(s.buf);
  }
  std::vector<HcclReduceOp> ops;
  for (const at::Tensor& t : tensors) ops.push_back(ToHccl(opts.reduceOp, t.scalar_type()));
  return core_->Submit(c10d::OpType::ALLREDUCE_COALESCED, tensors, bufs, std::move(after),
                       "HcclAllReduce", [=](HcclComm c, aclrtStream st) {
                         for (size_t i = 0; i < bufs.size(); ++i) {
                           const at::Tensor& b = bufs[i];
                           HcclResult rc = HcclAllReduce(b.data_ptr(), b.data_ptr(), Count(b),
                                                         ToHccl(b.scalar_type()), ops[i], c, st);
                           if (rc != HCCL_SUCCESS) return rc;
                         }
                         return HCCL_SUCCESS;
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  const at::Tensor& t = Single(tensors, "reduce");
  if (opts.rootRank < 0 || opts.rootRank >= size_) Fail("reduce root is out of range");
  const bool is_root = opts.rootRank == rank_;
  Staged s = Stage(t);
  std::vector<std::function<void()>> after;
  if (is_root) CopyBackIfStaged(t, s, &after);
  // Off the root the result goes to scratch: the caller's tensor stays as it was.
  at::Tensor in = s.buf, out = is_root ? s.buf : at::empty_like(s.buf);
  const auto dt = ToHccl(t.scalar_type());
  const auto op = ToHccl(opts.reduceOp, t.scalar_type());
  const auto root = static_cast<uint32_t>(opts.rootRank);
  return core_->Submit(c10d::OpType::REDUCE, tensors, {in, out}, std::move(after), "HcclReduce",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclReduce(in.data_ptr(), out.data_ptr(), Count(in), dt, op, root, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const at::Tensor& t = Single(inputs, "allgather");
  if (outputs.size() != 1 || outputs[0].size() != static_cast<size_t>(size_)) {
    Fail("allgather needs one output list of world_size tensors");
  }
  for (const at::Tensor& o : outputs[0]) {
    CheckCpu(o, "allgather output");
    if (o.numel() != t.numel() || o.scalar_type() != t.scalar_type()) {
      Fail("allgather outputs must match the input's size and dtype");
    }
  }
  at::Tensor in = t.contiguous();
  at::Tensor flat = at::empty({size_ * t.numel()}, t.options().memory_format(at::MemoryFormat::Contiguous));
  std::vector<at::Tensor> outs = outputs[0];
  std::vector<std::function<void()>> after{[outs, flat]() mutable {
    for (size_t i = 0; i < outs.size(); ++i) {
      outs[i].copy_(flat.narrow(0, static_cast<int64_t>(i) * outs[i].numel(), outs[i].numel()).view(outs[i].sizes()));
    }
  }};
  const auto dt = ToHccl(t.scalar_type());
  return core_->Submit(c10d::OpType::ALLGATHER, outs, {in, flat}, std::move(after), "HcclAllGather",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclAllGather(in.data_ptr(), flat.data_ptr(), Count(in), dt, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::_allgather_base(at::Tensor& output,
                                                                  at::Tensor& input,
                                                                  const c10d::AllgatherOptions&) {
  CheckCpu(input, "_allgather_base input");
  CheckCpu(output, "_allgather_base output");
  if (output.numel() != input.numel() * size_ || output.scalar_type() != input.scalar_type()) {
    Fail("_allgather_base: output must hold world_size x input elements of the input's dtype");
  }
  at::Tensor in = input.contiguous();
  Staged s = Stage(output);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(output, s, &after);
  at::Tensor out = s.buf;
  const auto dt = ToHccl(input.scalar_type());
  return core_->Submit(c10d::OpType::_ALLGATHER_BASE, {output}, {in, out}, std::move(after),
                       "HcclAllGather", [=](HcclComm c, aclrtStream st) {
                         return HcclAllGather(in.data_ptr(), out.data_ptr(), Count(in), dt, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  // HCCL has no Gather: an AllGather whose result only the root keeps.
  const at::Tensor& t = Single(inputs, "gather");
  if (opts.rootRank < 0 || opts.rootRank >= size_) Fail("gather root is out of range");
  const bool is_root = opts.rootRank == rank_;
  std::vector<at::Tensor> outs;
  if (is_root) {
    if (outputs.size() != 1 || outputs[0].size() != static_cast<size_t>(size_)) {
      Fail("gather needs one output list of world_size tensors on the root");
    }
    outs = outputs[0];
    for (const at::Tensor& o : outs) {
      CheckCpu(o, "gather output");
      if (o.numel() != t.numel() || o.scalar_type() != t.scalar_type()) {
        Fail("gather outputs must match the input's size and dtype");
      }
    }
  } else if (!outputs.empty() && !outputs[0].empty()) {
    Fail("gather: only the root passes output tensors");
  }
  at::Tensor in = t.contiguous();
  at::Tensor flat = at::empty({size_ * t.numel()}, t.options().memory_format(at::MemoryFormat::Contiguous));
  std::vector<std::function<void()>> after;
  if (is_root) {
    after.push_back([outs, flat]() mutable {
      for (size_t i = 0; i < outs.size(); ++i) {
        outs[i].copy_(flat.narrow(0, static_cast<int64_t>(i) * outs[i].numel(), outs[i].numel()).view(outs[i].sizes()));
      }
    });
  }
  const auto dt = ToHccl(t.scalar_type());
  return core_->Submit(c10d::OpType::GATHER, outs, {in, flat}, std::move(after), "HcclAllGather",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclAllGather(in.data_ptr(), flat.data_ptr(), Count(in), dt, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const at::Tensor& t = Single(outputs, "scatter");
  if (opts.rootRank < 0 || opts.rootRank >= size_) Fail("scatter root is out of range");
  const bool is_root = opts.rootRank == rank_;
  at::Tensor flat;
  if (is_root) {
    if (inputs.size() != 1 || inputs[0].size() != static_cast<size_t>(size_)) {
      Fail("scatter needs one input list of world_size tensors on the root");
    }
    std::vector<at::Tensor> parts;
    for (const at::Tensor& i : inputs[0]) {
      CheckCpu(i, "scatter input");
      if (i.numel() != t.numel() || i.scalar_type() != t.scalar_type()) {
        Fail("scatter inputs must match the output's size and dtype");
      }
      parts.push_back(i.reshape({-1}));
    }
    flat = at::cat(parts);
  } else if (!inputs.empty() && !inputs[0].empty()) {
    Fail("scatter: only the root passes input tensors");
  }
  Staged s = Stage(t);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(t, s, &after);
  at::Tensor out = s.buf;
  const auto dt = ToHccl(t.scalar_type());
  const auto root = static_cast<uint32_t>(opts.rootRank);
  std::vector<at::Tensor> keep{out};
  if (flat.defined()) keep.push_back(flat);
  return core_->Submit(c10d::OpType::SCATTER, outputs, keep, std::move(after), "HcclScatter",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclScatter(flat.defined() ? flat.data_ptr() : nullptr, out.data_ptr(),
                                            Count(out), dt, root, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& t = Single(outputs, "reduce_scatter");
  if (inputs.size() != 1 || inputs[0].size() != static_cast<size_t>(size_)) {
    Fail("reduce_scatter needs one input list of world_size tensors");
  }
  std::vector<at::Tensor> parts;
  for (const at::Tensor& i : inputs[0]) {
    CheckCpu(i, "reduce_scatter input");
    if (i.numel() != t.numel() || i.scalar_type() != t.scalar_type()) {
      Fail("reduce_scatter inputs must match the output's size and dtype");
    }
    parts.push_back(i.reshape({-1}));
  }
  at::Tensor flat = at::cat(parts);
  Staged s = Stage(t);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(t, s, &after);
  at::Tensor out = s.buf;
  const auto dt = ToHccl(t.scalar_type());
  const auto op = ToHccl(opts.reduceOp, t.scalar_type());
  return core_->Submit(c10d::OpType::REDUCE_SCATTER, outputs, {flat, out}, std::move(after),
                       "HcclReduceScatter", [=](HcclComm c, aclrtStream st) {
                         return HcclReduceScatter(flat.data_ptr(), out.data_ptr(), Count(out), dt, op, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  CheckCpu(input, "_reduce_scatter_base input");
  CheckCpu(output, "_reduce_scatter_base output");
  if (input.numel() != output.numel() * size_ || output.scalar_type() != input.scalar_type()) {
    Fail("_reduce_scatter_base: input must hold world_size x output elements of the output's dtype");
  }
  at::Tensor in = input.contiguous();
  Staged s = Stage(output);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(output, s, &after);
  at::Tensor out = s.buf;
  const auto dt = ToHccl(output.scalar_type());
  const auto op = ToHccl(opts.reduceOp, output.scalar_type());
  return core_->Submit(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {in, out}, std::move(after),
                       "HcclReduceScatter", [=](HcclComm c, aclrtStream st) {
                         return HcclReduceScatter(in.data_ptr(), out.data_ptr(), Count(out), dt, op, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
    std::vector<int64_t>& input_splits, const c10d::AllToAllOptions&) {
  CheckCpu(input, "alltoall_base input");
  CheckCpu(output, "alltoall_base output");
  if (input.scalar_type() != output.scalar_type()) Fail("alltoall_base: input and output dtypes differ");
  at::Tensor in = input.contiguous();
  Staged s = Stage(output);
  std::vector<std::function<void()>> after;
  CopyBackIfStaged(output, s, &after);
  at::Tensor out = s.buf;
  const auto dt = ToHccl(input.scalar_type());
  const auto n = static_cast<size_t>(size_);
  // Splits are in rows of dim 0; HCCL counts elements.
  auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* name) {
    std::vector<uint64_t> c(n);
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const int64_t row = rows == 0 ? 0 : t.numel() / rows;
    if (splits.empty()) {
      if (rows % size_ != 0) Fail(std::string("alltoall_base: ") + name + " rows do not divide by world_size");
      for (auto& x : c) x = static_cast<uint64_t>(rows / size_ * row);
    } else {
      if (splits.size() != n) Fail(std::string("alltoall_base: ") + name + " splits need world_size entries");
      if (std::accumulate(splits.begin(), splits.end(), int64_t{0}) != rows) {
        Fail(std::string("alltoall_base: ") + name + " splits do not add up to its rows");
      }
      for (size_t i = 0; i < n; ++i) c[i] = static_cast<uint64_t>(splits[i] * row);
    }
    return c;
  };
  const std::vector<uint64_t> scounts = counts(in, input_splits, "input");
  const std::vector<uint64_t> rcounts = counts(out, output_splits, "output");
  auto displs = [](const std::vector<uint64_t>& c) {
    std::vector<uint64_t> d(c.size(), 0);
    for (size_t i = 1; i < c.size(); ++i) d[i] = d[i - 1] + c[i - 1];
    return d;
  };
  const std::vector<uint64_t> sdispls = displs(scounts), rdispls = displs(rcounts);
  const bool equal = input_splits.empty() && output_splits.empty();
  return core_->Submit(c10d::OpType::ALLTOALL_BASE, {output}, {in, out}, std::move(after),
                       equal ? "HcclAlltoAll" : "HcclAlltoAllV", [=](HcclComm c, aclrtStream st) {
                         if (equal) {
                           return HcclAlltoAll(in.data_ptr(), scounts[0], dt, out.data_ptr(),
                                               rcounts[0], dt, c, st);
                         }
                         return HcclAlltoAllV(in.data_ptr(), scounts.data(), sdispls.data(), dt,
                                              out.data_ptr(), rcounts.data(), rdispls.data(), dt, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions&) {
  const auto n = static_cast<size_t>(size_);
  if (outputs.size() != n || inputs.size() != n) Fail("alltoall needs world_size inputs and outputs");
  std::vector<at::Tensor> parts;
  std::vector<uint64_t> scounts(n), rcounts(n);
  for (size_t i = 0; i < n; ++i) {
    CheckCpu(inputs[i], "alltoall input");
    CheckCpu(outputs[i], "alltoall output");
    if (inputs[i].scalar_type() != inputs[0].scalar_type() ||
        outputs[i].scalar_type() != inputs[0].scalar_type()) {
      Fail("alltoall tensors must all have one dtype");
    }
    parts.push_back(inputs[i].reshape({-1}));
    scounts[i] = Count(inputs[i]);
    rcounts[i] = Count(outputs[i]);
  }
  at::Tensor in = at::cat(parts);
  const uint64_t total = std::accumulate(rcounts.begin(), rcounts.end(), uint64_t{0});
  at::Tensor flat = at::empty({static_cast<int64_t>(total)}, inputs[0].options());
  auto displs = [](const std::vector<uint64_t>& c) {
    std::vector<uint64_t> d(c.size(), 0);
    for (size_t i = 1; i < c.size(); ++i) d[i] = d[i - 1] + c[i - 1];
    return d;
  };
  const std::vector<uint64_t> sdispls = displs(scounts), rdispls = displs(rcounts);
  std::vector<at::Tensor> outs = outputs;
  std::vector<std::function<void()>> after{[outs, flat, rdispls]() mutable {
    for (size_t i = 0; i < outs.size(); ++i) {
      outs[i].copy_(flat.narrow(0, static_cast<int64_t>(rdispls[i]), outs[i].numel()).view(outs[i].sizes()));
    }
  }};
  const auto dt = ToHccl(inputs[0].scalar_type());
  return core_->Submit(c10d::OpType::ALLTOALL, outputs, {in, flat}, std::move(after), "HcclAlltoAllV",
                       [=](HcclComm c, aclrtStream st) {
                         return HcclAlltoAllV(in.data_ptr(), scounts.data(), sdispls.data(), dt,
                                              flat.data_ptr(), rcounts.data(), rdispls.data(), dt, c, st);
                       });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::send(std::vector<at::Tensor>& tensors, int dst, int) {
  return core_->SubmitP2p(c10d::OpType::SEND, Single(tensors, "send"), dst);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::recv(std::vector<at::Tensor>& tensors, int src, int) {
  return core_->SubmitP2p(c10d::OpType::RECV, Single(tensors, "recv"), src);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupVigil::barrier(const c10d::BarrierOptions&) {
  return core_->Submit(c10d::OpType::BARRIER, {}, {}, {}, "HcclBarrier",
                       [](HcclComm c, aclrtStream st) { return HcclBarrier(c, st); });
}

void ProcessGroupVigil::startCoalescing() {
  core_->SetCoalescing(true);
}

void ProcessGroupVigil::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  core_->SetCoalescing(false);
}

}  // namespace vigil_torch
