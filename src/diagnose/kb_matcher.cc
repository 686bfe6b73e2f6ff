#include "diagnose/kb_matcher.h"

#include <re2/re2.h>

#include <cstring>
#include <map>

#include "diagnose/text_util.h"

namespace vigil::diagnose {

void KbFields::Merge(const KbFields& o) {
  auto i = [](int64_t* a, int64_t b) {
    if (*a < 0) *a = b;
  };
  auto s = [](std::string* a, const std::string& b) {
    if (a->empty()) *a = b;
  };
  i(&rank, o.rank);
  i(&remote_rank, o.remote_rank);
  i(&src_rank, o.src_rank);
  i(&dst_rank, o.dst_rank);
  i(&pid, o.pid);
  i(&device, o.device);
  i(&seq, o.seq);
  i(&timeout_ms, o.timeout_ms);
  i(&elapsed_ms, o.elapsed_ms);
  i(&ret, o.ret);
  i(&port, o.port);
  i(&informer_rank, o.informer_rank);
  s(&informer_ip, o.informer_ip);
  s(&kb, o.kb);
  exited = exited || o.exited;
  s(&ip, o.ip);
  s(&remote_ip, o.remote_ip);
  s(&op, o.op);
  s(&group, o.group);
  s(&tag, o.tag);
  s(&status, o.status);
}

namespace {

enum Group : uint8_t {
  kRank, kRemoteRank, kSrcRank, kDstRank, kPid, kDevice, kSeq, kTimeoutMs, kTimeoutS, kElapsedMs,
  kRet, kPort, kIp, kRemoteIp, kOp, kGroup, kTag, kStatus, kKb, kExited, kInformerRank,
  kInformerIp, kGroups
};

const std::map<std::string, Group>& GroupNames() {
  static const std::map<std::string, Group> names = {
      {"rank", kRank},       {"remote_rank", kRemoteRank}, {"src_rank", kSrcRank},
      {"dst_rank", kDstRank}, {"pid", kPid},               {"device", kDevice},
      {"seq", kSeq},         {"timeout_ms", kTimeoutMs},   {"timeout_s", kTimeoutS},
      {"elapsed_ms", kElapsedMs}, {"ret", kRet},            {"port", kPort},
      {"ip", kIp},           {"remote_ip", kRemoteIp},     {"op", kOp},
      {"group", kGroup},     {"tag", kTag},                {"status", kStatus},
      {"kb", kKb},           {"exited", kExited},          {"informer_rank", kInformerRank},
      {"informer_ip", kInformerIp}};
  return names;
}

struct Compiled {
  const kb::Entry* entry = nullptr;
  std::string needle;
  bool fields_only = false;
  std::unique_ptr<RE2> re;  // null: the needle alone matches
  int index[kGroups];
  int groups = 0;
};

bool Read(const Compiled& c, std::string_view s, KbFields* f) {
  if (c.needle.empty() || s.find(c.needle) == std::string_view::npos) return false;
  if (!c.re) return true;
  re2::StringPiece m[24];
  int n = std::min(c.groups + 1, 24);
  if (!c.re->Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), RE2::UNANCHORED, m, n)) return false;
  auto view = [&](Group g) -> std::string_view {
    int i = c.index[g];
    if (i < 0 || i >= n || m[i].data() == nullptr) return {};
    return std::string_view(m[i].data(), m[i].size());
  };
  auto num = [&](Group g) -> int64_t {
    std::string_view v = view(g);
    if (v.empty()) return -1;
    auto x = ToInt(v);
    return x ? *x : -1;
  };
  KbFields r;
  r.rank = num(kRank);
  r.remote_rank = num(kRemoteRank);
  r.src_rank = num(kSrcRank);
  r.dst_rank = num(kDstRank);
  r.pid = num(kPid);
  r.device = num(kDevice);
  r.seq = num(kSeq);
  r.timeout_ms = num(kTimeoutMs);
  if (r.timeout_ms < 0 && num(kTimeoutS) >= 0) r.timeout_ms = num(kTimeoutS) * 1000;
  r.elapsed_ms = num(kElapsedMs);
  r.ret = num(kRet);
  r.port = num(kPort);
  r.ip = std::string(view(kIp));
  r.remote_ip = std::string(view(kRemoteIp));
  r.op = std::string(view(kOp));
  r.group = std::string(view(kGroup));
  r.tag = std::string(view(kTag));
  r.status = std::string(view(kStatus));
  r.kb = std::string(view(kKb));
  r.exited = !view(kExited).empty();
  r.informer_rank = num(kInformerRank);
  r.informer_ip = std::string(view(kInformerIp));
  f->Merge(r);
  return true;
}

}  // namespace

struct KbMatcher::Impl {
  std::vector<Compiled> patterns;
  std::map<const kb::Entry*, std::vector<size_t>> by_entry;
  // Needle candidates by their first two bytes.
  std::vector<uint64_t> pair_bits = std::vector<uint64_t>(65536 / 64, 0);
  std::multimap<uint16_t, size_t> by_pair;
  std::vector<std::string> errors;

  static uint16_t Pair(const char* p) {
    return static_cast<uint16_t>(static_cast<unsigned char>(p[0]) | (static_cast<unsigned char>(p[1]) << 8));
  }
};

KbMatcher::KbMatcher(const kb::KnowledgeBase& base) : impl_(std::make_unique<Impl>()) {
  const auto& names = GroupNames();
  for (const kb::Entry& e : base.entries()) {
    for (const kb::Pattern& p : e.patterns) {
      if (p.needle.size() < 2) {
        impl_->errors.push_back(e.id + ": a pattern needs a needle of two bytes or more");
        continue;
      }
      Compiled c;
      c.entry = &e;
      c.needle = p.needle;
      c.fields_only = p.fields_only;
      std::fill(std::begin(c.index), std::end(c.index), -1);
      if (!p.re.empty()) {
        RE2::Options opt;
        opt.set_log_errors(false);
        c.re = std::make_unique<RE2>(p.re, opt);
        if (!c.re->ok()) {
          impl_->errors.push_back(e.id + ": " + c.re->error());
          continue;
        }
        c.groups = c.re->NumberOfCapturingGroups();
        for (const auto& [name, index] : c.re->NamedCapturingGroups()) {
          auto it = names.find(name);
          if (it == names.end()) impl_->errors.push_back(e.id + ": unknown group " + name);
          else c.index[it->second] = index;
        }
      }
      size_t i = impl_->patterns.size();
      uint16_t pair = Impl::Pair(c.needle.data());
      impl_->pair_bits[pair >> 6] |= uint64_t{1} << (pair & 63);
      impl_->by_pair.emplace(pair, i);
      impl_->by_entry[&e].push_back(i);
      impl_->patterns.push_back(std::move(c));
    }
  }
}

KbMatcher::~KbMatcher() = default;

const KbMatcher& KbMatcher::Get() {
  static const KbMatcher* m = new KbMatcher(kb::Get());  // never destroyed: used by workers
  return *m;
}

const std::vector<std::string>& KbMatcher::errors() const { return impl_->errors; }

bool KbMatcher::AnyNeedle(std::string_view s) const {
  const char* d = s.data();
  const size_t n = s.size();
  const uint64_t* bits = impl_->pair_bits.data();
  for (size_t p = 0; p + 1 < n; ++p) {
    uint16_t pair = Impl::Pair(d + p);
    if ((bits[pair >> 6] >> (pair & 63) & 1) == 0) continue;
    auto [a, b] = impl_->by_pair.equal_range(pair);
    for (auto it = a; it != b; ++it) {
      const std::string& k = impl_->patterns[it->second].needle;
      if (n - p >= k.size() && std::memcmp(d + p, k.data(), k.size()) == 0) return true;
    }
  }
  return false;
}

std::vector<KbMatch> KbMatcher::Match(std::string_view s, size_t max) const {
  std::vector<KbMatch> out;
  const kb::Entry* last = nullptr;
  for (const Compiled& c : impl_->patterns) {
    if (out.size() >= max) break;
    if (c.entry == last || c.fields_only) continue;  // one match per entry
    KbFields f;
    if (!Read(c, s, &f)) continue;
    out.push_back(KbMatch{c.entry, std::move(f)});
    last = c.entry;
  }
  return out;
}

bool KbMatcher::Fields(const kb::Entry& entry, std::string_view s, KbFields* out) const {
  auto it = impl_->by_entry.find(&entry);
  if (it == impl_->by_entry.end()) return false;
  bool any = false;
  for (size_t i : it->second) any = Read(impl_->patterns[i], s, out) || any;
  return any;
}

}  // namespace vigil::diagnose
