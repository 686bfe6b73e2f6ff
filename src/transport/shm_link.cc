#include "transport/shm_link.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/env_config.h"
#include "log/plog.h"
#include "runtime/device_memory.h"

namespace vigil::transport {

namespace {

constexpr uint32_t kSegmentMagic = 0x4d485356;  // "VSHM"
constexpr size_t kHeaderPage = 4096;
constexpr size_t kMaxPerCall = 1u << 20;  // publish in pieces so the reader can start copying
// One process_vm_readv at most this much: a recall waits for the read in progress.
constexpr size_t kMaxLentPerCall = 4u << 20;
constexpr auto kRecallWait = std::chrono::seconds(1);

// What a peer reads to find out whether it may read this process's memory.
constexpr uint64_t kProbeMagic = 0x5647494c50524f42ull;  // "VGILPROB"
std::atomic<uint64_t> g_probe_word{kProbeMagic};

}  // namespace

// Producer and consumer counters on separate cache lines (bytes ever written / read).
// `retract` (producer's): 0, or 1 + the stream offset from which the producer took its data
// back (AbandonOp); the consumer reads nothing from there on.
// The lend (producer's, see shm_link.h): stream bytes [lend_start, lend_start + lend_len) are
// at lend_addr in the producer's memory, under a seqlock (lend_seq odd while rewritten; a new
// lend is written only after the consumer took all of the previous one). lend_recalled: the
// producer took the lend back; the consumer reads no more of it. `reading` (consumer's): 1
// while the consumer is inside a read of the producer's memory. `can_read` (consumer's): 0 not
// probed yet, 1 the consumer may read the producer's memory, 2 it may not.
struct ShmLink::RingCtl {
  alignas(64) std::atomic<uint64_t> head;
  std::atomic<uint64_t> retract;
  std::atomic<uint32_t> lend_seq;
  std::atomic<uint32_t> lend_recalled;
  std::atomic<uint64_t> lend_start;
  std::atomic<uint64_t> lend_len;
  std::atomic<uint64_t> lend_addr;
  alignas(64) std::atomic<uint64_t> tail;
  std::atomic<uint32_t> reading;
  std::atomic<uint32_t> can_read;
};

namespace {

struct SegmentHeader {
  uint32_t magic;
  uint32_t reserved;
  uint64_t ring_bytes;
  // Address of each side's probe word (g_probe_word): [0] dialer's, [1] acceptor's.
  uint64_t probe_addr[2];
  // The largest direct message each side exchanges: [0] dialer's, [1] acceptor's.
  uint64_t direct_bytes[2];
  alignas(64) char rings[2][128];  // two RingCtl: [0] dialer -> acceptor, [1] acceptor -> dialer
};
static_assert(sizeof(SegmentHeader) <= kHeaderPage);

// The direct slots after the header page: [0..1] dialer -> acceptor, [2..3] the other way.
constexpr size_t kDirectArea = (4 * kShmDirectSlotBytes + 4095) / 4096 * 4096;
constexpr size_t kHeaderBytes = kHeaderPage + kDirectArea;

}  // namespace

ShmMapping::~ShmMapping() {
  if (base_ != nullptr) munmap(base_, size_);
  CloseFd();
}

void ShmMapping::CloseFd() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

HcclResult ShmMapping::Create(const char* name, size_t size, std::string* error) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    if (error) *error = fmt::format("memfd_create failed: {}", strerror(errno));
    return HCCL_E_SYSCALL;
  }
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (error) *error = fmt::format("ftruncate({}) failed: {}", size, strerror(errno));
    close(fd);
    return HCCL_E_SYSCALL;
  }
  // MAP_POPULATE: fault every page in now, once, instead of one fault per page (both sides)
  // the first time an op's data wraps through the rings.
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    if (error) *error = fmt::format("mmap({}) failed: {}", size, strerror(errno));
    close(fd);
    return HCCL_E_MEMORY;
  }
  base_ = p;
  size_ = size;
  fd_ = fd;
  return HCCL_SUCCESS;
}

HcclResult ShmMapping::Open(uint32_t pid, int fd, size_t size, std::string* error) {
  std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  int local = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (local < 0) {
    if (error) *error = fmt::format("open {} failed: {}", path, strerror(errno));
    return HCCL_E_NOT_SUPPORT;
  }
  struct stat st;
  if (fstat(local, &st) != 0 || static_cast<size_t>(st.st_size) < size) {
    if (error) *error = fmt::format("{} is not a {}-byte shared segment", path, size);
    close(local);
    return HCCL_E_NOT_SUPPORT;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, local, 0);
  close(local);
  if (p == MAP_FAILED) {
    if (error) *error = fmt::format("mmap of {} failed: {}", path, strerror(errno));
    return HCCL_E_NOT_SUPPORT;
  }
  base_ = p;
  size_ = size;
  return HCCL_SUCCESS;
}

size_t ShmSegmentBytes(size_t ring_bytes) { return kHeaderBytes + 2 * ring_bytes; }

void InitShmSegment(void* base, size_t ring_bytes, size_t direct_bytes) {
  auto* h = static_cast<SegmentHeader*>(base);
  h->magic = kSegmentMagic;
  h->ring_bytes = ring_bytes;
  h->direct_bytes[0] = std::min(direct_bytes, kShmDirectBytes);
  // The dialer creates the segment; the acceptor probes before the dialer's link exists.
  h->probe_addr[0] = reinterpret_cast<uintptr_t>(&g_probe_word);
  // The memfd is zero-filled, so the counters already read 0.
}

bool CheckShmSegment(const void* base, size_t size, size_t ring_bytes, std::string* error) {
  const auto* h = static_cast<const SegmentHeader*>(base);
  if (size < ShmSegmentBytes(ring_bytes) || h->magic != kSegmentMagic ||
      h->ring_bytes != ring_bytes) {
    if (error) *error = "the shared segment's header does not match the handshake";
    return false;
  }
  return true;
}

ShmLink::ShmLink(Endpoint local, Endpoint remote, net::Socket ctrl, Reporter reporter)
    : LinkBase(LinkType::kShm, std::move(local), std::move(remote), std::move(ctrl),
               std::move(reporter)) {}

HcclResult ShmLink::Make(Endpoint local, Endpoint remote, net::Socket* ctrl, Reporter reporter,
                         std::unique_ptr<ShmMapping>* segment, size_t ring_bytes, bool dialer,
                         Doorbell* mine, std::unique_ptr<ShmMapping>* peer_doorbell,
                         int32_t device, size_t direct_bytes, std::unique_ptr<ShmLink>* out,
                         std::string* error) {
  static_assert(sizeof(RingCtl) <= 128);
  if ((ring_bytes & (ring_bytes - 1)) != 0 || ring_bytes == 0) {
    if (error) *error = fmt::format("ring size {} is not a power of two", ring_bytes);
    return HCCL_E_PARA;
  }
  auto* h = static_cast<SegmentHeader*>((*segment)->base());
  char* data = static_cast<char*>((*segment)->base()) + kHeaderBytes;
  char* rx_data = dialer ? data + ring_bytes : data;
  // Each side is charged for the ring it receives on, so a pair costs one ring per side.
  auto& mem = rt::DeviceMemory::Instance();
  if (mem.Register(device, rx_data, ring_bytes, "shm link ring") != ACL_SUCCESS) {
    if (error) {
      *error = fmt::format("shm link ring of {} bytes does not fit device {} memory (used {} of "
                           "budget {} bytes)",
                           ring_bytes, device, mem.UsedBytes(device), mem.Budget());
    }
    return HCCL_E_MEMORY;
  }
  std::unique_ptr<ShmLink> link(
      new ShmLink(std::move(local), std::move(remote), std::move(*ctrl), std::move(reporter)));
  link->registered_ = true;
  RingCtl* ring0 = reinterpret_cast<RingCtl*>(h->rings[0]);
  RingCtl* ring1 = reinterpret_cast<RingCtl*>(h->rings[1]);
  link->cap_ = ring_bytes;
  link->tx_ = dialer ? ring0 : ring1;
  link->rx_ = dialer ? ring1 : ring0;
  link->tx_data_ = dialer ? data : data + ring_bytes;
  link->rx_data_ = rx_data;
  link->tx_head_ = link->tx_->head.load();
  link->rx_tail_ = link->rx_->tail.load();
  link->mine_ = mine;
  link->peer_ = static_cast<Doorbell*>((*peer_doorbell)->base());
  link->segment_ = std::move(*segment);
  link->peer_doorbell_map_ = std::move(*peer_doorbell);
  link->single_copy_ = Env().shm_single_copy;
  // The acceptor states its limit before it answers the handshake; the dialer makes its link
  // only after that answer, so both read both limits here.
  if (!dialer) h->direct_bytes[1] = std::min(direct_bytes, kShmDirectBytes);
  link->direct_max_ = static_cast<size_t>(std::min(h->direct_bytes[0], h->direct_bytes[1]));
  char* slots = reinterpret_cast<char*>(h) + kHeaderPage;
  char* theirs = slots + 2 * kShmDirectSlotBytes;
  link->tx_slots_ = reinterpret_cast<DirectSlot*>(dialer ? slots : theirs);
  link->rx_slots_ = reinterpret_cast<const DirectSlot*>(dialer ? theirs : slots);
  if (!dialer) h->probe_addr[1] = reinterpret_cast<uintptr_t>(&g_probe_word);
  link->ProbeSingleCopy(h->probe_addr[dialer ? 1 : 0]);
  *out = std::move(link);
  return HCCL_SUCCESS;
}

ShmLink::~ShmLink() {
  if (registered_) rt::DeviceMemory::Instance().Unregister(rx_data_);
}

void ShmLink::CopyIn(const void* buf, size_t k, size_t at) {
  const size_t off = static_cast<size_t>((tx_head_ + at) & (cap_ - 1));
  const size_t first = std::min(k, cap_ - off);
  std::memcpy(tx_data_ + off, buf, first);
  if (k > first) std::memcpy(tx_data_, static_cast<const char*>(buf) + first, k - first);
}

void ShmLink::Publish(size_t k) {
  tx_head_ += k;
  // seq_cst store, then the peer's waiter count: pairs with WaitReady's register-then-check.
  tx_->head.store(tx_head_, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
  Account(k);
}

HcclResult ShmLink::TrySend(const void* buf, size_t n, size_t* moved) {
  *moved = 0;
  if (broken()) return HCCL_E_REMOTE;
  if (lend_active_) return HCCL_SUCCESS;  // only after a recall: the stream is over
  const uint64_t tail = tx_->tail.load(std::memory_order_acquire);
  const size_t space = cap_ - static_cast<size_t>(tx_head_ - tail);
  const size_t k = std::min({n, space, kMaxPerCall});
  if (k == 0) return HCCL_SUCCESS;
  CopyIn(buf, k, 0);
  Publish(k);
  *moved = k;
  return HCCL_SUCCESS;
}

HcclResult ShmLink::TrySend2(const void* a, size_t na, const void* b, size_t nb, size_t* moved) {
  *moved = 0;
  if (broken()) return HCCL_E_REMOTE;
  if (lend_active_) return HCCL_SUCCESS;  // only after a recall: the stream is over
  const uint64_t tail = tx_->tail.load(std::memory_order_acquire);
  const size_t space = cap_ - static_cast<size_t>(tx_head_ - tail);
  const size_t ka = std::min({na, space, kMaxPerCall});
  if (ka == 0) return HCCL_SUCCESS;
  CopyIn(a, ka, 0);
  size_t kb = 0;
  if (ka == na) {
    kb = std::min(nb, std::min(space, kMaxPerCall) - ka);
    if (kb > 0) CopyIn(b, kb, ka);
  }
  Publish(ka + kb);  // one publish, one wake-up for header and data
  *moved = ka + kb;
  return HCCL_SUCCESS;
}

void ShmLink::AbandonOp() {
  // The last direct message too: a late peer must not complete its op with it.
  RetractDirect();
  // The first abandon wins: a later op's start must not uncover this one's data.
  uint64_t none = 0;
  tx_->retract.compare_exchange_strong(none, op_start_ + 1, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
  RecallLent();
}

bool ShmLink::peer_retracted() const {
  return rx_->retract.load(std::memory_order_acquire) != 0;
}

uint64_t ShmLink::ReadableHead() const {
  // seq_cst: WaitReady's register-then-check relies on it.
  const uint64_t head = rx_->head.load(std::memory_order_seq_cst);
  uint64_t limit = head;
  const uint64_t retract = rx_->retract.load(std::memory_order_seq_cst);
  if (retract != 0) limit = std::min(limit, std::max(retract - 1, rx_tail_));
  if (rx_->lend_recalled.load(std::memory_order_seq_cst) != 0) {
    // The lend is the last thing the peer sent (it recalls only an unfinished one).
    Lend lend;
    limit = std::min(limit, PeerLend(&lend) ? std::max(lend.start, rx_tail_) : rx_tail_);
  }
  return limit;
}

void ShmLink::ProbeSingleCopy(uint64_t peer_probe_addr) {
  const Endpoint& r = remote();
  if (!single_copy_) {
    rx_->can_read.store(2, std::memory_order_seq_cst);
    HCCL_RUN_INFO("[InitChannelStage]shm link local rank[{}] <- remote rank[{}]: two copies "
                  "through the ring for every message (VIGIL_SHM_SINGLE_COPY=0)",
                  local().rank, r.rank);
    return;
  }
  uint64_t word = 0;
  iovec mine{&word, sizeof(word)};
  iovec theirs{reinterpret_cast<void*>(static_cast<uintptr_t>(peer_probe_addr)), sizeof(word)};
  ssize_t got = -1;
  int err = EINVAL;
  if (peer_probe_addr != 0 && r.pid != 0) {
    got = process_vm_readv(static_cast<pid_t>(r.pid), &mine, 1, &theirs, 1, 0);
    err = errno;
  }
  const bool ok = got == static_cast<ssize_t>(sizeof(word)) && word == kProbeMagic;
  rx_->can_read.store(ok ? 1 : 2, std::memory_order_seq_cst);
  if (ok) {
    HCCL_RUN_INFO("[InitChannelStage]shm link local rank[{}] <- remote rank[{}] pid[{}]: single "
                  "copy (process_vm_readv) for messages of {} bytes and more",
                  local().rank, r.rank, r.pid, kShmLendMinBytes);
  } else {
    HCCL_RUN_INFO("[InitChannelStage]shm link local rank[{}] <- remote rank[{}] pid[{}]: two "
                  "copies through the ring (reading the peer's memory is refused: {})",
                  local().rank, r.rank, r.pid,
                  got < 0 ? strerror(err) : "probe word mismatch");
  }
}

bool ShmLink::lends(size_t bytes) const {
  return single_copy_ && bytes >= kShmLendMinBytes &&
         tx_->can_read.load(std::memory_order_relaxed) == 1;
}

bool ShmLink::PeerLend(Lend* lend) const {
  const uint32_t seq = rx_->lend_seq.load(std::memory_order_acquire);
  if ((seq & 1) != 0) return false;
  lend->start = rx_->lend_start.load(std::memory_order_relaxed);
  lend->len = rx_->lend_len.load(std::memory_order_relaxed);
  lend->addr = rx_->lend_addr.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return rx_->lend_seq.load(std::memory_order_relaxed) == seq && lend->len != 0;
}

HcclResult ShmLink::TrySendLent(const void* a, size_t na, const void* b, size_t nb, size_t* moved) {
  *moved = 0;
  if (lend_active_) {
    // What the reader acknowledged is done even if it closed or died since: a receiver that
    // read the whole lend may finish its op and exit before this sender looks again.
    const HcclResult r = na > 0 ? HCCL_SUCCESS : PollLend(b, nb, moved);
    return *moved == 0 && broken() ? HCCL_E_REMOTE : r;
  }
  if (broken()) return HCCL_E_REMOTE;
  if (!lends(nb)) return na > 0 ? TrySend2(a, na, b, nb, moved) : TrySend(b, nb, moved);
  const uint64_t tail = tx_->tail.load(std::memory_order_acquire);
  const size_t space = cap_ - static_cast<size_t>(tx_head_ - tail);
  if (na > space) return TrySend(a, na, moved);  // the head first, as far as it fits
  if (na > 0) CopyIn(a, na, 0);
  const uint64_t start = tx_head_ + na;
  const uint32_t seq = tx_->lend_seq.load(std::memory_order_relaxed);
  tx_->lend_seq.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  tx_->lend_start.store(start, std::memory_order_relaxed);
  tx_->lend_len.store(nb, std::memory_order_relaxed);
  tx_->lend_addr.store(reinterpret_cast<uintptr_t>(b), std::memory_order_relaxed);
  tx_->lend_seq.store(seq + 2, std::memory_order_release);
  lend_active_ = true;
  lend_start_ = start;
  lend_end_ = start + nb;
  lend_done_ = start;
  lend_buf_ = static_cast<const char*>(b);
  // The head moves past the lent bytes as if they were in the ring; the ring itself holds
  // nothing for them (the next ring byte goes to offset lend_end_, as ring offsets are
  // stream offsets modulo the capacity).
  tx_head_ = lend_end_;
  tx_->head.store(tx_head_, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
  if (na > 0) Account(na);
  *moved = na;
  return HCCL_SUCCESS;
}

HcclResult ShmLink::PollLend(const void* b, size_t nb, size_t* moved) {
  // After a recall the stream is over: whatever comes next waits for the deadline.
  if (lend_recalled_ || b != lend_buf_ + (lend_done_ - lend_start_)) return HCCL_SUCCESS;
  const uint64_t tail = tx_->tail.load(std::memory_order_acquire);
  if (tail <= lend_done_) return HCCL_SUCCESS;
  const uint64_t upto = std::min({tail, lend_end_, lend_done_ + nb});
  *moved = static_cast<size_t>(upto - lend_done_);
  lend_done_ = upto;
  if (lend_done_ == lend_end_) lend_active_ = false;
  Account(*moved);
  return HCCL_SUCCESS;
}

void ShmLink::RecallLent() {
  if (!lend_active_ || lend_recalled_) return;
  lend_recalled_ = true;
  tx_->lend_recalled.store(1, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
  // Dekker with ReadLent (reading = 1, then check the recall): either the reader sees the
  // recall and reads nothing, or we see its read and wait for it to end (a broken link does not
  // stop a read already in the kernel). Bounded: a reader killed mid-read leaves the flag set.
  const auto until = SteadyClock::now() + kRecallWait;
  while (tx_->reading.load(std::memory_order_seq_cst) != 0 && SteadyClock::now() < until) {
    if (kill(static_cast<pid_t>(remote().pid), 0) != 0 && errno == ESRCH) break;
    sched_yield();
  }
}

HcclResult ShmLink::ReadLent(const Lend& lend, void* buf, size_t n, size_t* moved) {
  rx_->reading.store(1, std::memory_order_seq_cst);
  // Announced: a recall or retract from now on waits for this read to end.
  const uint64_t end = std::min(ReadableHead(), lend.start + lend.len);
  if (end <= rx_tail_) {
    rx_->reading.store(0, std::memory_order_seq_cst);
    return state() == kOk ? HCCL_SUCCESS : HCCL_E_REMOTE;
  }
  const size_t k = std::min({n, static_cast<size_t>(end - rx_tail_), kMaxLentPerCall});
  const uint64_t from = lend.addr + (rx_tail_ - lend.start);
  iovec local{buf, k};
  iovec remote_iov{reinterpret_cast<void*>(static_cast<uintptr_t>(from)), k};
  const ssize_t got =
      process_vm_readv(static_cast<pid_t>(remote().pid), &local, 1, &remote_iov, 1, 0);
  const int err = errno;
  rx_->reading.store(0, std::memory_order_seq_cst);
  if (got <= 0) {
    const Endpoint& r = remote();
    if (err == EFAULT || got == 0) {
      // Our buffer or the sender's is not (or no longer) mapped: a copy fault, not a link fault.
      const rt::AddrCheck mine = rt::DeviceMemory::Instance().Check(buf, k);
      HCCL_ERROR("[TaskExecStage][Link]single-copy read of [{}] bytes from remote rank[{}] "
                 "pid[{}] addr[0x{:x}] into [{}] failed: {} (local buffer: {})",
                 k, r.rank, r.pid, from, buf, strerror(err), rt::AddrStateName(mine.state));
      return HCCL_E_RUNTIME;
    }
    Break(fmt::format("single-copy read from remote rank[{}] pid[{}] failed: {}{}", r.rank,
                      r.pid, strerror(err),
                      err == ESRCH ? " (the peer process exited)" : ""),
          true);
    return HCCL_E_REMOTE;
  }
  rx_tail_ += static_cast<size_t>(got);
  rx_->tail.store(rx_tail_, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
  *moved = static_cast<size_t>(got);
  Account(*moved);
  return HCCL_SUCCESS;
}

HcclResult ShmLink::TryRecv(void* buf, size_t n, size_t* moved) {
  *moved = 0;
  const State s = state();
  if (s == kClosed) return HCCL_E_REMOTE;
  const uint64_t head = ReadableHead();
  const size_t avail = static_cast<size_t>(head - rx_tail_);
  // Data the peer published before it died or closed is still valid: drain it first.
  if (avail == 0) return s == kOk ? HCCL_SUCCESS : HCCL_E_REMOTE;
  size_t k = std::min({n, avail, kMaxPerCall});
  if (k == 0) return HCCL_SUCCESS;
  Lend lend;
  if (PeerLend(&lend) && rx_tail_ < lend.start + lend.len) {
    if (rx_tail_ >= lend.start) return ReadLent(lend, buf, n, moved);
    k = std::min<size_t>(k, static_cast<size_t>(lend.start - rx_tail_));  // ring bytes before it
  }
  const size_t off = static_cast<size_t>(rx_tail_ & (cap_ - 1));
  const size_t first = std::min(k, cap_ - off);
  std::memcpy(buf, rx_data_ + off, first);
  if (k > first) std::memcpy(static_cast<char*>(buf) + first, rx_data_, k - first);
  rx_tail_ += k;
  rx_->tail.store(rx_tail_, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
  *moved = k;
  Account(k);
  return HCCL_SUCCESS;
}

void ShmLink::WaitReady(bool for_send, int timeout_ms) {
  mine_->waiters.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t seq = mine_->seq.load(std::memory_order_seq_cst);
  bool ready = broken();
  if (!ready) {
    if (!for_send) {
      ready = ReadableHead() != rx_tail_;
    } else if (lend_active_) {
      ready = !lend_recalled_ && tx_->tail.load(std::memory_order_seq_cst) > lend_done_;
    } else {
      ready = tx_head_ - tx_->tail.load(std::memory_order_seq_cst) < cap_;
    }
  }
  // Bounded so a caller's abort flag and deadline are seen even without a wake-up.
  if (!ready) FutexWait(&mine_->seq, seq, std::min(timeout_ms, 100));
  mine_->waiters.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace vigil::transport
