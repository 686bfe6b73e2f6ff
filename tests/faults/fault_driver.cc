// The fault driver: an HCCL program (public API + vigil/launch.h) that misbehaves on purpose so
// that each row of FAULTS.md (F5-F16) happens for real. Run it under
//   vigil run -n N --log-dir DIR --timeout T -- fault_driver --mode MODE [options]
// Every rank prints exactly one line "RESULT rank=R pid=P mode=M init=.. op=.. sync=.. async=..
// ok=0|1" (plus "BADARG name=.. rc=.." lines in mode bad_args) and exits 0 unless it crashed,
// so a test can check that every rank returned and with which codes; the checks on log lines
// are the test script's.
//
// Options: --odd R (the misbehaving rank, default 1), --odd-from R (every rank from R on
// misbehaves too: a whole host, for mismatch), --count N (elements, default 256),
// --delay-ms D (how late the odd rank is), --what op|count|dtype|root (F5/F6 variant),
// --odd-env NAME=VALUE (set for the odd rank only, before any HCCL call),
// --tmp DIR (files to share root infos between ranks), --iters N (bench), --hold-ms H (keep
// the communicator after the faulty op), --p2p send|batch (p2p_mismatch).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "api/hccl_api_util.h"        // bench only: flips the check on a live communicator
#include "bootstrap/root_info.h"      // bad_args only: where to send a stranger's bytes
#include "hccl/hccl.h"
#include "vigil/launch.h"

namespace {

struct Options {
  std::string mode;
  uint32_t odd = 1;
  uint32_t odd_from = UINT32_MAX;  // --odd-from: ranks from here on misbehave as well
  uint64_t count = 256;
  int delay_ms = 0;
  std::string what = "op";
  std::string odd_env;
  std::string tmp = "/tmp";
  int iters = 2000;
  int hold_ms = 0;  // keep the communicator this long after the faulty op (peers may still wait)
  std::string p2p = "send";  // p2p_mismatch: send (HcclSend/HcclRecv) or batch
};

uint32_t g_rank = 0, g_size = 1;

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

struct Result {
  int init = -1, op = -1, sync = -1, async = -1;
  bool ok = false;
};

void Print(const Options& o, const Result& r) {
  std::printf("RESULT rank=%u pid=%d mode=%s init=%d op=%d sync=%d async=%d ok=%d\n", g_rank,
              static_cast<int>(getpid()), o.mode.c_str(), r.init, r.op, r.sync, r.async,
              r.ok ? 1 : 0);
  std::fflush(stdout);
}

// Device buffers of `bytes`, filled with floats = rank + 1.
void* DevBuf(size_t bytes) {
  void* p = nullptr;
  if (aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
  std::vector<float> host(bytes / sizeof(float), static_cast<float>(g_rank + 1));
  aclrtMemcpy(p, bytes, host.data(), host.size() * sizeof(float), ACL_MEMCPY_HOST_TO_DEVICE);
  return p;
}

HcclResult InitComm(HcclComm* comm) {
  HcclRootInfo root;
  HcclResult rc = VigilLaunchRootInfo(g_rank, &root);
  if (rc != HCCL_SUCCESS) return rc;
  return HcclCommInitRootInfo(g_size, &root, g_rank, comm);
}

// Shares a root info made by rank 0 through a file under o.tmp.
HcclResult ShareRootInfo(const Options& o, const char* name, HcclRootInfo* root, bool make) {
  const std::string path = o.tmp + "/" + name;
  if (make) {
    HcclResult rc = HcclGetRootInfo(root);
    if (rc != HCCL_SUCCESS) return rc;
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return HCCL_E_OPEN_FILE_FAILURE;
    std::fwrite(root->internal, 1, sizeof(root->internal), f);
    std::fclose(f);
    return std::rename(tmp.c_str(), path.c_str()) == 0 ? HCCL_SUCCESS : HCCL_E_OPEN_FILE_FAILURE;
  }
  for (int waited = 0; waited < 30000; waited += 20) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f != nullptr) {
      size_t got = std::fread(root->internal, 1, sizeof(root->internal), f);
      std::fclose(f);
      if (got == sizeof(root->internal)) return HCCL_SUCCESS;
    }
    Sleep(20);
  }
  return HCCL_E_TIMEOUT;
}

// AllReduce(sum) of rank+1 floats on `comm`; true when every element is n(n+1)/2.
bool CheckedAllReduce(HcclComm comm, aclrtStream stream, uint64_t count, HcclResult* rc_out) {
  const size_t bytes = count * sizeof(float);
  void* send = DevBuf(bytes);
  void* recv = DevBuf(bytes);
  HcclResult rc = HcclAllReduce(send, recv, count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm,
                                stream);
  aclError s = aclrtSynchronizeStream(stream);
  if (rc_out) *rc_out = rc;
  bool ok = rc == HCCL_SUCCESS && s == ACL_SUCCESS;
  if (ok) {
    std::vector<float> host(count);
    aclrtMemcpy(host.data(), bytes, recv, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    const float want = static_cast<float>(g_size) * (g_size + 1) / 2.0f;
    for (float v : host) ok = ok && v == want;
  }
  aclrtFree(send);
  aclrtFree(recv);
  return ok;
}

// Sends a stranger's bytes to host:port and closes (never a valid handshake).
void SendStrangerBytes(const std::string& host, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const char junk[] = "GET / HTTP/1.0\r\n\r\n\x01\x02\x03 definitely not a vigil handshake";
    (void)send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
    Sleep(50);
  }
  close(fd);
}

// F5/F6/F7/F10 and friends: one good op (index 1), then the faulty op (index 2) on the odd rank.
int RunMismatch(const Options& o) {
  Result r;
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  r.init = InitComm(&comm);
  if (r.init != HCCL_SUCCESS) {
    Print(o, r);
    return 0;
  }
  HcclResult warm = HCCL_SUCCESS;
  if (!CheckedAllReduce(comm, stream, o.count, &warm)) {
    std::printf("warm-up AllReduce failed on rank %u\n", g_rank);
  }
  const bool odd = g_rank == o.odd || g_rank >= o.odd_from;
  uint64_t count = o.count;
  HcclDataType dtype = HCCL_DATA_TYPE_FP32;
  const size_t big = o.count * 4 * sizeof(double) * std::max<uint32_t>(g_size, 1);
  void* send = DevBuf(big);
  void* recv = DevBuf(big);
  if (odd && o.mode == "mismatch" && o.what == "count") count = o.count * 2;
  if (odd && o.mode == "mismatch" && o.what == "dtype") dtype = HCCL_DATA_TYPE_INT32;
  if (odd && o.mode == "late") Sleep(o.delay_ms);
  if (odd && o.mode == "small_buffer") {
    aclrtFree(send);
    send = DevBuf(16);  // 4 floats where count floats are read
  }
  bool send_freed = false;
  if (o.mode == "freed_buffer") {
    // A good op on these very buffers first (index 2): the faulty op (index 3) reuses them, so
    // only the free itself tells the communicator to check them again.
    HcclAllReduce(send, recv, count, dtype, HCCL_REDUCE_SUM, comm, stream);
    aclrtSynchronizeStream(stream);
    if (odd) {
      aclrtFree(send);
      send_freed = true;
    }
  }
  if (odd && o.mode == "mismatch" && o.what == "op") {
    r.op = HcclAllGather(send, recv, count, dtype, comm, stream);
  } else if (o.mode == "mismatch" && o.what == "root") {
    r.op = HcclReduce(send, recv, count, dtype, HCCL_REDUCE_SUM, odd ? o.odd : 0, comm, stream);
  } else {
    r.op = HcclAllReduce(send, recv, count, dtype, HCCL_REDUCE_SUM, comm, stream);
  }
  r.sync = aclrtSynchronizeStream(stream);
  HcclResult async = HCCL_SUCCESS;
  HcclGetCommAsyncError(comm, &async);
  r.async = async;
  r.ok = r.op == HCCL_SUCCESS && r.sync == ACL_SUCCESS;
  if (r.ok && dtype == HCCL_DATA_TYPE_FP32) {
    // What a completed op left in the output (an AllReduce of rank+1 should give n(n+1)/2), so
    // a test can tell a silently wrong result from a right one.
    float first = 0;
    aclrtMemcpy(&first, sizeof(first), recv, sizeof(first), ACL_MEMCPY_DEVICE_TO_HOST);
    std::printf("DATA rank=%u first=%g\n", g_rank, static_cast<double>(first));
  }
  Print(o, r);
  int hold = o.hold_ms;
  if (o.mode == "late" && !odd && hold == 0) {
    // Stay until the late rank has timed out too, as a live but finished peer would.
    uint32_t exec_s = 1836;
    VigilEnvU32("HCCL_EXEC_TIMEOUT", &exec_s);
    hold = o.delay_ms + static_cast<int>(exec_s) * 1000 + 1500;
  }
  if (hold > 0) Sleep(hold);
  HcclCommDestroy(comm);
  if (!send_freed) aclrtFree(send);
  aclrtFree(recv);
  aclrtDestroyStream(stream);
  return 0;
}

// F6 for point-to-point: a good Send/Recv from rank 0 to rank 1 (index 1), then one whose
// (count, dtype) differ between the two sides (index 2): HcclSend/HcclRecv (--what count|dtype),
// or with --p2p batch both ranks run HcclBatchSendRecv {send to the other, recv from it}.
// The odd rank doubles its count (rank 1: its receive) or sends int32 (rank 0: its send).
int RunP2pMismatch(const Options& o) {
  Result r;
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  r.init = InitComm(&comm);
  if (r.init != HCCL_SUCCESS || g_size != 2) {
    Print(o, r);
    return 0;
  }
  const uint32_t other = 1 - g_rank;
  const size_t big = o.count * 2 * sizeof(double);
  void* send = DevBuf(big);
  void* recv = DevBuf(big);
  HcclResult warm = g_rank == 0 ? HcclSend(send, o.count, HCCL_DATA_TYPE_FP32, other, comm, stream)
                                : HcclRecv(recv, o.count, HCCL_DATA_TYPE_FP32, other, comm, stream);
  if (warm != HCCL_SUCCESS || aclrtSynchronizeStream(stream) != ACL_SUCCESS) {
    std::printf("warm-up Send/Recv failed on rank %u\n", g_rank);
  }
  const bool odd = g_rank == o.odd || g_rank >= o.odd_from;
  uint64_t count = o.count;
  HcclDataType dtype = HCCL_DATA_TYPE_FP32;
  if (odd && o.what == "count") count = o.count * 2;
  if (odd && o.what == "dtype") dtype = HCCL_DATA_TYPE_INT32;
  if (o.p2p == "batch") {
    // The odd rank's changed item is the one on the rank 0 -> rank 1 direction.
    HcclSendRecvItem items[2];
    items[0] = {HCCL_SEND, send, g_rank == 0 ? count : o.count,
                g_rank == 0 ? dtype : HCCL_DATA_TYPE_FP32, other};
    items[1] = {HCCL_RECV, recv, g_rank == 1 ? count : o.count,
                g_rank == 1 ? dtype : HCCL_DATA_TYPE_FP32, other};
    r.op = HcclBatchSendRecv(items, 2, comm, stream);
  } else if (g_rank == 0) {
    r.op = HcclSend(send, count, dtype, other, comm, stream);
  } else {
    r.op = HcclRecv(recv, count, dtype, other, comm, stream);
  }
  r.sync = aclrtSynchronizeStream(stream);
  HcclResult async = HCCL_SUCCESS;
  HcclGetCommAsyncError(comm, &async);
  r.async = async;
  r.ok = r.op == HCCL_SUCCESS && r.sync == ACL_SUCCESS;
  Print(o, r);
  HcclCommDestroy(comm);
  aclrtFree(send);
  aclrtFree(recv);
  aclrtDestroyStream(stream);
  return 0;
}

// F8: two streams feed one communicator at once. The odd rank enters late, so the first op of
// every other rank surely still runs when its second stream's op wants the communicator.
int RunTwoStreams(const Options& o) {
  Result r;
  HcclComm comm = nullptr;
  aclrtStream s1 = nullptr, s2 = nullptr;
  aclrtCreateStream(&s1);
  aclrtCreateStream(&s2);
  r.init = InitComm(&comm);
  if (r.init == HCCL_SUCCESS) {
    const size_t bytes = o.count * sizeof(float);
    void* a = DevBuf(bytes);
    void* b = DevBuf(bytes);
    void* c = DevBuf(bytes);
    void* d = DevBuf(bytes);
    if (g_rank == o.odd) Sleep(o.delay_ms);
    HcclResult r1 = HcclAllReduce(a, b, o.count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s1);
    HcclResult r2 = HcclAllReduce(c, d, o.count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, s2);
    r.op = r1 != HCCL_SUCCESS ? r1 : r2;
    aclError e1 = aclrtSynchronizeStream(s1);
    aclError e2 = aclrtSynchronizeStream(s2);
    r.sync = e1 != ACL_SUCCESS ? e1 : e2;
    HcclResult async = HCCL_SUCCESS;
    HcclGetCommAsyncError(comm, &async);
    r.async = async;
    r.ok = r.op == HCCL_SUCCESS && r.sync == ACL_SUCCESS;
    HcclCommDestroy(comm);
    for (void* p : {a, b, c, d}) aclrtFree(p);
  }
  Print(o, r);
  aclrtDestroyStream(s1);
  aclrtDestroyStream(s2);
  return 0;
}

// F9: rank 0 destroys the communicator while its ops are queued; the others enter a second late,
// so rank 0's first op is surely in flight (waiting) and the second starts after the destroy.
int RunDestroyBeforeSync(const Options& o) {
  Result r;
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  r.init = InitComm(&comm);
  if (r.init == HCCL_SUCCESS) {
    const size_t bytes = o.count * sizeof(float);
    void* a = DevBuf(bytes);
    void* b = DevBuf(bytes);
    CheckedAllReduce(comm, stream, o.count, nullptr);  // links up, every rank in step
    if (g_rank != 0) Sleep(o.delay_ms);
    HcclResult r1 = HcclAllReduce(a, b, o.count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream);
    if (g_rank == 0) Sleep(200);  // op 1 now runs, waiting for the late peers
    HcclResult r2 = HcclAllReduce(a, b, o.count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream);
    r.op = r1 != HCCL_SUCCESS ? r1 : r2;
    if (g_rank == 0) {
      HcclCommDestroy(comm);  // before aclrtSynchronizeStream: the fault
      r.sync = aclrtSynchronizeStream(stream);
      r.async = -1;  // the handle is gone
    } else {
      r.sync = aclrtSynchronizeStream(stream);
      HcclResult async = HCCL_SUCCESS;
      HcclGetCommAsyncError(comm, &async);
      r.async = async;
      HcclCommDestroy(comm);
    }
    r.ok = r.op == HCCL_SUCCESS && r.sync == ACL_SUCCESS;
    aclrtFree(a);
    aclrtFree(b);
  }
  Print(o, r);
  aclrtDestroyStream(stream);
  return 0;
}

// F11/F12/F13/F15: init (the odd rank may skip it), then one AllReduce.
int RunInitAndOp(const Options& o) {
  Result r;
  if (o.mode == "missing_rank" && g_rank == o.odd) {
    Print(o, r);  // never joins
    return 0;
  }
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  r.init = InitComm(&comm);
  if (r.init == HCCL_SUCCESS) {
    HcclResult rc = HCCL_SUCCESS;
    r.ok = CheckedAllReduce(comm, stream, o.count, &rc);
    r.op = rc;
    r.sync = r.ok ? 0 : 1;
    HcclResult async = HCCL_SUCCESS;
    HcclGetCommAsyncError(comm, &async);
    r.async = async;
    HcclCommDestroy(comm);
  }
  Print(o, r);
  aclrtDestroyStream(stream);
  return 0;
}

// F14: hold HCCL_IF_BASE_PORT .. +31 (listening, so no bind on any address of them succeeds),
// then ask for a root info. Runs alone (not under vigil run).
int RunPortInUse(const Options& o) {
  Result r;
  std::vector<int> held;
  uint16_t base = 0;
  for (int attempt = 0; attempt < 50 && held.size() < 32; ++attempt) {
    for (int fd : held) close(fd);
    held.clear();
    int first = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof(a);
    if (bind(first, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(first, 1) != 0 ||
        getsockname(first, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      close(first);
      continue;
    }
    base = ntohs(a.sin_port);
    if (base > 65504) {
      close(first);
      continue;
    }
    held.push_back(first);
    for (int k = 1; k < 32; ++k) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in b{};
      b.sin_family = AF_INET;
      b.sin_addr.s_addr = htonl(INADDR_ANY);
      b.sin_port = htons(static_cast<uint16_t>(base + k));
      if (bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof(b)) != 0 || listen(fd, 1) != 0) {
        close(fd);
        break;
      }
      held.push_back(fd);
    }
  }
  if (held.size() < 32) {
    std::printf("could not hold 32 consecutive ports\n");
    Print(o, r);
    return 0;
  }
  std::printf("HELD base=%u\n", base);
  setenv("HCCL_IF_BASE_PORT", std::to_string(base).c_str(), 1);
  HcclRootInfo root;
  r.init = HcclGetRootInfo(&root);
  Print(o, r);
  for (int fd : held) close(fd);
  return 0;
}

void BadArg(const char* name, HcclResult rc) {
  std::printf("BADARG rank=%u name=%s rc=%d\n", g_rank, name, static_cast<int>(rc));
  std::fflush(stdout);
}

// F16: every bad argument and malformed input on rank-local calls, then strangers on listening
// ports and a reused rank id, while communicator A (and a new one, B) keep working.
int RunBadArgs(const Options& o) {
  Result r;
  HcclComm a = nullptr;
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  r.init = InitComm(&a);
  if (r.init != HCCL_SUCCESS) {
    Print(o, r);
    return 0;
  }
  bool ok = CheckedAllReduce(a, stream, o.count, nullptr);
  void* buf = DevBuf(o.count * sizeof(float));
  void* out = DevBuf(o.count * sizeof(float) * g_size);
  BadArg("null_sendBuf", HcclAllReduce(nullptr, out, o.count, HCCL_DATA_TYPE_FP32,
                                       HCCL_REDUCE_SUM, a, stream));
  BadArg("count_overflow", HcclAllReduce(buf, out, 1ull << 62, HCCL_DATA_TYPE_FP32,
                                         HCCL_REDUCE_SUM, a, stream));
  BadArg("unknown_dtype", HcclAllReduce(buf, out, o.count, static_cast<HcclDataType>(99),
                                        HCCL_REDUCE_SUM, a, stream));
  BadArg("unknown_op", HcclAllReduce(buf, out, o.count, HCCL_DATA_TYPE_FP32,
                                     static_cast<HcclReduceOp>(99), a, stream));
  BadArg("root_out_of_range", HcclBroadcast(buf, o.count, HCCL_DATA_TYPE_FP32, g_size, a, stream));
  BadArg("null_comm", HcclAllReduce(buf, out, o.count, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM,
                                    nullptr, stream));
  HcclRootInfo root;
  VigilLaunchRootInfo(g_rank, &root);
  HcclComm bad = nullptr;
  BadArg("rank_ge_nranks", HcclCommInitRootInfo(g_size, &root, g_size, &bad));
  HcclRootInfo garbage;
  for (size_t i = 0; i < sizeof(garbage.internal); ++i) garbage.internal[i] = static_cast<char>(i * 37 + 11);
  BadArg("garbage_root_info", HcclCommInitRootInfo(g_size, &garbage, g_rank, &bad));
  ok = ok && aclrtSynchronizeStream(stream) == ACL_SUCCESS;  // nothing bad was queued

  // A stranger on this rank's data listener, then an op that needs new links there.
  if (auto c = vigil::api::LookupComm(a)) {
    const auto& me = c->ranks()[g_rank];
    SendStrangerBytes(me.host_ip, me.data_port);
  }
  HcclResult rc = HcclAllGather(buf, out, o.count, HCCL_DATA_TYPE_FP32, a, stream);
  aclError s = aclrtSynchronizeStream(stream);
  BadArg("allgather_after_stranger", rc != HCCL_SUCCESS ? rc : static_cast<HcclResult>(s));
  ok = ok && rc == HCCL_SUCCESS && s == ACL_SUCCESS;

  // Communicator B: a stranger talks to its rendezvous port before the ranks join.
  HcclRootInfo root_b;
  HcclResult share = ShareRootInfo(o, "root_b", &root_b, g_rank == 0);
  if (g_rank == 0 && share == HCCL_SUCCESS) {
    vigil::bootstrap::RootInfo info;
    std::string error;
    if (vigil::bootstrap::DecodeRootInfo(root_b, &info, &error) == HCCL_SUCCESS) {
      SendStrangerBytes(info.host_ip, info.port);
    }
  }
  HcclComm b = nullptr;
  HcclResult rb = share == HCCL_SUCCESS ? HcclCommInitRootInfo(g_size, &root_b, g_rank, &b) : share;
  BadArg("comm_b_init_after_stranger", rb);
  if (rb == HCCL_SUCCESS) {
    HcclResult brc = HCCL_SUCCESS;
    const bool bok = CheckedAllReduce(b, stream, o.count, &brc);
    BadArg("comm_b_allreduce", bok ? HCCL_SUCCESS : (brc != HCCL_SUCCESS ? brc : HCCL_E_INTERNAL));
    ok = ok && bok;
  }
  ok = ok && rb == HCCL_SUCCESS;

  // Communicator C: ranks 0 and 1 both claim rank id 0.
  if (g_size >= 2 && g_rank <= 1) {
    HcclRootInfo root_c;
    HcclResult sc = ShareRootInfo(o, "root_c", &root_c, g_rank == 0);
    HcclComm cc = nullptr;
    HcclResult rcc = sc == HCCL_SUCCESS ? HcclCommInitRootInfo(2, &root_c, 0, &cc) : sc;
    BadArg("reused_rank_id", rcc);
    if (rcc == HCCL_SUCCESS) HcclCommDestroy(cc);
  }

  // A still works after all of it.
  HcclResult last = HCCL_SUCCESS;
  const bool aok = CheckedAllReduce(a, stream, o.count, &last);
  BadArg("comm_a_allreduce_at_end", aok ? HCCL_SUCCESS : (last != HCCL_SUCCESS ? last : HCCL_E_INTERNAL));
  r.ok = ok && aok;
  r.op = last;
  r.sync = 0;
  r.async = 0;
  if (b != nullptr) HcclCommDestroy(b);
  HcclCommDestroy(a);
  aclrtFree(buf);
  aclrtFree(out);
  Print(o, r);
  aclrtDestroyStream(stream);
  return 0;
}

// 8-byte AllReduce latency with the consistency check's report on and off, alternating rounds
// on one communicator, so both see the same machine load. (The op headers travel either way
// since the check-off fix, so this no longer measures the headers' cost: compare against a
// build before it for that.)
int RunBench(const Options& o) {
  Result r;
  HcclComm comm = nullptr;
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  r.init = InitComm(&comm);
  if (r.init != HCCL_SUCCESS) {
    Print(o, r);
    return 0;
  }
  auto c = vigil::api::LookupComm(comm);
  void* send = DevBuf(64);
  void* recv = DevBuf(64);
  std::vector<double> on_us, off_us;
  for (int round = 0; round < 10; ++round) {
    const bool check = round % 2 == 0;
    c->set_consistency_check(check);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) {
      HcclAllReduce(send, recv, 2, HCCL_DATA_TYPE_FP32, HCCL_REDUCE_SUM, comm, stream);
      aclrtSynchronizeStream(stream);
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        o.iters;
    (check ? on_us : off_us).push_back(us);
  }
  std::sort(on_us.begin(), on_us.end());
  std::sort(off_us.begin(), off_us.end());
  if (g_rank == 0) {
    std::printf("BENCH ranks=%u allreduce_8B_us check_on median=%.2f min=%.2f check_off "
                "median=%.2f min=%.2f\n",
                g_size, on_us[on_us.size() / 2], on_us[0], off_us[off_us.size() / 2], off_us[0]);
  }
  c->set_consistency_check(true);
  r.ok = true;
  HcclCommDestroy(comm);
  aclrtFree(send);
  aclrtFree(recv);
  aclrtDestroyStream(stream);
  Print(o, r);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--mode") o.mode = next();
    else if (a == "--odd") o.odd = static_cast<uint32_t>(std::stoul(next()));
    else if (a == "--odd-from") o.odd_from = static_cast<uint32_t>(std::stoul(next()));
    else if (a == "--count") o.count = std::stoull(next());
    else if (a == "--delay-ms") o.delay_ms = std::stoi(next());
    else if (a == "--what") o.what = next();
    else if (a == "--odd-env") o.odd_env = next();
    else if (a == "--tmp") o.tmp = next();
    else if (a == "--iters") o.iters = std::stoi(next());
    else if (a == "--hold-ms") o.hold_ms = std::stoi(next());
    else if (a == "--p2p") o.p2p = next();
    else {
      std::fprintf(stderr, "fault_driver: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!VigilLaunchRank(&g_rank, &g_size)) {
    g_rank = 0;
    g_size = 1;
  }
  if (!o.odd_env.empty() && g_rank == o.odd) {
    const size_t eq = o.odd_env.find('=');
    if (eq != std::string::npos) {
      setenv(o.odd_env.substr(0, eq).c_str(), o.odd_env.substr(eq + 1).c_str(), 1);
    }
  }
  if (o.mode == "port_in_use") return RunPortInUse(o);
  aclInit(nullptr);
  aclrtSetDevice(static_cast<int32_t>(g_rank % 8));
  int rc = 2;
  if (o.mode == "mismatch" || o.mode == "late" || o.mode == "small_buffer" ||
      o.mode == "freed_buffer") {
    rc = RunMismatch(o);
  }
  else if (o.mode == "p2p_mismatch") rc = RunP2pMismatch(o);
  else if (o.mode == "two_streams") rc = RunTwoStreams(o);
  else if (o.mode == "destroy_before_sync") rc = RunDestroyBeforeSync(o);
  else if (o.mode == "init" || o.mode == "missing_rank") rc = RunInitAndOp(o);
  else if (o.mode == "bad_args") rc = RunBadArgs(o);
  else if (o.mode == "bench") rc = RunBench(o);
  else std::fprintf(stderr, "fault_driver: unknown --mode %s\n", o.mode.c_str());
  aclrtResetDevice(static_cast<int32_t>(g_rank % 8));
  aclFinalize();
  return rc;
}
