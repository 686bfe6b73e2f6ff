#!/usr/bin/env python3
"""Rebuilds tests/diagnose/fixtures/ from the seed documents' log lines (CANN's exact formats).

One folder per case; inside, one folder per node laid out like a CANN log root
(run/plog/plog-PID_TS.log, debug/plog/...), plus screen captures (stderr.txt). Run from anywhere:
    python3 tests/diagnose/make_fixtures.py
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
G = "127.10.0.1%enp_60000_0_1761275812718970"


def write(case, rel, lines, sep="\n"):
    path = os.path.join(OUT, case, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(sep.join(lines) + sep)


def init_line(pid, ts, rank, dev, group=G, ranks=4):
    return (f"[INFO] HCCL({pid},all_reduce_test):{ts} [op_base.cc:1292] [{pid}]Entry-HcclCommInitRootInfoInner:"
            f"ranks[{ranks}], rank[{rank}], rootinfo: host ip[127.10.0.1] port[60000] nicDeploy[1] "
            f"identifier[{group}], deviceLogicId[{dev}]")


def task_failed(pid, ts, tag, rank, index, count, dev, op_ts, reduce=True, stream=2, group=G, stage="Timeout"):
    red = "reduceType[sum], " if reduce else ""
    return [
        f"[ERROR] HCCL({pid},all_reduce_test):{ts}.044 [task_exception_handler.cc:908] [{pid}][TaskExecStage][{stage}][Host]"
        f"Task run failed, base information is streamID:[{stream}], taskID[21], tag[{tag}], AlgType(level 0-1-2):[fullmesh-ring-NHR].",
        f"[ERROR] HCCL({pid},all_reduce_test):{ts}.054 [task_exception_handler.cc:771] [{pid}][TaskExecStage][{stage}][Host]"
        f"Task run failed, groupRank information is group:[{group}], user define information[], rankSize[4], rankId[{rank}].",
        f"[ERROR] HCCL({pid},all_reduce_test):{ts}.083 [task_exception_handler.cc:704] [{pid}][TaskExecStage][{stage}][Host]"
        f"Task run failed, opData information is timeStamp:[{op_ts}], deviceId[{dev}], index[{index}], count[{count}], "
        f"{red}src[0x12c0c0013000], dst[0x12c0c0014000], dataType[float32].",
    ]


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)

    # --- heartbeat LOST (seed: Cluster Exception Location [127.10.0.1/1], Heartbeat Lost Occurred) ---
    c = "lost"
    write(c, "node0/run/plog/plog-835694_20251023172000000.log", [
        init_line(835694, "2025-10-23-17:20:00.100.000", 1, 1),
        "[INFO] HCCL(835694,all_reduce_test):2025-10-23-17:25:20.000.000 [op_base.cc:2000] [835694]Entry-HcclAllReduce: "
        f"tag[AllReduce_{G}], sendBuf[0x1], recvBuf[0x2], count[256], dataType[float32], op[sum], localRank[1], "
        "streamId[2],comm[0xfffe380078d0], deviceLogicId[1]",
    ])
    write(c, "node0/run/plog/plog-835695_20251023172000000.log", [
        init_line(835695, "2025-10-23-17:20:00.200.000", 2, 2),
        "[INFO] HCCL(835695,all_reduce_test):2025-10-23-17:25:58.049.385 [heartbeat.cc:951] [8970][TaskExecStage]"
        "[HeartbeatAbnormal]local rank [127.10.0.1/2]: crimer rank [127.10.0.1/1] status[LOST] by informer rank [127.10.0.1/2]",
    ])
    write(c, "node0/debug/plog/plog-835695_20251023172000000.log", [
        "[ERROR]HCCL(835695,all_reduce_test):2025-10-23-17:28:06.049.385[task_exception_handler.cc:610][835695][TaskExecStage]"
        "[HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], Arrival Time:[Thu Oct 23 17:25:58 2025], "
        "Discoverer:[127.10.0.1/2], ExceptionType:[Heartbeat Lost Occurred], Possible Reason:1. Process has exited, 2. Network Disconnected",
    ])

    # --- heartbeat STUCK (seed) plus an older LOST run-log event outside the window ---
    c = "stuck"
    write(c, "node0/debug/plog/plog-1219039_20251023210000000.log", [
        "[ERROR] HCCL(1219039,all_reduce_test):2025-10-23-21:05:09.859.568[task_exception_handler.cc:610] [1219039][TaskExecStage]"
        "[HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], Arrival Time:[Thu Oct 23 21:03:19 2025], "
        "ExceptionType:[Stuck Occurred], Possible Reason:1.Host process is stuck, 2.Device task is stuck",
    ])
    write(c, "node0/run/plog/plog-1219039_20251023210000000.log", [
        "[INFO] HCCL(1219039,all_reduce_test):2025-10-23-21:03:19.100.000 [heartbeat.cc:951] [8970][TaskExecStage]"
        "[HeartbeatAbnormal]local rank [127.10.0.1/0]: crimer rank [127.10.0.1/1] status[STUCK] by informer rank [127.10.0.1/1]",
    ])

    # --- heartbeat from run logs only (no Cluster Exception): LOST each other = network ---
    c = "mutual_lost"
    write(c, "node0/run/plog/plog-100_20251023172000000.log", [
        "[INFO] HCCL(100,train):2025-10-23-17:25:58.000.000 [heartbeat.cc:951] [8970][TaskExecStage][HeartbeatAbnormal]"
        "local rank [127.10.0.1/0]: crimer rank [127.10.0.2/0] status[LOST] by informer rank [127.10.0.1/0]",
    ])
    write(c, "node1/run/plog/plog-200_20251023172000000.log", [
        "[INFO] HCCL(200,train):2025-10-23-17:25:58.500.000 [heartbeat.cc:951] [8970][TaskExecStage][HeartbeatAbnormal]"
        "local rank [127.10.0.2/0]: crimer rank [127.10.0.1/0] status[LOST] by informer rank [127.10.0.2/0]",
    ])

    # --- AllReduce vs AllGather at index 21 (seed), all four ranks timed out ---
    c = "mismatch"
    pids = [2111665, 2111666, 2111667, 2111668]
    inits = ["2025-10-24-11:16:52.719.213", "2025-10-24-11:16:52.719.502", "2025-10-24-11:16:52.724.374", "2025-10-24-11:16:52.725.226"]
    fails = ["2025-10-24-11:18:29.499", "2025-10-24-11:18:29.513", "2025-10-24-11:18:29.597", "2025-10-24-11:18:29.601"]
    opts = ["2025-10-24-11:16:55.493.816", "2025-10-24-11:16:55.489.331", "2025-10-24-11:16:55.490.253", "2025-10-24-11:16:55.491.000"]
    for r, pid in enumerate(pids):
        stamp = "20251024111652405" if r < 2 else "20251024111652406"
        write(c, f"node0/run/plog/plog-{pid}_{stamp}.log", [init_line(pid, inits[r], r, r)])
        tag = ("AllGather_" if r == 1 else "AllReduce_") + G
        write(c, f"node0/debug/plog/plog-{pid}_{stamp}.log",
              task_failed(pid, fails[r], tag, r, 21, 256, r, opts[r], reduce=(r != 1)))

    # --- 5 min 44 s between the errors, HCCL_EXEC_TIMEOUT 300 s (seed) ---
    c = "timeout_gap"
    for r, (pid, ts) in enumerate([(2111665, "2025-10-24-22:03:14.946"), (2111666, "2025-10-24-22:08:58.890")]):
        write(c, f"node0/run/plog/plog-{pid}_20251024111652405.log", [
            f"[INFO] HCCL({pid},all_reduce_test):2025-10-24-11:16:50.000.000 [externalinput.cc:100] [{pid}][HCCL_ENV] "
            "HCCL_EXEC_TIMEOUT set by environment to [300]",
            init_line(pid, inits[r], r, r),
        ])
        # The three lines glued on one physical line, as the seed prints them.
        write(c, f"node0/debug/plog/plog-{pid}_20251024111652405.log",
              [" ".join(task_failed(pid, ts, "AllReduce_" + G, r, 21, 256, r, opts[r], reduce=(r == 0)))])

    # --- two streams on one comm (seed's two Entry lines, glued) ---
    c = "two_streams"
    g2 = "127.10.0.1%eth_60000_0_1741318944927847"
    write(c, "node0/run/plog/plog-3015875_20250307114300000.log", [
        f"[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 [hccl_opbase_atrace_info.cc:56][3017221]Entry-HcclAllReduce: "
        f"tag[AllReduce_{g2}], sendBuf[0x1241d3dcdc00], recvBuf[0x124702f40200], count[10746295], dataType[float32], op[sum], "
        f"localRank[0], streamId[7],comm[0xfffe380078d0], deviceLogicId[0] "
        f"[INFO] HCCL(3015875,python):2025-03-07-11:43:32.306.413 [hccl_opbase_atrace_info.cc:56][3017183]Entry-HcclAllReduce: "
        f"tag[AllReduce_{g2}], sendBuf[0x1244bfffe000], recvBuf[0x1244bfffb400], count[1024], dataType[float32], op[sum], "
        f"localRank[0], streamId[2],comm[0xfffe380078d0], deviceLogicId[0]",
    ])

    # --- SDMA EI0012: comm destroyed before the error (seed's runtime + HCCL lines) ---
    c = "sdma_destroy"
    write(c, "node0/run/plog/plog-57096_20250512205000000.log", [
        "[INFO] HCCL(57096,python3.10):2025-05-12-20:54:51.268.000 [op_base.cc:2000] [57096]Entry-HcclAllGather: "
        "tag[AllGather_group_name_0], sendBuf[0x12c25487ac00], recvBuf[0x12c255000000], count[3397632], dataType[uint8], "
        "localRank[0], streamId[32],comm[0xfffe3800aaaa], deviceLogicId[0]",
        "[INFO] HCCL(57096,python3.10):2025-05-12-20:55:44.100.000 [op_base.cc:1500] [57096]Entry-HcclCommDestroy: comm[0xfffe3800aaaa]",
    ])
    write(c, "node0/debug/plog/plog-57096_20250512205000000.log", [
        "[ERROR] RUNTIME(57096,python3.10):2025-05-12-20:55:44.705.025 [task_info.cc:1170]57288 PrintSdmaErrorInfoForFftsPlusTask:"
        "fftsplus task execute failed, dev_id=0, stream_id=50, task_id=21, context_id=18, thread_id=0, err_type=4[fftsplus sdma error] "
        "[ERROR] RUNTIME(57096,python3.10):2025-05-12-20:55:44.705.031 [task_info.cc:1270]57288 TaskFailCallBackForFftsPlusTask:"
        "fftsplus streamId=50, taskId=21, context_id=18, expandtype=1, rtCode=0x715006c,[fftsplus task exception], psStart=0x0, "
        "kernel_name=not found kernel name, binHandle=(nil), binSize=0. "
        "[ERROR] HCCL(57096,python3.10):2025-05-12-20:55:44.706.132 [task_exception_handler.cc:947] [57288][TaskExecStage][Timeout][Host]"
        "Task run failed, base information is streamID:[32], taskID[21], tag[AllGather_group_name_0], AlgType(level 0-1-2):[fullmesh-ring-H-D]. "
        "[ERROR] HCCL(57096,python3.10):2025-05-12-20:55:44.706.140 [task_exception_handler.cc:810] [57288][TaskExecStage][Timeout][Host]"
        "Task run failed, groupRank information is group:[group_name_0], user define information[Unspecified], rankSize[8], rankId[0]. "
        "[ERROR] HCCL(57096,python3.10):2025-05-12-20:55:44.706.163 [task_exception_handler.cc:737] [57288][TaskExecStage][Timeout][Host]"
        "Task run failed, opData information is timeStamp:[2025-05-12-20:54:51.268.778], deviceId[0], index[4], count[3397632], "
        "src[0x12c25487ac00], dst[0x12c255000000], dataType[uint8].",
    ])

    # --- SDMA EI0012 (seed's screen line): no destroy; the copy hits the user's buffer ---
    c = "sdma_buffer"
    write(c, "node0/stderr.txt", [
        "Traceback (most recent call last): RuntimeError: ACL stream synchronize failed",
        "[PID: 3480365] 2025-12-24-14:10:31.094.189 Execution_Error_SDMA(EI0012): SDMA memory copy task exception occurred. "
        "Remote rank: [4800]. Base information: [streamID:[351], taskID[5], taskType[Memcpy], tag[], AlgType(level 0-1-2):[null-null-null].]. "
        "Task information: [src:[0x12c180000000], dst:[0x12c041800000], size:[0x80], notify id:[0xffffffffffffffff], link type:[HCCS], "
        "remote rank:[0]]. Communicator information: [group:[], user define information[], rankSize[0], rankId[0]].",
    ])
    write(c, "node0/debug/plog/plog-3480365_20251224141000000.log", task_failed(
        3480365, "2025-12-24-14:10:31.090", "AllReduce_grp_sdma", 0, 7, 4194304, 0, "2025-12-24-14:10:30.000.000",
        group="grp_sdma", stage="RunFailed"))
    # opData dst is 0x12c0c0014000 in task_failed(); make the copy fall inside it:
    p = os.path.join(OUT, c, "node0/stderr.txt")
    with open(p, encoding="utf-8") as f:
        s = f.read().replace("dst:[0x12c041800000]", "dst:[0x12c0c0814000]")
    with open(p, "w", encoding="utf-8") as f:
        f.write(s)

    # --- error CQE (seed's ROCE/HCCP/HCCL lines), peer's logs end before the CQE ---
    c = "cqe"
    roce = ["[ERROR] ROCE(2040034,alltoall_test):2025-09-15-08:38:12.776.612 [hns_roce_lite.c:630]hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15"]
    for i, v in enumerate(["0x00041580", "0x00000000", "0x00000000", "0x1500047c", "0x00000000", "0x00000000", "0x00000000", "0x00000000"]):
        roce.append(f"[ERROR] ROCE(2040034,alltoall_test):2025-09-15-08:38:12.776.6{22 + i} [hns_roce_lite.c:747]dump_err_cqe(747) : "
                    f"CQ(0x10) CQE(0x5) INDEX(0x0000000{i}): {v}")
    roce.append("[ERROR] HCCP(2040034,alltoall_test):2025-09-15-08:38:12.776.650 [ra_hdc_lite.c:794]tid:2040458,ra_hdc_lite_period_poll_cqe : "
                "[create][ra_hdc_period_poll]failed CQE status[12], wr[0]")
    roce.append("[ERROR] HCCL(2040034,alltoall_test):2025-09-15-08:38:13.607.432 [heartbeat.cc:1229] [2040666][TaskExecStage][HeartbeatAbnormal]"
                "[ROCE CQE ERROR]cqe error status[12], time:[2025-09-15 08:38:12.776654],localInfo{server[127.10.0.1],deviceId[127.10.0.1],"
                "deviceIp[127.11.0.1]}, remoteIP{server[127.10.0.2],deviceId[127.10.0.2],deviceIp[127.11.0.2]}")
    write(c, "node0/debug/plog/plog-2040034_20250915083000000.log", [" ".join(roce)])
    write(c, "node1/run/plog/plog-2041000_20250915083000000.log", [
        "[INFO] HCCL(2041000,alltoall_test):2025-09-15-08:30:00.000.000 [op_base.cc:1292] [2041000]Entry-HcclCommInitRootInfoInner:"
        "ranks[2], rank[1], rootinfo: host ip[127.10.0.1] port[60000] nicDeploy[1] identifier[cqe_group], deviceLogicId[0]",
        "[INFO] HCCL(2041000,alltoall_test):2025-09-15-08:37:40.000.000 [heartbeat.cc:951] [1][TaskExecStage][HeartbeatAbnormal]"
        "local rank [127.10.0.2/0]: crimer rank [127.10.0.3/0] status[LOST] by informer rank [127.10.0.3/0]",
    ])
    write(c, "node1/debug/plog/plog-2041000_20250915083000000.log", [
        "[INFO] HCCL(2041000,alltoall_test):2025-09-15-08:37:50.000.000 [x.cc:1] [1]last line of the peer before it exited",
    ])
    # The CQE line names the peer by deviceIp; a rank table maps it to server/device.
    write(c, "ranktable.json", ['{"status":"completed","version":"1.0","server_count":"2","server_list":['
                                '{"server_id":"127.10.0.1","device":[{"device_id":"0","device_ip":"127.11.0.1","rank_id":"0"}]},'
                                '{"server_id":"127.10.0.2","device":[{"device_id":"0","device_ip":"127.11.0.2","rank_id":"1"}]}]}'])

    c = "cqe_screen"
    write(c, "stderr.txt", [
        "[PID: 3448331] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE occurred during operator execution. "
        "Local information: server 127.0.0.1, device ID 0, device IP 127.10.0.1. Peer information: server 127.0.0.2, device ID 1, "
        "device IP 127.10.0.2. Possible Cause: 1. The network between two devices is abnormal. For example, the network port is "
        "intermittently disconnected.2. The peer process exits abnormally in advance. As a result, the local end cannot receive the "
        "response from the peer end. Solution: 1. Check whether the network devices between the two ends are abnormal.2. Check whether "
        "the peer process exits first. If yes, check the cause of the process exit.",
    ])

    # --- EI0011 (seed) with a large QPS_PER_CONNECTION ---
    c = "ei0011"
    write(c, "node0/run/plog/plog-2103452_20251103201800000.log", [
        "[INFO] HCCL(2103452,python):2025-11-03-20:18:40.000.000 [externalinput.cc:100] [2103452][HCCL_ENV] "
        "HCCL_RDMA_QPS_PER_CONNECTION set by environment to [32]",
    ])
    write(c, "node0/screen.log", [
        "[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate "
        "[size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory. Possible Cause: Allocation failure due to "
        "insufficient NPU memory. Solution: Stop unnecessary processes and ensure the required memory is available.",
    ])

    # --- CCL buffer OOM (Vigil's EI9001 and a driver-style line), HCCL_BUFFSIZE 2048 ---
    c = "buffer_oom"
    write(c, "node0/run/plog/plog-4100_20251103201800000.log", [
        "[INFO] HCCL(4100,python):2025-11-03-20:18:40.000.000 [externalinput.cc:100] [4100][HCCL_ENV] HCCL_BUFFSIZE set by environment to [2048]M",
    ])
    write(c, "node0/debug/plog/plog-4100_20251103201800000.log", [
        "[ERROR] HCCL(4100,python):2025-11-03-20:18:41.000.000 [comm.cc:300] [4100][InitGroupStage][Resource]alloc cclBuffer failed: "
        "out of memory, size[4294967296]",
        "[ERROR] HCCL(4100,python):2025-11-03-20:18:41.000.100 [plog.cc:1] [4100]Resource_Error_Insufficient_CCL_Buffer(EI9001): "
        "Failed to allocate the communication buffer of [4294967296] bytes (HCCL_BUFFSIZE [2048]MB x 2) for communicator [grp0].",
    ])

    # --- CCL buffer OOM on one rank of three during init (Vigil's lines, as a chaos run of
    # tests/chaos wrote them): the others time out waiting for it; the verdict names rank 2 ---
    c = "buffer_oom_rank"
    for r in range(3):
        pid = 4200 + r
        write(c, f"node0/run/plog/plog-{pid}_20251103201800000.log", [
            f"[INFO] HCCL({pid},chaos_job):2025-11-03-20:18:40.000.000 [plog.cc:264] [{pid}][HCCL_ENV] HCCL_BUFFSIZE set by environment to [64]M",
            init_line(pid, "2025-11-03-20:18:40.100.000", r, r, group="oom_group", ranks=3)])
    write(c, "node0/debug/plog/plog-4202_20251103201800000.log", [
        "[ERROR] HCCL(4202,chaos_job):2025-11-03-20:18:40.200.000 [hccl_comm_api.cc:32] [4202]Resource_Error_Insufficient_CCL_Buffer(EI9001): "
        "Failed to allocate [128MB] of device memory for the CCL buffers (2 x HCCL_BUFFSIZE [64]MB).",
        "[ERROR] HCCL(4202,chaos_job):2025-11-03-20:18:40.200.100 [hccl_comm_api.cc:34] [4202][InitGroupStage][Resource]CCL buffer "
        "allocation failed: CCL buffer of 134217728 bytes (2 x HCCL_BUFFSIZE 64M) does not fit device 2 memory",
    ])
    for r in range(2):
        pid = 4200 + r
        write(c, f"node0/debug/plog/plog-{pid}_20251103201800000.log", [
            f"[ERROR] HCCL({pid},chaos_job):2025-11-03-20:18:45.300.000 [plog.cc:1] [{pid}]Communication_Error_Get_Socket(EI0006): "
            "Getting socket times out. Reason: ranks [2] of rankSize[3] did not join communicator [oom_group] at root "
            "127.10.0.1:60000 within HCCL_CONNECT_TIMEOUT [5]s."])

    # --- link establishment ---
    c = "link_timeout"
    for r in range(3):
        write(c, f"node0/run/plog/plog-{500 + r}_20251103201800000.log", [
            init_line(500 + r, f"2025-11-03-20:18:0{r}.000.000", r, r, group="lt_group")])
        write(c, f"node0/debug/plog/plog-{500 + r}_20251103201800000.log", [
            f"[ERROR] HCCL({500 + r},python):2025-11-03-20:20:20.000.000 [transport.cc:1] [{500 + r}][InitChannelStage][Timeout]"
            f"wait socket establish timeout, role[0] rank[3] timeout[120 s]"])
    c = "port_in_use"
    write(c, "stderr.txt", [
        "[PID: 777] 2025-11-03-20:18:46.447.213 Communication_Error_Bind_IP_Port(EI0019): Failed to bind the IP port. "
        "Reason: [Address already in use]. IP: [127.0.0.1], port: [60000].",
    ])
    c = "param_mismatch"
    write(c, "node0/debug/plog/plog-900_20251103201800000.log", [
        "[ERROR] HCCL(900,python):2025-11-03-20:18:46.000.000 [rank_consistentcy_checker.cc:200] [900][InitChannelStage]"
        "[ParameterConflict]CMD information cclbufferSize check fail. local[209715200], remote[104857600]",
    ])

    # --- HCCL's own consistency check (rank_consistentcy_checker.cc), as CANN writes it: enums as
    # numbers, no comm or rank in the line. Rank 1 called AllGather (cmdType 6) where the others
    # called AllReduce (2); its ring neighbours 0 and 2 and rank 1 itself report it (the reduce op
    # differs too: AllGather has none, 255) ---
    def cmd_fail(pid, ts, param, local, remote):
        return (f"[ERROR] HCCL({pid},python):{ts} [rank_consistentcy_checker.cc:412] [{pid}]"
                f"[RankConsistentcyChecker][ReportCmdInfoCheckFailed]CMD information {param} check fail. "
                f"local[{local}], remote[{remote}]")

    def frame_fail(pid, ts):
        return (f"[ERROR] HCCL({pid},python):{ts} [rank_consistentcy_checker.cc:508] [{pid}]"
                f"[RankConsistentcyChecker][CompareFrame]errNo[0x0000000005000004] CMD check fail")

    c = "cmd_check"
    for r in range(4):
        pid = 910 + r
        write(c, f"node0/run/plog/plog-{pid}_20251103201800000.log", [
            init_line(pid, f"2025-11-03-20:18:0{r}.000.000", r, r)])
        mine = "AllGather" if r == 1 else "AllReduce"
        peers = [p for p in ((r - 1) % 4, (r + 1) % 4) if (p == 1) != (r == 1)]
        lines = []
        for k, p in enumerate(peers):
            theirs = "AllGather" if p == 1 else "AllReduce"
            ts = f"2025-11-03-20:18:46.{100 + 10 * r + k:03d}.000"
            lines += [cmd_fail(pid, ts, "tag", f"{mine}_{G}", f"{theirs}_{G}"),
                      cmd_fail(pid, ts, "cmdType", 6 if r == 1 else 2, 6 if p == 1 else 2),
                      cmd_fail(pid, ts, "op", 255 if r == 1 else 0, 255 if p == 1 else 0),
                      frame_fail(pid, ts)]
        if lines:
            write(c, f"node0/debug/plog/plog-{pid}_20251103201800000.log", lines)
    # The same check on dataType: rank 3 passed float16 (3) where the others passed float32 (4).
    c = "cmd_check_dtype"
    for r in range(4):
        pid = 920 + r
        write(c, f"node0/run/plog/plog-{pid}_20251103201800000.log", [
            init_line(pid, f"2025-11-03-20:18:0{r}.000.000", r, r)])
        peers = [p for p in ((r - 1) % 4, (r + 1) % 4) if (p == 3) != (r == 3)]
        lines = []
        for k, p in enumerate(peers):
            ts = f"2025-11-03-20:18:46.{100 + 10 * r + k:03d}.000"
            lines += [cmd_fail(pid, ts, "dataType", 3 if r == 3 else 4, 3 if p == 3 else 4), frame_fail(pid, ts)]
        if lines:
            write(c, f"node0/debug/plog/plog-{pid}_20251103201800000.log", lines)

    # --- F7 in Vigil's own log format: rank 2 enters op index 4 400 s after the others, with
    # HCCL_EXEC_TIMEOUT 300 echoed; the others time out on it (their task exception lines) ---
    c = "late_entry"
    g3 = "127.0.0.1%lo_60001_0_1761300000000000"
    base = 11 * 3600 + 20 * 60  # 11:20:00

    def stamp(sec, us=0):
        return f"2025-10-24-{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}.{us // 1000:03d}.{us % 1000:03d}"

    for r in range(4):
        pid = 7100 + r
        lines = [
            f"[INFO] HCCL({pid},fault_driver):{stamp(base)} [env_config.cc:210] [{pid}][HCCL_ENV] "
            "HCCL_EXEC_TIMEOUT set by environment to [300]",
            f"[INFO] HCCL({pid},fault_driver):{stamp(base, 1000 + r)} [entry_log.cc:11] [{pid}]"
            f"Entry-HcclCommInitRootInfoInner:ranks[4], rank[{r}], rootinfo: host ip[127.0.0.1] port[60001] "
            f"nicDeploy[1] identifier[{g3}], deviceLogicId[{r}]",
        ]
        for i in range(5):
            t = base + 10 + i * 5 + (400 if (r == 2 and i == 4) else 0)
            lines.append(
                f"[INFO] HCCL({pid},fault_driver):{stamp(t, 2030 if (r == 2 and i == 4) else 2000 + r * 10)} "
                f"[entry_log.cc:28] [{pid}]Entry-HcclAllReduce: "
                f"tag[AllReduce_{g3}], sendBuf[0x7f0000001000], recvBuf[0x7f0000002000], count[1024], dataType[float32], "
                f"op[sum], localRank[{r}], streamId[1],comm[0x55550000{r:04x}], deviceLogicId[{r}]")
        write(c, f"node0/run/plog/plog-{pid}_20251024112000000.log", lines)
        fail_at = base + 30 + (400 if r == 2 else 0) + 300
        write(c, f"node0/debug/plog/plog-{pid}_20251024112000000.log",
              task_failed(pid, stamp(fail_at)[:-8], "AllReduce_" + g3, r, 4, 1024, r, stamp(base + 30), group=g3))

    # --- Vigil flight-recorder dumps (schema vigil.flight/1), no plogs: rank 1 of 2 enters op
    # index 3 2000 s after rank 0 (default HCCL_EXEC_TIMEOUT 1836 s) ---
    c = "flight"
    g4 = "127.0.0.1%lo_60002_0_1761300000000001"
    for r in range(2):
        pid = 8100 + r
        ops = []
        for i in range(4):
            t = base + i * 2 + (2000 if (r == 1 and i == 3) else 0)
            state = "done" if i < 3 else "failed"
            ops.append(
                f'{{"index":{i},"tag":"AllReduce_{g4}","op":"AllReduce","count":256,"dataType":"float32",'
                f'"reduceType":"sum","root":null,"streamId":1,"taskId":{i},"algType":"ring",'
                f'"enter":"{stamp(t, 500)}","start":"{stamp(t, 700)}",'
                f'"leave":{"null" if i == 3 else chr(34) + stamp(t, 900) + chr(34)},"state":"{state}","result":{0 if i < 3 else 9}}}')
        dump = (f'{{"schema":"vigil.flight/1","pid":{pid},"host":"127.0.0.1","reason":"op failed",'
                f'"dump_time":"{stamp(base + 2100)}","comms":[\n{{"identifier":"{g4}","rank":{r},"nranks":2,'
                f'"rankSize":2,"device":{r},"pid":{pid},"host":"127.0.0.1","userDefine":"","ops":[\n ' +
                ",\n ".join(ops) + "]}\n]}")
        write(c, f"node{r}/run/flight/flight-{pid}_20251024115500000.json", [dump])


if __name__ == "__main__":
    main()
