// Heartbeat maintenance-link frames (dfx/heartbeat_frame.h): a byte stream reassembled by
// FrameReader in chunks (the mode byte sets the chunk size, as recv(2) would cut it), every
// complete frame decoded by its type (kAgree: the shrink agreement's message, agreement_msg.h).
// What decodes is encoded again and must decode the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dfx/agreement_msg.h"
#include "dfx/heartbeat_frame.h"
#include "fuzz_util.h"

namespace {

using namespace vigil::dfx;

// The body of an encoded frame (header: u32 length, u8 type).
std::vector<uint8_t> Body(const std::vector<uint8_t>& frame) {
  FUZZ_CHECK(frame.size() >= 5);
  return std::vector<uint8_t>(frame.begin() + 5, frame.end());
}

void DecodeOne(FrameType type, const std::vector<uint8_t>& body) {
  switch (type) {
    case FrameType::kHello: {
      HelloFrame f, g;
      if (!DecodeHello(body, &f)) return;
      FUZZ_CHECK(DecodeHello(Body(EncodeHello(f)), &g));
      FUZZ_CHECK(g.host_ip == f.host_ip && g.port == f.port && g.pid == f.pid);
      return;
    }
    case FrameType::kBeat: {
      BeatFrame f, g;
      if (!DecodeBeat(body, &f)) return;
      FUZZ_CHECK(DecodeBeat(Body(EncodeBeat(f)), &g));
      auto same = [](const std::vector<CommCounters>& a, const std::vector<CommCounters>& b) {
        FUZZ_CHECK(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          FUZZ_CHECK(a[i].comm_key == b[i].comm_key && a[i].rank == b[i].rank && a[i].in == b[i].in &&
                     a[i].out == b[i].out);
        }
      };
      same(g.comms, f.comms);
      same(g.heard, f.heard);  // the relayed counters (an optional tail)
      return;
    }
    case FrameType::kEvent: {
      EventFrame f, g;
      if (!DecodeEvent(body, &f)) return;
      FUZZ_CHECK(DecodeEvent(Body(EncodeEvent(f)), &g));
      FUZZ_CHECK(g.crimer == f.crimer && g.informer == f.informer && g.status == f.status &&
                 g.discovered_us == f.discovered_us);
      return;
    }
    case FrameType::kReply: {
      std::string json, again;
      if (!DecodeReply(body, &json)) return;
      FUZZ_CHECK(DecodeReply(Body(EncodeReply(json)), &again));
      FUZZ_CHECK(again == json);
      return;
    }
    case FrameType::kAgree: {
      AgreeMsg f, g;
      if (!DecodeAgreeMsg(body, &f)) return;
      FUZZ_CHECK(DecodeAgreeMsg(Body(EncodeAgreeMsg(f)), &g));
      FUZZ_CHECK(g.kind == f.kind && g.identifier == f.identifier && g.round == f.round &&
                 g.from == f.from && g.to == f.to && g.seq == f.seq && g.from_view == f.from_view &&
                 g.exclude == f.exclude && g.ok == f.ok && g.root == f.root && g.error == f.error &&
                 g.views.size() == f.views.size());
      for (size_t i = 0; i < f.views.size(); ++i) {
        FUZZ_CHECK(g.views[i].rank == f.views[i].rank &&
                   g.views[i].from_view == f.views[i].from_view &&
                   g.views[i].exclude == f.views[i].exclude);
      }
      return;
    }
    default:
      return;  // kBye, kQuery: no body
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  const vigil::fuzz::Input in = vigil::fuzz::Split(data, size);
  const size_t chunk = 1 + in.mode;
  FrameReader reader;
  size_t fed = 0;
  size_t frames = 0;
  while (fed < in.size) {
    const size_t n = in.size - fed < chunk ? in.size - fed : chunk;
    reader.Append(in.data + fed, n);
    fed += n;
    FrameType type;
    std::vector<uint8_t> body;
    bool bad = false;
    while (reader.Next(&type, &body, &bad)) {
      DecodeOne(type, body);
      ++frames;
    }
    if (bad) break;  // the link drops the connection
  }
  FUZZ_CHECK(frames <= in.size / 5);
  return 0;
}
