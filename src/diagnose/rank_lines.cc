// Plog lines naming a rank's identity and the peer it waits for. The forms are data
// (data/formats/plog_lines.json), read with the knowledge base's pattern vocabulary (KbFields);
// this file turns a form's fields into an Event.
#include "diagnose/rank_lines.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "common/embedded_text.h"
#include "diagnose/kb_matcher.h"
#include "diagnose/text_util.h"

namespace vigil::embedded {
extern const EmbeddedText kLineFormats[];
extern const size_t kLineFormats_count;
}  // namespace vigil::embedded

namespace vigil::diagnose {
namespace {

struct Form {
  std::string name;
  EventKind kind = EventKind::kRankInfo;
  std::string event, detail;
  bool error_only = false;
  std::vector<std::string> needles, all_of, unless, need;
  std::vector<FieldPattern> patterns;
};

struct Forms {
  std::vector<Form> forms;
  std::vector<std::string> any_level_needles;  // MayBeRankLine's test
  std::vector<std::string> errors;
};

bool KindOf(std::string_view name, EventKind* kind) {
  for (EventKind k : {EventKind::kRankInfo, EventKind::kWaitPeer, EventKind::kRootInfoFail,
                      EventKind::kConnectedRanks, EventKind::kCqeDetail, EventKind::kEnv,
                      EventKind::kOpRetry, EventKind::kShrink}) {
    if (name == EventKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// The groups a form may list under "need".
const std::vector<std::string_view>& Needable() {
  static const std::vector<std::string_view> names = {
      "rank", "remote_rank", "src_rank", "dst_rank", "rank_size", "device", "index", "group", "tag",
      "status", "remote_ip", "device_ip", "phy_id", "server_ip", "vnic_ip", "remote_device",
      "value", "detail", "ranks", "time"};
  return names;
}

bool Has(const KbFields& f, std::string_view g) {
  if (g == "rank") return f.rank >= 0;
  if (g == "remote_rank") return f.remote_rank >= 0;
  if (g == "src_rank") return f.src_rank >= 0;
  if (g == "dst_rank") return f.dst_rank >= 0;
  if (g == "rank_size") return f.rank_size >= 0;
  if (g == "device") return f.device >= 0;
  if (g == "index") return f.index >= 0;
  const std::string* s = g == "group" ? &f.group : g == "tag" ? &f.tag : g == "status" ? &f.status
                       : g == "remote_ip" ? &f.remote_ip : g == "device_ip" ? &f.device_ip
                       : g == "phy_id" ? &f.phy_id : g == "server_ip" ? &f.server_ip
                       : g == "vnic_ip" ? &f.vnic_ip : g == "remote_device" ? &f.remote_device
                       : g == "value" ? &f.value : g == "detail" ? &f.detail
                       : g == "ranks" ? &f.ranks : g == "time" ? &f.time : nullptr;
  return s != nullptr && !s->empty();
}

std::vector<std::string> Strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& v : j[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

void Load(const nlohmann::json& j, Forms* all) {
  for (const auto& r : j["plog_lines"]) {
    Form f;
    if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) {
      all->errors.push_back("plog_lines: a row without a name");
      continue;
    }
    f.name = r["name"].get<std::string>();
    std::string kind = r.value("kind", "");
    if (!KindOf(kind, &f.kind)) {
      all->errors.push_back(f.name + ": unknown kind '" + kind + "'");
      continue;
    }
    f.event = r.value("event", "");
    f.detail = r.value("detail", "");
    std::string level = r.value("level", "any");
    if (level != "any" && level != "error") {
      all->errors.push_back(f.name + ": level must be any or error, not '" + level + "'");
      continue;
    }
    f.error_only = level == "error";
    f.needles = Strings(r, "needles");
    f.all_of = Strings(r, "requires");
    f.unless = Strings(r, "unless");
    f.need = Strings(r, "need");
    bool ok = !f.needles.empty();
    if (!ok) all->errors.push_back(f.name + ": no needles");
    for (const std::string& n : f.need) {
      if (std::find(Needable().begin(), Needable().end(), n) == Needable().end()) {
        all->errors.push_back(f.name + ": cannot need group '" + n + "'");
        ok = false;
      }
    }
    for (const std::string& re : Strings(r, "patterns")) {
      FieldPattern p;
      std::string error;
      // The form's needles gate the record (Holds); a pattern is its regex alone.
      if (re.empty() || !p.Compile("", re, &error)) {
        if (re.empty()) error = "an empty pattern";
        all->errors.push_back(f.name + ": " + error);
        ok = false;
        continue;
      }
      f.patterns.push_back(std::move(p));
    }
    if (!ok) continue;
    if (!f.error_only)
      all->any_level_needles.insert(all->any_level_needles.end(), f.needles.begin(), f.needles.end());
    all->forms.push_back(std::move(f));
  }
}

const Forms& Get() {
  static const Forms* forms = [] {
    auto* all = new Forms;  // never destroyed: used by workers
    for (size_t i = 0; i < embedded::kLineFormats_count; ++i) {
      const embedded::EmbeddedText& t = embedded::kLineFormats[i];
      nlohmann::json j = nlohmann::json::parse(std::string_view(t.text, t.size), nullptr, false);
      if (j.is_discarded()) {
        all->errors.push_back(std::string(t.name) + ": not valid JSON");
        continue;
      }
      if (j.contains("plog_lines") && j["plog_lines"].is_array()) Load(j, all);
    }
    return all;
  }();
  return *forms;
}

bool Occurs(std::string_view s, std::string_view k) { return s.find(k) != std::string_view::npos; }

// Whether the record is of this form (its needles and needs hold); *out: the fields it read.
bool Holds(const Form& f, std::string_view c, KbFields* out) {
  bool needle = false;
  for (const std::string& n : f.needles) needle = needle || Occurs(c, n);
  if (!needle) return false;
  for (const std::string& n : f.all_of)
    if (!Occurs(c, n)) return false;
  for (const std::string& n : f.unless)
    if (Occurs(c, n)) return false;
  for (const FieldPattern& p : f.patterns) p.Read(c, out);
  for (const std::string& n : f.need)
    if (!Has(*out, n)) return false;
  return true;
}

void ToEvent(const Form& f, const KbFields& k, Event* ev) {
  ev->kind = f.kind;
  ev->name = f.event;
  ev->detail = k.detail.empty() ? f.detail : k.detail;
  ev->rank = k.rank;
  ev->remote_rank = k.remote_rank;
  ev->src_rank = k.src_rank;
  ev->dst_rank = k.dst_rank;
  ev->rank_size = k.rank_size;
  ev->device = k.device;
  ev->index = k.index;
  ev->group = k.group;
  ev->tag = k.tag;
  ev->status = k.status;
  ev->remote_ip = k.remote_ip;
  ev->local_ip = k.device_ip;
  ev->local_device = k.phy_id;
  ev->local_server = k.server_ip;
  ev->ip = k.vnic_ip;
  ev->remote_device = k.remote_device;
  ev->value = k.value;
  ev->elapsed_ms = k.elapsed_ms;
  ev->from_env = k.from_env;
  if (!k.ranks.empty()) ev->ranks = AllInts(k.ranks);
  if (!k.time.empty()) ev->aux_time = ParseAnyTime(k.time);
}

}  // namespace

bool MayBeRankLine(std::string_view c) {
  for (const std::string& n : Get().any_level_needles)
    if (Occurs(c, n)) return true;
  return false;
}

bool ParseRankLine(const Record& r, Event* ev) {
  std::string_view c = r.content;
  bool is_error = r.level == Level::kError;
  if (!is_error && !MayBeRankLine(c)) return false;
  for (const Form& f : Get().forms) {
    if (f.error_only && !is_error) continue;
    KbFields k;
    if (!Holds(f, c, &k)) continue;
    ToEvent(f, k, ev);
    return true;
  }
  return false;
}

const std::vector<std::string>& RankLineErrors() { return Get().errors; }

}  // namespace vigil::diagnose
