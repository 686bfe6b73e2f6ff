// Writes the binary seed corpora (corpus/{root_info,rendezvous,link_handshake,heartbeat_frame})
// from the library's own encoders: a real root info from HcclGetRootInfo, and the rendezvous,
// handshake and heartbeat messages as ranks send them. Each file is the target's mode byte and
// the bytes its decoder reads (fuzz_<target>.cc says which). Run by hand when a format changes:
//   fuzz_make_seeds tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_server.h"
#include "dfx/heartbeat_frame.h"
#include "hccl/hccl.h"
#include "transport/handshake.h"

namespace {

namespace fs = std::filesystem;
using namespace vigil;

fs::path g_root;

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
  Put("heartbeat_frame", "agree", 31, cat({hello, EncodeAgree({1, 2, 3, 4})}));
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
  return 0;
}
