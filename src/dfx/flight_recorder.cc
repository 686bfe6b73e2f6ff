#include "dfx/flight_recorder.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "comm/op_observer.h"
#include "common/dtype.h"
#include "common/time_util.h"
#include "log/plog.h"

namespace vigil::dfx {

namespace {

constexpr size_t kMaxComms = 64;           // least recently used comms beyond this are dropped
constexpr int kMaxFailureDumps = 16;       // after a failure every later op may fail too

// What the caller's thread records of an op (under the recorder's lock). Its start, end and
// result are in the communicator's Progress (below), which the stream worker writes unlocked.
struct Entry {
  comm::OpRecord op;
  std::string error;
  std::shared_ptr<const alg::TaskLog> tasks;  // HCCL_DIAGNOSE_ENABLE=1 only
};

// Start, end and result of op `index`: one per op index modulo kFlightOpsPerComm, per
// communicator (CommInfo), written by the stream worker that runs the op without the
// recorder's lock (ops of a communicator run one at a time), read by dumps. A seqlock: version
// is odd while a write is under way; a reader retries until it sees the same even version on
// both sides of its reads. Times are SteadyClock ticks (the start is the communicator's one clock
// read of the op, OnStart's `now`), turned into wall time at a dump; 0 = not yet.
struct Progress {
  std::atomic<uint32_t> version{0};
  std::atomic<uint64_t> index{0};
  std::atomic<SteadyClock::rep> start{0}, leave{0};
  std::atomic<int32_t> result{0};

  struct View {
    uint64_t index = 0;
    SteadyClock::rep start = 0, leave = 0;
    int32_t result = 0;
  };
  View Read() const {
    View v;
    for (int attempt = 0; attempt < 1000; ++attempt) {
      const uint32_t before = version.load(std::memory_order_acquire);
      if (before % 2 != 0) continue;
      v.index = index.load(std::memory_order_relaxed);
      v.start = start.load(std::memory_order_relaxed);
      v.leave = leave.load(std::memory_order_relaxed);
      v.result = result.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (version.load(std::memory_order_relaxed) == before) return v;
    }
    return View{};  // a writer kept it busy: report the op as not started
  }
  template <typename Fn>
  void Write(Fn&& fn) {
    const uint32_t v = version.load(std::memory_order_relaxed);
    version.store(v + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    fn();
    version.store(v + 2, std::memory_order_release);
  }
};

// The last kFlightOpsPerComm ops of one communicator, oldest first. A fixed circle of slots,
// not a deque: a new op overwrites the oldest slot in place, so its strings reuse the slot's
// buffers and recording an op allocates nothing once the circle is full (a deque of entries this
// large allocated and freed a node per op).
struct CommRing {
  std::string identifier, user_name;
  uint32_t rank = 0, nranks = 0;
  int32_t device = 0;
  uint64_t last_use = 0;
  bool evicted = false;  // dropped from the recorder (kMaxComms): ops find their ring anew
  std::vector<Entry> slots = std::vector<Entry>(kFlightOpsPerComm);
  size_t first = 0;  // slot of the oldest op
  size_t count = 0;  // ops held

  Entry& At(size_t i) { return slots[(first + i) % slots.size()]; }
  const Entry& At(size_t i) const { return slots[(first + i) % slots.size()]; }

  // The slot for a new op: the next free one, or the oldest when full (it is evicted).
  Entry& Push() {
    if (count < slots.size()) return At(count++);
    Entry& oldest = slots[first];
    first = (first + 1) % slots.size();
    return oldest;
  }
};

// The recorder's state of one communicator (CommInfo), in its observer slot: made at its first
// op under the lock and never replaced, so the stream worker reads the slot without the lock
// (the op's enqueue, which made it, happened before the op runs).
struct CommState {
  std::shared_ptr<CommRing> ring;  // under the lock; replaced when the ring was evicted
  std::array<Progress, kFlightOpsPerComm> progress;  // by op index % kFlightOpsPerComm
  Progress& Of(uint64_t index) { return progress[index % kFlightOpsPerComm]; }
};

// Rings are keyed by (identifier, rank): a communicator re-created under the same identifier
// continues its predecessor's ring. Each communicator's CommState caches its ring, so an op
// finds it without a lookup; the map is for the first op of a communicator and for dumps.
// Lookups compare through string views (no copy).
using CommKey = std::pair<std::string, uint32_t>;
struct CommKeyLess {
  using is_transparent = void;
  using View = std::pair<std::string_view, uint32_t>;
  static View AsView(const CommKey& k) { return {k.first, k.second}; }
  static View AsView(const View& k) { return k; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return AsView(a) < AsView(b);
  }
};

std::string Escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

std::string TimeOrNull(const std::optional<WallClock::time_point>& t) {
  return t ? Escape(FormatPlogTime(*t)) : std::string("null");
}

std::string HostName() {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// ,"tasksTotal":N,"tasks":[{"task":1,"type":"Notify Wait","remote":1,"link":"SHM",
//  "bytes":1088,"done":0,"state":"failed"}, ...]
void AppendTasks(const alg::TaskLog& log, std::string* json) {
  *json += fmt::format(",\"tasksTotal\":{},\"tasks\":[", log.total);
  bool first = true;
  for (const alg::TaskRecord& t : log.tasks) {
    if (!first) *json += ',';
    first = false;
    *json += fmt::format(
        "{{\"task\":{},\"type\":\"{}\",\"remote\":{},\"link\":\"{}\",\"bytes\":{},\"done\":{},"
        "\"state\":\"{}\"}}",
        t.id, alg::TaskTypeName(t), t.remote, transport::LinkTypeName(t.link), t.bytes, t.done,
        alg::TaskStateName(t.state));
  }
  *json += ']';
}

class FlightRecorder : public comm::OpObserver {
 public:
  void OnEnqueue(const comm::OpRecord& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    CommRing& ring = RingLocked(op);
    Entry& e = ring.Push();
    e.op = op;  // no allocation: the record's strings live in its CommInfo
    e.error.clear();
    e.tasks.reset();
  }

  // On the stream worker, without the lock (Progress).
  void OnStart(const comm::OpRecord& op, SteadyClock::time_point start) override {
    auto* state = static_cast<CommState*>(State(op).get());
    if (state == nullptr) return;
    const SteadyClock::rep now = start.time_since_epoch().count();
    Progress& p = state->Of(op.index);
    p.Write([&] {
      p.index.store(op.index, std::memory_order_relaxed);
      p.start.store(now, std::memory_order_relaxed);
      p.leave.store(0, std::memory_order_relaxed);
      p.result.store(HCCL_SUCCESS, std::memory_order_relaxed);
    });
  }

  void OnTasks(const comm::OpRecord& op, const std::shared_ptr<alg::TaskLog>& tasks) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (Entry* e = FindLocked(op)) e->tasks = tasks;
  }

  void OnFinish(const comm::OpRecord& op, HcclResult result,
                const comm::OpFailure* failure) override {
    auto* state = static_cast<CommState*>(State(op).get());
    if (state == nullptr) return;
    const SteadyClock::rep now = SteadyClock::now().time_since_epoch().count();
    Progress& p = state->Of(op.index);
    p.Write([&] {
      if (p.index.load(std::memory_order_relaxed) != op.index) {  // it never started
        p.index.store(op.index, std::memory_order_relaxed);
        p.start.store(now, std::memory_order_relaxed);
      }
      p.leave.store(now, std::memory_order_relaxed);
      p.result.store(result, std::memory_order_relaxed);
    });
    if (failure != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      if (Entry* e = FindLocked(op)) e->error = failure->reason;
    }
    if (result != HCCL_SUCCESS && failure_dumps_.fetch_add(1) < kMaxFailureDumps) {
      Dump(fmt::format("op failed: tag[{}] index[{}] rank[{}] result[{}]", op.tag(), op.index,
                       op.rank, static_cast<int>(result)));
    }
  }

  std::string Dump(const std::string& reason) {
    const auto now = WallClock::now();
    // Progress times are steady: as wall time, that long before now.
    const SteadyClock::rep steady_now = SteadyClock::now().time_since_epoch().count();
    auto to_wall = [&](SteadyClock::rep t) {
      return now -
             std::chrono::duration_cast<WallClock::duration>(SteadyClock::duration(steady_now - t));
    };
    const std::string stamp = FormatPlogTime(now);
    const std::string host = HostName();
    const int pid = static_cast<int>(getpid());
    std::string json;
    json.reserve(16384);
    json += fmt::format("{{\"schema\":\"vigil.flight/1\",\"pid\":{},\"host\":{},\"reason\":{},"
                        "\"dump_time\":{},\"comms\":[",
                        pid, Escape(host), Escape(reason), Escape(stamp));
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool first_comm = true;
      for (const auto& [key, ring_ptr] : comms_) {
        const CommRing& ring = *ring_ptr;
        if (!first_comm) json += ',';
        first_comm = false;
        json += fmt::format(
            "\n{{\"identifier\":{},\"rank\":{},\"nranks\":{},\"rankSize\":{},\"device\":{},"
            "\"pid\":{},\"host\":{},\"reason\":{},\"dump_time\":{},\"userDefine\":{},\"ops\":[",
            Escape(ring.identifier), ring.rank, ring.nranks, ring.nranks, ring.device, pid,
            Escape(host), Escape(reason), Escape(stamp), Escape(ring.user_name));
        bool first_op = true;
        for (size_t i = 0; i < ring.count; ++i) {
          const Entry& e = ring.At(i);
          const comm::OpRecord& op = e.op;
          if (!first_op) json += ',';
          first_op = false;
          // The op's progress, if the slot still describes this op (not yet a later one).
          Progress::View p = static_cast<CommState*>(StateOf(*op.comm).get())->Of(op.index).Read();
          if (p.index != op.index) p = Progress::View{};
          std::optional<WallClock::time_point> start, leave;
          if (p.start != 0) start = to_wall(p.start);
          if (p.leave != 0) leave = to_wall(p.leave);
          const char* state = !start ? "queued"
                              : !leave ? "running"
                              : p.result == HCCL_SUCCESS ? "done"
                                                         : "failed";
          json += fmt::format(
              "\n {{\"index\":{},\"tag\":{},\"op\":{},\"count\":{},\"dataType\":{},"
              "\"reduceType\":{},\"root\":{},\"streamId\":{},\"taskId\":{},\"algType\":{},"
              "\"enter\":{},\"start\":{},\"leave\":{},\"state\":\"{}\",\"result\":{}",
              op.index, Escape(op.tag()), Escape(std::string(comm::OpTypeName(op.type))), op.count,
              Escape(std::string(DataTypeName(op.dtype))),
              comm::OpHasReduce(op.type) ? Escape(std::string(ReduceOpName(op.reduce)))
                                         : std::string("null"),
              comm::OpHasRoot(op.type) ? std::to_string(op.root) : std::string("null"),
              op.stream_id, op.task_id, Escape(op.alg_type()),
              Escape(FormatPlogTime(op.enqueue_time)), TimeOrNull(start), TimeOrNull(leave),
              state, p.result);
          if (!e.error.empty()) json += ",\"error\":" + Escape(e.error);
          if (e.tasks) AppendTasks(*e.tasks, &json);
          json += '}';
        }
        json += "]}";
      }
    }
    json += "\n]}\n";

    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::path(log::LogRoot()) / "run" / "flight";
    fs::create_directories(dir, ec);
    const int seq = dump_seq_.fetch_add(1);
    std::string name = fmt::format("flight-{}_{}", pid, FormatFileStamp(now));
    if (seq > 0) name += fmt::format("_{}", seq);
    const fs::path path = dir / (name + ".json");
    const fs::path tmp = dir / (name + ".json.tmp");
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) {
      HCCL_WARNING("[FlightRecorder]cannot write {}: {}", tmp.string(), strerror(errno));
      return "";
    }
    const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    if (std::fclose(f) != 0 || !ok) {
      fs::remove(tmp, ec);
      return "";
    }
    fs::rename(tmp, path, ec);
    if (ec) return "";
    HCCL_RUN_INFO("[FlightRecorder]dumped the last ops of {} communicator(s) to {} ({})",
                  comms_count_.load(), path.string(), reason);
    return path.string();
  }

 private:
  CommRing& RingLocked(const comm::OpRecord& op) {
    std::shared_ptr<void>& slot = State(op);
    if (!slot) slot = std::make_shared<CommState>();
    auto& state = *static_cast<CommState*>(slot.get());
    if (!state.ring || state.ring->evicted) {
      auto it = comms_.find(CommKeyLess::View(op.identifier(), op.rank));
      if (it == comms_.end()) {
        if (comms_.size() >= kMaxComms) {
          auto oldest = comms_.begin();
          for (auto i = comms_.begin(); i != comms_.end(); ++i) {
            if (i->second->last_use < oldest->second->last_use) oldest = i;
          }
          // Its ops go (their records hold the CommInfo whose state holds the ring: a cycle).
          CommRing& gone = *oldest->second;
          gone.evicted = true;
          gone.slots = std::vector<Entry>();
          gone.first = gone.count = 0;
          comms_.erase(oldest);
        }
        auto fresh = std::make_shared<CommRing>();
        fresh->identifier = op.identifier();
        fresh->user_name = op.user_name();
        fresh->rank = op.rank;
        fresh->nranks = op.nranks;
        fresh->device = op.device;
        it = comms_.emplace(CommKey(op.identifier(), op.rank), std::move(fresh)).first;
        comms_count_.store(comms_.size());
      }
      state.ring = it->second;
    }
    state.ring->last_use = ++use_clock_;
    return *state.ring;
  }

  // The ring of the op's communicator, if it has one (null: none, or it was dropped).
  CommRing* FindRingLocked(const comm::OpRecord& op) {
    auto* state = static_cast<CommState*>(State(op).get());
    if (state != nullptr && state->ring && !state->ring->evicted) return state->ring.get();
    auto it = comms_.find(CommKeyLess::View(op.identifier(), op.rank));
    return it == comms_.end() ? nullptr : it->second.get();
  }

  Entry* FindLocked(const comm::OpRecord& op) {
    CommRing* found = FindRingLocked(op);
    if (found == nullptr) return nullptr;
    // A communicator numbers its ops consecutively, so when the ring holds one unbroken run of
    // indices the entry is at a fixed distance from the newest one, or long gone. An enqueuer
    // running more than a ring ahead of the stream starts ops that were already evicted: the
    // full scan below then cost ~4% of a small AllReduce's CPU time, finding nothing.
    CommRing& ring = *found;
    if (ring.count == 0) return nullptr;
    const uint64_t oldest = ring.At(0).op.index, newest = ring.At(ring.count - 1).op.index;
    if (newest - oldest == ring.count - 1) {
      if (op.index < oldest || op.index > newest) return nullptr;
      return &ring.At(op.index - oldest);
    }
    for (size_t i = ring.count; i-- > 0;) {  // newest match wins
      if (ring.At(i).op.index == op.index) return &ring.At(i);
    }
    return nullptr;
  }

  std::mutex mu_;
  std::map<CommKey, std::shared_ptr<CommRing>, CommKeyLess> comms_;
  uint64_t use_clock_ = 0;
  std::atomic<size_t> comms_count_{0};
  std::atomic<int> failure_dumps_{0};
  std::atomic<int> dump_seq_{0};
};

FlightRecorder* g_recorder = nullptr;  // lives for the process: observers may run at exit

// SIGUSR1: the handler posts the semaphore (async-signal-safe); the thread dumps.
sem_t g_signal_sem;
std::atomic<bool> g_stop{false};

void OnSigusr1(int) { sem_post(&g_signal_sem); }

class SignalDumper {
 public:
  SignalDumper() {
    sem_init(&g_signal_sem, 0, 0);
    thread_ = std::thread([] {
      pthread_setname_np(pthread_self(), "vigil_flight");
      for (;;) {
        if (sem_wait(&g_signal_sem) != 0) {
          if (errno == EINTR) continue;
          return;
        }
        if (g_stop.load()) return;
        if (g_recorder != nullptr) g_recorder->Dump("SIGUSR1");
      }
    });
  }
  // At exit: stop and join the thread.
  ~SignalDumper() {
    g_stop.store(true);
    sem_post(&g_signal_sem);
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

void ArmSigusr1() {
  struct sigaction old = {};
  if (sigaction(SIGUSR1, nullptr, &old) != 0) return;
  const bool taken = (old.sa_flags & SA_SIGINFO) != 0 || (old.sa_handler != SIG_DFL);
  if (taken) {
    HCCL_RUN_INFO("[FlightRecorder]SIGUSR1 is handled by the program; dumps only on op failure");
    return;
  }
  static SignalDumper dumper;  // joined by its static destructor at exit
  struct sigaction sa = {};
  sa.sa_handler = OnSigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace

void InstallFlightRecorder() {
  static const bool installed = [] {
    g_recorder = new FlightRecorder();
    comm::AddOpObserver(g_recorder);
    ArmSigusr1();
    return true;
  }();
  (void)installed;
}

std::string DumpFlightRecorder(const std::string& reason) {
  return g_recorder != nullptr ? g_recorder->Dump(reason) : std::string();
}

}  // namespace vigil::dfx
