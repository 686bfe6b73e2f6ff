// Rank-table JSON (HcclCommInitClusterInfo's file) through ParseRankTable, the parser behind
// LoadRankTable. Host names resolve through a fixed table, never DNS: "node<N>" is 10.0.0.<N>.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bootstrap/root_info.h"
#include "fuzz_util.h"

namespace {

bool Resolve(const std::string& name, std::string* ipv4) {
  if (name.size() < 5 || name.size() > 7 || name.compare(0, 4, "node") != 0) return false;
  unsigned n = 0;
  for (size_t i = 4; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    n = n * 10 + static_cast<unsigned>(name[i] - '0');
  }
  if (n > 255) return false;
  *ipv4 = "10.0.0." + std::to_string(n);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  using namespace vigil::bootstrap;
  const std::string text(reinterpret_cast<const char*>(data), size);
  RankTable table;
  std::string error;
  const HcclResult rc = ParseRankTable(text, "fuzz.json", &table, &error, Resolve);
  if (rc != HCCL_SUCCESS) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  // A table that parsed is numbered 0..n-1, every rank on an IPv4 server.
  FUZZ_CHECK(!table.ranks.empty());
  for (size_t i = 0; i < table.ranks.size(); ++i) {
    FUZZ_CHECK(table.ranks[i].rank == i);
    FUZZ_CHECK(!table.ranks[i].server_id.empty());
  }
  return 0;
}
