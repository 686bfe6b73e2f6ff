#include "cli/health_command.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/socket.h"
#include "cli/job_key_file.h"
#include "dfx/heartbeat_frame.h"

namespace vigil::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct HealthOptions {
  std::vector<std::string> targets;
  bool json_out = false;
  double timeout_s = 2.0;
  std::string rootinfo_file;  // the job key's source (cli/job_key_file.h)
};

bool SplitHostPort(const std::string& s, std::string* host, uint16_t* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string p = s.substr(colon + 1);
  if (p.empty() || p.find_first_not_of("0123456789") != std::string::npos) return false;
  const long v = std::strtol(p.c_str(), nullptr, 10);
  if (v <= 0 || v > 65535) return false;
  *host = s.substr(0, colon);
  *port = static_cast<uint16_t>(v);
  return true;
}

// Waits for fd to be ready until the deadline; false on timeout or error.
bool WaitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, static_cast<int>(left.count()));
    if (rc > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
    if (rc < 0 && errno != EINTR) return false;
  }
}

// One query: the rank's view as JSON, or *error.
bool Query(const std::string& endpoint, double timeout_s, const auth::JobKey& key, json* view,
           std::string* error) {
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(endpoint, &host, &port)) {
    *error = "not HOST:PORT";
    return false;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    *error = "not an IPv4 address";
    return false;
  }
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = strerror(errno);
    return false;
  }
  auto fail = [&](const std::string& why) {
    close(fd);
    *error = why;
    return false;
  };
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    return fail(strerror(errno));
  }
  if (!WaitFd(fd, POLLOUT, deadline)) return fail("connect timed out");
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(strerror(err));
  {
    // The listener reads nothing before the job key is proven (bootstrap/auth.h).
    net::Socket view(fd);
    std::string why;
    const HcclResult rc = auth::AuthenticateDialer(view, auth::Purpose::kHealth, key, deadline, &why);
    (void)view.Release();
    if (rc != HCCL_SUCCESS) return fail(why);
  }
  const std::vector<uint8_t> q = dfx::EncodeQuery();
  size_t sent = 0;
  while (sent < q.size()) {
    if (!WaitFd(fd, POLLOUT, deadline)) return fail("send timed out");
    ssize_t n = send(fd, q.data() + sent, q.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return fail(strerror(errno));
    if (n > 0) sent += static_cast<size_t>(n);
  }
  dfx::FrameReader reader;
  dfx::FrameType type;
  std::vector<uint8_t> body;
  bool bad = false;
  uint8_t buf[65536];
  while (!reader.Next(&type, &body, &bad)) {
    if (bad) return fail("not a Vigil heartbeat listener");
    if (!WaitFd(fd, POLLIN, deadline)) return fail("no answer");
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return fail("closed without answer");
    if (n < 0 && errno != EAGAIN && errno != EINTR) return fail(strerror(errno));
    if (n > 0) reader.Append(buf, static_cast<size_t>(n));
  }
  close(fd);
  std::string text;
  if (type != dfx::FrameType::kReply || !dfx::DecodeReply(body, &text)) {
    *error = "unexpected answer";
    return false;
  }
  *view = json::parse(text, nullptr, false);
  if (view->is_discarded()) {
    *error = "malformed answer";
    return false;
  }
  return true;
}

// Listener addresses named in the run logs below `dir`, newest log first.
std::vector<std::string> EndpointsFromLogs(const std::string& dir) {
  static const std::string kKey = "[Heartbeat]maintenance listener [";
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (name.rfind("plog-", 0) != 0) continue;
    std::ifstream in(it->path());
    std::string line;
    while (std::getline(in, line)) {
      const size_t at = line.find(kKey);
      if (at == std::string::npos) continue;
      const size_t start = at + kKey.size();
      const size_t end = line.find(']', start);
      if (end != std::string::npos) {
        found.push_back({fs::last_write_time(it->path(), ec), line.substr(start, end - start)});
      }
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (const auto& [t, ep] : found) {
    if (std::find(out.begin(), out.end(), ep) == out.end()) out.push_back(ep);
  }
  return out;
}

std::string DefaultLogDir() {
  if (const char* p = std::getenv("ASCEND_PROCESS_LOG_PATH"); p != nullptr && *p != '\0') return p;
  if (const char* w = std::getenv("ASCEND_WORK_PATH"); w != nullptr && *w != '\0') {
    return std::string(w) + "/log";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/ascend/log";
}

int Priority(const std::string& status) {
  if (status == "ERROR CQE") return 0;
  if (status == "STUCK") return 1;
  if (status == "LOST") return 2;
  return 3;
}

std::string OpName(const std::string& tag) {
  const size_t us = tag.find('_');
  return us == std::string::npos ? tag : tag.substr(0, us);
}

// The shrinks the processes took part in, merged by (old, new) communicator, and the
// communicators they destroyed: the job's previous communicators.
void PrintRecoveries(const std::map<std::string, json>& views) {
  struct Shrink {
    uint32_t from_size = 0, to_size = 0;
    std::string excluded, at;
    std::set<uint32_t> by;
    int64_t ms = 0;
  };
  std::map<std::pair<std::string, std::string>, Shrink> shrinks;
  struct Previous {
    uint32_t size = 0;
    std::set<uint32_t> ranks;
    bool aborted = false;
    std::string destroyed;
  };
  std::map<std::string, Previous> previous;
  for (const auto& [ep, v] : views) {
    for (const auto& s : v.value("shrinks", json::array())) {
      Shrink& m = shrinks[{s.value("from", ""), s.value("to", "")}];
      m.from_size = s.value("from_size", 0u);
      m.to_size = s.value("to_size", 0u);
      std::vector<uint32_t> ex = s.value("excluded", std::vector<uint32_t>());
      m.excluded = fmt::format("[{}]", fmt::join(ex, ","));
      m.by.insert(s.value("from_rank", 0u));
      m.ms = std::max<int64_t>(m.ms, s.value("ms", int64_t{0}));
      if (m.at.empty()) m.at = s.value("at", "");
    }
    for (const auto& p : v.value("previous", json::array())) {
      Previous& m = previous[p.value("comm", "")];
      m.size = p.value("size", 0u);
      m.ranks.insert(p.value("rank", 0u));
      m.aborted = m.aborted || p.value("aborted", false);
      m.destroyed = std::max(m.destroyed, p.value("destroyed", std::string()));
    }
  }
  if (!shrinks.empty()) {
    fmt::print("\nShrinks ({}):\n", shrinks.size());
    for (const auto& [k, s] : shrinks) {
      fmt::print("  [{}] {} ranks -> [{}] {} ranks: excluded ranks {}, by ranks [{}] of the old "
                 "communicator, {} ms (slowest), {}\n",
                 k.first, s.from_size, k.second, s.to_size, s.excluded, fmt::join(s.by, ","),
                 s.ms, s.at);
    }
  }
  if (!previous.empty()) {
    fmt::print("\nPrevious communicators (destroyed by the processes that answered):\n");
    for (const auto& [comm, p] : previous) {
      fmt::print("  [{}] {} ranks, destroyed by ranks [{}]{}, last {}\n", comm, p.size,
                 fmt::join(p.ranks, ","), p.aborted ? " (aborted)" : "", p.destroyed);
    }
  }
}

int RunHealth(const HealthOptions& o) {
  std::vector<std::string> candidates;
  std::vector<std::string> targets = o.targets;
  if (targets.empty()) targets.push_back(DefaultLogDir());
  for (const std::string& t : targets) {
    std::string host;
    uint16_t port;
    if (SplitHostPort(t, &host, &port) && !fs::is_directory(t)) {
      candidates.push_back(t);
    } else {
      for (const std::string& ep : EndpointsFromLogs(t)) candidates.push_back(ep);
    }
  }
  if (candidates.empty()) {
    fmt::print(stderr,
               "vigil health: no heartbeat listener found in {} (run logs name it as "
               "\"[Heartbeat]maintenance listener [IP:PORT]\"); give HOST:PORT instead\n",
               fmt::join(targets, " "));
    return 2;
  }
  auth::JobKey key;
  std::string key_from, key_error;
  const std::string key_folder =
      !o.targets.empty() && fs::is_directory(o.targets.front()) ? o.targets.front() : DefaultLogDir();
  if (!FindJobKey(o.rootinfo_file, key_folder, &key, &key_from, &key_error)) {
    fmt::print(stderr, "vigil health: no job key: {}\n", key_error);
    return 2;
  }
  json first;
  std::string via, error;
  std::vector<std::string> tried;
  for (const std::string& ep : candidates) {
    if (Query(ep, o.timeout_s, key, &first, &error)) {
      via = ep;
      break;
    }
    tried.push_back(fmt::format("{} ({})", ep, error));
    if (tried.size() >= 64) break;
  }
  if (via.empty()) {
    fmt::print(stderr, "vigil health: no rank answered (job key from {}): {}\n", key_from,
               fmt::join(tried, "; "));
    return 2;
  }

  // Ask every other rank's process for its own state, in parallel.
  std::map<std::string, json> views{{via, first}};
  std::map<std::string, std::string> silent;
  std::set<std::string> endpoints;
  for (const auto& r : first["ranks"]) {
    const std::string ep = r.value("endpoint", "");
    if (!ep.empty() && ep != via) endpoints.insert(ep);
  }
  std::vector<std::pair<std::string, std::future<std::pair<bool, std::pair<json, std::string>>>>>
      pending;
  for (const std::string& ep : endpoints) {
    pending.push_back({ep, std::async(std::launch::async, [ep, t = o.timeout_s, key] {
                         json v;
                         std::string err;
                         bool ok = Query(ep, t, key, &v, &err);
                         return std::make_pair(ok, std::make_pair(v, err));
                       })});
    if (pending.size() >= 32) {
      for (auto& [e, f] : pending) {
        auto r = f.get();
        if (r.first)
          views[e] = r.second.first;
        else
          silent[e] = r.second.second;
      }
      pending.clear();
    }
  }
  for (auto& [e, f] : pending) {
    auto r = f.get();
    if (r.first)
      views[e] = r.second.first;
    else
      silent[e] = r.second.second;
  }

  // Events merged over every answer: one per (crimer, status), earliest first-seen kept.
  std::map<std::pair<std::string, std::string>, json> events;
  for (const auto& [ep, v] : views) {
    for (const auto& e : v["events"]) {
      auto k = std::make_pair(e.value("crimer", ""), e.value("status", ""));
      auto it = events.find(k);
      if (it == events.end() ||
          e.value("discovered_us", 0ull) < it->second.value("discovered_us", 0ull)) {
        events[k] = e;
      }
    }
  }
  std::map<std::string, std::set<std::string>> status_of;
  for (const auto& [k, e] : events) status_of[k.first].insert(k.second);

  // Members by (comm, rank) from the processes that answered.
  std::map<std::pair<std::string, uint32_t>, json> member;
  for (const auto& [ep, v] : views) {
    for (const auto& m : v["members"]) member[{m.value("comm", ""), m.value("rank", 0u)}] = m;
  }

  if (o.json_out) {
    json out;
    out["via"] = via;
    out["views"] = views;
    out["silent"] = silent;
    json ev = json::array();
    for (const auto& [k, e] : events) ev.push_back(e);
    out["events"] = ev;
    fmt::print("{}\n", out.dump(2));
  }

  uint32_t alive = 0, lost = 0, stuck = 0, cqe = 0, unreachable = 0, nranks = 0;
  std::set<std::string> comms;
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : first["ranks"]) {
    const std::string comm = r.value("comm", "");
    const uint32_t rank = r.value("rank", 0u);
    const std::string uid = r.value("uid", "");
    const std::string ep = r.value("endpoint", "");
    comms.insert(comm);
    ++nranks;
    auto mit = member.find({comm, rank});
    const bool answered = mit != member.end();
    std::vector<std::string> st(status_of[uid].begin(), status_of[uid].end());
    std::sort(st.begin(), st.end(),
              [](const std::string& a, const std::string& b) { return Priority(a) < Priority(b); });
    std::string state;
    if (!st.empty()) {
      state = fmt::format("{}", fmt::join(st, ","));
      if (status_of[uid].count("LOST")) ++lost;
      if (status_of[uid].count("STUCK")) ++stuck;
      if (status_of[uid].count("ERROR CQE")) ++cqe;
    }
    if (answered) {
      ++alive;
      state = state.empty() ? "alive" : state + " (answers)";
    } else {
      if (status_of[uid].empty()) ++unreachable;
      state = state.empty() ? "no answer" : state;
    }
    std::string op = "-", counters = "-";
    if (answered) {
      const json& m = mit->second;
      counters = fmt::format("{}/{}", m.value("in", 0ull), m.value("out", 0ull));
      if (m.contains("op")) {
        op = fmt::format("in {} #{} for {:.1f}s", OpName(m.value("op", "")), m.value("index", 0ull),
                         m.value("inside_ms", 0ll) / 1000.0);
      } else {
        op = "idle";
      }
      if (m.value("aborted", false)) op += " (comm aborted)";
    }
    rows.push_back({comm, std::to_string(rank), uid, std::to_string(r.value("pid", 0u)), ep, state,
                    op, counters});
  }

  if (!o.json_out) {
    fmt::print(
        "vigil health: job seen through rank process {} (pid {}); {} rank(s) in {} "
        "communicator(s); {} process(es) answered\n\n",
        via, first.value("pid", 0), nranks, comms.size(), views.size());
    const std::vector<std::string> head = {"COMM",      "RANK",  "UID", "PID",
                                           "HEARTBEAT", "STATE", "OP",  "IN/OUT"};
    std::vector<size_t> w(head.size());
    for (size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
    for (auto& row : rows) {
      if (row[0].size() > 40) row[0] = row[0].substr(0, 37) + "...";
      for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    }
    auto print_row = [&](const std::vector<std::string>& row) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}  ", row[i], w[i]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      fmt::print("{}\n", line);
    };
    print_row(head);
    std::string prev_comm;
    for (auto row : rows) {
      if (row[0] == prev_comm)
        row[0] = "";
      else
        prev_comm = row[0];
      print_row(row);
    }
    fmt::print("\nEvents ({}):\n", events.size());
    if (events.empty()) fmt::print("  none\n");
    std::vector<json> ev;
    for (const auto& [k, e] : events) ev.push_back(e);
    std::sort(ev.begin(), ev.end(), [](const json& a, const json& b) {
      const int pa = Priority(a.value("status", "")), pb = Priority(b.value("status", ""));
      if (pa != pb) return pa < pb;
      return a.value("discovered_us", 0ull) < b.value("discovered_us", 0ull);
    });
    for (const json& e : ev) {
      fmt::print("  {:<9}  crimer [{}]  informer [{}]  first seen {}\n", e.value("status", ""),
                 e.value("crimer", ""), e.value("informer", ""), e.value("arrival", ""));
    }
    for (const auto& [ep, why] : silent) fmt::print("  no answer from {}: {}\n", ep, why);
    PrintRecoveries(views);
    fmt::print("\nSummary: {} alive, {} lost, {} stuck, {} error cqe, {} unreachable\n", alive,
               lost, stuck, cqe, unreachable);
  }
  // Events about ranks of no current communicator are past (a shrink left them out).
  std::set<std::string> current;
  for (const auto& r : first["ranks"]) current.insert(r.value("uid", ""));
  bool current_events = false;
  for (const auto& [k, e] : events) current_events = current_events || current.count(k.first) != 0;
  const bool healthy = !current_events && silent.empty() && alive == nranks;
  return healthy ? 0 : 1;
}

}  // namespace

void RegisterHealthCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<HealthOptions>();
  CLI::App* cmd = app.add_subcommand(
      "health", "Cluster-wide view of a running job (ranks alive, lost, stuck; heartbeat events)");
  cmd->add_option("target", opts->targets,
                  "HOST:PORT of a rank's heartbeat listener, or a log folder whose run logs name "
                  "one (default: $ASCEND_PROCESS_LOG_PATH or ~/ascend/log)");
  cmd->add_flag("--json", opts->json_out, "Print the merged views as JSON");
  cmd->add_option("--timeout", opts->timeout_s, "Seconds to wait for each rank (default 2)");
  cmd->add_option("--rootinfo-file", opts->rootinfo_file,
                  "Root-info file of the job, for its job key (default: VIGIL_JOB_KEY, "
                  "VIGIL_ROOT_INFO, VIGIL_ROOT_INFO_FILE, else the vigil-job.key that vigil run "
                  "writes to its log folder)");
  cmd->callback([opts, exit_code] { *exit_code = RunHealth(*opts); });
}

}  // namespace vigil::cli
