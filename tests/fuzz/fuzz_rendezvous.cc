// Rendezvous messages (bootstrap/rendezvous_server.h): the hello a rank sends the root (decoded
// by the root's server), and the root's answers a rank decodes: the rank table and the error.
// Mode byte: 0 hello, 1 table (for the rank count in the payload's first byte), 2 error.
// What decodes is encoded again and must decode to the same values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_server.h"
#include "fuzz_util.h"

namespace {

using vigil::bootstrap::RankInfo;
namespace rdv = vigil::bootstrap::rdv;

bool Same(const RankInfo& a, const RankInfo& b) {
  return a.rank == b.rank && a.nranks == b.nranks && a.host_ip == b.host_ip &&
         a.host_id == b.host_id && a.data_port == b.data_port && a.pid == b.pid &&
         a.device == b.device && a.buffsize_mb == b.buffsize_mb &&
         a.exec_timeout_s == b.exec_timeout_s && a.transport == b.transport &&
         a.op_check == b.op_check && a.maint_port == b.maint_port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  const vigil::fuzz::Input in = vigil::fuzz::Split(data, size);
  switch (in.mode % 3) {
    case 0: {
      std::string identifier;
      RankInfo info;
      if (!rdv::DecodeHello(in.data, in.size, &identifier, &info)) return 0;
      vigil::wire::Writer w;
      w.Str(identifier);
      rdv::PutRankInfo(&w, info);
      std::string id2;
      RankInfo info2;
      FUZZ_CHECK(rdv::DecodeHello(w.data().data(), w.size(), &id2, &info2));
      FUZZ_CHECK(id2 == identifier && Same(info, info2));
      break;
    }
    case 1: {
      if (in.size == 0) return 0;
      const uint32_t nranks = in.data[0];
      std::vector<RankInfo> all;
      if (!rdv::DecodeTable(in.data + 1, in.size - 1, nranks, &all)) return 0;
      FUZZ_CHECK(all.size() == nranks);
      for (uint32_t i = 0; i < nranks; ++i) FUZZ_CHECK(all[i].rank == i);
      break;
    }
    default: {
      vigil::wire::Reader r(in.data, in.size);
      rdv::ErrorReply e = rdv::GetError(&r);
      if (!r.ok()) return 0;
      vigil::wire::Writer w;
      rdv::PutError(&w, e);
      vigil::wire::Reader r2(w.data().data(), w.size());
      rdv::ErrorReply e2 = rdv::GetError(&r2);
      FUZZ_CHECK(r2.ok() && e2.code == e.code && e2.message == e.message &&
                 e2.screen_code == e.screen_code && e2.screen_args == e.screen_args);
      break;
    }
  }
  return 0;
}
