#include "dfx/root_cause.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "dfx/heartbeat.h"

namespace vigil::dfx {

namespace {

// The line's own entry in the knowledge base: its title names the line on the screen.
constexpr const char* kLineEntry = "vigil.root_cause_line";

const char* StatusSlug(HbStatus status) {
  switch (status) {
    case HbStatus::kLost:
      return "heartbeat_lost";
    case HbStatus::kStuck:
      return "heartbeat_stuck";
    case HbStatus::kCqe:
      return "heartbeat_error_cqe";
    case HbStatus::kOk:
      break;
  }
  return nullptr;
}

// A rank no communicator of this process holds prints as "?".
std::string RankText(int64_t rank) {
  return rank >= 0 ? std::to_string(rank) : "?";
}

// The meaning's first sentence without its full stop (the line goes on after it): the screen
// line stays of readable length; the whole entry is `vigil diagnose --explain <id>`'s.
std::string FirstSentence(const std::string& text) {
  size_t end = text.size();
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '.' && text[i + 1] == ' ') {
      end = i + 1;
      break;
    }
  }
  while (end > 0 && (text[end - 1] == '.' || text[end - 1] == ' ')) --end;
  return text.substr(0, end);
}

}  // namespace

const kb::Entry* RootCauseEntry(const kb::KnowledgeBase& base, HbStatus status) {
  const char* slug = StatusSlug(status);
  if (slug == nullptr) return nullptr;
  return base.Find(std::string("hccl.") + slug);
}

std::string FormatRootCauseLine(const RootCause& cause, const kb::KnowledgeBase& base,
                                WallClock::time_point now) {
  const HbEvent& e = cause.event;
  const kb::Entry* entry = RootCauseEntry(base, e.status);
  const kb::Entry* line = base.Find(kLineEntry);
  const std::string name =
      line != nullptr && !line->title.empty() ? line->title : "Vigil_Root_Cause";
  std::string who = e.crimer;
  if (cause.pid != 0) who += fmt::format(", pid {}", cause.pid);
  if (cause.exited) who += ", exited";
  const std::string cls = entry != nullptr && !entry->cls.empty() ? entry->cls : "unknown";
  std::string meaning;
  if (entry != nullptr && !entry->meaning.empty()) meaning = ": " + FirstSentence(entry->meaning);
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const int64_t at_us =
      e.discovered_us != 0
          ? static_cast<int64_t>(e.discovered_us)
          : std::chrono::duration_cast<std::chrono::microseconds>(e.arrival.time_since_epoch())
                .count();
  const int64_t after_ms = std::max<int64_t>(0, (now_us - at_us) / 1000);
  return fmt::format(
      "{}({}): rank {} ({}) {}, class {}{}; informer rank {} ({}), {} ms after the "
      "event.",
      name, entry != nullptr ? entry->id : "unknown", RankText(cause.rank), who,
      HbStatusName(e.status), cls, meaning, RankText(cause.informer_rank), e.informer, after_ms);
}

std::optional<RootCause> FindRootCause(const comm::OpRecord& op, const std::vector<HbEvent>& key) {
  if (key.empty() || !op.comm) return std::nullopt;
  Heartbeat& hb = Heartbeat::Instance();
  RootCause cause;
  cause.event = key.front();
  std::string in;
  uint32_t rank = 0, pid = 0;
  if (hb.Locate(op.identifier(), cause.event.crimer, &in, &rank, &pid)) {
    cause.rank = rank;
    cause.pid = pid;
    // A LOST rank may have exited or only fallen silent (stopped, cut off): say which is known.
    if (cause.event.status == HbStatus::kLost) cause.exited = hb.PeerExited(in, rank);
  }
  if (hb.Locate(op.identifier(), cause.event.informer, &in, &rank, &pid)) {
    cause.informer_rank = rank;
  }
  return cause;
}

std::vector<std::string> RootCauseLines(const comm::OpRecord& op, const std::vector<HbEvent>& key) {
  std::optional<RootCause> cause = FindRootCause(op, key);
  if (!cause) return {};
  return {FormatRootCauseLine(*cause, kb::Get(), WallClock::now())};
}

}  // namespace vigil::dfx
