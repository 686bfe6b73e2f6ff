#include "diagnose/flight_recorder.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace vigil::diagnose {
namespace {

using nlohmann::json;

const json* Get(const json& o, std::initializer_list<const char*> keys) {
  if (!o.is_object()) return nullptr;
  for (const char* k : keys) {
    auto it = o.find(k);
    if (it != o.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

// A JSON number as int64_t, or `unknown` when it does not fit (1e300, NaN, 2^64 - 1): a float
// outside the range is undefined behaviour in a plain cast.
int64_t Fit(const json& v, int64_t unknown) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(u) : unknown;
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  const double d = v.get<double>();
  // -2^63 <= d < 2^63 (both exact as doubles); false for NaN.
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<int64_t>(d);
  return unknown;
}

int64_t Int(const json& o, std::initializer_list<const char*> keys) {
  const json* v = Get(o, keys);
  if (v == nullptr) return -1;
  if (v->is_number()) return Fit(*v, -1);
  if (v->is_string()) {
    auto x = ToInt(v->get_ref<const std::string&>());
    return x ? *x : -1;
  }
  return -1;
}

std::string Str(const json& o, std::initializer_list<const char*> keys) {
  const json* v = Get(o, keys);
  if (v == nullptr) return {};
  if (v->is_string()) return v->get<std::string>();
  if (v->is_number()) return v->dump();
  return {};
}

Micros Time(const json& o, std::initializer_list<const char*> keys) {
  const json* v = Get(o, keys);
  if (v == nullptr) return kNoTime;
  if (v->is_number()) return Fit(*v, kNoTime);
  if (v->is_string()) return ParseAnyTime(v->get_ref<const std::string&>());
  return kNoTime;
}

// `top`: the file's top-level object when `o` is one of its "comms" (pid, host, reason and dump
// time are given once per process there), else null.
bool ParseDump(const json& o, const json* top, uint32_t file_index, std::vector<FlightDump>* dumps) {
  const json* ops = Get(o, {"ops"});
  if (ops == nullptr || !ops->is_array()) return false;
  FlightDump d;
  d.loc.file = file_index;
  d.loc.line = 1;
  d.schema = Str(o, {"schema"});
  d.group = Str(o, {"identifier", "comm", "group"});
  d.rank = Int(o, {"rank", "rankId"});
  d.rank_size = Int(o, {"nranks", "rank_size", "rankSize"});
  d.pid = Int(o, {"pid"});
  d.device = Int(o, {"device", "deviceId"});
  d.host = Str(o, {"host", "hostIp"});
  d.reason = Str(o, {"reason"});
  d.dump_time = Time(o, {"dump_time", "time"});
  if (top != nullptr) {
    if (d.schema.empty()) d.schema = Str(*top, {"schema"});
    if (d.pid < 0) d.pid = Int(*top, {"pid"});
    if (d.host.empty()) d.host = Str(*top, {"host", "hostIp"});
    if (d.reason.empty()) d.reason = Str(*top, {"reason"});
    if (d.dump_time == kNoTime) d.dump_time = Time(*top, {"dump_time", "time"});
    if (d.device < 0) d.device = Int(*top, {"device", "deviceId"});
  }
  for (const json& j : *ops) {
    if (!j.is_object()) continue;
    FlightOp op;
    op.index = Int(j, {"index"});
    op.tag = Str(j, {"tag"});
    op.op = Str(j, {"op", "type"});
    if (op.op.empty() && !op.tag.empty()) op.op = op.tag.substr(0, op.tag.find('_'));
    op.count = Int(j, {"count"});
    op.dtype = Str(j, {"dataType", "dtype"});
    op.reduce = Str(j, {"reduceType", "reduce"});
    op.root = Int(j, {"root"});
    op.stream = Int(j, {"streamId", "stream"});
    op.enter = Time(j, {"enter"});
    op.start = Time(j, {"start"});
    op.leave = Time(j, {"leave"});
    op.state = Str(j, {"state"});
    op.result = Int(j, {"result"});
    op.error = Str(j, {"error"});
    d.ops.push_back(std::move(op));
  }
  dumps->push_back(std::move(d));
  return true;
}

bool ParseRankTable(const json& o, std::vector<RankTableDevice>* out) {
  const json* servers = Get(o, {"server_list"});
  if (servers == nullptr || !servers->is_array()) return false;
  for (const json& s : *servers) {
    std::string sid = Str(s, {"server_id"});
    const json* devs = Get(s, {"device"});
    if (devs == nullptr || !devs->is_array()) continue;
    for (const json& d : *devs) {
      RankTableDevice r;
      r.server_id = sid;
      r.device_id = Int(d, {"device_id"});
      r.device_ip = Str(d, {"device_ip"});
      r.rank_id = Int(d, {"rank_id"});
      out->push_back(std::move(r));
    }
  }
  return true;
}

}  // namespace

bool ParseJsonFile(std::string_view text, uint32_t file_index, std::vector<FlightDump>* dumps,
                   std::vector<RankTableDevice>* rank_table) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return false;
  bool any = false;
  auto one = [&](const json& o, const json* top) {
    if (ParseDump(o, top, file_index, dumps)) any = true;
    else if (ParseRankTable(o, rank_table)) any = true;
  };
  if (j.is_array()) {
    for (const json& o : j) one(o, nullptr);
  } else if (const json* comms = Get(j, {"comms"}); comms != nullptr && comms->is_array()) {
    // vigil.flight/1: a file with no comm at all (nothing recorded yet) is still ours.
    if (comms->empty() && Str(j, {"schema"}).starts_with("vigil.flight/")) any = true;
    for (const json& o : *comms) one(o, &j);
  } else {
    one(j, nullptr);
  }
  return any;
}

}  // namespace vigil::diagnose
