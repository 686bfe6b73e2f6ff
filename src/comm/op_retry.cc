// Op retry (comm/op_retry.h): notices, re-made links, restored inputs, and the log lines.
#include "comm/op_retry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm/communicator.h"
#include "comm/consistency.h"
#include "comm/op_observer.h"
#include "comm/user_buffers.h"
#include "common/hccl_result.h"
#include "log/plog.h"
#include "transport/link_base.h"

namespace vigil::comm {

namespace {

bool SameHost(const transport::Endpoint& a, const transport::Endpoint& b) {
  return !a.host_id.empty() && a.host_id == b.host_id;
}

bool Overlap(const BufferUse& a, const BufferUse& b) {
  const auto* pa = static_cast<const char*>(a.ptr);
  const auto* pb = static_cast<const char*>(b.ptr);
  return pa < pb + b.bytes && pb < pa + a.bytes;
}

std::string LinkReason(transport::Link* link) {
  auto* base = dynamic_cast<transport::LinkBase*>(link);
  return base != nullptr ? base->reason() : std::string("link error");
}

}  // namespace

void Communicator::InitRetry() {
  retry_.cfg = options_.retry;
  retry_.on = retry_.cfg.any() && size() > 1;
  if (!retry_.on) return;
  HCCL_RUN_INFO(
      "[OpRetry]communicator[{}] rank[{}]: op retry on: HCCL_OP_RETRY_ENABLE[{}], "
      "HCCL_OP_RETRY_PARAMS[{}]",
      identifier(), rank(), retry_.cfg.EnableText(), retry_.cfg.ParamsText());
  // The transport's threads end before the communicator's members go (~Communicator).
  transport_->SetRetryNoticeObserver(
      [this](const transport::RetryNotice& n) { return OnRetryNotice(n); });
}

void Communicator::set_peer_exited_probe(std::function<bool(uint32_t)> probe) {
  retry_.peer_exited = std::move(probe);
}

bool Communicator::HoldLinkErrorForRetry(const transport::LinkError& error) {
  if (!retry_.on || !retry_.cfg.covers(SameHost(error.local, error.remote))) return false;
  std::lock_guard<std::mutex> lock(retry_.mu);
  if (retry_.report_now) return false;
  retry_.held.push_back(error);
  // A link of an epoch a retry has left already: that retry covers it.
  if (error.epoch < transport_->epoch()) return true;
  // The op may not be waiting on this link (its transfers on it done, or not begun): ask this
  // rank's own op to give its attempt up, as a peer's notice would (or the next op, when none
  // runs).
  transport::RetryNotice self;
  self.epoch = transport_->epoch() + 1;
  self.seq = retry_.running_seq != 0 ? retry_.running_seq : retry_.done_seq + 1;
  self.origin = rank();
  self.end_a = error.local.rank;
  self.end_b = error.remote.rank;
  self.from = rank();
  if (!retry_.asked_valid || retry_.asked.seq != self.seq || retry_.asked.epoch < self.epoch) {
    retry_.asked = self;
    retry_.asked_valid = true;
    retry_.asked_reason = error.reason;
  }
  if (retry_.running_seq != 0) retry_.interrupt.store(HCCL_E_AGAIN, std::memory_order_release);
  return true;
}

void Communicator::ReportHeldLinkErrors() {
  std::vector<transport::LinkError> held;
  {
    std::lock_guard<std::mutex> lock(retry_.mu);
    retry_.report_now = true;
    held.swap(retry_.held);
  }
  for (const transport::LinkError& e : held) transport_->ReportLinkError(e);
}

transport::NoticeVerdict Communicator::OnRetryNotice(const transport::RetryNotice& n) {
  std::lock_guard<std::mutex> lock(retry_.mu);
  const bool newer = n.epoch > transport_->epoch();
  if (n.seq != 0 && n.seq <= retry_.done_seq) {
    // This rank has returned that op: the asker cannot run it again with it (HCCL's condition:
    // every rank stops at the same op). A rank returns an op only after its commit, when every
    // rank had the op's data, so an asker in its commit completes the op; one still moving
    // data has failed it (HCCL_E_OPRETRY_FAIL). Either way the links move to the new epoch:
    // this rank follows with the op it runs, or its next one.
    if (retry_.refused_seq != n.seq) {
      retry_.refused_seq = n.seq;
      HCCL_RUN_INFO(
          "[OpRetry]communicator[{}] rank[{}]: can not retry op seq[{}] asked by "
          "rank[{}] (link rank[{}] <-> rank[{}]): this rank has completed it (last "
          "completed seq[{}]); its links follow to epoch[{}]",
          identifier(), rank(), n.seq, n.origin, n.end_a, n.end_b, retry_.done_seq, n.epoch);
    }
    if (!newer) return transport::NoticeVerdict::kRefuse;  // its links are there already
    transport::RetryNotice follow = n;
    follow.seq = retry_.running_seq != 0 ? retry_.running_seq : retry_.done_seq + 1;
    if (!retry_.asked_valid || follow.epoch > retry_.asked.epoch) {
      retry_.asked = follow;
      retry_.asked_valid = true;
      retry_.asked_reason.clear();
    }
    if (retry_.running_seq != 0) retry_.interrupt.store(HCCL_E_AGAIN, std::memory_order_release);
    return transport::NoticeVerdict::kRefuse;
  }
  if (n.seq != 0 && retry_.running_seq != 0 && n.seq > retry_.running_seq) {
    // The peer runs a later op: it returned the running one, past its commit. This rank, in
    // its commit, completes the op too (RetryAfterFailure); still moving the op's data, it
    // can not follow: its peers have gone on without it.
    if (!retry_.committing.load(std::memory_order_acquire)) {
      HCCL_RUN_INFO(
          "[OpRetry]communicator[{}] rank[{}]: refused links of op seq[{}] from rank[{}]: this "
          "rank still runs op seq[{}]",
          identifier(), rank(), n.seq, n.from, retry_.running_seq);
      return transport::NoticeVerdict::kBehind;
    }
    retry_.later_seq = std::max(retry_.later_seq, n.seq);
    retry_.interrupt.store(HCCL_E_AGAIN, std::memory_order_release);
  }
  if (!newer) return transport::NoticeVerdict::kAccept;
  if (!retry_.asked_valid || n.epoch > retry_.asked.epoch) {
    retry_.asked = n;
    retry_.asked_valid = true;
    retry_.asked_reason.clear();
  }
  if (retry_.running_seq != 0 && n.seq == retry_.running_seq) {
    retry_.interrupt.store(HCCL_E_AGAIN, std::memory_order_release);
  }
  return transport::NoticeVerdict::kAccept;
}

void Communicator::RetryBeginOp(const OpDesc& op, uint64_t seq) {
  retry_.attempts = 0;
  retry_.saved.clear();
  // An in-place op overwrites its input as it goes: keep a copy to run it again from.
  std::vector<BufferUse> uses;
  UserBuffers(op, rank(), size(), &uses);
  size_t total = 0;
  for (const BufferUse& in : uses) {
    if (std::strcmp(in.name, "input") != 0 || in.ptr == nullptr || in.bytes == 0) continue;
    for (const BufferUse& out : uses) {
      if (std::strcmp(out.name, "output") == 0 && out.ptr != nullptr && Overlap(in, out)) {
        retry_.saved.push_back({const_cast<void*>(in.ptr), total, in.bytes});
        total += in.bytes;
        break;
      }
    }
  }
  if (total > retry_.backup.size()) retry_.backup.resize(total);
  for (const auto& s : retry_.saved) std::memcpy(retry_.backup.data() + s.offset, s.ptr, s.bytes);

  std::lock_guard<std::mutex> lock(retry_.mu);
  retry_.running_seq = seq;
  retry_.later_seq = 0;
  retry_.report_now = false;
  if (retry_.asked_valid && retry_.asked.seq < seq) retry_.asked_valid = false;
  if (retry_.asked_valid && retry_.asked.seq == seq && retry_.asked.epoch > transport_->epoch()) {
    retry_.interrupt.store(HCCL_E_AGAIN, std::memory_order_release);  // peers retry it already
  } else {
    retry_.interrupt.store(0, std::memory_order_release);
  }
}

bool Communicator::RetryCommit(const OpRecord& record) {
  {
    std::lock_guard<std::mutex> lock(retry_.mu);
    // Past the commit every rank has the op's data: a retry asked for it now finds this rank
    // done (the asker completes the op too). The links follow to its epoch with the next op.
    if (retry_.interrupt.exchange(0) != 0 && retry_.asked_valid &&
        retry_.asked.seq == retry_.running_seq) {
      retry_.asked.seq = retry_.running_seq + 1;
    }
    retry_.done_seq = retry_.running_seq;
    retry_.running_seq = 0;
    if (retry_.attempts > 0) retry_.held.clear();  // the retry recovered what they broke
  }
  if (retry_.attempts > 0) LogRecovered(record, retry_.done_seq);
  return true;
}

void Communicator::LogRecovered(const OpRecord& record, uint64_t seq) {
  RetryEvent ev;
  ev.kind = RetryEvent::Kind::kRecovered;
  ev.attempt = retry_.attempts;
  ev.max_cnt = retry_.cfg.max_cnt;
  ev.epoch = transport_->epoch();
  ev.end_a = retry_.end_a;
  ev.end_b = retry_.end_b;
  ev.time = WallClock::now();
  ev.lost_us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                         SteadyClock::now() - retry_.first_failure)
                                         .count());
  HCCL_RUN_INFO(
      "[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] recovered by "
      "retry after [{}] attempt(s), [{:.3f}]s lost; link rank[{}] <-> rank[{}] failed "
      "at [{}]",
      identifier(), rank(), record.tag(), record.index, seq, ev.attempt, ev.lost_us / 1e6, ev.end_a,
      ev.end_b, FormatPlogTime(retry_.first_failure_wall));
  NotifyRetry(record, ev);
}

Communicator::RetryStep Communicator::RetryAfterFailure(const OpDesc& op, const OpRecord& record,
                                                        alg::Algo algo,
                                                        const transport::ProgressError& pe,
                                                        HcclResult rc, OpFailure* failure) {
  const bool asked = retry_.interrupt.load(std::memory_order_acquire) != 0;
  transport::Link* link = pe.link;
  const bool link_failed =
      !asked && link != nullptr && link->broken() &&
      (rc == HCCL_E_REMOTE || rc == HCCL_E_TCP_TRANSFER || rc == HCCL_E_NETWORK);
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(retry_.mu);
    seq = retry_.running_seq;
  }
  auto end_op = [&] {
    std::lock_guard<std::mutex> lock(retry_.mu);
    // This rank will not run the op again: a later notice for it is refused.
    retry_.done_seq = std::max(retry_.done_seq, retry_.running_seq);
    retry_.running_seq = 0;
  };
  auto not_retryable = [&] {
    end_op();
    ReportHeldLinkErrors();
    return RetryStep::kNotRetryable;
  };
  if ((!asked && !link_failed) || abort_.load() != 0) return not_retryable();
  // The failed attempt had reached its commit and a peer has returned the op (it refused this
  // rank's retry, or runs a later op): every rank had the op's data. Complete it.
  auto completed = [&](const std::string& how) {
    {
      std::lock_guard<std::mutex> lock(retry_.mu);
      retry_.done_seq = std::max(retry_.done_seq, retry_.running_seq);
      retry_.running_seq = 0;
      retry_.held.clear();
    }
    HCCL_RUN_INFO(
        "[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] complete "
        "on every rank before the link failed ({}): no re-execution",
        identifier(), rank(), record.tag(), record.index, seq, how);
    LogRecovered(record, seq);
    return RetryStep::kCommitted;
  };
  // The later op a peer runs, when this rank's attempt had reached its commit (0: none).
  auto later_op = [&]() -> uint64_t {
    if (!retry_.committing.load(std::memory_order_acquire)) return 0;
    std::lock_guard<std::mutex> lock(retry_.mu);
    return retry_.later_seq > seq ? retry_.later_seq : 0;
  };

  uint32_t end_a = rank(), end_b = rank(), origin = rank();
  std::string cause;
  if (link_failed) {
    const transport::Endpoint& peer = link->remote();
    end_b = peer.rank;
    cause = LinkReason(link);
    if (cause == "the peer closed the link") return not_retryable();  // it gave the op up
    const bool same = SameHost(endpoints_[rank()], peer);
    if (!retry_.cfg.covers(same)) {
      HCCL_RUN_INFO(
          "[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}]: the link to "
          "rank[{}] failed, a link {} host: not retried (HCCL_OP_RETRY_ENABLE[{}])",
          identifier(), rank(), record.tag(), record.index, peer.rank,
          same ? "inside a" : "between", retry_.cfg.EnableText());
      return not_retryable();
    }
    if (retry_.peer_exited && retry_.peer_exited(peer.rank)) {
      HCCL_RUN_INFO(
          "[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}]: peer rank[{}] has "
          "exited: not retried",
          identifier(), rank(), record.tag(), record.index, peer.rank);
      return not_retryable();
    }
  } else {
    std::lock_guard<std::mutex> lock(retry_.mu);
    origin = retry_.asked.origin;
    end_a = retry_.asked.end_a;
    end_b = retry_.asked.end_b;
    cause = origin == rank() && !retry_.asked_reason.empty()
                ? retry_.asked_reason
                : fmt::format("retry asked by rank[{}], notice from rank[{}]", origin,
                              retry_.asked.from);
  }
  if (end_a > end_b) std::swap(end_a, end_b);  // every rank names the link alike
  if (retry_.attempts == 0) {
    retry_.first_failure = SteadyClock::now();
    retry_.first_failure_wall = WallClock::now();
    retry_.end_a = end_a;
    retry_.end_b = end_b;
  }
  const auto lost_us = [&] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                     SteadyClock::now() - retry_.first_failure)
                                     .count());
  };
  // Gives the op up: it fails with `code`, the held link errors reported (ERROR CQE, EI0013).
  auto give_up = [&](OpFailure::Kind kind, HcclResult code, const std::string& why) {
    end_op();
    ReportHeldLinkErrors();
    failure->kind = kind;
    failure->code = code;
    failure->reason = why;
    const uint32_t other = end_a == rank() ? end_b : end_b == rank() ? end_a : rank();
    if (other != rank()) {
      failure->remote_rank = other;
      if (link != nullptr) failure->link_type = transport::LinkTypeName(link->type());
    }
    RetryEvent ev;
    ev.kind = RetryEvent::Kind::kFailed;
    ev.attempt = retry_.attempts;
    ev.max_cnt = retry_.cfg.max_cnt;
    ev.epoch = transport_->epoch();
    ev.end_a = retry_.end_a;
    ev.end_b = retry_.end_b;
    ev.origin = origin;
    ev.time = WallClock::now();
    ev.lost_us = lost_us();
    ev.reason = why;
    NotifyRetry(record, ev);
    HCCL_RUN_INFO(
        "[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] not "
        "recovered: gave up after [{}] attempt(s), [{:.3f}]s lost; link rank[{}] <-> rank[{}]",
        identifier(), rank(), record.tag(), record.index, seq, retry_.attempts, ev.lost_us / 1e6,
        retry_.end_a, retry_.end_b);
    return RetryStep::kFailed;
  };
  if (retry_.attempts >= retry_.cfg.max_cnt) {
    const std::string why = fmt::format(
        "retry failed: MaxCnt[{}] re-executions used up (HCCL_OP_RETRY_PARAMS); link rank[{}] "
        "<-> rank[{}]: {}",
        retry_.cfg.max_cnt, end_a, end_b, cause);
    HCCL_ERROR("[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] {}", identifier(),
               rank(), record.tag(), record.index, seq, why);
    return give_up(OpFailure::Kind::kLink, HCCL_E_REMOTE, why);
  }
  ++retry_.attempts;

  transport::RetryNotice n;
  n.epoch = transport_->epoch() + 1;
  n.seq = seq;
  n.attempt = retry_.attempts;
  n.origin = origin;
  n.end_a = end_a;
  n.end_b = end_b;
  n.from = rank();
  {
    std::lock_guard<std::mutex> lock(retry_.mu);
    if (retry_.asked_valid && retry_.asked.seq == seq) {
      n.epoch = std::max(n.epoch, retry_.asked.epoch);
    }
  }
  HCCL_RUN_INFO(
      "[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] "
      "attempt[{}/{}] failed on the link rank[{}] <-> rank[{}] ({}): retry from the "
      "op's start on links re-made at epoch[{}], holding up to HoldTime[{}]ms",
      identifier(), rank(), record.tag(), record.index, seq, retry_.attempts, retry_.cfg.max_cnt,
      end_a, end_b, cause, n.epoch, retry_.cfg.hold_ms);
  // HCCL's own line for it (its op retry server's, opretry_server.cc), for its users' greps.
  HCCL_RUN_INFO("[OpRetry][Server]begin to exec retry of tag[{}] from rank[{}] and rank[{}]",
                record.tag(), end_a, end_b);
  RetryEvent begin;
  begin.kind = RetryEvent::Kind::kBegin;
  begin.attempt = retry_.attempts;
  begin.max_cnt = retry_.cfg.max_cnt;
  begin.epoch = n.epoch;
  begin.end_a = end_a;
  begin.end_b = end_b;
  begin.origin = origin;
  begin.time = WallClock::now();
  begin.reason = cause;
  NotifyRetry(record, begin);

  const auto hold_deadline = SteadyClock::now() + std::chrono::milliseconds(retry_.cfg.hold_ms);
  for (;;) {
    const auto t0 = SteadyClock::now();
    retry_.interrupt.store(0, std::memory_order_release);
    transport_->BeginEpoch(n);
    // Every link is new (or to be made): nothing is linked, the group looks its links up again.
    established_bits_[0].store(0);
    established_bits_[1].store(0);
    group_links_complete_ = false;
    group_.links.assign(size(), nullptr);
    transport::ConnectPolicy policy;
    policy.deadline = hold_deadline;
    policy.interval = std::chrono::milliseconds(retry_.cfg.interval_ms);
    policy.abort = &abort_;
    policy.abort2 = &retry_.interrupt;
    policy.notice = &n;
    policy.quiet = true;
    OpFailure f;
    bool connected = false;
    HcclResult lrc = EnsureLinks(op, algo, record.tag(), &f, &connected, &policy);
    if (lrc == HCCL_SUCCESS && algo == alg::Algo::kHierarchical) {
      OpDesc commit;  // the commit's links (a barrier over every rank)
      commit.type = OpType::kBarrier;
      lrc = EnsureLinks(commit, alg::Algo::kRing, record.tag(), &f, &connected, &policy);
    }
    // A peer's handshake for its next op came while the links were made (they are at the new
    // epoch: the next op runs on them).
    if (const uint64_t later = later_op()) {
      return completed(fmt::format("a peer runs op seq[{}]", later));
    }
    if (lrc == HCCL_SUCCESS) {
      for (const auto& s : retry_.saved) {
        std::memcpy(s.ptr, retry_.backup.data() + s.offset, s.bytes);
      }
      HCCL_RUN_INFO(
          "[OpRetry]communicator[{}] rank[{}]: links re-made at epoch[{}] in [{}]ms: "
          "re-executing op tag[{}] index[{}] seq[{}] from its start ({} in-place "
          "input(s) restored)",
          identifier(), rank(), n.epoch,
          std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t0).count(),
          record.tag(), record.index, seq, retry_.saved.size());
      return RetryStep::kRetried;
    }
    if (lrc == HCCL_E_AGAIN && SteadyClock::now() < hold_deadline) {
      // A newer notice for this op came while waiting (another link failed): go to its epoch.
      std::lock_guard<std::mutex> lock(retry_.mu);
      n.epoch = std::max(n.epoch + 1, retry_.asked_valid ? retry_.asked.epoch : 0);
      continue;
    }
    if (lrc == HCCL_E_OPRETRY_FAIL && retry_.committing.load()) {
      // A rank returned the op: it passed the commit, so every rank had all of the op's data
      // before the link failed. Complete; the next op makes the links at the new epoch.
      return completed(f.reason);
    }
    if (lrc == HCCL_E_OPRETRY_FAIL) {
      const std::string why = fmt::format("can not retry: {}", f.reason);
      HCCL_ERROR("[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] {}",
                 identifier(), rank(), record.tag(), record.index, seq, why);
      return give_up(OpFailure::Kind::kLink, HCCL_E_OPRETRY_FAIL, why);
    }
    if (lrc == HCCL_E_TIMEOUT || lrc == HCCL_E_AGAIN) {
      const std::string why = fmt::format(
          "retry failed: links not re-made within HoldTime[{}]ms (timeout), link rank[{}] <-> "
          "rank[{}] ({}); missing: {}",
          retry_.cfg.hold_ms, end_a, end_b, cause, f.reason);
      HCCL_ERROR("[OpRetry]communicator[{}] rank[{}]: op tag[{}] index[{}] seq[{}] {}",
                 identifier(), rank(), record.tag(), record.index, seq, why);
      return give_up(OpFailure::Kind::kLink, HCCL_E_REMOTE, why);
    }
    if (abort_.load() != 0 && lrc == ToHcclResult(abort_.load())) {
      return give_up(OpFailure::Kind::kAbort, lrc,
                     fmt::format("aborted while re-making links for op retry: {}", f.reason));
    }
    return give_up(f.kind, lrc, fmt::format("re-making links for op retry failed: {}", f.reason));
  }
}

}  // namespace vigil::comm
