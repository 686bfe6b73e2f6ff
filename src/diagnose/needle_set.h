// NeedleSet: a set of substrings searched in one vectorized pass, the line parser's first
// filter (records that match none are rejected without a find() per keyword).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vigil::diagnose {

// A set of substrings searched in one pass: every position whose two bytes equal the first two
// bytes of some needle is a candidate, checked with memcmp. With SSE2 the candidates of 16
// positions come from one compare per distinct pair. The records that do not matter (nearly all
// of a log) are rejected by this one pass instead of one find() per keyword. The cost grows with
// the number of distinct pairs and with how common they are in log text: choose short needles
// that start with rare pairs. Needles shorter than two bytes are dropped.
class NeedleSet {
 public:
  explicit NeedleSet(std::vector<std::string> needles) : needles_(std::move(needles)) {
    std::erase_if(needles_, [](const std::string& n) { return n.size() < 2; });
    for (const std::string& n : needles_) {
      bool dup = false;
      for (size_t j = 0; j < first_.size(); ++j) dup = dup || (first_[j] == n[0] && second_[j] == n[1]);
      if (dup) continue;
      first_.push_back(n[0]);
      second_.push_back(n[1]);
#if defined(__SSE2__)
      pairs_v_.push_back(PairV{_mm_set1_epi8(n[0]), _mm_set1_epi8(n[1])});
#endif
    }
  }

  bool AnyIn(std::string_view s) const {
    const char* d = s.data();
    const size_t n = s.size();
    size_t p = 0;
#if defined(__SSE2__)
    while (p + 17 <= n) {
      if (Block(s, p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + p)),
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + p + 1)), 0xffff))
        return true;
      p += 16;
    }
    if (p + 1 < n) {
      // The tail through a zero-padded copy: a zero byte matches no needle.
      alignas(16) char tail[48] = {};
      std::memcpy(tail, d + p, n - p);
      unsigned valid = (1u << (n - p - 1)) - 1;  // positions with a following byte in s
      return Block(s, p, _mm_load_si128(reinterpret_cast<const __m128i*>(tail)),
                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(tail + 1)), valid);
    }
    return false;
#else
    for (; p + 1 < n; ++p)
      if (At(s, p)) return true;
    return false;
#endif
  }

 private:
#if defined(__SSE2__)
  // Candidates among the 16 positions from p (a: bytes p.., b: bytes p+1..), checked.
  bool Block(std::string_view s, size_t p, __m128i a, __m128i b, unsigned valid) const {
    __m128i hit = _mm_setzero_si128();
    for (const PairV& v : pairs_v_)
      hit = _mm_or_si128(hit, _mm_and_si128(_mm_cmpeq_epi8(a, v.first), _mm_cmpeq_epi8(b, v.second)));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(hit)) & valid;
    while (mask != 0) {
      if (At(s, p + static_cast<size_t>(__builtin_ctz(mask)))) return true;
      mask &= mask - 1;
    }
    return false;
  }
  struct PairV {
    __m128i first, second;
  };
  std::vector<PairV> pairs_v_;
#endif
  bool At(std::string_view s, size_t p) const {
    for (const std::string& k : needles_)
      if (s[p] == k[0] && s[p + 1] == k[1] && s.size() - p >= k.size() &&
          std::memcmp(s.data() + p, k.data(), k.size()) == 0)
        return true;
    return false;
  }

  std::vector<std::string> needles_;
  std::vector<char> first_, second_;
};

}  // namespace vigil::diagnose
