// Heartbeat maintenance-link frames (dfx/heartbeat_frame.h): a byte stream reassembled by
// FrameReader in chunks (the mode byte sets the chunk size, as recv(2) would cut it), every
// complete frame decoded by its type. What decodes is encoded again and must decode the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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
      FUZZ_CHECK(g.comms.size() == f.comms.size());
      for (size_t i = 0; i < f.comms.size(); ++i) {
        FUZZ_CHECK(g.comms[i].comm_key == f.comms[i].comm_key && g.comms[i].rank == f.comms[i].rank &&
                   g.comms[i].in == f.comms[i].in && g.comms[i].out == f.comms[i].out);
      }
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
    default:
      return;  // kBye, kQuery: no body; kAgree: the agreement's own
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
