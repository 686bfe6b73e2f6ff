#include "diagnose/kb_matcher.h"

#include <re2/re2.h>

#include <charconv>
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
  for (auto [a, b] : {std::pair{&rank, o.rank}, {&remote_rank, o.remote_rank}, {&src_rank, o.src_rank},
                      {&dst_rank, o.dst_rank}, {&pid, o.pid}, {&device, o.device}, {&seq, o.seq},
                      {&timeout_ms, o.timeout_ms}, {&elapsed_ms, o.elapsed_ms}, {&ret, o.ret},
                      {&port, o.port}, {&informer_rank, o.informer_rank}, {&rank_size, o.rank_size},
                      {&index, o.index}})
    i(a, b);
  for (auto [a, b] : {std::pair{&ip, &o.ip}, {&remote_ip, &o.remote_ip}, {&op, &o.op}, {&group, &o.group},
                      {&tag, &o.tag}, {&status, &o.status}, {&informer_ip, &o.informer_ip}, {&kb, &o.kb},
                      {&device_ip, &o.device_ip}, {&phy_id, &o.phy_id}, {&server_ip, &o.server_ip},
                      {&vnic_ip, &o.vnic_ip}, {&remote_device, &o.remote_device}, {&value, &o.value},
                      {&detail, &o.detail}, {&ranks, &o.ranks}, {&time, &o.time}})
    s(a, *b);
  exited = exited || o.exited;
  from_env = from_env || o.from_env;
}

namespace {

enum Group : uint8_t {
  kRank, kRemoteRank, kSrcRank, kDstRank, kPid, kDevice, kSeq, kTimeoutMs, kTimeoutS, kElapsedMs,
  kRet, kPort, kIp, kRemoteIp, kOp, kGroup, kTag, kStatus, kKb, kExited, kInformerRank,
  kInformerIp, kRankSize, kIndex, kDeviceIp, kPhyId, kServerIp, kVnicIp, kRemoteDevice, kValue,
  kDetail, kRanks, kTime, kFromEnv, kRetHex, kGroups
};

const std::map<std::string, Group, std::less<>>& GroupNames() {
  static const std::map<std::string, Group, std::less<>> names = {
      {"rank", kRank},       {"remote_rank", kRemoteRank}, {"src_rank", kSrcRank},
      {"dst_rank", kDstRank}, {"pid", kPid},               {"device", kDevice},
      {"seq", kSeq},         {"timeout_ms", kTimeoutMs},   {"timeout_s", kTimeoutS},
      {"elapsed_ms", kElapsedMs}, {"ret", kRet},            {"port", kPort},
      {"ip", kIp},           {"remote_ip", kRemoteIp},     {"op", kOp},
      {"group", kGroup},     {"tag", kTag},                {"status", kStatus},
      {"kb", kKb},           {"exited", kExited},          {"informer_rank", kInformerRank},
      {"informer_ip", kInformerIp}, {"rank_size", kRankSize}, {"index", kIndex},
      {"device_ip", kDeviceIp}, {"phy_id", kPhyId},        {"server_ip", kServerIp},
      {"vnic_ip", kVnicIp},  {"remote_device", kRemoteDevice}, {"value", kValue},
      {"detail", kDetail},   {"ranks", kRanks},            {"time", kTime},
      {"from_env", kFromEnv}, {"ret_hex", kRetHex}};
  return names;
}

}  // namespace

struct FieldPattern::Impl {
  std::string needle;
  std::unique_ptr<RE2> re;  // null: the needle alone matches
  int index[kGroups];
  int groups = 0;
};

FieldPattern::FieldPattern() : impl_(std::make_unique<Impl>()) {}
FieldPattern::~FieldPattern() = default;
FieldPattern::FieldPattern(FieldPattern&&) noexcept = default;
FieldPattern& FieldPattern::operator=(FieldPattern&&) noexcept = default;

const std::string& FieldPattern::needle() const { return impl_->needle; }

bool FieldPattern::Compile(std::string_view needle, std::string_view re, std::string* error) {
  if (needle.empty() && re.empty()) {
    *error = "a pattern needs a needle or a regex";
    return false;
  }
  Impl& c = *impl_;
  c.needle = std::string(needle);
  std::fill(std::begin(c.index), std::end(c.index), -1);
  c.re.reset();
  c.groups = 0;
  if (re.empty()) return true;
  RE2::Options opt;
  opt.set_log_errors(false);
  c.re = std::make_unique<RE2>(re2::StringPiece(re.data(), re.size()), opt);
  if (!c.re->ok()) {
    *error = c.re->error();
    return false;
  }
  c.groups = c.re->NumberOfCapturingGroups();
  const auto& names = GroupNames();
  for (const auto& [name, index] : c.re->NamedCapturingGroups()) {
    auto it = names.find(name);
    if (it == names.end()) {
      *error = "unknown group " + name;
      return false;
    }
    c.index[it->second] = index;
  }
  return true;
}

bool FieldPattern::Read(std::string_view s, KbFields* f) const {
  const Impl& c = *impl_;
  if (!c.needle.empty() && s.find(c.needle) == std::string_view::npos) return false;
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
  auto str = [&](Group g) { return std::string(view(g)); };
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
  if (std::string_view h = view(kRetHex); r.ret < 0 && !h.empty()) {
    // A result code printed in hexadecimal (HCCL's errNo[0x...]); anything else leaves it unset.
    int64_t v = 0;
    auto [end, ec] = std::from_chars(h.data(), h.data() + h.size(), v, 16);
    if (ec == std::errc() && end == h.data() + h.size() && v >= 0) r.ret = v;
  }
  r.port = num(kPort);
  r.rank_size = num(kRankSize);
  r.index = num(kIndex);
  r.ip = str(kIp);
  r.remote_ip = str(kRemoteIp);
  r.op = str(kOp);
  r.group = str(kGroup);
  r.tag = str(kTag);
  r.status = str(kStatus);
  r.kb = str(kKb);
  r.exited = !view(kExited).empty();
  r.from_env = !view(kFromEnv).empty();
  r.informer_rank = num(kInformerRank);
  r.informer_ip = str(kInformerIp);
  r.device_ip = str(kDeviceIp);
  r.phy_id = str(kPhyId);
  r.server_ip = str(kServerIp);
  r.vnic_ip = str(kVnicIp);
  r.remote_device = str(kRemoteDevice);
  r.value = str(kValue);
  r.detail = str(kDetail);
  r.ranks = str(kRanks);
  r.time = str(kTime);
  f->Merge(r);
  return true;
}

namespace {

struct Compiled {
  const kb::Entry* entry = nullptr;
  bool fields_only = false;
  bool fallback = false;
  FieldPattern pattern;
};

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
  for (const kb::Entry& e : base.entries()) {
    for (const kb::Pattern& p : e.patterns) {
      Compiled c;
      c.entry = &e;
      c.fields_only = p.fields_only;
      c.fallback = p.fallback;
      std::string error;
      if (p.needle.size() < 2) error = "a pattern needs a needle of two bytes or more";
      if (!error.empty() || !c.pattern.Compile(p.needle, p.re, &error)) {
        impl_->errors.push_back(e.id + ": " + error);
        continue;
      }
      size_t i = impl_->patterns.size();
      uint16_t pair = Impl::Pair(c.pattern.needle().data());
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
      const std::string& k = impl_->patterns[it->second].pattern.needle();
      if (n - p >= k.size() && std::memcmp(d + p, k.data(), k.size()) == 0) return true;
    }
  }
  return false;
}

std::vector<KbMatch> KbMatcher::Match(std::string_view s, size_t max) const {
  std::vector<KbMatch> out, fallbacks;
  const kb::Entry* last = nullptr;
  for (const Compiled& c : impl_->patterns) {
    if (out.size() >= max) break;
    if (c.entry == last || c.fields_only) continue;  // one match per entry
    if (c.fallback && (!out.empty() || fallbacks.size() >= max)) continue;
    KbFields f;
    if (!c.pattern.Read(s, &f)) continue;
    (c.fallback ? fallbacks : out).push_back(KbMatch{c.entry, std::move(f)});
    last = c.entry;
  }
  // A fallback pattern's entry when nothing more specific recognised the line; an entry that
  // matched by a pattern of its own is not listed twice.
  if (out.empty()) return fallbacks;
  return out;
}

bool KbMatcher::Fields(const kb::Entry& entry, std::string_view s, KbFields* out) const {
  auto it = impl_->by_entry.find(&entry);
  if (it == impl_->by_entry.end()) return false;
  bool any = false;
  for (size_t i : it->second) any = impl_->patterns[i].pattern.Read(s, out) || any;
  return any;
}

}  // namespace vigil::diagnose
