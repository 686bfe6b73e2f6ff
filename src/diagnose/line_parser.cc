#include "diagnose/line_parser.h"

#include <array>
#include <cstring>

#include "diagnose/needle_set.h"
#include "diagnose/plog_forms.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vigil::diagnose {

const char* EventKindName(EventKind k) {
  switch (k) {
    case EventKind::kCommInit: return "comm_init";
    case EventKind::kCommDestroy: return "comm_destroy";
    case EventKind::kEnv: return "env";
    case EventKind::kHeartbeat: return "heartbeat";
    case EventKind::kClusterException: return "cluster_exception";
    case EventKind::kTaskBase: return "task_base";
    case EventKind::kTaskGroupRank: return "task_group_rank";
    case EventKind::kTaskOpData: return "task_op_data";
    case EventKind::kTaskPara: return "task_para";
    case EventKind::kScreenError: return "screen_error";
    case EventKind::kSdmaRuntime: return "sdma_runtime";
    case EventKind::kAivKernel: return "aiv_kernel";
    case EventKind::kRoceCqe: return "roce_cqe";
    case EventKind::kCqeDetail: return "cqe_detail";
    case EventKind::kLinkTimeout: return "link_timeout";
    case EventKind::kTopoTimeout: return "topo_timeout";
    case EventKind::kMissingRanks: return "missing_ranks";
    case EventKind::kBindFail: return "bind_fail";
    case EventKind::kParamCheckFail: return "param_check_fail";
    case EventKind::kTransportError: return "transport_error";
    case EventKind::kRankInfo: return "rank_info";
    case EventKind::kWaitPeer: return "wait_peer";
    case EventKind::kRootInfoFail: return "root_info_fail";
    case EventKind::kConnectedRanks: return "connected_ranks";
    case EventKind::kOpRetry: return "op_retry";
    case EventKind::kShrink: return "shrink";
    case EventKind::kOpInconsistent: return "op_inconsistent";
    case EventKind::kMultiStream: return "multi_stream";
    case EventKind::kStuckTrace: return "stuck_trace";
    case EventKind::kBufferOom: return "buffer_oom";
    case EventKind::kKeyInfo: return "key_info";
    case EventKind::kKb: return "kb";
    case EventKind::kError: return "error";
  }
  return "?";
}

void SplitTag(std::string_view tag, std::string_view* op, std::string_view* group) {
  size_t u = tag.find('_');
  if (u == std::string_view::npos) {
    *op = tag;
    *group = {};
    return;
  }
  *op = tag.substr(0, u);
  *group = tag.substr(u + 1);
}

int DtypeSize(std::string_view d) {
  if (d == "int8" || d == "uint8" || d == "hif8" || d.starts_with("fp8")) return 1;
  if (d == "int16" || d == "uint16" || d == "float16" || d == "fp16" || d == "bfloat16" ||
      d == "bfp16")
    return 2;
  if (d == "int32" || d == "uint32" || d == "float32" || d == "fp32") return 4;
  if (d == "int64" || d == "uint64" || d == "float64" || d == "fp64") return 8;
  if (d == "int128") return 16;
  return 0;
}

namespace {

std::string S(std::optional<std::string_view> v) { return v ? std::string(*v) : std::string(); }
int64_t I(std::optional<std::string_view> v) {
  if (!v) return -1;
  auto x = ToInt(*v);
  return x ? *x : -1;
}


// What an INFO/DEBUG record must contain to be of interest: op Entry lines, env echoes, the
// heartbeat's crimer lines, Key Info, and the prefilter of the "plog_lines" forms (identity
// lines, Vigil's op retries and shrinks).
const NeedleSet& InfoNeedles() {
  static const NeedleSet set = [] {
    std::vector<std::string> n = {"Entry-Hccl", "HCCL_", "crimer", "Key Info"};
    for (std::string& f : FormPrefilter("plog_lines")) n.push_back(std::move(f));
    return NeedleSet(std::move(n));
  }();
  return set;
}
// A WARNING record reaches the full dispatch below only with one of these: op Entry lines,
// screen codes, env echoes and the prefilter of the "fault_lines" forms.
const NeedleSet& WarningNeedles() {
  static const NeedleSet set = [] {
    std::vector<std::string> n = {"Entry-Hccl", "(E", "HCCL_"};
    for (std::string& f : FormPrefilter("fault_lines")) n.push_back(std::move(f));
    return NeedleSet(std::move(n));
  }();
  return set;
}

// A number after `key` in "key[3]", "key: 3", "key 3" or "key:3" forms.
int64_t LooseInt(std::string_view s, std::string_view key) {
  size_t k = s.find(key);
  if (k == std::string_view::npos) return -1;
  size_t p = k + key.size();
  while (p < s.size() && (s[p] == ' ' || s[p] == ':' || s[p] == '[' || s[p] == '=')) ++p;
  int64_t v = 0;
  size_t d0 = p;
  while (p < s.size() && s[p] >= '0' && s[p] <= '9' && p - d0 < 18) v = v * 10 + (s[p++] - '0');
  return p == d0 ? -1 : v;
}

// Finds "Title(EIxxxx):" anywhere; fills code and title. EJ/EL/EE/EH codes from other
// components are accepted too.
bool FindErrorCodeTag(std::string_view s, std::string* code, std::string* title, size_t* after) {
  size_t from = 0;
  while (true) {
    size_t k = s.find("(E", from);
    if (k == std::string_view::npos || k + 9 > s.size()) return false;
    bool ok = s[k + 2] >= 'A' && s[k + 2] <= 'Z';
    for (size_t i = 3; ok && i < 7; ++i) ok = s[k + i] >= '0' && s[k + i] <= '9';
    ok = ok && s[k + 7] == ')' && s[k + 8] == ':';
    if (ok) {
      *code = std::string(s.substr(k + 1, 6));
      size_t t0 = k;
      while (t0 > 0 && s[t0 - 1] != ' ' && s[t0 - 1] != ']' && k - t0 < 64) --t0;
      *title = std::string(s.substr(t0, k - t0));
      *after = k + 9;
      return true;
    }
    from = k + 1;
  }
}


// Bytes that ForEachField counts as part of a key.
struct KeyChars {
  bool v[256] = {};
  constexpr KeyChars() {
    for (int c = 0; c < 256; ++c)
      v[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ' ';
  }
};
constexpr KeyChars kKeyChars;

// Whether the key of the field whose '[' is at s[b] (ForEachField's key: the run of key bytes
// before '[', leading spaces trimmed, not before p) is exactly `key`.
inline bool KeyIs(std::string_view s, size_t p, size_t b, std::string_view key) {
  if (b < p + key.size()) return false;
  size_t q = b - key.size();
  for (size_t i = 0; i < key.size(); ++i)
    if (s[q + i] != key[i]) return false;
  while (q > p && s[q - 1] == ' ') --q;
  return q == p || !kKeyChars.v[static_cast<unsigned char>(s[q - 1])];
}

// The fields of an op Entry line: the hottest path of a large run log. The same result as
// ForEachField with a switch on the key, but each field is recognized from the bytes right
// before its '[' instead of walking the key back.
void EntryFields(std::string_view s, OpEntry* op, OpKey* key, std::string_view* tag, std::string_view* count,
                 std::string_view* send_count, std::string_view* recv_count) {
  auto field = [&](size_t p, size_t b, size_t e) {
    if (b == 0) return;
    std::string_view v = e == std::string_view::npos ? s.substr(b + 1) : s.substr(b + 1, e - b - 1);
    switch (s[b - 1]) {
      case 'g':
        if (KeyIs(s, p, b, "tag")) *tag = v;
        break;
      case 't':
        if (KeyIs(s, p, b, "count")) *count = v;
        else if (KeyIs(s, p, b, "sendCount")) *send_count = v;
        else if (KeyIs(s, p, b, "recvCount")) *recv_count = v;
        break;
      case 'e':
        if (KeyIs(s, p, b, "dataType")) op->dtype = v;
        break;
      case 'p':
        if (KeyIs(s, p, b, "op")) op->reduce = v;
        break;
      case 'k':
        if (KeyIs(s, p, b, "localRank")) op->local_rank = static_cast<int32_t>(ToInt(v).value_or(-1));
        break;
      case 'd':
        if (KeyIs(s, p, b, "streamId")) op->stream = static_cast<int32_t>(ToInt(v).value_or(-1));
        break;
      case 'm':
        if (KeyIs(s, p, b, "comm")) key->comm_ptr = v;
        break;
      default:
        break;
    }
  };
  const size_t n = s.size();
  const char* d = s.data();
#if defined(__SSE2__)
  constexpr size_t kMax = 1024;
  if (n <= kMax) {
    // Bracket positions from one vectorized pass.
    uint64_t open[kMax / 64 + 1], close[kMax / 64 + 1];
    const size_t words = n / 64 + 1;
    std::memset(open, 0, words * sizeof(uint64_t));
    std::memset(close, 0, words * sizeof(uint64_t));
    size_t i = 0;
    const __m128i ob = _mm_set1_epi8('['), cb = _mm_set1_epi8(']');
    for (; i + 16 <= n; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
      open[i >> 6] |= static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, ob)))) << (i & 63);
      close[i >> 6] |= static_cast<uint64_t>(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, cb)))) << (i & 63);
    }
    for (; i < n; ++i) {
      if (d[i] == '[') open[i >> 6] |= uint64_t{1} << (i & 63);
      if (d[i] == ']') close[i >> 6] |= uint64_t{1} << (i & 63);
    }
    auto next = [words](const uint64_t* bits, size_t from) -> size_t {
      size_t w = from >> 6;
      if (w >= words) return std::string_view::npos;
      uint64_t x = bits[w] & (~uint64_t{0} << (from & 63));
      while (x == 0) {
        if (++w >= words) return std::string_view::npos;
        x = bits[w];
      }
      return (w << 6) + static_cast<size_t>(__builtin_ctzll(x));
    };
    size_t p = 0;
    while (p < n) {
      size_t b = next(open, p);
      if (b == std::string_view::npos) return;
      size_t e = next(close, b + 1);
      field(p, b, e);
      if (e == std::string_view::npos) return;
      p = e + 1;
    }
    return;
  }
#endif
  size_t p = 0;
  while (p < n) {
    size_t b = s.find('[', p);
    if (b == std::string_view::npos) return;
    size_t e = s.find(']', b + 1);
    field(p, b, e);
    if (e == std::string_view::npos) return;
    p = e + 1;
  }
}

}  // namespace

Parsed ParseRecordContent(const Record& r, const Loc& loc, Event* ev, OpEntry* op, OpKey* key) {
  std::string_view c = r.content;
  bool is_error = r.level == Level::kError || r.level == Level::kScreen;
  // INFO/DEBUG/WARNING records are the bulk of a log and only a few kinds matter among them: one
  // pass over the content rejects the rest before the dispatch below.
  // HCCL's op Entry lines carry "Entry-Hccl" right at the start of the content.
  size_t entry = c.starts_with("Entry-Hccl") ? 0 : std::string_view::npos;
  if (entry == std::string_view::npos) {
    if (!is_error && (r.level == Level::kWarning ? !WarningNeedles().AnyIn(c) : !InfoNeedles().AnyIn(c)))
      return Parsed::kNone;
    entry = c.find("Entry-Hccl");
  }

  // --- Entry lines (the most frequent records of interest) ---
  if (entry != std::string_view::npos) {
    std::string_view rest = c.substr(entry + 10);
    size_t e = 0;
    while (e < rest.size() && rest[e] != ':' && rest[e] != ' ' && rest[e] != ',' && e < 48) ++e;
    std::string_view name = rest.substr(0, e);
    if (name.starts_with("CommInit")) {
      ev->kind = EventKind::kCommInit;
      ev->rank_size = I(Field(rest, "ranks"));
      ev->rank = I(Field(rest, "rank"));
      ev->ip = S(Field(rest, "host ip"));
      ev->port = I(Field(rest, "port"));
      ev->group = S(Field(rest, "identifier"));
      if (ev->group.empty()) ev->group = S(Field(rest, "commName"));
      ev->device = I(Field(rest, "deviceLogicId"));
      ev->name = std::string(name);
    } else if (name.starts_with("CommDestroy")) {
      ev->kind = EventKind::kCommDestroy;
      ev->group = S(Field(rest, "identifier"));
      if (ev->group.empty()) ev->group = S(Field(rest, "group"));
      if (ev->group.empty()) ev->group = S(Field(rest, "commName"));
      ev->detail = S(Field(rest, "comm"));
    } else if (!name.empty()) {
      op->loc = loc;
      op->time = r.time;
      op->op = name;
      std::string_view tag, count, send_count, recv_count;
      EntryFields(rest.substr(e), op, key, &tag, &count, &send_count, &recv_count);
      std::string_view opname, group;
      SplitTag(tag, &opname, &group);
      std::string_view cnt = !count.empty() ? count : !send_count.empty() ? send_count : recv_count;
      auto v = ToInt(cnt);
      op->count = v && *v >= 0 ? static_cast<uint64_t>(*v) : 0;
      key->group = group;
      return Parsed::kOp;
    } else {
      return Parsed::kNone;
    }
    ev->loc = loc;
    return Parsed::kEvent;
  }

  ev->loc = loc;
  if (r.level != Level::kWarning && ParseRankLine(r, ev)) return Parsed::kEvent;
  if (!is_error && r.level != Level::kWarning && c.find("HCCL_") == std::string_view::npos &&
      c.find("crimer") == std::string_view::npos && c.find("Key Info") == std::string_view::npos)
    return Parsed::kNone;

  // --- screen errors "[PID: n] ts Title(EIxxxx): message", also echoed into the debug log ---
  if (is_error || r.level == Level::kWarning) {
    size_t after = 0;
    if (c.find("(E") != std::string_view::npos && FindErrorCodeTag(c, &ev->code, &ev->name, &after)) {
      ev->kind = ev->code == "EI9001" ? EventKind::kBufferOom : EventKind::kScreenError;
      std::string_view msg = c.substr(after);
      ev->detail = Printable(Trim(msg), 1200);
      ParseScreenFields(msg, ev);
      return Parsed::kEvent;
    }
  }

  // --- env echo ---
  size_t env = c.find("HCCL_ENV]");
  if (env != std::string_view::npos || c.find("HCCL_EXEC_TIMEOUT") != std::string_view::npos) {
    std::string_view rest = env != std::string_view::npos ? c.substr(env + 9) : c;
    size_t p = env != std::string_view::npos ? 0 : rest.find("HCCL_EXEC_TIMEOUT");
    while (p < rest.size() && rest[p] == ' ') ++p;
    size_t e = p;
    while (e < rest.size() && rest[e] != ' ' && rest[e] != '[' && rest[e] != ',' && rest[e] != ':' &&
           rest[e] != '=' && rest[e] != ']')
      ++e;
    std::string_view name = rest.substr(p, e - p);
    if (!name.starts_with("HCCL_") && !name.starts_with("ASCEND_") && !name.starts_with("VIGIL_"))
      return Parsed::kNone;
    std::string_view after = rest.substr(e);
    size_t b = after.find('[');
    int64_t loose = -1;
    bool not_set = Contains(after, "is not set");
    if (!not_set && (b == std::string_view::npos || b > 80)) {
      // "HCCL_EXEC_TIMEOUT=300" / "HCCL_EXEC_TIMEOUT: 300" forms
      loose = LooseInt(after, "");
      if (loose < 0) return Parsed::kNone;
    }
    ev->kind = EventKind::kEnv;
    ev->name = std::string(name);
    if (not_set) {
      ev->value = "";
      ev->detail = "not set";
    } else {
      if (loose >= 0) {
        ev->value = std::to_string(loose);
      } else {
        size_t b2 = after.find(']', b);
        ev->value = std::string(after.substr(b + 1, b2 == std::string_view::npos ? std::string_view::npos : b2 - b - 1));
      }
    }
    ev->from_env = Contains(after, "environment");
    return Parsed::kEvent;
  }

  // --- the fault records: rows of data/formats/fault_lines.json (plog_forms.h) ---
  if (ParseFaultLine(r, ev)) return Parsed::kEvent;
  if (is_error) {
    ev->kind = EventKind::kError;
    return Parsed::kEvent;
  }
  return Parsed::kNone;
}

}  // namespace vigil::diagnose
