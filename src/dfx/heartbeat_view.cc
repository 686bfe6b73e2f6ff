// The heartbeat's view of this process (`vigil health`, JSON) and lookups of ranks by identity.
#include "dfx/heartbeat_impl.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log/plog.h"

namespace vigil::dfx {

const char* PeerStateName(PeerState s) {
  switch (s) {
    case PeerState::kWant:
      return "waiting";
    case PeerState::kConnecting:
      return "connecting";
    case PeerState::kUp:
      return "up";
    case PeerState::kLost:
      return "lost";
    case PeerState::kGone:
      return "closed";
  }
  return "?";
}

bool Heartbeat::Impl::Locate(const std::string& identifier, const std::string& uid, std::string* in,
            uint32_t* rank, uint32_t* pid) {
  std::lock_guard<std::mutex> lock(mu_);
  const CommEntry* found = nullptr;
  uint32_t at = 0;
  for (const auto& c : comms_) {
    auto it = std::find(c->uids.begin(), c->uids.end(), uid);
    if (it == c->uids.end() || (found != nullptr && c->identifier != identifier)) continue;
    found = c.get();
    at = static_cast<uint32_t>(it - c->uids.begin());
    if (c->identifier == identifier) break;
  }
  if (found == nullptr) return false;
  *in = found->identifier;
  *rank = at;
  *pid = found->pids[at];
  return true;
}

std::set<uint32_t> Heartbeat::Impl::LostRanks(const std::string& identifier) {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<uint32_t> lost;
  auto it = std::find_if(comms_.begin(), comms_.end(),
                         [&](const auto& c) { return c->identifier == identifier; });
  if (it == comms_.end()) return lost;
  const CommEntry& c = **it;
  for (uint32_t r = 0; r < c.size; ++r) {
    auto seen = seen_.find(c.uids[r]);
    if ((seen != seen_.end() && seen->second.count(HbStatus::kLost) != 0) ||
        exited_.count(c.uids[r]) != 0) {
      lost.insert(r);
    }
  }
  return lost;
}

void Heartbeat::Impl::NoteShrink(const Heartbeat::ShrinkNote& note) {
  std::lock_guard<std::mutex> lock(mu_);
  shrinks_.push_back(note);
  if (shrinks_.size() > kMaxPrevious) shrinks_.pop_front();
}

std::vector<HbEvent> Heartbeat::Impl::Events() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<HbEvent>(events_.begin(), events_.end());
}

std::string Heartbeat::Impl::ViewJson() {
  std::lock_guard<std::mutex> lock(mu_);
  return ViewJsonLocked();
}

std::string Heartbeat::Impl::ViewJsonLocked() const {
  using nlohmann::json;
  json v;
  v["pid"] = getpid();
  v["listen"] = self_key_;
  v["lost_timeout_s"] = lost_timeout_.count();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  v["host"] = host;
  const auto now = SteadyClock::now();
  json members = json::array(), ranks = json::array();
  for (const auto& c : comms_) {
    json m;
    m["uid"] = c->uid();
    m["comm"] = c->identifier;
    m["rank"] = c->rank;
    m["size"] = c->size;
    const CommEntry::Counts n = c->counts();
    m["in"] = n.in;
    m["out"] = n.out;
    m["exec_timeout_s"] = c->exec_timeout_s;
    m["aborted"] = c->aborted;
    if (n.in > n.out) {
      if (auto info = c->info.lock()) {
        m["op"] = info->tags[static_cast<size_t>(c->current_type.load())];
      }
      m["index"] = c->current_index.load();
      const SteadyClock::time_point since(SteadyClock::duration(c->inside_since.load()));
      m["inside_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count();
    }
    members.push_back(m);
    for (uint32_t r = 0; r < c->size; ++r) {
      ranks.push_back({{"comm", c->identifier},
                       {"rank", r},
                       {"uid", c->uids[r]},
                       {"endpoint", c->endpoints[r]},
                       {"pid", c->pids[r]}});
    }
  }
  v["members"] = members;
  v["ranks"] = ranks;
  json peers = json::array();
  for (const auto& [key, p] : peers_) {
    peers.push_back(
        {{"endpoint", key},
         {"state", PeerStateName(p.state)},
         {"last_rx_ms",
          std::chrono::duration_cast<std::chrono::milliseconds>(now - p.last_rx).count()}});
  }
  v["peers"] = peers;
  json events = json::array();
  for (const HbEvent& e : events_) {
    events.push_back({{"crimer", e.crimer},
                      {"informer", e.informer},
                      {"status", HbStatusName(e.status)},
                      {"arrival", FormatCTime(e.arrival)},
                      {"discovered_us", e.discovered_us}});
  }
  v["events"] = events;
  json previous = json::array();
  for (const Previous& p : previous_) {
    previous.push_back({{"comm", p.identifier},
                        {"rank", p.rank},
                        {"size", p.size},
                        {"in", p.in},
                        {"out", p.out},
                        {"aborted", p.aborted},
                        {"destroyed", FormatCTime(p.detached)}});
  }
  v["previous"] = previous;
  json shrinks = json::array();
  for (const Heartbeat::ShrinkNote& s : shrinks_) {
    shrinks.push_back({{"from", s.from},
                       {"to", s.to},
                       {"from_rank", s.from_rank},
                       {"to_rank", s.to_rank},
                       {"from_size", s.from_size},
                       {"to_size", s.to_size},
                       {"excluded", std::vector<uint32_t>(s.excluded.begin(), s.excluded.end())},
                       {"ms", s.ms},
                       {"at", FormatCTime(s.at)}});
  }
  v["shrinks"] = shrinks;
  return v.dump();
}

}  // namespace vigil::dfx
