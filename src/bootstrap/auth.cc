#include "bootstrap/auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <fmt/format.h>

#include <cstring>
#include <mutex>

#include "bootstrap/wire.h"
#include "log/plog.h"

namespace vigil::auth {

namespace {

constexpr uint32_t kAuthMagic = 0x55414756;  // "VGAU"
constexpr uint8_t kAuthVersion = 1;
constexpr char kDomain[] = "vigil-auth-1";

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

bool Fresh(Nonce* n) {
  size_t got = 0;
  for (int tries = 0; got < n->size() && tries < 16; ++tries) {
    ssize_t r = getrandom(n->data() + got, n->size() - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r < 0 && errno != EINTR) return false;
  }
  return got == n->size();
}

Mac MacOf(const JobKey& key, const char* role, Purpose purpose, const Nonce& dialer,
          const Nonce& acceptor) {
  InitCrypto();
  wire::Writer w;
  w.Bytes(kDomain, sizeof(kDomain));  // with its NUL: a separator
  w.Bytes(role, std::strlen(role) + 1);
  const char* label = PurposeName(purpose);
  w.Bytes(label, std::strlen(label) + 1);
  w.Bytes(dialer.data(), dialer.size());
  w.Bytes(acceptor.data(), acceptor.size());
  Mac mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.bytes.data(), static_cast<int>(key.bytes.size()), w.data().data(),
       w.size(), mac.data(), &len);
  return mac;
}

bool SameMac(const uint8_t* a, const Mac& b) { return CRYPTO_memcmp(a, b.data(), b.size()) == 0; }

void Take(std::vector<uint8_t>* in, size_t n) {
  in->erase(in->begin(), in->begin() + static_cast<std::ptrdiff_t>(n));
}

bool KnownPurpose(uint8_t p) { return p >= 1 && p <= 4; }

}  // namespace

// libcrypto frees its tables from an atexit handler unless its first initialisation says not
// to; the heartbeat thread of a communicator the program never destroyed may still check a
// connection while main returns. So the library initialises libcrypto when it is loaded, before
// any other call, and leaves its state to the process's end.
void InitCrypto() {
  static std::once_flag once;
  std::call_once(once, [] { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr); });
}

namespace {
const bool g_crypto_at_load = [] {
  InitCrypto();
  return true;
}();
}  // namespace

const char* PurposeName(Purpose p) {
  switch (p) {
    case Purpose::kRendezvous:
      return "rendezvous";
    case Purpose::kData:
      return "data";
    case Purpose::kHeartbeat:
      return "heartbeat";
    case Purpose::kHealth:
      return "health";
  }
  return "unknown";
}

AcceptorAuth::AcceptorAuth(uint32_t allowed, std::vector<JobKey> keys)
    : allowed_(allowed), keys_(std::move(keys)) {}

Step AcceptorAuth::Fail(std::string why) {
  why_ = std::move(why);
  stage_ = -1;
  OPENSSL_cleanse(key_.bytes.data(), key_.bytes.size());
  return Step::kFailed;
}

Step AcceptorAuth::Refuse(std::string why, std::vector<uint8_t>* out) {
  wire::Writer w;
  w.U32(kAuthMagic);
  w.U8(kAuthVersion);
  w.U8(1);  // refused
  w.U16(0);
  out->insert(out->end(), w.data().begin(), w.data().end());
  return Fail(std::move(why));
}

Step AcceptorAuth::Feed(std::vector<uint8_t>* in, std::vector<uint8_t>* out) {
  if (stage_ < 0) return Step::kFailed;
  if (stage_ == 2) return Step::kDone;
  if (stage_ == 0) {
    if (in->size() < 4) return Step::kMore;
    wire::Reader r(in->data(), in->size());
    const uint32_t magic = r.U32();
    if (magic != kAuthMagic) {
      return Fail(fmt::format("no job-key hello (first bytes [0x{:08x}])", magic));
    }
    if (in->size() < kHelloBytes) return Step::kMore;
    const uint8_t version = r.U8();
    const uint8_t purpose = r.U8();
    (void)r.U16();
    const uint64_t key_id = r.U64();
    if (version != kAuthVersion) {
      return Fail(fmt::format("job-key hello version [{}] (expected [{}])", version, kAuthVersion));
    }
    if (!KnownPurpose(purpose) || (allowed_ & (1u << purpose)) == 0) {
      return Refuse(fmt::format("purpose [{}] is not served on this port",
                              KnownPurpose(purpose) ? PurposeName(static_cast<Purpose>(purpose))
                                                    : std::to_string(purpose).c_str()),
                    out);
    }
    bool found = false;
    for (const JobKey& k : keys_) {
      if (JobKeyId(k) == key_id) {
        key_ = k;
        found = true;
        break;
      }
    }
    if (!found) {
      return Refuse(key_id == JobKeyId(JobKey()) ? "the peer has no job key"
                                                 : "the peer's job key is not this job's",
                    out);
    }
    purpose_ = static_cast<Purpose>(purpose);
    std::memcpy(dialer_nonce_.data(), in->data() + 16, kNonceBytes);
    Take(in, kHelloBytes);
    if (!Fresh(&my_nonce_)) return Fail("no random bytes for a nonce (getrandom failed)");
    const Mac mac = MacOf(key_, "acceptor", purpose_, dialer_nonce_, my_nonce_);
    wire::Writer w;
    w.U32(kAuthMagic);
    w.U8(kAuthVersion);
    w.U8(0);
    w.U16(0);
    w.Bytes(my_nonce_.data(), my_nonce_.size());
    w.Bytes(mac.data(), mac.size());
    out->insert(out->end(), w.data().begin(), w.data().end());
    stage_ = 1;
  }
  if (in->size() < kProofBytes) return Step::kMore;
  const Mac expected = MacOf(key_, "dialer", purpose_, dialer_nonce_, my_nonce_);
  const bool ok = SameMac(in->data(), expected);
  Take(in, kProofBytes);
  if (!ok) return Fail("wrong proof of the job key");
  OPENSSL_cleanse(key_.bytes.data(), key_.bytes.size());
  stage_ = 2;
  return Step::kDone;
}

DialerAuth::DialerAuth(Purpose purpose, const JobKey& key) : purpose_(purpose), key_(key) {}

std::vector<uint8_t> DialerAuth::Start() {
  if (!Fresh(&my_nonce_)) {
    why_ = "no random bytes for a nonce (getrandom failed)";
    return {};
  }
  started_ = true;
  wire::Writer w;
  w.U32(kAuthMagic);
  w.U8(kAuthVersion);
  w.U8(static_cast<uint8_t>(purpose_));
  w.U16(0);
  w.U64(JobKeyId(key_));
  w.Bytes(my_nonce_.data(), my_nonce_.size());
  return std::move(w.data());
}

Step DialerAuth::Feed(std::vector<uint8_t>* in, std::vector<uint8_t>* out) {
  if (done_) return Step::kDone;
  if (!why_.empty()) return Step::kFailed;  // a failure is final, as the acceptor's is
  if (!started_) {
    if (why_.empty()) why_ = "the exchange was not started";
    return Step::kFailed;
  }
  if (in->size() < 4) return Step::kMore;
  wire::Reader r(in->data(), in->size());
  const uint32_t magic = r.U32();
  if (magic != kAuthMagic) {
    why_ = fmt::format("the peer did not answer the job-key hello (first bytes [0x{:08x}])", magic);
    return Step::kFailed;
  }
  if (in->size() < 8) return Step::kMore;
  const uint8_t version = r.U8();
  const uint8_t status = r.U8();
  if (version != kAuthVersion) {
    why_ = fmt::format("job-key answer version [{}] (expected [{}])", version, kAuthVersion);
    return Step::kFailed;
  }
  if (status != 0) {
    why_ = fmt::format("the peer refused: it does not know this job key for a {} connection "
                       "(another job, or a different VIGIL_JOB_KEY / root info)",
                       PurposeName(purpose_));
    return Step::kFailed;
  }
  if (in->size() < kAnswerBytes) return Step::kMore;
  Nonce theirs;
  std::memcpy(theirs.data(), in->data() + 8, kNonceBytes);
  if (theirs == my_nonce_) {
    why_ = "the peer reflected our nonce";
    return Step::kFailed;
  }
  const Mac expected = MacOf(key_, "acceptor", purpose_, my_nonce_, theirs);
  const bool ok = SameMac(in->data() + 8 + kNonceBytes, expected);
  Take(in, kAnswerBytes);
  if (!ok) {
    why_ = "the peer did not prove the job key (wrong key)";
    return Step::kFailed;
  }
  const Mac proof = MacOf(key_, "dialer", purpose_, my_nonce_, theirs);
  out->insert(out->end(), proof.begin(), proof.end());
  OPENSSL_cleanse(key_.bytes.data(), key_.bytes.size());
  done_ = true;
  return Step::kDone;
}

HcclResult AuthenticateDialer(net::Socket& s, Purpose purpose, const JobKey& key,
                              net::Deadline deadline, std::string* error) {
  DialerAuth auth(purpose, key);
  std::vector<uint8_t> hello = auth.Start();
  if (hello.empty()) {
    if (error) *error = auth.why();
    return HCCL_E_INTERNAL;
  }
  std::string why;
  HcclResult rc = s.SendAll(hello.data(), hello.size(), deadline, &why);
  // The header first: a refusal is the header alone.
  std::vector<uint8_t> in(8);
  if (rc == HCCL_SUCCESS) rc = s.RecvAll(in.data(), in.size(), deadline, &why);
  if (rc == HCCL_SUCCESS && in[5] == 0) {
    in.resize(kAnswerBytes);
    rc = s.RecvAll(in.data() + 8, kAnswerBytes - 8, deadline, &why);
  }
  if (rc != HCCL_SUCCESS) {
    if (error) {
      *error = fmt::format("job-key check with {} ({}) failed: {}", s.PeerAddress(),
                           PurposeName(purpose), why);
    }
    return rc;
  }
  std::vector<uint8_t> proof;
  if (auth.Feed(&in, &proof) != Step::kDone) {
    if (error) {
      *error = fmt::format("job-key check with {} ({}) failed: {}", s.PeerAddress(),
                           PurposeName(purpose), auth.why());
    }
    return HCCL_E_PARA;
  }
  rc = s.SendAll(proof.data(), proof.size(), deadline, &why);
  if (rc != HCCL_SUCCESS && error) {
    *error = fmt::format("job-key check with {} ({}) failed: {}", s.PeerAddress(),
                         PurposeName(purpose), why);
  }
  return rc;
}

HcclResult AuthenticateAcceptor(net::Socket& s, uint32_t allowed, const std::vector<JobKey>& keys,
                                net::Deadline deadline, Purpose* purpose,
                                std::vector<uint8_t>* rest, std::string* error) {
  AcceptorAuth auth(allowed, keys);
  std::vector<uint8_t> in, out;
  for (;;) {
    const Step step = auth.Feed(&in, &out);
    if (!out.empty()) {
      std::string why;
      if (s.SendAll(out.data(), out.size(), deadline, &why) != HCCL_SUCCESS) {
        if (error) *error = why;
        return HCCL_E_TCP_TRANSFER;
      }
      out.clear();
    }
    if (step == Step::kDone) break;
    if (step == Step::kFailed) {
      if (error) *error = auth.why();
      return HCCL_E_PARA;
    }
    // Exactly what the exchange still needs, so nothing of what follows is read here.
    const size_t want = auth.stage() == 0 ? (in.size() < 4 ? 4 : kHelloBytes) : kProofBytes;
    const size_t have = in.size();
    in.resize(want);
    std::string why;
    HcclResult rc = s.RecvAll(in.data() + have, want - have, deadline, &why);
    if (rc != HCCL_SUCCESS) {
      if (error) *error = why;
      return rc;
    }
  }
  if (purpose) *purpose = auth.purpose();
  if (rest) rest->insert(rest->end(), in.begin(), in.end());
  return HCCL_SUCCESS;
}

void LogRejected(const std::string& service, const std::string& listen_address,
                 const std::string& peer, const std::string& why) {
  HCCL_RUN_WARNING("[Auth]{} {} rejected connection from {}: {}; the job key was not proven, "
                   "connection closed",
                   service, listen_address, peer, why);
}

}  // namespace vigil::auth
