#include "dfx/flight_recorder.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
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

constexpr size_t kMaxComms = 64;      // least recently used comms beyond this are dropped
constexpr int kMaxFailureDumps = 16;  // after a failure every later op may fail too

// A seqlock read of a slot whose writers make `version` odd while they write: `load` copies the
// fields (relaxed) into a View, retried until the same even version shows on both sides of it.
// A writer that keeps the slot busy for 1000 tries leaves an empty View (the slot is skipped).
template <typename View, typename Load>
View SeqlockRead(const std::atomic<uint32_t>& version, Load&& load) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint32_t before = version.load(std::memory_order_acquire);
    if (before % 2 != 0) continue;
    View v;
    load(v);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (version.load(std::memory_order_relaxed) == before) return v;
  }
  return View{};
}

// Start, end and result of op `index`: one per op index modulo kFlightOpsPerComm, per
// communicator (CommInfo), written by the stream worker that runs the op without the
// recorder's lock (ops of a communicator run one at a time), read by dumps. A seqlock: version
// is odd while a write is under way; a reader retries until it sees the same even version on
// both sides of its reads. Times are SteadyClock ticks (the communicator's clock reads of the
// op: OnStart's `now`, OnFinish's `leave`), turned into wall time at a dump; 0 = not yet.
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
  View Read() const {  // empty when a writer kept it busy: the op reads as not started
    return SeqlockRead<View>(version, [this](View& v) {
      v.index = index.load(std::memory_order_relaxed);
      v.start = start.load(std::memory_order_relaxed);
      v.leave = leave.load(std::memory_order_relaxed);
      v.result = result.load(std::memory_order_relaxed);
    });
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

// What the caller's thread records of op `index` when it is queued: one per op index modulo
// kFlightOpsPerComm, per communicator, beside its Progress. Written without a lock (a mutex per
// op cost ~160 instructions of the enqueue), as a seqlock like Progress; but two threads may
// queue ops of one communicator, so a writer claims the slot (even -> odd version) with a
// compare-exchange and waits while another holds it (only when they are kFlightOpsPerComm ops
// apart). A slot whose index is not the op's holds a later op (or none): the op left the recorder.
struct Entered {
  std::atomic<uint32_t> version{0};
  std::atomic<uint64_t> index{0};  // 0 = empty
  std::atomic<uint64_t> count{0};
  std::atomic<WallClock::rep> enter{0};
  std::atomic<uint64_t> kind{0};   // type | dtype << 8 | reduce << 16 | alg_type_index << 32
  std::atomic<uint64_t> where{0};  // root | stream_id << 32
  std::atomic<uint32_t> task_id{0};

  struct View {
    uint64_t index = 0, count = 0;
    WallClock::rep enter = 0;
    uint64_t kind = 0, where = 0;
    uint32_t task_id = 0;
    comm::OpType type() const { return static_cast<comm::OpType>(kind & 0xff); }
    HcclDataType dtype() const { return static_cast<HcclDataType>((kind >> 8) & 0xff); }
    HcclReduceOp reduce() const { return static_cast<HcclReduceOp>((kind >> 16) & 0xff); }
    uint32_t alg_type_index() const { return static_cast<uint32_t>(kind >> 32); }
    uint32_t root() const { return static_cast<uint32_t>(where); }
    uint32_t stream_id() const { return static_cast<uint32_t>(where >> 32); }
  };

  void Write(const comm::OpRecord& op) {
    Claim();
    index.store(op.index, std::memory_order_relaxed);
    count.store(op.count, std::memory_order_relaxed);
    enter.store(op.enqueue_time.time_since_epoch().count(), std::memory_order_relaxed);
    kind.store(static_cast<uint64_t>(op.type) | (static_cast<uint64_t>(op.dtype) & 0xff) << 8 |
                   (static_cast<uint64_t>(op.reduce) & 0xff) << 16 |
                   static_cast<uint64_t>(op.alg_type_index) << 32,
               std::memory_order_relaxed);
    where.store(op.root | static_cast<uint64_t>(op.stream_id) << 32, std::memory_order_relaxed);
    task_id.store(op.task_id, std::memory_order_relaxed);
    Release();
  }
  void Clear() {
    Claim();
    index.store(0, std::memory_order_relaxed);
    Release();
  }
  View Read() const {  // empty when a writer kept it busy: left out of the dump
    return SeqlockRead<View>(version, [this](View& v) {
      v.index = index.load(std::memory_order_relaxed);
      v.count = count.load(std::memory_order_relaxed);
      v.enter = enter.load(std::memory_order_relaxed);
      v.kind = kind.load(std::memory_order_relaxed);
      v.where = where.load(std::memory_order_relaxed);
      v.task_id = task_id.load(std::memory_order_relaxed);
    });
  }

 private:
  void Claim() {
    uint32_t v = version.load(std::memory_order_relaxed);
    if (v % 2 != 0 || !version.compare_exchange_strong(v, v + 1, std::memory_order_relaxed))
        [[unlikely]] {
      ClaimContended();
    }
    std::atomic_thread_fence(std::memory_order_release);
  }
  // Another writer holds the slot: out of line, so that the common path saves no registers.
  [[gnu::noinline]] void ClaimContended() {
    uint32_t v = version.load(std::memory_order_relaxed);
    while (v % 2 != 0 || !version.compare_exchange_weak(v, v + 1, std::memory_order_relaxed)) {
      if (v % 2 != 0) {
        std::this_thread::yield();
        v = version.load(std::memory_order_relaxed);
      }
    }
  }
  void Release() {
    version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
};

// What an op got after it was queued, rarely: its failure's reason, its tasks
// (HCCL_DIAGNOSE_ENABLE=1). Under the recorder's lock.
struct Extra {
  std::string error;
  std::shared_ptr<const alg::TaskLog> tasks;
  std::vector<std::string> retries;  // op retry steps, as JSON objects
};

// The recorder's state of one communicator (CommInfo), in its observer slot: made when the
// communicator is created (AttachFlightRecorder, before its handle is returned), so that every
// op reads it without the lock.
struct CommState {
  std::array<Entered, kFlightOpsPerComm> entered;    // by op index % kFlightOpsPerComm
  std::array<Progress, kFlightOpsPerComm> progress;  // by op index % kFlightOpsPerComm
  // In a ring of the recorder (comms_); cleared when its ring was dropped (kMaxComms): the next
  // op registers it anew, under the lock.
  std::atomic<bool> in_ring{false};
  std::atomic<WallClock::rep> last_use{0};  // the newest op's enqueue time (least recently used)
  std::map<uint64_t, Extra> extras;         // by op index; under the lock

  Entered& EnteredOf(uint64_t index) { return entered[index % kFlightOpsPerComm]; }
  Progress& Of(uint64_t index) { return progress[index % kFlightOpsPerComm]; }
  // Whether op `index` is still recorded (no later op took its slot).
  bool Holds(uint64_t index) const {
    return entered[index % kFlightOpsPerComm].index.load(std::memory_order_relaxed) == index;
  }
  // The ops recorded, oldest first.
  std::vector<Entered::View> Ops() const {
    std::vector<Entered::View> ops;
    for (const Entered& e : entered) {
      Entered::View v = e.Read();
      if (v.index != 0) ops.push_back(v);
    }
    std::sort(ops.begin(), ops.end(),
              [](const Entered::View& a, const Entered::View& b) { return a.index < b.index; });
    return ops;
  }
};

// The last kFlightOpsPerComm ops of one (identifier, rank): of the communicator, and of those
// made before it under the same identifier (a re-created communicator continues its
// predecessor's ring), oldest first.
struct CommRing {
  std::string identifier, user_name;
  uint32_t rank = 0, nranks = 0;
  int32_t device = 0;
  // Oldest first; a communicator's ops are in its CommState. Holding the CommInfo keeps its
  // strings (tags, AlgTypes) for the dump after the communicator is gone.
  std::vector<std::shared_ptr<const comm::CommInfo>> comms;
};

// Rings are keyed by (identifier, rank): a communicator re-created under the same identifier
// continues its predecessor's ring. An op never looks its ring up (its communicator's CommState
// is in the observer slot); the map is for attaching and for dumps. Lookups compare through
// string views (no copy).
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
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
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
  // An op of a communicator without state (made outside the API) or whose ring was dropped.
  [[gnu::noinline]] CommState& Register(const comm::OpRecord& op) {
    std::lock_guard<std::mutex> lock(mu_);
    return StateLocked(op.comm);
  }

  // Before the communicator's handle is returned: its state, so that its ops need no lock.
  void Attach(const std::shared_ptr<const comm::CommInfo>& info) {
    std::lock_guard<std::mutex> lock(mu_);
    StateLocked(info);
  }

  // On the caller's thread, without the lock (Entered).
  void OnEnqueue(const comm::OpRecord& op) override {
    auto* state = static_cast<CommState*>(State(op).get());
    if (state == nullptr || !state->in_ring.load(std::memory_order_acquire)) [[unlikely]] {
      state = &Register(op);
    }
    state->EnteredOf(op.index).Write(op);
    state->last_use.store(op.enqueue_time.time_since_epoch().count(), std::memory_order_relaxed);
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
    if (Extra* e = ExtraLocked(op)) e->tasks = tasks;
  }

  void OnRetry(const comm::OpRecord& op, const comm::RetryEvent& ev) override {
    using Kind = comm::RetryEvent::Kind;
    const char* step = ev.kind == Kind::kBegin ? "begin" : ev.kind == Kind::kRecovered
                                                             ? "recovered"
                                                             : "failed";
    std::string json = fmt::format(
        "{{\"step\":\"{}\",\"attempt\":{},\"maxCnt\":{},\"epoch\":{},\"link\":[{},{}],"
        "\"origin\":{},\"time\":{},\"lostSeconds\":{:.3f},\"reason\":{}}}",
        step, ev.attempt, ev.max_cnt, ev.epoch, ev.end_a, ev.end_b, ev.origin,
        Escape(FormatPlogTime(ev.time)), ev.lost_us / 1e6, Escape(ev.reason));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (Extra* e = ExtraLocked(op)) e->retries.push_back(std::move(json));
    }
    // A recovered op leaves no failure dump: write one, so the recovery is on disk.
    if (ev.kind == Kind::kRecovered && retry_dumps_.fetch_add(1) < kMaxFailureDumps) {
      Dump(fmt::format("op recovered by retry: tag[{}] index[{}] rank[{}] attempts[{}]", op.tag(),
                       op.index, op.rank, ev.attempt));
    }
  }

  void OnFinish(const comm::OpRecord& op, HcclResult result, const comm::OpFailure* failure,
                SteadyClock::time_point leave) override {
    auto* state = static_cast<CommState*>(State(op).get());
    if (state == nullptr) return;
    SteadyClock::rep now = leave.time_since_epoch().count();
    Progress& p = state->Of(op.index);
    p.Write([&] {
      if (p.index.load(std::memory_order_relaxed) != op.index) {  // it never started
        p.index.store(op.index, std::memory_order_relaxed);
        p.start.store(now, std::memory_order_relaxed);
      }
      // Never before its start: two reads of TscNow may straddle a re-anchoring (< 1 us).
      now = std::max(now, p.start.load(std::memory_order_relaxed));
      p.leave.store(now, std::memory_order_relaxed);
      p.result.store(result, std::memory_order_relaxed);
    });
    if (failure != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      if (Extra* e = ExtraLocked(op)) e->error = failure->reason;
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
    json += fmt::format(
        "{{\"schema\":\"vigil.flight/1\",\"pid\":{},\"host\":{},\"reason\":{},"
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
        // The ring's last kFlightOpsPerComm ops, its communicators' oldest first.
        struct Op {
          const comm::CommInfo* info;
          CommState* state;
          Entered::View e;
        };
        std::vector<Op> ops;
        for (const auto& info : ring.comms) {
          auto* state = static_cast<CommState*>(StateOf(*info).get());
          for (const Entered::View& e : state->Ops()) ops.push_back({info.get(), state, e});
        }
        const size_t skip = ops.size() > kFlightOpsPerComm ? ops.size() - kFlightOpsPerComm : 0;
        bool first_op = true;
        for (size_t i = skip; i < ops.size(); ++i) {
          const comm::CommInfo& info = *ops[i].info;
          const Entered::View& op = ops[i].e;
          if (!first_op) json += ',';
          first_op = false;
          // The op's progress, if the slot still describes this op (not yet a later one).
          Progress::View p = ops[i].state->Of(op.index).Read();
          if (p.index != op.index) p = Progress::View{};
          std::optional<WallClock::time_point> start, leave;
          if (p.start != 0) start = to_wall(p.start);
          if (p.leave != 0) leave = to_wall(p.leave);
          const char* state = !start                     ? "queued"
                              : !leave                   ? "running"
                              : p.result == HCCL_SUCCESS ? "done"
                                                         : "failed";
          const comm::OpType type = op.type();
          const size_t alg = op.alg_type_index();
          json += fmt::format(
              "\n {{\"index\":{},\"tag\":{},\"op\":{},\"count\":{},\"dataType\":{},"
              "\"reduceType\":{},\"root\":{},\"streamId\":{},\"taskId\":{},\"algType\":{},"
              "\"enter\":{},\"start\":{},\"leave\":{},\"state\":\"{}\",\"result\":{}",
              op.index, Escape(info.tags[static_cast<size_t>(type)]),
              Escape(std::string(comm::OpTypeName(type))), op.count,
              Escape(std::string(DataTypeName(op.dtype()))),
              comm::OpHasReduce(type) ? Escape(std::string(ReduceOpName(op.reduce())))
                                      : std::string("null"),
              comm::OpHasRoot(type) ? std::to_string(op.root()) : std::string("null"),
              op.stream_id(), op.task_id,
              Escape(alg < info.alg_types.size() ? info.alg_types[alg] : std::string()),
              Escape(FormatPlogTime(WallClock::time_point(WallClock::duration(op.enter)))),
              TimeOrNull(start), TimeOrNull(leave), state, p.result);
          auto extra = ops[i].state->extras.find(op.index);
          if (extra != ops[i].state->extras.end()) {
            if (!extra->second.error.empty()) json += ",\"error\":" + Escape(extra->second.error);
            if (extra->second.tasks) AppendTasks(*extra->second.tasks, &json);
            if (!extra->second.retries.empty()) {
              json += ",\"retries\":[";
              for (size_t k = 0; k < extra->second.retries.size(); ++k) {
                json += (k == 0 ? "" : ",") + extra->second.retries[k];
              }
              json += ']';
            }
          }
          json += '}';
        }
        json += "]}";
      }
    }
    json += "\n],\"shrinks\":[";
    {
      std::lock_guard<std::mutex> lock(mu_);
      bool first = true;
      for (const ShrinkRecord& r : shrinks_) {
        if (!first) json += ',';
        first = false;
        std::string excluded;
        for (uint32_t x : r.excluded) excluded += (excluded.empty() ? "" : ",") + std::to_string(x);
        json += fmt::format(
            "\n{{\"from\":{},\"to\":{},\"fromRank\":{},\"toRank\":{},\"fromSize\":{},"
            "\"toSize\":{},\"excluded\":[{}],\"coordinator\":{},\"time\":{},"
            "\"agreementMs\":{},\"ms\":{}}}",
            Escape(r.from), Escape(r.to), r.from_rank, r.to_rank, r.from_size, r.to_size, excluded,
            r.coordinator, Escape(FormatPlogTime(r.at)), r.agreement_ms, r.ms);
      }
    }
    json += "]}\n";

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
  // The communicator's state, made (and put in its ring) if it has none or its ring was dropped.
  CommState& StateLocked(const std::shared_ptr<const comm::CommInfo>& info) {
    std::shared_ptr<void>& slot = StateOf(*info);
    if (!slot) slot = std::make_shared<CommState>();
    auto& state = *static_cast<CommState*>(slot.get());
    if (state.in_ring.load(std::memory_order_relaxed)) return state;
    auto it = comms_.find(CommKeyLess::View(info->identifier, info->rank));
    if (it == comms_.end()) {
      if (comms_.size() >= kMaxComms) DropOldestLocked();
      auto fresh = std::make_shared<CommRing>();
      fresh->identifier = info->identifier;
      fresh->user_name = info->user_name;
      fresh->rank = info->rank;
      fresh->nranks = info->nranks;
      fresh->device = info->device;
      it = comms_.emplace(CommKey(info->identifier, info->rank), std::move(fresh)).first;
      comms_count_.store(comms_.size());
    }
    CommRing& ring = *it->second;
    ring.comms.push_back(info);
    // Predecessors whose ops all lie kFlightOpsPerComm or more behind their successors' go.
    size_t newer = 0;
    for (size_t i = ring.comms.size(); i-- > 0;) {
      if (newer >= kFlightOpsPerComm) {
        for (size_t j = 0; j <= i; ++j) {  // should one still run ops: they register anew
          static_cast<CommState*>(StateOf(*ring.comms[j]).get())
              ->in_ring.store(false, std::memory_order_relaxed);
        }
        ring.comms.erase(ring.comms.begin(), ring.comms.begin() + static_cast<ptrdiff_t>(i) + 1);
        break;
      }
      newer += static_cast<CommState*>(StateOf(*ring.comms[i]).get())->Ops().size();
    }
    state.in_ring.store(true, std::memory_order_release);
    return state;
  }

  // kMaxComms rings already: the least recently used one goes, with its ops.
  void DropOldestLocked() {
    auto last_use = [&](const CommRing& ring) {
      WallClock::rep newest = 0;
      for (const auto& info : ring.comms) {
        newest = std::max(newest, static_cast<CommState*>(StateOf(*info).get())
                                      ->last_use.load(std::memory_order_relaxed));
      }
      return newest;
    };
    auto oldest = comms_.begin();
    WallClock::rep oldest_use = last_use(*oldest->second);
    for (auto i = std::next(comms_.begin()); i != comms_.end(); ++i) {
      const WallClock::rep use = last_use(*i->second);
      if (use < oldest_use) {
        oldest = i;
        oldest_use = use;
      }
    }
    for (const auto& info : oldest->second->comms) {
      auto* state = static_cast<CommState*>(StateOf(*info).get());
      state->in_ring.store(false, std::memory_order_relaxed);
      for (Entered& e : state->entered) e.Clear();
      state->extras.clear();
    }
    comms_.erase(oldest);
  }

  // Where an op's failure and tasks go, if the op is still recorded (null: it left, or its
  // communicator has no state).
  Extra* ExtraLocked(const comm::OpRecord& op) {
    auto* state = static_cast<CommState*>(State(op).get());
    if (state == nullptr || !state->Holds(op.index)) return nullptr;
    // Those of ops that left the recorder go with them.
    if (op.index > kFlightOpsPerComm) {
      state->extras.erase(state->extras.begin(),
                          state->extras.lower_bound(op.index - kFlightOpsPerComm));
    }
    return &state->extras[op.index];
  }

 public:
  void NoteShrink(const ShrinkRecord& r) {
    std::lock_guard<std::mutex> lock(mu_);
    shrinks_.push_back(r);
    if (shrinks_.size() > kFlightShrinks) shrinks_.pop_front();
  }

 private:
  std::mutex mu_;
  std::deque<ShrinkRecord> shrinks_;
  std::map<CommKey, std::shared_ptr<CommRing>, CommKeyLess> comms_;
  std::atomic<size_t> comms_count_{0};
  std::atomic<int> failure_dumps_{0};
  std::atomic<int> retry_dumps_{0};
  std::atomic<int> dump_seq_{0};
};

FlightRecorder* g_recorder = nullptr;  // lives for the process: observers may run at exit

// SIGUSR1: the handler posts the semaphore (async-signal-safe); the thread dumps.
sem_t g_signal_sem;
std::atomic<bool> g_stop{false};

void OnSigusr1(int) {
  sem_post(&g_signal_sem);
}

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

void AttachFlightRecorder(const std::shared_ptr<const comm::CommInfo>& info) {
  if (g_recorder != nullptr && info != nullptr) g_recorder->Attach(info);
}

std::string DumpFlightRecorder(const std::string& reason) {
  return g_recorder != nullptr ? g_recorder->Dump(reason) : std::string();
}

void RecordShrink(const ShrinkRecord& record) {
  if (g_recorder == nullptr) return;
  g_recorder->NoteShrink(record);
  std::string excluded;
  for (uint32_t x : record.excluded) excluded += (excluded.empty() ? "" : ",") + std::to_string(x);
  g_recorder->Dump(fmt::format("communicator shrunk: [{}] rank[{}] of {} -> [{}] rank[{}] of {}, "
                               "excluded ranks[{}]",
                               record.from, record.from_rank, record.from_size, record.to,
                               record.to_rank, record.to_size, excluded));
}

}  // namespace vigil::dfx
