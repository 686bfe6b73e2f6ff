#include "common/knowledge_base.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "common/embedded_text.h"

namespace vigil::embedded {
// knowledge_base_data.cc, generated from data/kb/*.json (src/common/CMakeLists.txt).
extern const EmbeddedText kKnowledgeBase[];
extern const size_t kKnowledgeBase_count;
}  // namespace vigil::embedded

namespace vigil::kb {
namespace {

using embedded::kKnowledgeBase;
using embedded::kKnowledgeBase_count;

using nlohmann::json;

// The named groups the analyzer reads (knowledge_base.h); any other name is a typo in the data.
const std::set<std::string_view> kGroupNames = {
    "rank",       "remote_rank", "src_rank",      "dst_rank",   "pid",   "ip",
    "remote_ip",  "device",      "seq",           "op",         "group", "tag",
    "timeout_ms", "timeout_s",   "elapsed_ms",    "ret",        "port",  "status",
    "kb",         "exited",      "informer_rank", "informer_ip", "ret_hex"};

const std::set<std::string_view> kRoles = {"cause", "symptom", "either"};

// A string member; false (and an error) when it is absent or not a string and `required`.
bool GetString(const json& o, const char* key, std::string* out, bool required,
               const std::string& where, std::vector<std::string>* errors) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) {
    if (required) errors->push_back(where + ": missing \"" + key + "\"");
    return !required;
  }
  if (!it->is_string()) {
    errors->push_back(where + ": \"" + key + "\" is not a string");
    return false;
  }
  *out = it->get<std::string>();
  if (required && out->empty()) {
    errors->push_back(where + ": \"" + key + "\" is empty");
    return false;
  }
  return true;
}

// A list of strings; `min` is the least number of items.
bool GetList(const json& o, const char* key, std::vector<std::string>* out, size_t min,
             const std::string& where, std::vector<std::string>* errors) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) {
    if (min > 0) errors->push_back(where + ": missing \"" + key + "\"");
    return min == 0;
  }
  if (!it->is_array()) {
    errors->push_back(where + ": \"" + key + "\" is not a list");
    return false;
  }
  for (const json& v : *it) {
    if (!v.is_string() || v.get<std::string>().empty()) {
      errors->push_back(where + ": \"" + key + "\" holds an item that is not a non-empty string");
      return false;
    }
    out->push_back(v.get<std::string>());
  }
  if (out->size() < min) {
    errors->push_back(where + ": \"" + key + "\" needs at least " + std::to_string(min) +
                      " item(s)");
    return false;
  }
  return true;
}

// The names of a regex's named groups, (?P<name>...) and (?<name>...).
std::vector<std::string> GroupNames(std::string_view re) {
  std::vector<std::string> names;
  for (size_t p = re.find("(?"); p != std::string_view::npos; p = re.find("(?", p + 2)) {
    if (p > 0 && re[p - 1] == '\\') continue;
    size_t q = p + 2;
    if (q < re.size() && re[q] == 'P') ++q;
    if (q >= re.size() || re[q] != '<') continue;
    size_t end = re.find('>', q);
    if (end == std::string_view::npos) break;
    names.emplace_back(re.substr(q + 1, end - q - 1));
  }
  return names;
}

size_t CountPlaceholders(std::string_view t) {
  size_t n = 0;
  for (size_t p = t.find("{}"); p != std::string_view::npos; p = t.find("{}", p + 2)) ++n;
  return n;
}

size_t CountNames(std::string_view names) {
  if (names.empty()) return 0;
  size_t n = 1;
  for (char c : names) n += c == ',' ? 1 : 0;
  return n;
}

bool ParsePatterns(const json& o, Entry* e, const std::string& where,
                   std::vector<std::string>* errors) {
  auto it = o.find("patterns");
  if (it == o.end() || it->is_null()) return true;
  if (!it->is_array()) {
    errors->push_back(where + ": \"patterns\" is not a list");
    return false;
  }
  bool ok = true;
  for (const json& p : *it) {
    if (!p.is_object()) {
      errors->push_back(where + ": a pattern is not an object");
      ok = false;
      continue;
    }
    Pattern pat;
    if (!GetString(p, "needle", &pat.needle, true, where + " pattern", errors) ||
        !GetString(p, "re", &pat.re, false, where + " pattern", errors)) {
      ok = false;
      continue;
    }
    bool flags_ok = true;
    for (auto [key, flag] : {std::pair<const char*, bool*>{"fields_only", &pat.fields_only},
                             std::pair<const char*, bool*>{"fallback", &pat.fallback}}) {
      auto f = p.find(key);
      if (f == p.end()) continue;
      if (!f->is_boolean()) {
        errors->push_back(where + ": pattern \"" + key + "\" is not true or false");
        flags_ok = false;
        continue;
      }
      *flag = f->get<bool>();
    }
    if (!flags_ok) {
      ok = false;
      continue;
    }
    for (const std::string& g : GroupNames(pat.re)) {
      if (!kGroupNames.count(g)) {
        errors->push_back(where + ": pattern group \"" + g + "\" is not one the analyzer reads");
        ok = false;
      }
    }
    e->patterns.push_back(std::move(pat));
  }
  return ok;
}

bool ParseHccl(const json& o, Entry* e, const std::string& where,
               std::vector<std::string>* errors) {
  auto it = o.find("hccl");
  if (it == o.end() || it->is_null()) return true;
  if (!it->is_object()) {
    errors->push_back(where + ": \"hccl\" is not an object");
    return false;
  }
  const json& h = *it;
  const std::string w = where + " hccl";
  bool ok = GetString(h, "stage", &e->stage, true, w, errors);
  ok = GetString(h, "message", &e->message, true, w, errors) && ok;
  ok = GetString(h, "arg_names", &e->arg_names, false, w, errors) && ok;
  ok = GetString(h, "cause", &e->hccl_cause, true, w, errors) && ok;
  ok = GetString(h, "solution", &e->solution, true, w, errors) && ok;
  ok = GetString(h, "advice", &e->advice, true, w, errors) && ok;
  auto sc = h.find("screen_cause");
  if (sc != h.end()) {
    if (sc->is_boolean()) {
      e->screen_cause = sc->get<bool>();
    } else {
      errors->push_back(w + ": \"screen_cause\" is not true/false");
      ok = false;
    }
  }
  if (ok && CountPlaceholders(e->message) != CountNames(e->arg_names)) {
    errors->push_back(w + ": the message's {} placeholders and arg_names differ in number");
    ok = false;
  }
  if (ok && e->code.empty()) {
    errors->push_back(w + ": an entry with screen texts needs a \"code\"");
    ok = false;
  }
  e->has_hccl = ok;
  return ok;
}

// One entry; false when it is not well formed (it is then dropped).
bool ParseEntry(const json& o, Entry* e, const std::string& file,
                std::vector<std::string>* errors) {
  if (!o.is_object()) {
    errors->push_back(file + ": an entry is not an object");
    return false;
  }
  std::string where = file + ": entry";
  if (!GetString(o, "id", &e->id, true, where, errors)) return false;
  where = file + ": " + e->id;
  bool ok = GetString(o, "code", &e->code, false, where, errors);
  ok = GetString(o, "family", &e->family, true, where, errors) && ok;
  ok = GetString(o, "component", &e->component, true, where, errors) && ok;
  ok = GetString(o, "class", &e->cls, true, where, errors) && ok;
  ok = GetString(o, "role", &e->role, true, where, errors) && ok;
  ok = GetString(o, "title", &e->title, true, where, errors) && ok;
  ok = GetString(o, "meaning", &e->meaning, true, where, errors) && ok;
  ok = GetString(o, "source", &e->source, false, where, errors) && ok;
  ok = GetString(o, "reader", &e->reader, false, where, errors) && ok;
  ok = GetList(o, "causes", &e->causes, 1, where, errors) && ok;
  ok = GetList(o, "checks", &e->checks, 1, where, errors) && ok;
  ok = GetList(o, "actions", &e->actions, 1, where, errors) && ok;
  ok = GetList(o, "symptom_of", &e->symptom_of, 0, where, errors) && ok;
  ok = GetList(o, "leads_to", &e->leads_to, 0, where, errors) && ok;
  ok = ParsePatterns(o, e, where, errors) && ok;
  ok = ParseHccl(o, e, where, errors) && ok;
  if (!e->role.empty() && !kRoles.count(e->role)) {
    errors->push_back(where + ": role \"" + e->role + "\" is not cause, symptom or either");
    ok = false;
  }
  std::string about;
  ok = GetString(o, "about", &about, false, where, errors) && ok;
  if (about == "peer") {
    e->about_peer = true;
  } else if (!about.empty() && about != "self") {
    errors->push_back(where + ": about \"" + about + "\" is not self or peer");
    ok = false;
  }
  return ok;
}

// A short name for error messages: "text 3" or the embedded file's name.
std::string TextName(size_t i, const std::vector<std::string_view>& texts) {
  if (texts.size() == kKnowledgeBase_count && texts[i].data() == kKnowledgeBase[i].text)
    return kKnowledgeBase[i].name;
  return "text " + std::to_string(i + 1);
}

struct Loaded {
  KnowledgeBase kb;
  std::vector<std::string> errors;
};

const Loaded& Embedded() {
  // Never destroyed: the library may print screen errors while statics are torn down.
  static const Loaded* loaded = [] {
    auto* l = new Loaded;
    std::vector<std::string_view> texts;
    for (size_t i = 0; i < kKnowledgeBase_count; ++i)
      texts.emplace_back(kKnowledgeBase[i].text, kKnowledgeBase[i].size);
    l->kb = KnowledgeBase::Parse(texts, &l->errors);
    return l;
  }();
  return *loaded;
}

void AppendList(std::string* out, const char* heading, const std::vector<std::string>& items) {
  if (items.empty()) return;
  out->append(heading).append(":\n");
  for (const std::string& s : items) out->append("  - ").append(s).append("\n");
  out->append("\n");
}

void AppendRelations(std::string* out, const char* heading, const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  out->append(heading).append(":\n");
  for (const std::string& id : ids) {
    out->append("  - ").append(id);
    if (const Entry* r = Get().Find(id); r != nullptr && r->title != id)
      out->append(" (").append(r->title).append(")");
    out->append("\n");
  }
  out->append("\n");
}

}  // namespace

const Entry* KnowledgeBase::Find(std::string_view id_or_code) const {
  auto it = by_id_.find(id_or_code);
  if (it != by_id_.end()) return &entries_[it->second];
  it = by_code_.find(id_or_code);
  if (it != by_code_.end()) return &entries_[it->second];
  return nullptr;
}

const ClassInfo* KnowledgeBase::Class(std::string_view id) const {
  for (const ClassInfo& c : classes_) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

KnowledgeBase KnowledgeBase::Parse(const std::vector<std::string_view>& json_texts,
                                   std::vector<std::string>* errors) {
  std::vector<std::string> sink;
  if (errors == nullptr) errors = &sink;
  KnowledgeBase kb;
  std::vector<Entry> parsed;
  for (size_t i = 0; i < json_texts.size(); ++i) {
    const std::string name = TextName(i, json_texts);
    json doc = json::parse(json_texts[i].begin(), json_texts[i].end(), nullptr,
                           /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) {
      errors->push_back(name + ": not a JSON object");
      continue;
    }
    if (auto c = doc.find("classes"); c != doc.end()) {
      if (!c->is_array()) {
        errors->push_back(name + ": \"classes\" is not a list");
      } else {
        for (const json& o : *c) {
          ClassInfo ci;
          if (!o.is_object() || !GetString(o, "id", &ci.id, true, name + ": class", errors) ||
              !GetString(o, "name", &ci.name, true, name + ": class " + ci.id, errors) ||
              !GetString(o, "meaning", &ci.meaning, true, name + ": class " + ci.id, errors)) {
            if (!o.is_object()) errors->push_back(name + ": a class is not an object");
            continue;
          }
          if (kb.Class(ci.id) != nullptr) {
            errors->push_back(name + ": duplicate class \"" + ci.id + "\"");
            continue;
          }
          kb.classes_.push_back(std::move(ci));
        }
      }
    }
    if (auto e = doc.find("entries"); e != doc.end()) {
      if (!e->is_array()) {
        errors->push_back(name + ": \"entries\" is not a list");
      } else {
        for (const json& o : *e) {
          Entry entry;
          if (ParseEntry(o, &entry, name, errors)) parsed.push_back(std::move(entry));
        }
      }
    } else if (doc.find("classes") == doc.end()) {
      errors->push_back(name + ": neither \"entries\" nor \"classes\"");
    }
  }
  // Ids and codes unique; classes known (all files read first: classes.json may come later).
  for (Entry& e : parsed) {
    if (kb.by_id_.count(e.id) || kb.by_code_.count(e.id)) {
      errors->push_back("duplicate id \"" + e.id + "\"");
      continue;
    }
    if (!e.code.empty() &&
        (kb.by_code_.count(e.code) || (e.code != e.id && kb.by_id_.count(e.code)))) {
      errors->push_back(e.id + ": code \"" + e.code + "\" is already another entry's");
      continue;
    }
    if (kb.Class(e.cls) == nullptr) {
      errors->push_back(e.id + ": class \"" + e.cls + "\" is not in classes.json");
      continue;
    }
    kb.by_id_.emplace(e.id, kb.entries_.size());
    if (!e.code.empty()) kb.by_code_.emplace(e.code, kb.entries_.size());
    kb.entries_.push_back(std::move(e));
  }
  // Relations name entries that exist (kept either way: the entry itself is sound).
  for (const Entry& e : kb.entries_) {
    for (const auto* list : {&e.symptom_of, &e.leads_to}) {
      for (const std::string& r : *list) {
        if (!kb.by_id_.count(r)) {
          errors->push_back(e.id + ": " + (list == &e.symptom_of ? "symptom_of" : "leads_to") +
                            " names unknown id \"" + r + "\"");
        }
      }
    }
  }
  return kb;
}

const KnowledgeBase& Get() {
  return Embedded().kb;
}

const std::vector<std::string>& LoadErrors() {
  return Embedded().errors;
}

std::string Explain(const Entry& e) {
  std::string out;
  out.append(e.code.empty() ? e.id : e.code).append("  ").append(e.title).append("\n");
  if (!e.code.empty() && e.code != e.id) out.append("id: ").append(e.id).append("\n");
  out.append("printed by: ").append(e.component).append(" (").append(e.family).append(")\n");
  out.append("class: ").append(e.cls);
  if (const ClassInfo* c = Get().Class(e.cls)) out.append(" - ").append(c->name);
  out.append("\nrole: ").append(e.role);
  if (e.role == "symptom") out.append(" (usually the consequence of a fault elsewhere)");
  if (e.role == "cause") out.append(" (a root cause when present)");
  out.append("\n\n").append(e.meaning).append("\n\n");
  AppendList(&out, "Possible causes", e.causes);
  AppendList(&out, "What to check", e.checks);
  AppendList(&out, "What to do", e.actions);
  AppendRelations(&out, "Often a consequence of", e.symptom_of);
  AppendRelations(&out, "Often causes", e.leads_to);
  // The literals a grep can look for (the needles that recognise the entry on their own).
  std::vector<std::string> greps;
  for (const Pattern& p : e.patterns) {
    const std::string quoted = "\"" + p.needle + "\"";
    if (p.fields_only || greps.size() >= 4) continue;
    if (std::find(greps.begin(), greps.end(), quoted) == greps.end()) greps.push_back(quoted);
  }
  AppendList(&out, "Lines to look for", greps);
  if (!e.source.empty()) out.append("Source: ").append(e.source).append("\n");
  if (e.has_hccl) {
    out.append("Screen form: ").append(e.title).append("(").append(e.code).append("): ");
    out.append(e.message).append("\n");
  }
  while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  return out;
}

}  // namespace vigil::kb
