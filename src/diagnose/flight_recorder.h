// Vigil's flight-recorder dumps and HCCL rank tables, read from JSON files.
//
// Flight-recorder dump schema accepted (the library writes it; every field optional, numbers may
// be given as strings, times as plog stamps "2025-10-24-11:16:55.493.816" or integer
// microseconds since the epoch):
//   {
//     "schema": "vigil.flight/1",
//     "comm": "<identifier>",  "rank": 1, "rank_size": 4,
//     "pid": 2111666, "host": "127.10.0.1", "device": 1,
//     "dump_time": ..., "reason": "exec timeout",
//     "ops": [ {"index": 21, "tag": "AllReduce_<identifier>", "op": "AllReduce", "count": 256,
//               "dataType": "float32", "streamId": 2, "enter": ..., "leave": ...,
//               "state": "done" | "running" | "failed" | "pending"} ]
//   }
// A file may also hold an array of such objects, or {"comms": [...]}. "identifier"/"group" are
// accepted for "comm", "rankId" for "rank", "rankSize" for "rank_size", "dtype" for "dataType",
// "stream" for "streamId".
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
  std::string tag, op, dtype, state;
  int64_t count = -1;
  int64_t stream = -1;
  Micros enter = kNoTime, leave = kNoTime;
};

struct FlightDump {
  Loc loc;
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
