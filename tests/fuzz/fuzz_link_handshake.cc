// The link handshake (transport/handshake.h): a dialer's hello as the acceptor decodes it, for
// each kind, and the acceptor's reply as the dialer decodes it. Mode byte: 0-2 hello of kind
// control / qp / notice, 3 reply. What decodes is encoded again and must decode the same.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_util.h"
#include "transport/handshake.h"

namespace {

using namespace vigil::transport;

bool Same(const Hello& a, const Hello& b) {
  return a.kind == b.kind && a.comm_id == b.comm_id && a.tag == b.tag && a.src == b.src &&
         a.dst == b.dst && a.link_type == b.link_type && a.qp_index == b.qp_index &&
         a.qp_count == b.qp_count && a.nonce == b.nonce && a.from.host_ip == b.from.host_ip &&
         a.from.host_id == b.from.host_id && a.from.port == b.from.port &&
         a.from.pid == b.from.pid && a.from.device == b.from.device && a.ring_fd == b.ring_fd &&
         a.ring_bytes == b.ring_bytes && a.doorbell_fd == b.doorbell_fd &&
         a.notice.epoch == b.notice.epoch && a.notice.seq == b.notice.seq &&
         a.notice.attempt == b.notice.attempt && a.notice.origin == b.notice.origin &&
         a.notice.end_a == b.notice.end_a && a.notice.end_b == b.notice.end_b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  const vigil::fuzz::Input in = vigil::fuzz::Split(data, size);
  const int mode = in.mode % 4;
  if (mode == 3) {
    Reply rep;
    if (!DecodeReply(in.data, in.size, &rep)) return 0;
    const std::vector<uint8_t> again = EncodeReply(rep);
    FUZZ_CHECK(again.size() >= kHeaderBytes);
    Reply rep2;
    FUZZ_CHECK(DecodeReply(again.data() + kHeaderBytes, again.size() - kHeaderBytes, &rep2));
    FUZZ_CHECK(rep2.status == rep.status && rep2.message == rep.message && rep2.pid == rep.pid &&
               rep2.doorbell_fd == rep.doorbell_fd);
    return 0;
  }
  const uint16_t kinds[3] = {kControl, kQp, kNotice};
  Hello h;
  if (!DecodeHello(kinds[mode], in.data, in.size, &h)) return 0;
  const std::vector<uint8_t> again = EncodeHello(h);
  FUZZ_CHECK(again.size() >= kHeaderBytes);
  Hello h2;
  FUZZ_CHECK(DecodeHello(kinds[mode], again.data() + kHeaderBytes, again.size() - kHeaderBytes, &h2));
  FUZZ_CHECK(Same(h, h2));
  return 0;
}
