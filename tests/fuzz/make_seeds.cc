// Writes the binary seed corpora (corpus/{root_info,rendezvous,link_handshake,heartbeat_frame,auth})
// from the library's own encoders: a real root info from HcclGetRootInfo (with the job key of
// format version 2, a fixed one here), and the rendezvous,
// handshake and heartbeat messages as ranks send them. Each file is the target's mode byte and
// the bytes its decoder reads (fuzz_<target>.cc says which). Run by hand when a format changes:
//   fuzz_make_seeds tests/fuzz/corpus
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/rendezvous_server.h"
#include "dfx/agreement_msg.h"
#include "dfx/heartbeat_frame.h"
#include "hccl/hccl.h"
#include "transport/handshake.h"

namespace {

namespace fs = std::filesystem;
using namespace vigil;

fs::path g_root;
constexpr char kSeedJobKey[] = "00112233445566778899aabbccddeeff";

void Put(const std::string& target, const std::string& name, uint8_t mode, const uint8_t* p,
         size_t n) {
  fs::create_directories(g_root / target);
  std::ofstream out(g_root / target / name, std::ios::binary);
  out.put(static_cast<char>(mode));
  out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
}
void Put(const std::string& target, const std::string& name, uint8_t mode,
         const std::vector<uint8_t>& v, size_t skip = 0) {
  Put(target, name, mode, v.data() + skip, v.size() - skip);
}

bootstrap::RankInfo Rank(uint32_t rank, uint32_t nranks) {
  bootstrap::RankInfo r;
  r.rank = rank;
  r.nranks = nranks;
  r.host_ip = "127.0.0.1";
  r.host_id = "8f1c2a2e-vigil-host";
  r.data_port = static_cast<uint16_t>(61000 + rank);
  r.pid = 3000 + rank;
  r.device = static_cast<int32_t>(rank);
  r.buffsize_mb = 200;
  r.exec_timeout_s = 1836;
  r.transport = rank % 2 ? "tcp" : "shm";
  r.op_check = "off";
  r.maint_port = static_cast<uint16_t>(62000 + rank);
  return r;
}

void RootInfo() {
  // A fixed, public job key (the root info carries the process's key): the same seeds every run.
  setenv("VIGIL_JOB_KEY", kSeedJobKey, 1);
  HcclRootInfo info;
  if (HcclGetRootInfo(&info) != HCCL_SUCCESS) {
    std::fprintf(stderr, "HcclGetRootInfo failed\n");
    return;
  }
  const auto* b = reinterpret_cast<const uint8_t*>(info.internal);
  // The whole 4108 bytes, as is (mode 0) and with the checksum fixed up (mode 1, the same here);
  // and the used prefix only (the rest reads as zeros).
  size_t used = sizeof(info.internal);
  while (used > 0 && b[used - 1] == 0) --used;
  Put("root_info", "hccl-get-root-info", 0, b, sizeof(info.internal));
  Put("root_info", "hccl-get-root-info-prefix", 1, b, used);
  Put("root_info", "hccl-get-root-info-cut", 0, b, used / 2);
}

void Rendezvous() {
  namespace rdv = bootstrap::rdv;
  for (uint32_t n : {1u, 2u, 4u}) {
    wire::Writer hello;
    hello.Str("127.0.0.1%lo_60000_0_1761300000000001");
    rdv::PutRankInfo(&hello, Rank(n - 1, n));
    Put("rendezvous", "hello-rank" + std::to_string(n - 1), 0, hello.data());
    wire::Writer table;
    table.U32(n);
    for (uint32_t i = 0; i < n; ++i) rdv::PutRankInfo(&table, Rank(i, n));
    std::vector<uint8_t> t = table.data();
    t.insert(t.begin(), static_cast<uint8_t>(n));  // the rank count the decoder expects
    Put("rendezvous", "table-" + std::to_string(n), 1, t);
  }
  rdv::ErrorReply e{HCCL_E_PARA, "rank[1] of communicator [x]: buffsize differs", "EI0005",
                    {"HCCL_BUFFSIZE", "200", "100"}};
  wire::Writer err;
  rdv::PutError(&err, e);
  Put("rendezvous", "error-ei0005", 2, err.data());
  rdv::ErrorReply t{HCCL_E_TIMEOUT, "ranks [2, 3] never arrived", "EI0006", {"ranks [2, 3]"}};
  wire::Writer err2;
  rdv::PutError(&err2, t);
  Put("rendezvous", "error-ei0006", 2, err2.data());
}

void Handshake() {
  using namespace transport;
  Hello h;
  h.comm_id = "127.0.0.1%lo_60000_0_1761300000000001";
  h.tag = "ring";
  h.src = 1;
  h.dst = 2;
  h.link_type = kWireShm;
  h.qp_count = 4;
  h.nonce = 0x1122334455667788ull;
  h.from.host_ip = "127.0.0.1";
  h.from.host_id = "8f1c2a2e-vigil-host";
  h.from.port = 61001;
  h.from.pid = 3001;
  h.from.device = 1;
  h.ring_fd = 7;
  h.ring_bytes = 4 << 20;
  h.doorbell_fd = 8;
  h.notice.epoch = 3;
  h.notice.seq = 12;
  h.notice.attempt = 1;
  h.notice.origin = 2;
  h.notice.end_a = 1;
  h.notice.end_b = 2;
  Put("link_handshake", "hello-control-shm", 0, EncodeHello(h), kHeaderBytes);
  h.link_type = kWireTcp;
  h.ring_fd = h.doorbell_fd = 0;
  h.notice = {};
  Put("link_handshake", "hello-control-tcp", 0, EncodeHello(h), kHeaderBytes);
  h.kind = kQp;
  h.qp_index = 3;
  Put("link_handshake", "hello-qp", 1, EncodeHello(h), kHeaderBytes);
  h.kind = kNotice;
  h.notice.epoch = 5;
  h.notice.seq = 99;
  Put("link_handshake", "hello-notice", 2, EncodeHello(h), kHeaderBytes);
  Reply ok;
  ok.pid = 3002;
  ok.doorbell_fd = 9;
  Put("link_handshake", "reply-ok", 3, EncodeReply(ok), kHeaderBytes);
  Reply no;
  no.status = HCCL_E_NOT_FOUND;
  no.message = "no communicator [x] on rank 2";
  Put("link_handshake", "reply-rejected", 3, EncodeReply(no), kHeaderBytes);
}

void Heartbeat() {
  using namespace dfx;
  auto cat = [](std::initializer_list<std::vector<uint8_t>> frames) {
    std::vector<uint8_t> all;
    for (const auto& f : frames) all.insert(all.end(), f.begin(), f.end());
    return all;
  };
  const auto hello = EncodeHello({"127.0.0.1", 62001, 3001});
  BeatFrame beat;
  beat.comms.push_back({CommKey("127.0.0.1%lo_60000_0_1761300000000001"), 1, 120, 119});
  beat.comms.push_back({CommKey("sub-comm"), 0, 7, 7});
  const auto event = EncodeEvent({"127.0.0.1/3", "127.0.0.1/1", HbStatus::kLost, 1761300000123456});
  const auto stuck = EncodeEvent({"127.0.0.1/2", "127.0.0.1/0", HbStatus::kStuck, 1761300000654321});
  // A link's life: hello, beats, an event, bye; cut in chunks of 1, 7 and 64 bytes.
  const auto link = cat({hello, EncodeBeat(beat), EncodeBeat(beat), event, EncodeBye()});
  Put("heartbeat_frame", "link-bytewise", 0, link);
  Put("heartbeat_frame", "link-chunks-7", 6, link);
  Put("heartbeat_frame", "link-chunks-64", 63, link);
  Put("heartbeat_frame", "stuck-event", 255, cat({hello, stuck}));
  Put("heartbeat_frame", "health-query", 15, cat({EncodeQuery(), EncodeReply(R"({"ranks":[]})")}));
  BeatFrame relay = beat;
  relay.heard.push_back({CommKey("127.0.0.1%lo_60000_0_1761300000000001"), 3, 118, 118});
  relay.heard.push_back({CommKey("127.0.0.1%lo_60000_0_1761300000000001"), 5, 120, 117});
  Put("heartbeat_frame", "beat-relayed", 3, cat({hello, EncodeBeat(relay)}));
  Put("heartbeat_frame", "agree", 31, cat({hello, EncodeAgree({1, 2, 3, 4})}));
  // The shrink agreement's messages, each alone on its connection (agreement_msg.h).
  AgreeMsg propose;
  propose.identifier = "127.0.0.1%lo_60000_0_1761300000000001";
  propose.round = 1;
  propose.from = 2;
  propose.to = 0;
  propose.seq = 3;
  propose.from_view = true;
  propose.exclude = {1, 3};
  Put("heartbeat_frame", "agree-propose", 0, EncodeAgreeMsg(propose));
  AgreeMsg decide = propose;
  decide.kind = AgreeKind::kDecide;
  decide.from = 0;
  decide.to = 2;
  decide.ok = true;
  decide.root = std::string(64, '\x5a');
  decide.views = {{0, false, {1, 3}}, {2, true, {1, 3}}};
  Put("heartbeat_frame", "agree-decide", 9, EncodeAgreeMsg(decide));
  decide.ok = false;
  decide.root.clear();
  decide.error = "rank 2 excludes [1,3] (heartbeat view), rank 0 excludes [3] (given)";
  decide.views = {{0, false, {3}}, {2, true, {1, 3}}};
  Put("heartbeat_frame", "agree-failed", 63, EncodeAgreeMsg(decide));
}

// The job-key exchange (fuzz_auth.cc's modes), with the target's fixed key (fill 3).
void Auth() {
  using namespace auth;
  JobKey key;
  for (size_t i = 0; i < key.bytes.size(); ++i) key.bytes[i] = static_cast<uint8_t>(3 + 17 * i);
  key.given = true;
  const uint32_t all = PurposeBit(Purpose::kRendezvous) | PurposeBit(Purpose::kData) |
                       PurposeBit(Purpose::kHeartbeat) | PurposeBit(Purpose::kHealth);
  // Acceptor: a real hello and a proof (of another exchange: it cannot match), whole and bytewise.
  DialerAuth d(Purpose::kData, key);
  std::vector<uint8_t> hello = d.Start();
  std::vector<uint8_t> hello_proof = hello;
  hello_proof.insert(hello_proof.end(), kProofBytes, 0xa5);
  Put("auth", "acceptor-hello-proof", 0xc0 | (1 << 3), hello_proof);  // data, 200-byte feeds
  Put("auth", "acceptor-hello-bytewise", 1 << 3, hello_proof);
  DialerAuth h(Purpose::kHeartbeat, key);
  Put("auth", "acceptor-heartbeat-data-only", 0x40 | 32 | (2 << 3), h.Start());
  // Dialer: a real answer to that hello (its MAC covers another nonce) and a refusal.
  AcceptorAuth a(all, {key});
  std::vector<uint8_t> in = hello, answer;
  (void)a.Feed(&in, &answer);
  Put("auth", "dialer-answer", 0xc1 | (1 << 3), answer);
  Put("auth", "dialer-answer-chunks-5", 0x41 | (1 << 3), answer);
  AcceptorAuth stranger(all, {});
  std::vector<uint8_t> in2 = hello, refusal;
  (void)stranger.Feed(&in2, &refusal);
  Put("auth", "dialer-refused", 0x01 | (1 << 3), refusal);
  // The exchange: untouched; the hello's flags altered (not read); a MAC byte altered.
  const std::vector<uint8_t> none;
  Put("auth", "exchange-clean", 0x82 | (1 << 3), none);
  Put("auth", "exchange-flags", 0x02 | (2 << 3), std::vector<uint8_t>{6, 0xff, 7, 0x01});
  Put("auth", "exchange-answer-mac", 0x42 | (1 << 3), std::vector<uint8_t>{32 + 40, 0x10});
  Put("auth", "exchange-proof", 0x03 | (3 << 3), std::vector<uint8_t>{88 + 5, 0x80});
  Put("auth", "exchange-other-key", 0x86, none);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  g_root = argv[1];
  RootInfo();
  Rendezvous();
  Handshake();
  Heartbeat();
  Auth();
  return 0;
}
