#include "common/op_retry_config.h"

#include <fmt/format.h>

#include <string_view>

namespace vigil {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseUint(std::string_view s, uint64_t max, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > max) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// Calls item(key, value) for each "key:value" of a comma list; false at the first bad item.
template <typename Item>
bool ForEachItem(std::string_view text, Item item) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view piece = Trim(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (piece.empty()) continue;
    const size_t colon = piece.find(':');
    if (colon == std::string_view::npos) return false;
    if (!item(Trim(piece.substr(0, colon)), Trim(piece.substr(colon + 1)))) return false;
  }
  return true;
}

}  // namespace

std::string OpRetryConfig::EnableText() const {
  return fmt::format("L0:{},L1:{},L2:{}", l0 ? 1 : 0, l1 ? 1 : 0, l2 ? 1 : 0);
}

std::string OpRetryConfig::ParamsText() const {
  return fmt::format("MaxCnt:{},HoldTime:{},IntervalTime:{}", max_cnt, hold_ms, interval_ms);
}

std::string ParseOpRetryEnable(const std::string& text, OpRetryConfig* cfg) {
  OpRetryConfig tmp = *cfg;
  const bool ok = ForEachItem(text, [&](std::string_view key, std::string_view value) {
    bool* field = key == "L0" ? &tmp.l0 : key == "L1" ? &tmp.l1 : key == "L2" ? &tmp.l2 : nullptr;
    if (field == nullptr || (value != "0" && value != "1")) return false;
    *field = value == "1";
    return true;
  });
  if (!ok) return "comma-separated items L0:<0|1>, L1:<0|1>, L2:<0|1>";
  *cfg = tmp;
  return "";
}

std::string ParseOpRetryParams(const std::string& text, OpRetryConfig* cfg) {
  OpRetryConfig tmp = *cfg;
  const bool ok = ForEachItem(text, [&](std::string_view key, std::string_view value) {
    if (key == "MaxCnt") return ParseUint(value, 10, &tmp.max_cnt) && tmp.max_cnt >= 1;
    if (key == "HoldTime") return ParseUint(value, 60000, &tmp.hold_ms);
    if (key == "IntervalTime") return ParseUint(value, 60000, &tmp.interval_ms);
    return false;
  });
  if (!ok) {
    return "comma-separated items MaxCnt:<1..10>, HoldTime:<0..60000 ms>, "
           "IntervalTime:<0..60000 ms>";
  }
  *cfg = tmp;
  return "";
}

}  // namespace vigil
