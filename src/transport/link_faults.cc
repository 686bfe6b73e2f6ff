#include "transport/link_faults.h"

#include <cctype>

#include "log/plog.h"

namespace vigil::transport {

namespace {

bool ParseU64(const std::string& s, uint64_t* out) {
  if (s.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + (s[i++] - '0');
  if (i == 0) return false;
  if (i < s.size()) {
    char u = static_cast<char>(toupper(static_cast<unsigned char>(s[i])));
    int shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : -1;
    if (shift < 0 || i + 1 != s.size()) return false;
    v <<= shift;
  }
  *out = v;
  return true;
}


}  // namespace

std::vector<CutFault> ParseCutFaults(const std::string& spec) {
  std::vector<CutFault> out;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(';', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    const std::string prefix = "link_cut:";
    if (item.compare(0, prefix.size(), prefix) != 0) continue;
    std::string body = item.substr(prefix.size());
    std::string down;
    size_t tilde = body.find('~');
    if (tilde != std::string::npos) {
      down = body.substr(tilde + 1);
      body = body.substr(0, tilde);
    }
    std::string after;
    size_t at = body.find('@');
    if (at != std::string::npos) {
      after = body.substr(at + 1);
      body = body.substr(0, at);
    }
    size_t dash = body.find('-');
    uint64_t r = 0, p = 0, a = 0, d = 0;
    if (dash == std::string::npos || !ParseU64(body.substr(0, dash), &r) ||
        !ParseU64(body.substr(dash + 1), &p) || (!after.empty() && !ParseU64(after, &a)) ||
        (!down.empty() && !ParseU64(down, &d))) {
      HCCL_RUN_WARNING("[Fault]VIGIL_FAULT entry [{}] ignored: expected link_cut:R-P[@BYTES][~MS]",
                       item);
      continue;
    }
    out.push_back({static_cast<uint32_t>(r), static_cast<uint32_t>(p), a, d});
  }
  return out;
}

}  // namespace vigil::transport
