#include "diagnose/flight_recorder.h"

#include <nlohmann/json.hpp>

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

int64_t Int(const json& o, std::initializer_list<const char*> keys) {
  const json* v = Get(o, keys);
  if (v == nullptr) return -1;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned()) return static_cast<int64_t>(v->get<uint64_t>());
  if (v->is_number_float()) return static_cast<int64_t>(v->get<double>());
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
  if (v->is_number()) return v->is_number_float() ? static_cast<Micros>(v->get<double>()) : v->get<int64_t>();
  if (v->is_string()) return ParseAnyTime(v->get_ref<const std::string&>());
  return kNoTime;
}

bool ParseDump(const json& o, uint32_t file_index, std::vector<FlightDump>* dumps) {
  const json* ops = Get(o, {"ops"});
  if (ops == nullptr || !ops->is_array()) return false;
  FlightDump d;
  d.loc.file = file_index;
  d.loc.line = 1;
  d.group = Str(o, {"comm", "identifier", "group"});
  d.rank = Int(o, {"rank", "rankId"});
  d.rank_size = Int(o, {"rank_size", "rankSize"});
  d.pid = Int(o, {"pid"});
  d.device = Int(o, {"device", "deviceId"});
  d.host = Str(o, {"host", "hostIp"});
  d.reason = Str(o, {"reason"});
  d.dump_time = Time(o, {"dump_time", "time"});
  for (const json& j : *ops) {
    if (!j.is_object()) continue;
    FlightOp op;
    op.index = Int(j, {"index"});
    op.tag = Str(j, {"tag"});
    op.op = Str(j, {"op", "type"});
    if (op.op.empty() && !op.tag.empty()) op.op = op.tag.substr(0, op.tag.find('_'));
    op.count = Int(j, {"count"});
    op.dtype = Str(j, {"dataType", "dtype"});
    op.stream = Int(j, {"streamId", "stream"});
    op.enter = Time(j, {"enter"});
    op.leave = Time(j, {"leave"});
    op.state = Str(j, {"state"});
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
  auto one = [&](const json& o) {
    if (ParseDump(o, file_index, dumps)) any = true;
    else if (ParseRankTable(o, rank_table)) any = true;
  };
  if (j.is_array()) {
    for (const json& o : j) one(o);
  } else if (const json* comms = Get(j, {"comms"}); comms != nullptr && comms->is_array()) {
    for (const json& o : *comms) one(o);
  } else {
    one(j);
  }
  return any;
}

}  // namespace vigil::diagnose
