// Plog lines that say who a rank is (its communicator, rank, device ids and addresses) and whom
// it waits for while links or the root-info exchange are set up: the facts the waiting-chain and
// timeout-report rules join across ranks. The forms are rows of data/formats/plog_lines.json.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/events.h"
#include "diagnose/record.h"

namespace vigil::diagnose {

// Whether an INFO record may hold one of these lines (the cheap test before the full parse).
bool MayBeRankLine(std::string_view content);

// Fills *ev and returns true when the record is one of them:
//   kRankInfo     SetupAgent / hcclCommInitInfo / hcom init by file / HcclCommInitRootInfo
//                 success|failed: group, rank, rank_size, device (logical), local_device
//                 (physical id), local_ip (device NIC IP), local_server (server IP);
//                 "HcclGetRootInfo success": group, name "root";
//                 "[Vnic]Listen on ip[V] ... devPhyId[N]": name "vnic", ip V, local_device N
//   kWaitPeer     link-table rows (detail "socket": remote_ip, dst_rank, local_ip, src_rank,
//                 status), "connected p2p timeout ... remote physic id:N" (detail "p2p":
//                 remote_device N), AICPU "[TaskException]base information ... type:NOTIFY WAIT,
//                 localRank:L, remoteRank:R" (detail "aicpu": rank, remote_rank) and its opData
//                 line (detail "aicpu_op": group, tag, index)
//   kRootInfoFail "receive (msg length) from fdhandle failed" (detail "recv")
//   kConnectedRanks the root's "connected rankinfo[LINE n]: [..],[..]": ranks
//   kCqeDetail    heartbeat "cqe err status[12], time:[..], ip:[R]" and the "cqe error
//                 status[12] remoteIP:[R]" / "remoteIP{deviceId[d],deviceIp[R]}" forms
//   kOpRetry      Vigil's "[OpRetry]" lines: a retry begins, recovered, gave up (comm/op_retry.h)
//   kShrink       Vigil's "[Shrink]communicator[OLD] rankSize[N] shrunk to communicator[NEW]
//                 rankSize[M] by rank[r] ...: excluded ranks[..], ..., total[T]ms": group, value,
//                 rank_size, rank, ranks, elapsed_ms
//   kEnv          HCCL_CONNECT_TIMEOUT echoes ("set by environment to [130]s",
//                 "environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[600]")
bool ParseRankLine(const Record& r, Event* ev);

// What loading the forms reported (a row with an unknown kind or group, a bad regex); a test
// asserts there is nothing.
const std::vector<std::string>& RankLineErrors();

}  // namespace vigil::diagnose
