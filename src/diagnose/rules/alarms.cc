#include "diagnose/rules/alarms.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace vigil::diagnose::rules {
namespace {

// One alarm line: the fault it is about and whether it raises or clears it.
struct AlarmLine {
  std::string key;    // the fault code with its location fields ("0x00f1ff09,155912,npu,na")
  std::string stamp;  // "2024/01/10 03:28:38.643290": sorts as text
  bool raised = false;
};

// The value between `open` and `close` after the first `open` in s, or empty.
std::string_view Between(std::string_view s, std::string_view open, char close) {
  size_t a = s.find(open);
  if (a == std::string_view::npos) return {};
  a += open.size();
  size_t b = s.find(close, a);
  if (b == std::string_view::npos) return {};
  return s.substr(a, b - a);
}

bool Digit(char c) { return c >= '0' && c <= '9'; }

// "YYYY/MM/DD HH:MM:SS(.ffffff)", the stamp of the MindX components' log lines.
std::string_view SlashStamp(std::string_view s) {
  for (size_t p = s.find('/'); p != std::string_view::npos && p >= 4; p = s.find('/', p + 1)) {
    size_t a = p - 4;
    if (a + 19 > s.size()) break;
    std::string_view c = s.substr(a, 19);
    if (Digit(c[0]) && Digit(c[3]) && c[4] == '/' && c[7] == '/' && c[10] == ' ' && c[13] == ':' && c[16] == ':') {
      size_t e = a + 19;
      if (e < s.size() && s[e] == '.')
        for (++e; e < s.size() && Digit(s[e]);) ++e;
      return s.substr(a, e - a);
    }
  }
  return {};
}

// The device plugin's switch fault line:
//   ... switch subscribe got fault:deviceswitch.SwitchFaultEvent{..., AssembledFaultCode:"[C]", ...,
//   Assertion:0x1, ...}
bool ReadAlarm(const Event& e, AlarmLine* out) {
  std::string_view t = e.text;
  if (t.find("switch subscribe got fault") == std::string_view::npos) return false;
  std::string_view code = Between(t, "AssembledFaultCode:\"[", ']');
  std::string_view state = Between(t, "Assertion:", ',');  // "0x1", or " 1" in older versions
  while (!state.empty() && state.front() == ' ') state.remove_prefix(1);
  if (code.empty() || state.empty()) return false;
  out->key = std::string(code);
  out->raised = state != "0x0" && state != "0";
  out->stamp = std::string(SlashStamp(t));
  return true;
}

}  // namespace

const Job& WithoutClearedAlarms(const Job& job, Job* scratch) {
  // Each fault's lines in time order (the line's own stamp, else the file order): its last state
  // says whether it is still raised.
  struct Seen {
    size_t index;
    AlarmLine line;
  };
  std::map<std::string, std::vector<Seen>> by_fault;
  bool any_clear = false;
  for (size_t i = 0; i < job.events.size(); ++i) {
    AlarmLine a;
    if (!ReadAlarm(job.events[i], &a)) continue;
    any_clear = any_clear || !a.raised;
    by_fault[a.key].push_back({i, std::move(a)});
  }
  if (!any_clear) return job;
  std::vector<bool> drop(job.events.size(), false);
  for (auto& [key, lines] : by_fault) {
    auto order = [&](const Seen& s) {
      const Event& e = job.events[s.index];
      return std::make_tuple(s.line.stamp, e.time, e.loc.file, e.loc.line);
    };
    std::stable_sort(lines.begin(), lines.end(), [&](const Seen& a, const Seen& b) { return order(a) < order(b); });
    bool cleared = !lines.back().line.raised;
    for (const Seen& s : lines)
      if (cleared || !s.line.raised) drop[s.index] = true;
  }
  *scratch = job;
  scratch->events.clear();
  for (size_t i = 0; i < job.events.size(); ++i)
    if (!drop[i]) scratch->events.push_back(job.events[i]);
  return *scratch;
}

}  // namespace vigil::diagnose::rules
