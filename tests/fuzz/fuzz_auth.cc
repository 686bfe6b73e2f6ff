// The job-key challenge-response (bootstrap/auth.h), sans I/O. Mode byte:
//   bits 0-1  0: AcceptorAuth fed the payload (a dialer's hello and proof);
//             1: DialerAuth, started, fed the payload (an acceptor's answer);
//             2, 3: an honest exchange between the two in memory, the payload a list of
//             (offset, xor) pairs that alter its bytes in flight (hello 0-31, answer 32-87,
//             proof 88-119); bytes that follow the proof must stay in the acceptor's input.
//   bit 2     the acceptor holds another job's key, not the dialer's
//   bits 3-4  the dialer's purpose (1 + value)
//   bit 5     the acceptor serves data links only
//   bits 6-7  bytes handed over per Feed: 1, 5, 17, 200
// Properties: nobody without the key completes (modes 0, 1: the payload cannot prove it); the
// honest exchange completes exactly when no byte the MACs cover (or the status, magic, version,
// key id) was altered, the key matches and the purpose is served; outputs are whole messages.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bootstrap/auth.h"
#include "fuzz_util.h"

namespace {

using namespace vigil::auth;

JobKey Key(uint8_t fill) {
  JobKey k;
  for (size_t i = 0; i < k.bytes.size(); ++i) k.bytes[i] = static_cast<uint8_t>(fill + 17 * i);
  k.given = true;
  return k;
}

// Feeds `bytes` to `feed` in chunks; returns the last step.
template <typename FeedFn>
Step Deliver(const std::vector<uint8_t>& bytes, size_t chunk, std::vector<uint8_t>* in,
             FeedFn&& feed) {
  Step step = Step::kMore;
  size_t at = 0;
  do {
    const size_t n = bytes.size() - at < chunk ? bytes.size() - at : chunk;
    in->insert(in->end(), bytes.begin() + static_cast<std::ptrdiff_t>(at),
               bytes.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    const Step again = feed();
    if (step == Step::kFailed) FUZZ_CHECK(again == Step::kFailed);  // failure is final
    if (step == Step::kDone) FUZZ_CHECK(again == Step::kDone);
    step = again;
  } while (at < bytes.size());
  return step;
}

bool Ignored(size_t pos) {
  // The hello's flags (6-7) and the answer's reserved u16 (32 + 6, 32 + 7) are not read.
  return pos == 6 || pos == 7 || pos == 38 || pos == 39;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vigil::fuzz::QuietLogs();
  const vigil::fuzz::Input in = vigil::fuzz::Split(data, size);
  static const size_t kChunks[] = {1, 5, 17, 200};
  const size_t chunk = kChunks[in.mode >> 6];
  const JobKey key = Key(3);
  const std::vector<JobKey> acceptor_keys{in.mode & 4 ? Key(101) : key};
  const auto purpose = static_cast<Purpose>(1 + ((in.mode >> 3) & 3));
  const uint32_t allowed = in.mode & 32 ? PurposeBit(Purpose::kData)
                                        : PurposeBit(Purpose::kRendezvous) | PurposeBit(Purpose::kData) |
                                              PurposeBit(Purpose::kHeartbeat) | PurposeBit(Purpose::kHealth);
  const std::vector<uint8_t> payload(in.data, in.data + in.size);
  const int role = in.mode & 3;

  if (role == 0) {
    AcceptorAuth a(allowed, acceptor_keys);
    std::vector<uint8_t> buf, out;
    const Step step = Deliver(payload, chunk, &buf, [&] { return a.Feed(&buf, &out); });
    FUZZ_CHECK(step != Step::kDone);  // the proof needs the key and this exchange's nonce
    FUZZ_CHECK(out.empty() || out.size() == 8 || out.size() == kAnswerBytes);
    if (step == Step::kFailed) FUZZ_CHECK(!a.why().empty());
    return 0;
  }
  if (role == 1) {
    DialerAuth d(purpose, key);
    FUZZ_CHECK(d.Start().size() == kHelloBytes);
    std::vector<uint8_t> buf, out;
    const Step step = Deliver(payload, chunk, &buf, [&] { return d.Feed(&buf, &out); });
    FUZZ_CHECK(step != Step::kDone);  // the answer's MAC covers our fresh nonce
    FUZZ_CHECK(out.empty());
    if (step == Step::kFailed) FUZZ_CHECK(!d.why().empty());
    return 0;
  }

  // The honest exchange, altered in flight.
  uint8_t flip[120] = {};
  for (size_t i = 0; i + 1 < payload.size(); i += 2) flip[payload[i] % sizeof(flip)] ^= payload[i + 1];
  bool altered = false;
  for (size_t p = 0; p < sizeof(flip); ++p) altered = altered || (flip[p] != 0 && !Ignored(p));
  auto alter = [&](std::vector<uint8_t>* msg, size_t base) {
    for (size_t i = 0; i < msg->size() && base + i < sizeof(flip); ++i) (*msg)[i] ^= flip[base + i];
  };
  DialerAuth d(purpose, key);
  AcceptorAuth a(allowed, acceptor_keys);
  std::vector<uint8_t> hello = d.Start();
  FUZZ_CHECK(hello.size() == kHelloBytes);
  alter(&hello, 0);
  std::vector<uint8_t> a_in, a_out, d_in, d_out;
  Step as = Deliver(hello, chunk, &a_in, [&] { return a.Feed(&a_in, &a_out); });
  Step ds = Step::kMore;
  if (!a_out.empty()) {
    FUZZ_CHECK(a_out.size() == 8 || a_out.size() == kAnswerBytes);
    std::vector<uint8_t> answer = a_out;
    alter(&answer, 32);
    ds = Deliver(answer, chunk, &d_in, [&] { return d.Feed(&d_in, &d_out); });
  }
  const std::vector<uint8_t> after{'n', 'e', 'x', 't'};
  if (ds == Step::kDone) {
    FUZZ_CHECK(d_out.size() == kProofBytes && d_in.empty());
    std::vector<uint8_t> proof = d_out;
    alter(&proof, 88);
    proof.insert(proof.end(), after.begin(), after.end());
    as = Deliver(proof, chunk, &a_in, [&] { return a.Feed(&a_in, &a_out); });
  }
  const bool both = as == Step::kDone && ds == Step::kDone;
  const bool expected = !altered && !(in.mode & 4) && (allowed & PurposeBit(purpose)) != 0;
  FUZZ_CHECK(both == expected);
  if (both) {
    FUZZ_CHECK(a.purpose() == purpose);
    FUZZ_CHECK(a_in == after);  // what follows the exchange is left for the caller
  }
  return 0;
}
