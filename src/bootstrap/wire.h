// Little-endian byte encoding for the bootstrap and transport handshakes. The Reader never reads
// past its end: a short or malformed message makes ok() false instead of crashing, so a
// stranger's bytes are rejected cleanly.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace vigil::wire {

class Writer {
 public:
  void U8(uint8_t v) { buf_.push_back(v); }
  void U16(uint16_t v) { Int(v, 2); }
  void U32(uint32_t v) { Int(v, 4); }
  void U64(uint64_t v) { Int(v, 8); }
  void I32(int32_t v) { Int(static_cast<uint32_t>(v), 4); }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void Bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  // Overwrites a u32 written earlier (length fields).
  void PatchU32(size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  size_t size() const { return buf_.size(); }
  const std::vector<uint8_t>& data() const { return buf_; }
  std::vector<uint8_t>& data() { return buf_; }

 private:
  void Int(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> buf_;
};

class Reader {
 public:
  Reader(const void* p, size_t n) : p_(static_cast<const uint8_t*>(p)), n_(n) {}
  uint8_t U8() { return static_cast<uint8_t>(Int(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Int(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Int(4)); }
  uint64_t U64() { return Int(8); }
  int32_t I32() { return static_cast<int32_t>(U32()); }
  // Strings longer than max_len mark the message malformed.
  std::string Str(size_t max_len = 4096) {
    uint32_t len = U32();
    if (!ok_ || len > max_len || len > n_ - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return s;
  }
  bool ok() const { return ok_; }
  size_t remaining() const { return ok_ ? n_ - pos_ : 0; }

 private:
  uint64_t Int(int bytes) {
    if (!ok_ || n_ - pos_ < static_cast<size_t>(bytes)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p_[pos_ + i]) << (8 * i);
    pos_ += bytes;
    return v;
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// FNV-1a, for the root info checksum (detects truncation and random garbage, not malice).
inline uint32_t Fnv1a(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 16777619u;
  }
  return h;
}

}  // namespace vigil::wire
