// VIGIL_FAULT entries the transport reads (see link.h): "link_cut:R-P[@N][~MS]".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vigil::transport {

struct CutFault {
  uint32_t rank = 0;
  uint32_t peer = 0;
  uint64_t after = 0;
  uint64_t down_ms = 0;  // "~MS": the link stays down this long after the cut
};

// The link_cut entries of a VIGIL_FAULT spec; other entries belong to other layers.
std::vector<CutFault> ParseCutFaults(const std::string& spec);

}  // namespace vigil::transport
