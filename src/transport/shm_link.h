// Shared-memory link: one memfd holding two single-producer/single-consumer byte rings (one per
// direction), created by the dialing side and mapped by the other through /proc/<pid>/fd/<fd>
// (which works between processes of one user and between threads of one process alike).
//
// Each side owns a Doorbell (futex word in a memfd of its Transport, mapped by its peers). A
// side that blocks registers on its own doorbell; after publishing data or freeing space the
// other side rings the peer's doorbell only if someone waits there. All shm links of one
// Transport share that doorbell, so Progress can sleep on one link and still wake for any.
//
// Single copy (Link::TrySendLent): a large lent send does not go through the ring. The sender
// publishes a "lend" in its ring's control block (stream offset, length, address of its buffer)
// and advances the ring head past it as if those bytes were in the ring; the receiver reads the
// lent range straight from the sender's memory with process_vm_readv (one copy instead of two)
// and advances the tail as usual, which is the sender's acknowledgement. Each side probes once
// at link setup whether it may read the peer's memory (Yama ptrace_scope, seccomp or a
// container may refuse it; VIGIL_SHM_SINGLE_COPY=0 turns it off) and says so in the shared
// header; a sender lends only to a receiver that said yes, else uses the ring.
// Direct slots (Link::DirectPost; shm_direct.cc): after the header page, two slots per direction
// (message seq in slot seq & 1). A slot is a first cache line {number, check word, length,
// sender's CPU, 40 data bytes}, four lines of {56 data bytes, number}, a 4 KiB data area and
// the message's 64-byte head on a line of its own. A message of up to 264 bytes goes in the
// lines, each carrying the message number, so that its lines cross between the cores at once
// (as in NCCL's LL128 protocol); a longer one goes in the data area, its number on the first
// line written last. An 8-byte message moves as one line. Each end states in the shared header
// the largest message it exchanges this way (its TransportOptions::shm_direct_bytes); the link
// uses the smaller.
//
// A sender that recalls a lend (its op gave up: abandon, timeout, error elsewhere) waits until
// the receiver is out of any read in progress (a "reading" flag, Dekker-style against the
// recall flag), so the buffer is never read after the sender's op returned it to the user.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "transport/futex.h"
#include "transport/link_base.h"

namespace vigil::transport {

constexpr size_t kShmRingBytes = 4u << 20;  // per direction
// Lent sends from this size on (smaller ones go through the ring: a process_vm_readv and the
// sender waiting for the reader cost more than the second copy).
constexpr size_t kShmLendMinBytes = 64u << 10;
// Data bytes of one direct slot: the largest message a link may exchange through its slots.
constexpr size_t kShmDirectBytes = 4096;
// A direct slot's lines (shm_direct.cc): the first carries 40 data bytes, each of the next
// kShmDirectLines 56; a longer message goes in the slot's data area.
constexpr size_t kShmDirectFirstBytes = 40;
constexpr size_t kShmDirectLineBytes = 56;
constexpr size_t kShmDirectLines = 4;
constexpr size_t kShmDirectLinedBytes =
    kShmDirectFirstBytes + kShmDirectLines * kShmDirectLineBytes;
constexpr size_t kShmDirectSlotBytes = (1 + kShmDirectLines + 1) * 64 + kShmDirectBytes;

// A MAP_SHARED mapping of a memfd, created here or opened from another process.
class ShmMapping {
 public:
  ShmMapping() = default;
  ~ShmMapping();
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;

  // memfd_create + ftruncate + mmap; keeps the fd open (peers open it through /proc).
  HcclResult Create(const char* name, size_t size, std::string* error);
  // Maps /proc/<pid>/fd/<fd> (expects at least `size` bytes); the fd is closed after mapping.
  HcclResult Open(uint32_t pid, int fd, size_t size, std::string* error);
  void CloseFd();

  void* base() const { return base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

// Bytes of the link memfd for a given ring size (header page + two rings).
size_t ShmSegmentBytes(size_t ring_bytes);
// Initializes a freshly created segment; direct_bytes: the dialer's shm_direct_bytes.
void InitShmSegment(void* base, size_t ring_bytes, size_t direct_bytes);
// Checks a mapped segment's header; false with *error when it is not one.
bool CheckShmSegment(const void* base, size_t size, size_t ring_bytes, std::string* error);

class ShmLink : public LinkBase {
 public:
  // `dialer` picks the ring directions. Charges this side's receive ring to `device`'s memory
  // budget; HCCL_E_MEMORY when it does not fit, and then *ctrl and the mappings are left to the
  // caller (so it can still answer on the socket).
  static HcclResult Make(Endpoint local, Endpoint remote, net::Socket* ctrl, Reporter reporter,
                         std::unique_ptr<ShmMapping>* segment, size_t ring_bytes, bool dialer,
                         Doorbell* mine, std::unique_ptr<ShmMapping>* peer_doorbell,
                         int32_t device, size_t direct_bytes, std::unique_ptr<ShmLink>* out,
                         std::string* error);
  ~ShmLink() override;
  struct DirectSlot;  // the layout of one direct slot (shm_link.cc)

  HcclResult TrySend(const void* buf, size_t n, size_t* moved) override;
  HcclResult TrySend2(const void* a, size_t na, const void* b, size_t nb, size_t* moved) override;
  HcclResult TryRecv(void* buf, size_t n, size_t* moved) override;
  HcclResult TrySendLent(const void* a, size_t na, const void* b, size_t nb,
                         size_t* moved) override;
  void RecallLent() override;
  bool lends(size_t bytes) const override;
  bool can_retract() const override { return true; }
  void MarkOpStart() override { op_start_ = tx_head_; }
  void AbandonOp() override;
  bool peer_retracted() const override;
  void WaitReady(bool for_send, int timeout_ms) override;
  uintptr_t wait_domain() const override { return reinterpret_cast<uintptr_t>(mine_); }
  size_t direct_max_bytes() const override { return direct_max_; }
  void DirectPost(uint64_t seq, uint64_t check, const void* head, const void* data,
                  size_t n) override;
  const void* DirectPeek(uint64_t seq, size_t expect, uint64_t* check,
                         size_t* bytes) const override;
  bool DirectStillPosted(uint64_t seq) const override;
  const void* DirectPeerHead(uint64_t seq) const override;
  uint64_t DirectPeerLatest() const override;
  bool DirectPeerOnThisCpu(uint64_t seq) const override;
  void DirectNoteCpu() override;
  void DirectSleep(uint64_t seq, int timeout_ms) override;
  bool ring_pending() const override { return ReadableHead() != rx_tail_; }

 protected:
  void WakeWaiters() override { mine_->Ring(); }

 private:
  struct RingCtl;
  // Takes the last direct message posted back (AbandonOp).
  void RetractDirect();
  ShmLink(Endpoint local, Endpoint remote, net::Socket ctrl, Reporter reporter);
  // Bytes published and not taken back (see AbandonOp) beyond rx_tail_.
  uint64_t ReadableHead() const;
  // Copies k bytes into the ring at tx_head_ (wrapping); does not publish.
  void CopyIn(const void* buf, size_t k, size_t at);
  void Publish(size_t k);
  // The peer's current lend on rx (consistent snapshot); false when none or being rewritten.
  struct Lend {
    uint64_t start = 0;
    uint64_t len = 0;
    uint64_t addr = 0;
  };
  bool PeerLend(Lend* lend) const;
  // Reads up to n lent bytes at rx_tail_ from the peer's memory.
  HcclResult ReadLent(const Lend& lend, void* buf, size_t n, size_t* moved);
  // Bytes of the active lend the receiver took since last reported.
  HcclResult PollLend(const void* b, size_t nb, size_t* moved);
  // Probes once whether this side may read the peer's memory; records it in rx_->can_read.
  void ProbeSingleCopy(uint64_t peer_probe_addr);

  std::unique_ptr<ShmMapping> segment_;
  std::unique_ptr<ShmMapping> peer_doorbell_map_;
  Doorbell* mine_ = nullptr;
  Doorbell* peer_ = nullptr;
  RingCtl* tx_ = nullptr;
  RingCtl* rx_ = nullptr;
  char* tx_data_ = nullptr;
  char* rx_data_ = nullptr;
  size_t cap_ = 0;
  uint64_t tx_head_ = 0;  // writer-private copies of the counters it owns
  uint64_t rx_tail_ = 0;
  uint64_t op_start_ = 0;
  DirectSlot* tx_slots_ = nullptr;  // [seq & 1]
  const DirectSlot* rx_slots_ = nullptr;
  size_t direct_max_ = 0;
  uint64_t direct_posted_ = 0;  // the last message this end posted (AbandonOp takes it back)
  // A received direct message of more than one line, gathered (DirectPeek).
  alignas(64) mutable char direct_gathered_[kShmDirectLinedBytes];
  bool registered_ = false;
  bool single_copy_ = false;  // VIGIL_SHM_SINGLE_COPY on this side
  // This side's active lend (sender only): stream range [lend_start_, lend_end_) of lend_buf_,
  // reported moved up to lend_done_. A recalled lend stays active: the stream is over.
  bool lend_active_ = false;
  bool lend_recalled_ = false;
  uint64_t lend_start_ = 0;
  uint64_t lend_end_ = 0;
  uint64_t lend_done_ = 0;
  const char* lend_buf_ = nullptr;
};

}  // namespace vigil::transport
