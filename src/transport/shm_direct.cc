// The direct slots of an shm link (shm_link.h: the layout; link.h: the exchange).
//
// A short message (up to kShmDirectLinedBytes) goes in lines that each carry its number, so a
// receiver knows each line is the message's on its own and loads all of them in one pass: their
// transfers from the sender's core overlap, and no line waits for another to be written first.
// With one number for the whole message, on the first line, a 64-byte message cost 0.25-0.3 us
// more than a 32-byte one on two cores here (the sender's first line waited for the later lines
// to be taken from the receiver, then the receiver fetched the later lines after the first);
// alternating runs, `vigil bench allreduce --ranks 2 --transport shm -b S -e S -z 0`: 40 B
// 0.81-0.88 -> 0.60-0.74 us, 128 B 0.89-0.93 -> 0.77-0.86. A longer message goes in the data
// area as one block, the number on the first line written last: split into lines, with a number
// in each and gathered on the other side, 1 KiB took 1.30-1.67 us against 1.13-1.25 and 4 KiB
// 3.1-3.8 against 2.2-2.7. The two places never share bytes: a number is never compared with
// bytes of data.
//
// A sender takes its message back by setting kRetracted in the first line's number; the
// receiver wants the number exactly, and checks it again after reading (a seqlock's reader).
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "transport/shm_link.h"

namespace vigil::transport {

struct ShmLink::DirectSlot {
  struct alignas(64) First {
    std::atomic<uint64_t> seq;
    uint64_t check;
    uint32_t bytes;
    std::atomic<uint32_t> cpu;  // the sender's CPU when it posted, plus 1 (0: not known)
    char data[kShmDirectFirstBytes];
  };
  struct alignas(64) Line {
    char data[kShmDirectLineBytes];
    std::atomic<uint64_t> seq;
  };
  First first;
  Line more[kShmDirectLines];
  alignas(64) char area[kShmDirectBytes];
  alignas(64) char head[64];
};
static_assert(sizeof(ShmLink::DirectSlot::First) == 64 && sizeof(ShmLink::DirectSlot::Line) == 64);
static_assert(sizeof(ShmLink::DirectSlot) == kShmDirectSlotBytes);

namespace {

constexpr uint64_t kRetracted = uint64_t{1} << 63;

// Lines after the first that a message of n bytes fills (0 for one in the data area).
size_t MoreLines(size_t n) {
  if (n <= kShmDirectFirstBytes || n > kShmDirectLinedBytes) return 0;
  return (n - kShmDirectFirstBytes + kShmDirectLineBytes - 1) / kShmDirectLineBytes;
}

// Whether lines [0, lines) after the first carry message `seq`: all loaded, then compared, so
// that their transfers overlap.
bool MoreCarry(const ShmLink::DirectSlot& slot, size_t lines, uint64_t seq) {
  uint64_t differ = 0;
  for (size_t i = 0; i < lines; ++i) {
    differ |= slot.more[i].seq.load(std::memory_order_acquire) ^ seq;
  }
  return differ == 0;
}

// Whether the whole of message `seq` is in the slot (the first line's length says how much).
bool Complete(const ShmLink::DirectSlot& slot, uint64_t seq) {
  if (slot.first.seq.load(std::memory_order_acquire) != seq) return false;
  return MoreCarry(slot, MoreLines(std::min<size_t>(slot.first.bytes, kShmDirectBytes)), seq);
}

}  // namespace

void ShmLink::DirectPost(uint64_t seq, uint64_t check, const void* head, const void* data,
                         size_t n) {
  DirectSlot& slot = tx_slots_[seq & 1];
  const auto* bytes = static_cast<const char*>(data);
  // The head first: a receiver that sees the first line may read it (DirectPeerHead).
  std::memcpy(slot.head, head, sizeof(slot.head));
  const bool lined = n <= kShmDirectLinedBytes;
  if (!lined) std::memcpy(slot.area, bytes, n);
  // The first line's stores together: the receiver polls it, and takes it back between two.
  slot.first.check = check;
  slot.first.bytes = static_cast<uint32_t>(n);
  slot.first.cpu.store(static_cast<uint32_t>(sched_getcpu() + 1), std::memory_order_relaxed);
  if (lined && n != 0) std::memcpy(slot.first.data, bytes, std::min(n, kShmDirectFirstBytes));
  slot.first.seq.store(seq, std::memory_order_release);
  const size_t lines = MoreLines(n);
  for (size_t i = 0; i < lines; ++i) {
    const size_t at = kShmDirectFirstBytes + i * kShmDirectLineBytes;
    std::memcpy(slot.more[i].data, bytes + at, std::min(n - at, kShmDirectLineBytes));
    slot.more[i].seq.store(seq, std::memory_order_release);
  }
  direct_posted_ = seq;
  // Then the peer's waiter count: pairs with DirectSleep's register-then-check.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  peer_->RingIfWaiting();
}

const void* ShmLink::DirectPeek(uint64_t seq, size_t expect, uint64_t* check,
                                size_t* bytes) const {
  const DirectSlot& slot = rx_slots_[seq & 1];
  const uint64_t first = slot.first.seq.load(std::memory_order_acquire);
  const size_t expect_lines = MoreLines(expect);
  const bool expected_carry = MoreCarry(slot, expect_lines, seq);
  if (first != seq) return nullptr;
  const size_t n = std::min<size_t>(slot.first.bytes, kShmDirectBytes);
  const size_t lines = MoreLines(n);
  // Another length than expected (an op mismatch, found by the check word): its lines.
  if (lines == expect_lines ? !expected_carry : !MoreCarry(slot, lines, seq)) return nullptr;
  *check = slot.first.check;
  *bytes = n;
  if (n > kShmDirectLinedBytes) return slot.area;
  if (lines == 0) return slot.first.data;
  // Whole lines (the slot and the copy have room): fixed-size copies, no calls.
  char* out = direct_gathered_;
  std::memcpy(out, slot.first.data, kShmDirectFirstBytes);
  for (size_t i = 0; i < lines; ++i) {
    std::memcpy(out + kShmDirectFirstBytes + i * kShmDirectLineBytes, slot.more[i].data,
                kShmDirectLineBytes);
  }
  return out;
}

bool ShmLink::DirectStillPosted(uint64_t seq) const {
  // The reads of the message come before this load (a seqlock's reader).
  std::atomic_thread_fence(std::memory_order_acquire);
  return rx_slots_[seq & 1].first.seq.load(std::memory_order_relaxed) == seq;
}

const void* ShmLink::DirectPeerHead(uint64_t seq) const {
  const DirectSlot& slot = rx_slots_[seq & 1];
  return (slot.first.seq.load(std::memory_order_acquire) & ~kRetracted) == seq ? slot.head
                                                                                : nullptr;
}

bool ShmLink::DirectPeerOnThisCpu(uint64_t seq) const {
  // The peer's message before `seq`: posted, and not rewritten before this end posts `seq`
  // (the peer's next post into that slot is message seq + 1).
  const uint32_t peer = rx_slots_[(seq - 1) & 1].first.cpu.load(std::memory_order_relaxed);
  return peer != 0 && peer == static_cast<uint32_t>(sched_getcpu() + 1);
}

void ShmLink::DirectNoteCpu() {
  const auto cpu = static_cast<uint32_t>(sched_getcpu() + 1);
  for (int i = 0; i < 2; ++i) tx_slots_[i].first.cpu.store(cpu, std::memory_order_relaxed);
}

uint64_t ShmLink::DirectPeerLatest() const {
  uint64_t latest = 0;
  for (int i = 0; i < 2; ++i) {
    const uint64_t seq = rx_slots_[i].first.seq.load(std::memory_order_acquire);
    if ((seq & kRetracted) == 0) latest = std::max(latest, seq);
  }
  return latest;
}

void ShmLink::DirectSleep(uint64_t seq, int timeout_ms) {
  mine_->waiters.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t bell = mine_->seq.load(std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const bool ready = broken() || Complete(rx_slots_[seq & 1], seq) || ReadableHead() != rx_tail_;
  // Bounded so a caller's abort flag and deadline are seen even without a wake-up.
  if (!ready) FutexWait(&mine_->seq, bell, std::min(timeout_ms, 100));
  mine_->waiters.fetch_sub(1, std::memory_order_seq_cst);
}

void ShmLink::RetractDirect() {
  if (direct_posted_ == 0) return;
  uint64_t posted = direct_posted_;
  tx_slots_[posted & 1].first.seq.compare_exchange_strong(posted, posted | kRetracted,
                                                          std::memory_order_seq_cst);
}

}  // namespace vigil::transport
