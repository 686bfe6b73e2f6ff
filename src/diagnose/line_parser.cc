#include "diagnose/line_parser.h"

#include <array>
#include <cstring>

#include "diagnose/needle_set.h"
#include "diagnose/rank_lines.h"

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
uint64_t H(std::optional<std::string_view> v) {
  if (!v) return 0;
  auto x = ToHex(*v);
  return x ? *x : 0;
}


// What an INFO/DEBUG record must contain to be of interest (op Entry lines, env echoes, the
// heartbeat's crimer lines, key info, the identity lines of rank_lines.h, Vigil's op retries and
// shrinks).
const NeedleSet<12> kInfoNeedles({"Entry-Hccl", "HCCL_", "crimer", "Key Info", "SetupAgent", "hcclCommInitInfo",
                                  "hcom init by file", "HcclGetRootInfo", "HcclCommInitRootInfo", "Listen on ip",
                                  "[OpRetry]communicator[", "[Shrink]"});
// A WARNING record reaches the full dispatch below only with one of these: each branch of
// ParseRecordContent that a non-error record can take requires at least one of them.
const NeedleSet<23> kWarningNeedles({"Entry-Hccl", "(E", "HCCL_", "Heartbeat", "crimer",
                                     "Cluster Exception", "Task run", "kernel_name=aiv", "dma error",
                                     "DMA error", "cqe status", "CQE status", "socket establish",
                                     "get socket", "connect", "missing ranks", "listen", "bind", "Bind",
                                     "check fail", "ransport", "opinfo inconsistent", "Key Info"});

// "server 127.0.0.1, device ID 0, device IP 127.10.0.1." pieces of the EI0013 screen text.
std::string Token(std::string_view s, std::string_view key) {
  size_t k = s.find(key);
  if (k == std::string_view::npos) return {};
  size_t p = k + key.size();
  while (p < s.size() && s[p] == ' ') ++p;
  size_t e = p;
  while (e < s.size() && s[e] != ',' && s[e] != ' ' && s[e] != ']') ++e;
  std::string_view t = s.substr(p, e - p);
  while (!t.empty() && t.back() == '.') t.remove_suffix(1);  // the sentence's full stop
  return std::string(t);
}

// The value after `key` up to ", " or the end, in "key value, key2 value2." sentences (the
// message's final full stop dropped). `key` must start the text or follow ", " / ": ".
std::string CommaValue(std::string_view s, std::string_view key) {
  size_t from = 0;
  while (true) {
    size_t k = s.find(key, from);
    if (k == std::string_view::npos) return {};
    if (k == 0 || (k >= 2 && (s.substr(k - 2, 2) == ", " || s.substr(k - 2, 2) == ": "))) {
      std::string_view v = s.substr(k + key.size());
      size_t e = v.find(", ");
      if (e != std::string_view::npos) v = v.substr(0, e);
      v = Trim(v);
      if (e == std::string_view::npos && !v.empty() && v.back() == '.') v.remove_suffix(1);
      return std::string(v.substr(0, 256));
    }
    from = k + 1;
  }
}

// Text between `open` (e.g. "localInfo{") and the next '}'.
std::string_view Braced(std::string_view s, std::string_view open) {
  size_t k = s.find(open);
  if (k == std::string_view::npos) return {};
  size_t p = k + open.size();
  size_t e = s.find('}', p);
  return e == std::string_view::npos ? s.substr(p) : s.substr(p, e - p);
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

void FillStage(std::string_view c, Event* ev) {
  size_t k = c.find("[TaskExecStage][");
  if (k == std::string_view::npos) return;
  size_t p = k + 16;
  size_t e = c.find(']', p);
  if (e == std::string_view::npos) return;
  ev->stage = std::string(c.substr(p, e - p));
  if (e + 1 < c.size() && c[e + 1] == '[') {
    size_t e2 = c.find(']', e + 2);
    if (e2 != std::string_view::npos) ev->engine = std::string(c.substr(e + 2, e2 - e - 2));
  }
}

}  // namespace

void ParseScreenFields(std::string_view msg, Event* ev) {
  if (ev->code == "EI0013") {
    size_t l = msg.find("Local information:");
    size_t r = msg.find("Peer information:");
    std::string_view local = l == std::string_view::npos ? std::string_view() : msg.substr(l, r == std::string_view::npos ? std::string_view::npos : r - l);
    std::string_view peer = r == std::string_view::npos ? std::string_view() : msg.substr(r);
    ev->local_server = Token(local, "server");
    ev->local_device = Token(local, "device ID");
    ev->local_ip = Token(local, "device IP");
    ev->remote_server = Token(peer, "server");
    ev->remote_device = Token(peer, "device ID");
    ev->remote_ip = Token(peer, "device IP");
  } else if (ev->code == "EI0012" || ev->code == "EI0002") {
    ev->remote_rank = I(Field(msg, "Remote rank:"));
    if (ev->remote_rank < 0) ev->remote_rank = I(Field(msg, "remote rank"));
    ev->stream = I(Field(msg, "streamID:"));
    ev->task = I(Field(msg, "taskID"));
    ev->tag = S(Field(msg, "tag"));
    ev->src = H(Field(msg, "src:"));
    ev->dst = H(Field(msg, "dst:"));
    ev->size = H(Field(msg, "size:"));
    ev->detail = S(Field(msg, "link type:"));
    ev->group = S(Field(msg, "group:"));
    ev->rank_size = I(Field(msg, "rankSize"));
    ev->rank = I(Field(msg, "rankId"));
  } else if (ev->code == "EI0019" || ev->code == "EI0020") {
    ev->ip = S(Field(msg, "IP:"));
    ev->port = I(Field(msg, "port:"));
    if (ev->port < 0) ev->port = LooseInt(msg, "port");
  } else if (ev->code == "EI0005") {
    // CANN's form: "..., ccl_op AllReduce, group G, parameter opType, local end A, remote end B."
    // (the catalogue text); bracketed "parameter[..] local[..] remote[..]" forms are read too.
    ev->tag = CommaValue(msg, "ccl_op ");
    if (ev->tag.empty()) ev->tag = S(Field(msg, "tag"));
    ev->group = CommaValue(msg, "group ");
    ev->name = CommaValue(msg, "parameter ");
    if (ev->name.empty()) ev->name = S(Field(msg, "parameter"));
    ev->local = CommaValue(msg, "local end ");
    if (ev->local.empty()) ev->local = S(Field(msg, "local"));
    ev->remote = CommaValue(msg, "remote end ");
    if (ev->remote.empty()) ev->remote = S(Field(msg, "remote"));
  } else if (ev->code == "EI0006") {
    // "Getting socket times out. Reason: ..." with the detector's result; rank lists vary.
    if (auto f = Field(msg, "agent")) ev->ranks = AllInts(*f);
  } else if (ev->code == "EI0015") {
    // "... List of unconnected ranks: \"[16,17,...,]\"": the ranks the root never heard from.
    size_t k = msg.find("unconnected ranks");
    size_t b = k == std::string_view::npos ? k : msg.find('[', k);
    size_t e = b == std::string_view::npos ? b : msg.find(']', b);
    if (e != std::string_view::npos) ev->ranks = AllInts(msg.substr(b + 1, e - b - 1));
  } else if (ev->code == "EI9001") {
    ev->value = S(Field(msg, "HCCL_BUFFSIZE"));
    ev->group = S(Field(msg, "communicator"));
  }
}

namespace {

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
    if (!is_error && (r.level == Level::kWarning ? !kWarningNeedles.AnyIn(c) : !kInfoNeedles.AnyIn(c)))
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

  // --- heartbeat family ---
  if (c.find("HeartbeatAbnormal") != std::string_view::npos || c.find("crimer rank") != std::string_view::npos ||
      c.find("Cluster Exception Location") != std::string_view::npos) {
    if (Contains(c, "Cluster Exception Location")) {
      ev->kind = EventKind::kClusterException;
      auto loc_f = Field(c, "Location[IP/ID]:");
      if (!loc_f) loc_f = Field(c, "Location:");
      if (!loc_f) loc_f = Field(c, "Location");
      ev->crimer = S(loc_f);
      ev->aux_time = ParseAnyTime(Field(c, "Arrival Time:").value_or(std::string_view()));
      ev->informer = S(Field(c, "Discoverer:"));
      ev->status = S(Field(c, "ExceptionType:"));
      size_t pr = c.find("Possible Reason:");
      if (pr != std::string_view::npos) ev->detail = Printable(Trim(c.substr(pr + 16)), 300);
      return Parsed::kEvent;
    }
    if (Contains(c, "CQE ERROR]")) {
      ev->kind = EventKind::kCqeDetail;
      ev->status = S(Field(c, "status"));
      ev->aux_time = ParseAnyTime(Field(c, "time:").value_or(std::string_view()));
      std::string_view l = Braced(c, "localInfo{");
      std::string_view rm = Braced(c, "remoteIP{");
      if (rm.empty()) rm = Braced(c, "remoteInfo{");
      ev->local_server = S(Field(l, "server"));
      ev->local_device = S(Field(l, "deviceId"));
      ev->local_ip = S(Field(l, "deviceIp"));
      ev->remote_server = S(Field(rm, "server"));
      ev->remote_device = S(Field(rm, "deviceId"));
      ev->remote_ip = S(Field(rm, "deviceIp"));
      return Parsed::kEvent;
    }
    if (Contains(c, "crimer rank")) {
      ev->kind = EventKind::kHeartbeat;
      ev->local = S(Field(c, "local rank"));
      ev->crimer = S(Field(c, "crimer rank"));
      ev->status = S(Field(c, "status"));
      ev->informer = S(Field(c, "informer rank"));
      return Parsed::kEvent;
    }
  }

  // --- task exception ---
  size_t trf = c.find("Task run failed");
  if (trf != std::string_view::npos) {
    FillStage(c, ev);
    std::string_view rest = c.substr(trf);
    if (Contains(rest, "base information")) {
      ev->kind = EventKind::kTaskBase;
      ev->stream = I(Field(rest, "streamID:"));
      ev->task = I(Field(rest, "taskID"));
      ev->tag = S(Field(rest, "tag"));
      ev->index = I(Field(rest, "index"));
      ev->name = S(Field(rest, "taskType"));
      ev->detail = S(Field(rest, "AlgType(level 0-1-2):"));
    } else if (Contains(rest, "groupRank information")) {
      ev->kind = EventKind::kTaskGroupRank;
      ev->group = S(Field(rest, "group:"));
      ev->detail = S(Field(rest, "user define information"));
      ev->rank_size = I(Field(rest, "rankSize"));
      ev->rank = I(Field(rest, "rankId"));
      ev->peer_rank = I(Field(rest, "peerRankId"));
      ev->tag = S(Field(rest, "tag"));
    } else if (Contains(rest, "opData information")) {
      ev->kind = EventKind::kTaskOpData;
      ev->aux_time = ParsePlogStamp(Field(rest, "timeStamp:").value_or(std::string_view()));
      ev->device = I(Field(rest, "deviceId"));
      ev->index = I(Field(rest, "index"));
      ev->count = I(Field(rest, "count"));
      ev->reduce = S(Field(rest, "reduceType"));
      ev->src = H(Field(rest, "src"));
      ev->dst = H(Field(rest, "dst"));
      ev->dtype = S(Field(rest, "dataType"));
    } else if (Contains(rest, "para information")) {
      ev->kind = EventKind::kTaskPara;
      ev->src = H(Field(rest, "src"));
      ev->dst = H(Field(rest, "dst"));
      ev->size = H(Field(rest, "size"));
      ev->remote_rank = I(Field(rest, "remote rank"));
      if (ev->remote_rank < 0) ev->remote_rank = I(Field(rest, "remoteRank"));
      if (ev->remote_rank < 0) ev->remote_rank = I(Field(rest, "remote rank:"));
      if (S(Field(rest, "remote rank:")) == "local") ev->remote = "local";  // its own other stream
      ev->detail = S(Field(rest, "link type"));
      ev->tag = S(Field(rest, "tag"));
    } else {
      ev->kind = EventKind::kError;
    }
    return Parsed::kEvent;
  }

  // --- runtime / driver lines ---
  if (r.module == "RUNTIME") {
    if (Contains(c, "kernel_name=aiv")) {
      ev->kind = EventKind::kAivKernel;
      ev->device = I(KeyValue(c, "device_id"));
      ev->stream = I(KeyValue(c, "stream_id"));
      ev->task = I(KeyValue(c, "task_id"));
      ev->name = S(KeyValue(c, "kernel_name"));
      size_t ext = c.find("kernel info ext=");
      if (ext != std::string_view::npos) {
        std::string_view x = c.substr(ext + 16);
        ev->detail = std::string(x.substr(0, x.find(',')));
      }
      return Parsed::kEvent;
    }
    if (Contains(c, "sdma error") || Contains(c, "SDMA error") || Contains(c, "Sdma error")) {
      ev->kind = EventKind::kSdmaRuntime;
      ev->device = I(KeyValue(c, "dev_id"));
      ev->stream = I(KeyValue(c, "stream_id"));
      ev->task = I(KeyValue(c, "task_id"));
      ev->detail = S(Field(c, "err_type=4"));
      if (ev->detail.empty()) ev->detail = "sdma error";
      return Parsed::kEvent;
    }
  }
  if (Contains(c, "error cqe status") || Contains(c, "CQE status[")) {
    ev->kind = EventKind::kRoceCqe;
    auto st = Field(c, "CQE status");
    if (st) {
      ev->status = std::string(*st);
    } else {
      size_t k = c.find("error cqe status");
      std::string_view x = c.substr(k + 16);
      while (!x.empty() && (x.front() == ':' || x.front() == ' ')) x.remove_prefix(1);
      ev->status = std::string(x.substr(0, x.find_first_of(" ,")));
    }
    return Parsed::kEvent;
  }

  // --- link establishment ---
  if (Contains(c, "socket establish timeout") || Contains(c, "wait socket establish")) {
    ev->kind = EventKind::kLinkTimeout;
    ev->detail = S(Field(c, "role"));
    ev->rank = I(Field(c, "rank"));
    ev->value = S(Field(c, "timeout"));
    return Parsed::kEvent;
  }
  if (Contains(c, "get socket timeout")) {
    ev->kind = EventKind::kTopoTimeout;
    ev->detail = Contains(c, "server") ? "server" : "agent";
    ev->connected = LooseInt(c, "total connected num");
    ev->need = LooseInt(c, "need connect rankNum");
    return Parsed::kEvent;
  }
  if (Contains(c, "Failed to connect agent") || Contains(c, "connected num") ||
      Contains(c, "missing ranks") || Contains(c, "not connected rank")) {
    ev->kind = EventKind::kMissingRanks;
    if (auto f = Field(c, "agent")) ev->ranks = AllInts(*f);
    else if (auto g = Field(c, "ranks")) ev->ranks = AllInts(*g);
    ev->connected = LooseInt(c, "total connected num");
    ev->need = LooseInt(c, "need connect rankNum");
    return Parsed::kEvent;
  }
  if ((Contains(c, "listen") || Contains(c, "bind") || Contains(c, "Bind")) &&
      (Contains(c, "fail") || Contains(c, "Fail")) && (Contains(c, "port") || Contains(c, "ip["))) {
    ev->kind = EventKind::kBindFail;
    ev->ip = S(Field(c, "ip"));
    ev->port = I(Field(c, "port"));
    if (ev->port < 0) ev->port = LooseInt(c, "port");
    return Parsed::kEvent;
  }
  // Vigil's consistency check lines (HCCL prints "CMD information X check fail" instead):
  //   "[ParameterConflict]rank[1] of communicator [G]: comm-wide parameter buffsize is
  //    inconsistent: buffsize local[2] remote[1] (remote rank[0] ...), identifier[G]"
  //   "op inconsistent in communicator[G] index[2]: local rank[1] AllGather count[256]
  //    dataType[float32] ...; remote rank[0] AllReduce count[256] dataType[float32]"
  //   "communicator[G] used from two streams at once: op tag[T] index[2] on streamId[3] while
  //    tag[T2] runs on streamId[2]"
  if (Contains(c, "[ParameterConflict]") && Contains(c, "is inconsistent")) {
    ev->kind = EventKind::kParamCheckFail;
    size_t k = c.find("parameter ");
    if (k != std::string_view::npos) {
      std::string_view x = c.substr(k + 10);
      ev->name = std::string(x.substr(0, x.find(' ')));
    }
    ev->local = S(Field(c, "local"));
    ev->remote = S(Field(c, "remote"));
    ev->remote_rank = I(Field(c, "remote rank"));
    ev->rank = I(Field(c, "rank"));
    ev->group = S(Field(c, "identifier"));
    return Parsed::kEvent;
  }
  if (Contains(c, "op inconsistent in communicator[")) {
    ev->kind = EventKind::kOpInconsistent;
    ev->group = S(Field(c, "communicator"));
    ev->index = I(Field(c, "index"));
    size_t l = c.find("local rank[");
    size_t rm = c.find("remote rank[");
    std::string_view local = l == std::string_view::npos ? std::string_view() : c.substr(l, rm == std::string_view::npos || rm < l ? std::string_view::npos : rm - l);
    std::string_view remote = rm == std::string_view::npos ? std::string_view() : c.substr(rm);
    auto op_after = [](std::string_view part) {
      size_t b = part.find("] ");
      if (b == std::string_view::npos) return std::string();
      std::string_view x = part.substr(b + 2);
      return std::string(x.substr(0, x.find_first_of(" ;")));
    };
    ev->rank = I(Field(local, "local rank"));
    ev->local = op_after(local);
    ev->count = I(Field(local, "count"));
    ev->dtype = S(Field(local, "dataType"));
    ev->tag = S(Field(local, "tag"));
    ev->remote_rank = I(Field(remote, "remote rank"));
    ev->name = op_after(remote);
    ev->remote = Printable(Trim(remote), 200);
    return Parsed::kEvent;
  }
  if (Contains(c, "used from two streams at once")) {
    ev->kind = EventKind::kMultiStream;
    ev->group = S(Field(c, "communicator"));
    ev->tag = S(Field(c, "tag"));
    ev->index = I(Field(c, "index"));
    ev->stream = I(Field(c, "on streamId"));
    size_t w = c.find(" while ");
    if (w != std::string_view::npos) {
      std::string_view x = c.substr(w);
      ev->name = S(Field(x, "tag"));
      ev->value = S(Field(x, "streamId"));
    }
    return Parsed::kEvent;
  }
  // HCCL's consistency check (rank_consistentcy_checker.cc), per differing parameter:
  //   "CMD information cmdType check fail. local[2], remote[6]"            (enums as numbers)
  //   "CMD information ranktable check fail, ranktable_content local[..], remote[..]."  (V2)
  //   "CRC for <type> check fail. local[..], remote[..]"
  if (Contains(c, "check fail") && (Contains(c, "CMD information") || Contains(c, "CRC for "))) {
    ev->kind = EventKind::kParamCheckFail;
    const bool crc = !Contains(c, "CMD information");
    size_t k = crc ? c.find("CRC for ") + 8 : c.find("CMD information") + 15;
    std::string_view x = c.substr(k);
    size_t e = x.find("check fail");
    ev->name = std::string(Trim(x.substr(0, e)));
    std::string_view rest = e == std::string_view::npos ? std::string_view() : x.substr(e + 10);
    if (rest.starts_with(",")) {
      rest = Trim(rest.substr(1));
      size_t l = rest.find(" local[");
      if (l != std::string_view::npos && l > 0) ev->name = std::string(Trim(rest.substr(0, l)));
    }
    if (crc) ev->name += " CRC";
    ev->local = S(Field(c, "local"));
    ev->remote = S(Field(c, "remote"));
    return Parsed::kEvent;
  }
  if (Contains(c, "Transport init error") || Contains(c, "Alloc transports failed")) {
    ev->kind = EventKind::kTransportError;
    ev->tag = S(Field(c, "tag"));
    // "remoteIpAddr[S/N]": the peer is device N of server S.
    std::string peer = S(Field(c, "remoteIpAddr"));
    size_t slash = peer.find('/');
    if (slash != std::string::npos) {
      ev->remote_server = peer.substr(0, slash);
      ev->remote_device = peer.substr(slash + 1);
    }
    return Parsed::kEvent;
  }
  if (Contains(c, "opinfo inconsistent")) {
    ev->kind = EventKind::kOpInconsistent;
    ev->group = S(Field(c, "identifier"));
    ev->index = I(Field(c, "index"));
    size_t l = c.find("local(");
    size_t rm = c.find("remote(");
    if (l != std::string_view::npos) ev->local = std::string(c.substr(l + 6, c.find(')', l) - l - 6));
    if (rm != std::string_view::npos) ev->remote = std::string(c.substr(rm + 7, c.find(')', rm) - rm - 7));
    return Parsed::kEvent;
  }
  if (Contains(c, "HCCL_TRACE]") && Contains(c, "currently executed")) {
    ev->kind = EventKind::kStuckTrace;
    size_t k = c.find("rank:");
    if (k != std::string_view::npos) {
      std::string_view x = c.substr(k + 5);
      ev->local = std::string(x.substr(0, x.find(',')));
    }
    ev->count = LooseInt(c, "executed operators");
    return Parsed::kEvent;
  }
  if (is_error && (Contains(c, "cclBuffer") || Contains(c, "CCL buffer") || Contains(c, "HcclBuffer") ||
                   Contains(c, "ccl buffer") || Contains(c, "HCCL_BUFFSIZE")) &&
      (Contains(c, "alloc") || Contains(c, "Alloc") || Contains(c, "OOM") || Contains(c, "out of memory") ||
       Contains(c, "malloc"))) {
    ev->kind = EventKind::kBufferOom;
    return Parsed::kEvent;
  }
  if (Contains(c, "Key Info")) {
    ev->kind = EventKind::kKeyInfo;
    ev->group = S(Field(c, "identifier"));
    ev->rank = I(Field(c, "userRank"));
    ev->rank_size = I(Field(c, "rankSize"));
    ev->ip = S(Field(c, "hostIp"));
    ev->device = I(Field(c, "devicePhyId"));
    return Parsed::kEvent;
  }
  if (is_error) {
    ev->kind = EventKind::kError;
    return Parsed::kEvent;
  }
  return Parsed::kNone;
}

}  // namespace vigil::diagnose
