// The engine behind the plog line forms of data/formats/*.json (plog_forms.h): loads the rows,
// gates a record with their needles and fills an Event from their patterns' named groups.
#include "diagnose/plog_forms.h"

#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/embedded_text.h"
#include "diagnose/text_util.h"

namespace vigil::embedded {
extern const EmbeddedText kLineFormats[];
extern const size_t kLineFormats_count;
}  // namespace vigil::embedded

namespace vigil::diagnose {
namespace {

// An Event field a group may fill, and how its text becomes a value.
struct Slot {
  enum Type : uint8_t { kText, kInt, kHex, kRanks, kTime, kFlag } type;
  std::string Event::*text = nullptr;
  int64_t Event::*num = nullptr;  // kInt, kTime
  uint64_t Event::*hex = nullptr;
  std::vector<int64_t> Event::*list = nullptr;
  bool Event::*flag = nullptr;

  bool IsSet(const Event& e) const {
    switch (type) {
      case kText: return !(e.*text).empty();
      case kInt: return e.*num >= 0;
      case kHex: return e.*hex != 0;
      case kRanks: return !(e.*list).empty();
      case kTime: return e.*num != kNoTime;
      case kFlag: return e.*flag;
    }
    return false;
  }
  // Sets the field from v when v reads as a value of its type.
  void Fill(std::string_view v, Event* e) const {
    switch (type) {
      case kText: {
        std::string_view t = Trim(v);
        if (!t.empty()) e->*text = Printable(t, 300);
        break;
      }
      case kInt: {
        auto x = ToInt(v);
        if (x && *x >= 0) e->*num = *x;
        break;
      }
      case kHex: {
        auto x = ToHex(v);
        if (x) e->*hex = *x;
        break;
      }
      case kRanks: e->*list = AllInts(v); break;
      case kTime: e->*num = ParseAnyTime(Trim(v)); break;
      case kFlag: e->*flag = !v.empty(); break;
    }
  }
};

const std::map<std::string, Slot, std::less<>>& Slots() {
  static const auto* slots = [] {
    auto* m = new std::map<std::string, Slot, std::less<>>;
    auto text = [&](const char* n, std::string Event::*p) { (*m)[n] = Slot{Slot::kText, p}; };
    auto num = [&](const char* n, int64_t Event::*p) { (*m)[n] = Slot{Slot::kInt, nullptr, p}; };
    auto hex = [&](const char* n, uint64_t Event::*p) { (*m)[n] = Slot{Slot::kHex, nullptr, nullptr, p}; };
    text("group", &Event::group), text("tag", &Event::tag), text("name", &Event::name);
    text("value", &Event::value), text("stage", &Event::stage), text("engine", &Event::engine);
    text("local", &Event::local), text("crimer", &Event::crimer), text("informer", &Event::informer);
    text("status", &Event::status), text("remote", &Event::remote), text("ip", &Event::ip);
    text("detail", &Event::detail), text("reduce", &Event::reduce), text("dtype", &Event::dtype);
    text("local_server", &Event::local_server), text("local_device", &Event::local_device);
    text("local_ip", &Event::local_ip), text("remote_server", &Event::remote_server);
    text("remote_device", &Event::remote_device), text("remote_ip", &Event::remote_ip);
    text("op", &Event::op), text("link", &Event::link);
    num("rank", &Event::rank), num("rank_size", &Event::rank_size), num("peer_rank", &Event::peer_rank);
    num("remote_rank", &Event::remote_rank), num("device", &Event::device), num("stream", &Event::stream);
    num("task", &Event::task), num("index", &Event::index), num("count", &Event::count);
    num("port", &Event::port), num("connected", &Event::connected), num("need", &Event::need);
    num("src_rank", &Event::src_rank), num("dst_rank", &Event::dst_rank), num("seq", &Event::seq);
    num("timeout_ms", &Event::timeout_ms), num("elapsed_ms", &Event::elapsed_ms), num("ret", &Event::ret);
    num("informer_rank", &Event::informer_rank);
    hex("src", &Event::src), hex("dst", &Event::dst), hex("size", &Event::size);
    (*m)["ranks"] = Slot{Slot::kRanks, nullptr, nullptr, nullptr, &Event::ranks};
    (*m)["aux_time"] = Slot{Slot::kTime, nullptr, &Event::aux_time};
    (*m)["from_env"] = Slot{Slot::kFlag, nullptr, nullptr, nullptr, nullptr, &Event::from_env};
    (*m)["exited"] = Slot{Slot::kFlag, nullptr, nullptr, nullptr, nullptr, &Event::exited};
    return m;
  }();
  return *slots;
}

struct Pattern {
  std::unique_ptr<RE2> re;
  std::vector<std::pair<int, const Slot*>> groups;  // capture index, field
  int captures = 0;
};

struct Row {
  std::string name;
  EventKind kind = EventKind::kError;
  bool error_only = false;
  std::string module;
  std::vector<std::string> codes;  // screen_fields: the codes whose message the row reads
  std::vector<std::string> needles, unless;
  std::vector<std::vector<std::string>> requires_;  // each: one of these must occur
  std::vector<Pattern> patterns;
  std::vector<const Slot*> need;
  std::vector<std::pair<const Slot*, std::string>> set, append;
};

struct Table {
  std::vector<Row> rows;
  std::vector<std::string> any_level_needles;
  std::vector<std::string> prefilter;  // the parser's first filter for records that are not ERROR
};

struct Forms {
  Table plog, fault, screen;
  std::vector<std::string> errors;
};

bool KindOf(std::string_view name, EventKind* kind) {
  for (int k = 0; k <= static_cast<int>(EventKind::kError); ++k) {
    if (name == EventKindName(static_cast<EventKind>(k))) {
      *kind = static_cast<EventKind>(k);
      return true;
    }
  }
  return false;
}

std::vector<std::string> Strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& v : j[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

const Slot* SlotOf(std::string_view name) {
  auto it = Slots().find(name);
  return it == Slots().end() ? nullptr : &it->second;
}

// "set" / "append": {field: text}.
bool FieldTexts(const nlohmann::json& r, const char* key, const std::string& row,
                std::vector<std::pair<const Slot*, std::string>>* out, std::vector<std::string>* errors) {
  if (!r.contains(key)) return true;
  if (!r[key].is_object()) {
    errors->push_back(row + ": " + key + " must be an object");
    return false;
  }
  bool ok = true;
  for (const auto& [field, v] : r[key].items()) {
    const Slot* s = SlotOf(field);
    if (s == nullptr || !v.is_string() || (std::string_view(key) == "append" && s->type != Slot::kText)) {
      errors->push_back(row + ": " + key + " cannot fill '" + field + "'");
      ok = false;
      continue;
    }
    out->emplace_back(s, v.get<std::string>());
  }
  return ok;
}

bool LoadRow(const nlohmann::json& r, Row* f, std::vector<std::string>* errors) {
  if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) {
    errors->push_back("a row without a name");
    return false;
  }
  f->name = r["name"].get<std::string>();
  f->codes = Strings(r, "codes");
  std::string kind = r.value("kind", "");
  if (!(f->codes.empty() ? KindOf(kind, &f->kind) : kind.empty())) {
    errors->push_back(f->name + ": unknown kind '" + kind + "'");
    return false;
  }
  std::string level = r.value("level", "any");
  if (level != "any" && level != "error") {
    errors->push_back(f->name + ": level must be any or error, not '" + level + "'");
    return false;
  }
  f->error_only = level == "error";
  f->module = r.value("module", "");
  f->needles = Strings(r, "needles");
  f->unless = Strings(r, "unless");
  bool ok = !f->needles.empty() || !f->codes.empty();
  if (!ok) errors->push_back(f->name + ": no needles");
  if (r.contains("requires") && r["requires"].is_array()) {
    for (const auto& v : r["requires"]) {
      if (v.is_string()) f->requires_.push_back({v.get<std::string>()});
      else if (v.is_array()) f->requires_.push_back(Strings(nlohmann::json{{"x", v}}, "x"));
      if (f->requires_.empty() || f->requires_.back().empty()) {
        errors->push_back(f->name + ": a requires item must be text or a list of texts");
        ok = false;
      }
    }
  }
  for (const std::string& n : Strings(r, "need")) {
    const Slot* s = SlotOf(n);
    if (s == nullptr) {
      errors->push_back(f->name + ": cannot need field '" + n + "'");
      ok = false;
    } else {
      f->need.push_back(s);
    }
  }
  ok = FieldTexts(r, "set", f->name, &f->set, errors) && ok;
  ok = FieldTexts(r, "append", f->name, &f->append, errors) && ok;
  for (const std::string& re : Strings(r, "patterns")) {
    Pattern p;
    RE2::Options opt;
    opt.set_log_errors(false);
    p.re = std::make_unique<RE2>(re, opt);
    if (re.empty() || !p.re->ok()) {
      errors->push_back(f->name + ": " + (re.empty() ? std::string("an empty pattern") : p.re->error()));
      ok = false;
      continue;
    }
    p.captures = p.re->NumberOfCapturingGroups();
    for (const auto& [group, index] : p.re->NamedCapturingGroups()) {
      const Slot* s = SlotOf(group);
      if (s == nullptr) {
        errors->push_back(f->name + ": no field '" + group + "'");
        ok = false;
      } else {
        p.groups.emplace_back(index, s);
      }
    }
    f->patterns.push_back(std::move(p));
  }
  return ok;
}

bool Occurs(std::string_view s, std::string_view k) { return s.find(k) != std::string_view::npos; }

// Whether a record of the row always holds one of the prefilter's needles: each of its needles
// contains one, or each alternative of one of its requires does.
bool Covered(const Row& f, const std::vector<std::string>& prefilter) {
  auto contains_one = [&](const std::string& text) {
    for (const std::string& p : prefilter)
      if (Occurs(text, p)) return true;
    return false;
  };
  bool all = true;
  for (const std::string& n : f.needles) all = all && contains_one(n);
  if (all) return true;
  for (const auto& any : f.requires_) {
    bool each = true;
    for (const std::string& n : any) each = each && contains_one(n);
    if (each) return true;
  }
  return false;
}

void LoadTable(const nlohmann::json& j, const std::string& table, Table* t, std::vector<std::string>* errors) {
  t->prefilter = Strings(j, "prefilter");
  for (const auto& r : j[table]) {
    Row f;
    std::vector<std::string> row_errors;
    if (!LoadRow(r, &f, &row_errors)) {
      for (const std::string& e : row_errors) errors->push_back(table + ": " + e);
      continue;
    }
    if (!f.error_only && f.codes.empty() && !Covered(f, t->prefilter))
      errors->push_back(table + ": " + f.name + ": no needle of the prefilter is in its needles or requires");
    if (!f.error_only) t->any_level_needles.insert(t->any_level_needles.end(), f.needles.begin(), f.needles.end());
    t->rows.push_back(std::move(f));
  }
}

// Loads the tables of one forms file into *all; false when the text is not JSON.
bool LoadFile(std::string_view text, Forms* all) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return false;
  for (auto [name, table] : {std::pair{"plog_lines", &all->plog}, {"fault_lines", &all->fault},
                             {"screen_fields", &all->screen}})
    if (j.contains(name) && j[name].is_array()) LoadTable(j, name, table, &all->errors);
  return true;
}

const Forms& Get() {
  static const Forms* forms = [] {
    auto* all = new Forms;  // never destroyed: used by workers
    for (size_t i = 0; i < embedded::kLineFormats_count; ++i) {
      const embedded::EmbeddedText& t = embedded::kLineFormats[i];
      if (!LoadFile(std::string_view(t.text, t.size), all))
        all->errors.push_back(std::string(t.name) + ": not valid JSON");
    }
    return all;
  }();
  return *forms;
}

bool Gate(const Row& f, std::string_view c) {
  bool needle = f.needles.empty();  // only screen_fields rows, gated by their codes
  for (const std::string& n : f.needles) needle = needle || Occurs(c, n);
  if (!needle) return false;
  for (const auto& any : f.requires_) {
    bool one = false;
    for (const std::string& n : any) one = one || Occurs(c, n);
    if (!one) return false;
  }
  for (const std::string& n : f.unless)
    if (Occurs(c, n)) return false;
  return true;
}

// Reads the row's fields into a fresh event; whether its needs hold.
bool Read(const Row& f, std::string_view c, Event* out) {
  for (const Pattern& p : f.patterns) {
    re2::StringPiece m[24];
    int n = std::min(p.captures + 1, 24);
    if (!p.re->Match(re2::StringPiece(c.data(), c.size()), 0, c.size(), RE2::UNANCHORED, m, n)) continue;
    for (const auto& [i, slot] : p.groups) {
      if (i >= n || m[i].data() == nullptr || slot->IsSet(*out)) continue;
      slot->Fill(std::string_view(m[i].data(), m[i].size()), out);
    }
  }
  for (const Slot* s : f.need)
    if (!s->IsSet(*out)) return false;
  for (const auto& [slot, text] : f.append)
    if (slot->IsSet(*out)) out->*(slot->text) += text;
  for (const auto& [slot, text] : f.set)
    if (!slot->IsSet(*out)) slot->Fill(text, out);
  return true;
}

// The fields read, moved onto *ev over what it held; the others stay.
void Overlay(Event&& read, Event* ev) {
  for (const auto& [name, slot] : Slots()) {
    if (!slot.IsSet(read)) continue;
    switch (slot.type) {
      case Slot::kText: ev->*(slot.text) = std::move(read.*(slot.text)); break;
      case Slot::kInt:
      case Slot::kTime: ev->*(slot.num) = read.*(slot.num); break;
      case Slot::kHex: ev->*(slot.hex) = read.*(slot.hex); break;
      case Slot::kRanks: ev->*(slot.list) = std::move(read.*(slot.list)); break;
      case Slot::kFlag: ev->*(slot.flag) = read.*(slot.flag); break;
    }
  }
}

bool ParseWith(const Table& t, const Record& r, Event* ev) {
  std::string_view c = r.content;
  const bool is_error = r.level == Level::kError || r.level == Level::kScreen;
  for (const Row& f : t.rows) {
    if (f.error_only && !is_error) continue;
    if (!f.module.empty() && r.module != f.module) continue;
    if (!Gate(f, c)) continue;
    Event read;
    if (!Read(f, c, &read)) continue;
    ev->kind = f.kind;
    Overlay(std::move(read), ev);
    return true;
  }
  return false;
}

}  // namespace

bool MayBeRankLine(std::string_view c) {
  for (const std::string& n : Get().plog.any_level_needles)
    if (Occurs(c, n)) return true;
  return false;
}

bool ParseRankLine(const Record& r, Event* ev) {
  const bool is_error = r.level == Level::kError || r.level == Level::kScreen;
  if (!is_error && !MayBeRankLine(r.content)) return false;
  return ParseWith(Get().plog, r, ev);
}

bool ParseFaultLine(const Record& r, Event* ev) { return ParseWith(Get().fault, r, ev); }

void ParseScreenFields(std::string_view msg, Event* ev) {
  for (const Row& f : Get().screen.rows) {
    if (std::find(f.codes.begin(), f.codes.end(), ev->code) == f.codes.end() || !Gate(f, msg)) continue;
    Event read;
    if (!Read(f, msg, &read)) continue;
    Overlay(std::move(read), ev);
    return;
  }
}

std::vector<std::string> FormPrefilter(std::string_view table) {
  return (table == "plog_lines" ? Get().plog : Get().fault).prefilter;
}

const std::vector<std::string>& PlogFormErrors() { return Get().errors; }

std::vector<std::string> FormsFileErrors(std::string_view json_text) {
  Forms forms;
  if (!LoadFile(json_text, &forms)) return {"not valid JSON"};
  return forms.errors;
}

}  // namespace vigil::diagnose
