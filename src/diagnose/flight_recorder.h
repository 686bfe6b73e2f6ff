// Vigil's flight-recorder dumps and HCCL rank tables, read from JSON files.
//
// Flight-recorder dumps, schema "vigil.flight/1" as the library writes it
// ($ASCEND_PROCESS_LOG_PATH/run/flight/flight-<pid>_<ts>.json, see dfx/flight_recorder.h):
//   {"schema":"vigil.flight/1","pid":..,"host":..,"reason":..,"dump_time":"<plog stamp>",
//    "comms":[{"identifier":..,"rank":..,"nranks":..,"device":..,
//              "ops":[{"index":..,"tag":..,"op":"AllReduce","count":..,"dataType":"float32",
//                      "reduceType":"sum"|null,"root":..|null,"streamId":..,"taskId":..,
//                      "enter":"2025-10-24-11:16:55.490.253","start":..|null,"leave":..|null,
//                      "state":"queued|running|done|failed","result":..,"error":".."}]}]}
// A comm object inherits pid/host/reason/dump_time from the top level when it has none.
//
// The older, tolerant form is still accepted (every field optional, numbers may be strings,
// times plog stamps or integer microseconds since the epoch):
//   {"comm": "<identifier>", "rank": 1, "rank_size": 4, "pid": .., "host": .., "device": 1,
//    "dump_time": .., "reason": .., "ops": [ {"index", "tag", "op", "count", "dataType",
//    "streamId", "enter", "leave", "state": "done" | "running" | "failed" | "pending"} ]}
// A file may also hold an array of such objects, or {"comms": [...]}. "identifier"/"group" are
// accepted for "comm", "rankId" for "rank", "nranks"/"rankSize" for "rank_size", "dtype" for
// "dataType", "stream" for "streamId", "reduce" for "reduceType".
//
// Rank table (HCCL v1.0/v2.0): {"server_list":[{"server_id", "device":[{"device_id",
// "device_ip", "rank_id"}]}]} maps device IPs (as named by CQE errors) to ranks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/events.h"

namespace vigil::diagnose {

struct FlightOp {
  int64_t index = -1;
  std::string tag, op, dtype, reduce, state, error;
  int64_t count = -1;
  int64_t stream = -1;
  int64_t root = -1;
  int64_t result = -1;                 // HcclResult when the dump gives it
  Micros enter = kNoTime, start = kNoTime, leave = kNoTime;
};

struct FlightDump {
  Loc loc;
  std::string schema;                  // "vigil.flight/1" or empty (older form)
  std::string group;
  int64_t rank = -1, rank_size = -1, pid = -1, device = -1;
  std::string host, reason;
  Micros dump_time = kNoTime;
  std::vector<FlightOp> ops;
};

struct RankTableDevice {
  std::string server_id, device_ip;
  int64_t device_id = -1, rank_id = -1;
};

// Returns true when `text` is JSON of one of the two kinds (results appended); false when it is
// not JSON or neither kind (the caller then scans it as text).
bool ParseJsonFile(std::string_view text, uint32_t file_index, std::vector<FlightDump>* dumps,
                   std::vector<RankTableDevice>* rank_table);

}  // namespace vigil::diagnose
