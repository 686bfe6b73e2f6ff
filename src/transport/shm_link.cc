#include "transport/shm_link.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "runtime/device_memory.h"

namespace vigil::transport {

namespace {

constexpr uint32_t kSegmentMagic = 0x4d485356;  // "VSHM"
constexpr size_t kHeaderPage = 4096;
constexpr size_t kMaxPerCall = 1u << 20;  // publish in pieces so the reader can start copying

}  // namespace

// Producer and consumer counters on separate cache lines (bytes ever written / read).
// `retract` (producer's): 0, or 1 + the stream offset from which the producer took its data
// back (AbandonOp); the consumer reads nothing from there on.
struct ShmLink::RingCtl {
  alignas(64) std::atomic<uint64_t> head;
  std::atomic<uint64_t> retract;
  alignas(64) std::atomic<uint64_t> tail;
};

namespace {

struct SegmentHeader {
  uint32_t magic;
  uint32_t reserved;
  uint64_t ring_bytes;
  alignas(64) char rings[2][128];  // two RingCtl: [0] dialer -> acceptor, [1] acceptor -> dialer
};
static_assert(sizeof(SegmentHeader) <= kHeaderPage);

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

size_t ShmSegmentBytes(size_t ring_bytes) { return kHeaderPage + 2 * ring_bytes; }

void InitShmSegment(void* base, size_t ring_bytes) {
  auto* h = static_cast<SegmentHeader*>(base);
  h->magic = kSegmentMagic;
  h->ring_bytes = ring_bytes;
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
                         int32_t device, std::unique_ptr<ShmLink>* out, std::string* error) {
  static_assert(sizeof(RingCtl) <= 128);
  if ((ring_bytes & (ring_bytes - 1)) != 0 || ring_bytes == 0) {
    if (error) *error = fmt::format("ring size {} is not a power of two", ring_bytes);
    return HCCL_E_PARA;
  }
  auto* h = static_cast<SegmentHeader*>((*segment)->base());
  char* data = static_cast<char*>((*segment)->base()) + kHeaderPage;
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
  // The first abandon wins: a later op's start must not uncover this one's data.
  uint64_t none = 0;
  tx_->retract.compare_exchange_strong(none, op_start_ + 1, std::memory_order_seq_cst);
  peer_->RingIfWaiting();
}

uint64_t ShmLink::ReadableHead() const {
  // seq_cst: WaitReady's register-then-check relies on it.
  const uint64_t head = rx_->head.load(std::memory_order_seq_cst);
  const uint64_t retract = rx_->retract.load(std::memory_order_seq_cst);
  if (retract == 0) return head;
  return std::min(head, std::max(retract - 1, rx_tail_));
}

HcclResult ShmLink::TryRecv(void* buf, size_t n, size_t* moved) {
  *moved = 0;
  const State s = state();
  if (s == kClosed) return HCCL_E_REMOTE;
  const uint64_t head = ReadableHead();
  const size_t avail = static_cast<size_t>(head - rx_tail_);
  // Data the peer published before it died or closed is still valid: drain it first.
  if (avail == 0) return s == kOk ? HCCL_SUCCESS : HCCL_E_REMOTE;
  const size_t k = std::min({n, avail, kMaxPerCall});
  if (k == 0) return HCCL_SUCCESS;
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
    ready = for_send ? tx_head_ - tx_->tail.load(std::memory_order_seq_cst) < cap_
                     : ReadableHead() != rx_tail_;
  }
  // Bounded so a caller's abort flag and deadline are seen even without a wake-up.
  if (!ready) FutexWait(&mine_->seq, seq, std::min(timeout_ms, 100));
  mine_->waiters.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace vigil::transport
