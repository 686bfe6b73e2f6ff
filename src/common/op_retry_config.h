// Op retry settings (HCCL's HCCL_OP_RETRY_ENABLE / HCCL_OP_RETRY_PARAMS, and HcclCommConfig's
// hcclRetryEnable / hcclRetryParams, which take precedence for their communicator).
//
//   HCCL_OP_RETRY_ENABLE="L0:1,L1:1"  per link level, 0 off (default) / 1 on:
//       L0  links inside a host (shared memory, or TCP between ranks of one host)
//       L1  links between hosts
//       L2  between SuperPoDs in HCCL; accepted, and counted as L1 (a CPU cluster has no PoDs)
//   HCCL_OP_RETRY_PARAMS="MaxCnt:1,HoldTime:5000,IntervalTime:1000"
//       MaxCnt        re-executions of one op, [1, 10]
//       HoldTime      ms, [0, 60000]: how long the ranks hold a failed op while its links are
//                     re-made; a link not back by then fails the op as without retry
//       IntervalTime  ms, [0, 60000]: the spacing of attempts to re-make a link, and the least
//                     time between two re-executions of one op
#pragma once

#include <cstdint>
#include <string>

namespace vigil {

struct OpRetryConfig {
  bool l0 = false;
  bool l1 = false;
  bool l2 = false;
  uint32_t max_cnt = 1;
  uint32_t hold_ms = 5000;
  uint32_t interval_ms = 1000;

  bool any() const { return l0 || l1 || l2; }
  // Whether a link between the two hosts (same_host: one host) is covered.
  bool covers(bool same_host) const { return same_host ? l0 : (l1 || l2); }
  std::string EnableText() const;  // "L0:0,L1:1,L2:0"
  std::string ParamsText() const;  // "MaxCnt:1,HoldTime:5000,IntervalTime:1000"
};

// Parse "L1:1,L2:0" style text into *cfg (keys not given keep their value). Returns "" when
// valid, else what was expected (EI0001's text).
std::string ParseOpRetryEnable(const std::string& text, OpRetryConfig* cfg);
// Parse "MaxCnt:3,HoldTime:5000,IntervalTime:1000" (any subset) into *cfg.
std::string ParseOpRetryParams(const std::string& text, OpRetryConfig* cfg);

}  // namespace vigil
