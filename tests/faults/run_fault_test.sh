#!/usr/bin/env bash
# One fault of FAULTS.md for real: runs the fault driver under `vigil run`, then checks that every
# rank returned (RESULT line; `vigil run --timeout` bounds a hang), the codes each rank got, and
# the exact lines in its run/debug plog and on the screen.
# usage: run_fault_test.sh CASE VIGIL FAULT_DRIVER WORKDIR
set -u
CASE=$1
VIGIL=$2
DRIVER=$3
WORK=$4/$CASE
rm -rf "$WORK"
mkdir -p "$WORK/tmp"
LOGS=$WORK/logs
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

# Short timeouts (HCCL_CONNECT_TIMEOUT accepts >= 1, HCCL_EXEC_TIMEOUT >= 1 s; 0 = forever).
export HCCL_IF_BASE_PORT=0 HCCL_BUFFSIZE=1 HCCL_CONNECT_TIMEOUT=20 HCCL_EXEC_TIMEOUT=60
export ASCEND_PROCESS_LOG_PATH=$LOGS
unset HCCL_DFS_CONFIG HCCL_DIAGNOSE_ENABLE VIGIL_DEVICE_MEMORY HCCL_RDMA_QPS_PER_CONNECTION VIGIL_TRANSPORT VIGIL_FAULT

fail() {
  echo "FAIL[$CASE]: $*"
  echo "---- stdout"; cat "$WORK/out" 2>/dev/null
  echo "---- stderr"; tail -n 40 "$WORK/err" 2>/dev/null
  exit 1
}

NRANKS=0
# run N TIMEOUT DRIVER-ARGS...
run() {
  NRANKS=$1
  local timeout=$2
  shift 2
  "$VIGIL" run -n "$NRANKS" --log-dir "$LOGS" --timeout "$timeout" -- "$DRIVER" --tmp "$WORK/tmp" "$@" \
    >"$WORK/out" 2>"$WORK/err"
  echo "vigil run exit $?" >>"$WORK/err"
  for ((r = 0; r < NRANKS; r++)); do
    grep -q "^RESULT rank=$r " "$WORK/out" || fail "rank $r did not return (hung or crashed)"
  done
}

field() { grep "^RESULT rank=$1 " "$WORK/out" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
expect() {  # rank field value
  local got
  got=$(field "$1" "$2")
  [[ "$got" == "$3" ]] || fail "rank $1: $2=$got, expected $3"
}
expect_not() {
  local got
  got=$(field "$1" "$2")
  [[ "$got" != "$3" ]] || fail "rank $1: $2=$got, expected anything else"
}
logs_of() {  # rank run|debug -> that process's plog files
  local pid
  pid=$(field "$1" pid)
  ls "$LOGS/$2/plog/plog-${pid}_"*.log 2>/dev/null
}
has() {  # rank run|debug fixed-string...: every string on one line of that rank's log
  local rank=$1 chan=$2
  shift 2
  local files
  files=$(logs_of "$rank" "$chan")
  [[ -n "$files" ]] || fail "rank $rank has no $chan plog"
  local lines
  lines=$(cat $files | grep -F -- "$1")
  shift
  for s in "$@"; do lines=$(grep -F -- "$s" <<<"$lines"); done
  [[ -n "$lines" ]] || fail "rank $rank $chan log lacks a line with: $*"
}
count_in() {  # rank run|debug fixed-string -> number of lines
  cat $(logs_of "$1" "$2") | grep -cF -- "$3"
}
screen_has() { grep -qF -- "$1" "$WORK/err" || fail "screen (stderr) lacks: $1"; }
task_failed_lines() {  # rank stage tag-prefix index: the three "Task run failed" lines
  has "$1" debug "$2Task run failed, base information is streamID:[" "tag[$3_" "AlgType(level 0-1-2):["
  has "$1" debug "$2Task run failed, groupRank information is group:[" "rankSize[$NRANKS], rankId[$1]."
  has "$1" debug "$2Task run failed, opData information is timeStamp:[" "index[$4]"
}
# The flight-recorder dump of a rank lists op INDEX as OP with STATE.
flight_has() {  # rank index op state
  local pid
  pid=$(field "$1" pid)
  local files
  files=$(ls "$LOGS/run/flight/flight-${pid}_"*.json 2>/dev/null)
  [[ -n "$files" ]] || fail "rank $1 wrote no flight-recorder dump"
  "$PY" - "$2" "$3" "$4" $files <<'PY' || fail "rank $1 flight dump lacks op index $2 $3 $4"
import json, sys
index, op, state = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for path in sys.argv[4:]:
    d = json.load(open(path))
    assert d["schema"] == "vigil.flight/1"
    for c in d["comms"]:
        for o in c["ops"]:
            if o["index"] == index and o["op"] == op and o["state"] == state:
                sys.exit(0)
sys.exit(1)
PY
}

# The flight-recorder dump of a rank lists, for op INDEX, a task TYPE with REMOTE in STATE
# (HCCL_DIAGNOSE_ENABLE=1); "none" as TYPE: no op of the dump carries tasks.
flight_task() {  # rank index type remote state
  local pid
  pid=$(field "$1" pid)
  local files
  files=$(ls "$LOGS/run/flight/flight-${pid}_"*.json 2>/dev/null)
  [[ -n "$files" ]] || fail "rank $1 wrote no flight-recorder dump"
  "$PY" - "$2" "$3" "$4" "$5" $files <<'PY' || fail "rank $1 flight dump: op $2 task $3 remote $4 $5 not as expected"
import json, sys
index, typ, remote, state = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
ops = [o for p in sys.argv[5:] for c in json.load(open(p))["comms"] for o in c["ops"]]
if typ == "none":
    sys.exit(0 if all("tasks" not in o for o in ops) else 1)
for o in ops:
    if o["index"] != index:
        continue
    for t in o.get("tasks", []):
        if t["type"] == typ and t["remote"] == remote and t["state"] == state:
            sys.exit(0)
sys.exit(1)
PY
}

case $CASE in
F5_op_mismatch)
  # Rank 1 calls AllGather where ranks 0, 2, 3 call AllReduce (index 2). Its ring neighbours 0
  # and 2 and rank 1 itself see it in the fingerprint exchange; rank 3, whose neighbours agree,
  # stops too because the others close their links. HCCL_EXEC_TIMEOUT stays 60 s, longer than
  # the run is allowed: nobody may wait for it.
  run 4 45 --mode mismatch --what op --odd 1
  for r in 0 1 2; do
    expect $r async 1
    expect_not $r sync 0
  done
  expect_not 3 async 0
  expect_not 3 sync 0
  has 0 debug "[TaskExecStage][InvalidArgument]op inconsistent in communicator[" "index[2]:" \
    "local rank[0] AllReduce count[256] dataType[float32] reduceType[sum]" \
    "remote rank[1] AllGather count[256] dataType[float32]"
  # Rank 1 names the neighbour whose header it judged: rank 0 (prev) when both were in, rank 2
  # when rank 0 came late and rank 2 had already rejected rank 1 and closed.
  if ! (has 1 debug "op inconsistent in communicator[" "remote rank[2] AllReduce count[256]") >/dev/null; then
    has 1 debug "[TaskExecStage][InvalidArgument]op inconsistent in communicator[" \
      "local rank[1] AllGather count[256] dataType[float32]" "remote rank[0] AllReduce count[256]"
  fi
  has 1 debug "[TaskExecStage][InvalidArgument]op inconsistent in communicator[" \
    "local rank[1] AllGather count[256] dataType[float32]"
  has 2 debug "op inconsistent" "local rank[2] AllReduce" "remote rank[1] AllGather"
  screen_has "Invalid_Argument(EI0005): The arguments for collective communication are inconsistent between ranks, ccl_op AllReduce, group "
  screen_has ", parameter opType, local end AllReduce, remote end AllGather."
  has 0 debug "Invalid_Argument(EI0005)" "parameter opType, local end AllReduce, remote end AllGather."
  # HCCL's own lines beside Vigil's (rank_consistentcy_checker.cc form, enum numbers).
  has 0 debug "[InitChannelStage][ParameterConflict]CMD information tag check fail. local[AllReduce_" "], remote[AllGather_"
  has 0 debug "[InitChannelStage][ParameterConflict]CMD information cmdType check fail. local[2], remote[6]"
  has 0 debug "[InitChannelStage][ParameterConflict]CMD information op check fail. local[0], remote[255]"
  has 1 debug "[InitChannelStage][ParameterConflict]CMD information cmdType check fail. local[6], remote[2]"
  task_failed_lines 0 "[TaskExecStage][RunFailed][Host]" AllReduce 2
  task_failed_lines 1 "[TaskExecStage][RunFailed][Host]" AllGather 2
  has 3 debug "Task run failed, reason is peer rank[" "closed its links"
  flight_has 0 2 AllReduce failed
  flight_has 1 2 AllGather failed
  flight_has 0 1 AllReduce done
  ;;
F5_check_off)
  # The check's report is off, not the op headers: rank 1 (AllGather) and the AllReduce ranks
  # never take each other's data, and every rank fails with a notify-wait timeout (EI0002)
  # after HCCL_EXEC_TIMEOUT, as in HCCL. Without the headers rank 3's AllReduce would take rank
  # 1's AllGather input and complete with a wrong sum, ranks 0 and 2 with a right one by luck.
  export HCCL_DFS_CONFIG="cluster_heartbeat:on,inconsistent_check:off" HCCL_EXEC_TIMEOUT=2
  run 4 60 --mode mismatch --what op --odd 1 --hold-ms 5000
  for r in 0 1 2 3; do
    expect $r async 9
    expect_not $r sync 0
  done
  if grep -q "^DATA " "$WORK/out"; then
    fail "a rank completed the mismatched op: $(grep '^DATA ' "$WORK/out" | tr '\n' ' ')"
  fi
  task_failed_lines 1 "[TaskExecStage][Timeout][Host]" AllGather 2
  task_failed_lines 3 "[TaskExecStage][Timeout][Host]" AllReduce 2
  has 1 debug "[TaskExecStage][Timeout][Host]Task run failed, reason is timeout waiting for" "timeout[2s]"
  screen_has "Communication_Error_Timeout(EI0002): Communication operator execution waiting times out."
  has 1 run "HCCL_DFS_CONFIG set by environment to [cluster_heartbeat:on,inconsistent_check:off]"
  if grep -rqF "op inconsistent" "$LOGS/debug"; then fail "the check reported although it is off"; fi
  if grep -rqF "CMD information" "$LOGS/debug"; then fail "a CMD information line although the check is off"; fi
  flight_has 1 2 AllGather failed
  flight_has 3 2 AllReduce failed
  ;;
F6_count_mismatch)
  run 2 45 --mode mismatch --what count --odd 1
  expect 0 async 1
  expect 1 async 1
  has 0 debug "op inconsistent" "local rank[0] AllReduce count[256] dataType[float32]" \
    "remote rank[1] AllReduce count[512] dataType[float32]" "parameter[count] local[256] remote[512]"
  has 1 debug "op inconsistent" "local rank[1] AllReduce count[512]" "remote rank[0] AllReduce count[256]"
  screen_has "parameter count, local end 256, remote end 512."
  has 0 debug "[InitChannelStage][ParameterConflict]CMD information count check fail. local[256], remote[512]"
  has 1 debug "[InitChannelStage][ParameterConflict]CMD information count check fail. local[512], remote[256]"
  [[ $(count_in 0 debug "CMD information") == 1 ]] || fail "rank 0: one CMD information line expected"
  flight_has 0 2 AllReduce failed
  flight_has 1 2 AllReduce failed
  ;;
F6_dtype_mismatch)
  run 3 45 --mode mismatch --what dtype --odd 2
  for r in 0 1 2; do expect $r async 1; done
  has 2 debug "op inconsistent" "local rank[2] AllReduce count[256] dataType[int32]" \
    "dataType[float32]" "parameter[dataType] local[int32] remote[float32]"
  has 0 debug "op inconsistent" "local rank[0] AllReduce count[256] dataType[float32]" \
    "remote rank[2] AllReduce count[256] dataType[int32]"
  screen_has "parameter dataType, local end"
  has 2 debug "[InitChannelStage][ParameterConflict]CMD information dataType check fail. local[2], remote[4]"
  has 0 debug "[InitChannelStage][ParameterConflict]CMD information dataType check fail. local[4], remote[2]"
  ;;
F6_send_recv_count | F6_send_recv_dtype | F6_batch_send_recv_count | F6_batch_send_recv_dtype)
  # Point-to-point (count, dtype) mismatch between rank 0's send and rank 1's receive at index
  # 2: both ranks fail at once with EI0005 naming both sides, neither times out, nothing is
  # half copied. count: rank 1 receives 512 where 256 are sent; dtype: rank 0 sends int32.
  p2p=send op0=Send op1=Recv d0="Send" d1="Recv"
  if [[ $CASE == F6_batch_* ]]; then
    p2p=batch op0=BatchSendRecv op1=BatchSendRecv d0="BatchSendRecv send" d1="BatchSendRecv recv"
  fi
  if [[ $CASE == *_count ]]; then
    run 2 45 --mode p2p_mismatch --p2p $p2p --what count --odd 1
    c0=256 c1=512 t0=float32 t1=float32 para=count l0=256 r0=512 h0="local[256], remote[512]" h1="local[512], remote[256]"
  else
    run 2 45 --mode p2p_mismatch --p2p $p2p --what dtype --odd 0
    c0=256 c1=256 t0=int32 t1=float32 para=dataType l0=int32 r0=float32 h0="local[2], remote[4]" h1="local[4], remote[2]"
  fi
  for r in 0 1; do
    expect $r async 1
    expect_not $r sync 0
    [[ $(count_in $r debug "[InvalidArgument]op inconsistent") == 1 ]] || fail "rank $r: one op-inconsistent line expected"
    has $r debug "[InitChannelStage][ParameterConflict]CMD information $para check fail." "$([[ $r == 0 ]] && echo "$h0" || echo "$h1")"
  done
  has 0 debug "[TaskExecStage][InvalidArgument]op inconsistent in communicator[" "index[2]:" \
    "local rank[0] $d0 count[$c0] dataType[$t0] to rank[1] index[2] tag[${op0}_" \
    "remote rank[1] $d1 count[$c1] dataType[$t1] from rank[0] index[2];" "parameter[$para] local[$l0] remote[$r0]"
  has 1 debug "[TaskExecStage][InvalidArgument]op inconsistent in communicator[" "index[2]:" \
    "local rank[1] $d1 count[$c1] dataType[$t1] from rank[0] index[2] tag[${op1}_" \
    "remote rank[0] $d0 count[$c0] dataType[$t0] to rank[1] index[2];" "parameter[$para] local[$r0] remote[$l0]"
  screen_has "Invalid_Argument(EI0005): The arguments for collective communication are inconsistent between ranks, ccl_op $op0, group "
  screen_has ", parameter $para, local end $l0, remote end $r0."
  has 1 debug "Invalid_Argument(EI0005)" "ccl_op $op1, group " ", parameter $para, local end $r0, remote end $l0."
  task_failed_lines 0 "[TaskExecStage][RunFailed][Host]" $op0 2
  task_failed_lines 1 "[TaskExecStage][RunFailed][Host]" $op1 2
  if grep -qF "EI0002" "$WORK/err"; then fail "the p2p mismatch timed out instead"; fi
  flight_has 0 1 Send done
  flight_has 1 1 Recv done
  flight_has 0 2 $op0 failed
  flight_has 1 2 $op1 failed
  ;;
F7_late_rank)
  # Rank 1 enters 3.5 s after rank 0 with HCCL_EXEC_TIMEOUT=2: both time out.
  export HCCL_EXEC_TIMEOUT=2
  run 2 60 --mode late --odd 1 --delay-ms 3500
  for r in 0 1; do
    expect $r async 9
    task_failed_lines $r "[TaskExecStage][Timeout][Host]" AllReduce 2
    has $r debug "Task run failed, reason is timeout waiting for" "timeout[2s]"
    has $r run "HCCL_EXEC_TIMEOUT set by environment to [2]s"
  done
  screen_has "Communication_Error_Timeout(EI0002)"
  # Op-level tracking only (HCCL_DIAGNOSE_ENABLE=0): no task detail anywhere.
  if grep -rqF "para information is" "$LOGS/debug"; then fail "task detail without HCCL_DIAGNOSE_ENABLE"; fi
  for r in 0 1; do flight_task $r 2 none 0 -; done
  ;;
F7_late_rank_diagnose)
  # As F7 with task-level tracking: the report names the transfer each rank waited on (a
  # Notify Wait for the other's op header, nothing received) and the dumps carry the tasks.
  export HCCL_EXEC_TIMEOUT=2 HCCL_DIAGNOSE_ENABLE=1
  run 2 60 --mode late --odd 1 --delay-ms 3500
  for r in 0 1; do
    other=$((1 - r))
    expect $r async 9
    task_failed_lines $r "[TaskExecStage][Timeout][Host]" AllReduce 2
    has $r debug "[TaskExecStage][Timeout][Host]Task run failed, para information is task[" \
      "taskType[Notify Wait], remoteRank[$other], linkType[SHM], size[" "bytesDone[0]," \
      "waitFor[op header of rank[$other] (has it entered this op?)], tag[AllReduce_"
    [[ $(count_in $r debug "para information is") == 1 ]] || fail "rank $r: one task detail line expected"
    has $r run "HCCL_DIAGNOSE_ENABLE set by environment to [1]"
    flight_task $r 2 "Notify Wait" $other failed
    flight_task $r 1 "Notify Wait" $other done
    flight_task $r 1 Memcpy $other done
  done
  ;;
F7_late_rank_tcp)
  # F7 over TCP links, where an op's data goes out with its header before the peer enters the
  # op (VIGIL_TCP_EAGER, the default): rank 0's whole 256-byte AllReduce (one round) is on the
  # wire when it times out, and it takes it back (retract notice), so the late rank 1 still
  # times out instead of completing with what rank 0 gave up, and waits for rank 0's op header.
  export HCCL_EXEC_TIMEOUT=2 HCCL_DIAGNOSE_ENABLE=1 VIGIL_TRANSPORT=tcp
  run 2 60 --mode late --odd 1 --delay-ms 3500 --count 64
  for r in 0 1; do
    other=$((1 - r))
    expect $r async 9
    task_failed_lines $r "[TaskExecStage][Timeout][Host]" AllReduce 2
    has $r debug "Task run failed, reason is timeout waiting for" "timeout[2s]"
    has $r debug "[TaskExecStage][Timeout][Host]Task run failed, para information is task[" \
      "taskType[Notify Wait], remoteRank[$other], linkType[TCP], size[" "bytesDone[0]," \
      "waitFor[op header of rank[$other] (has it entered this op?)], tag[AllReduce_"
    flight_task $r 2 "Notify Wait" $other failed
  done
  if grep -q "^DATA rank=1 " "$WORK/out"; then fail "the late rank completed with abandoned data"; fi
  ;;
F8_two_streams)
  run 2 45 --mode two_streams --odd 1 --delay-ms 700
  has 0 debug "[TaskExecStage][InvalidArgument]communicator[" "used from two streams at once" \
    "op tag[AllReduce_" "on streamId[" "while tag[AllReduce_" "runs on streamId["
  ;;
F9_destroy_before_sync)
  run 2 45 --mode destroy_before_sync --delay-ms 1000
  expect_not 0 sync 0
  has 0 run "Entry-HcclCommDestroy: comm["
  has 0 debug "Execution_Error_SDMA(EI0012): SDMA memory copy task exception occurred." \
    "Task information: [src:[" "dst:[" "size:[" "link type:["
  screen_has "Execution_Error_SDMA(EI0012)"
  # The destroy comes before the error (plog stamps sort as text).
  destroy_t=$(cat $(logs_of 0 run) | grep -F "Entry-HcclCommDestroy" | head -1 | sed -n 's/.*):\([0-9-]*:[0-9:.]*\) .*/\1/p')
  error_t=$(cat $(logs_of 0 debug) | grep -F "(EI0012)" | head -1 | sed -n 's/.*):\([0-9-]*:[0-9:.]*\) .*/\1/p')
  [[ -n "$destroy_t" && -n "$error_t" && ! "$error_t" < "$destroy_t" ]] ||
    fail "Entry-HcclCommDestroy [$destroy_t] is not before the EI0012 [$error_t]"
  ;;
F10_small_buffer)
  run 2 45 --mode small_buffer --odd 1
  expect_not 1 sync 0
  expect 1 async 15
  has 1 debug "Execution_Error_SDMA(EI0012)" "size:[0x400]"
  has 1 debug "Task run failed, reason is user input buffer" "needs 1024 bytes but its allocation at" "holds only 64 bytes"
  screen_has "Execution_Error_SDMA(EI0012)"
  ;;
F10_freed_buffer)
  # The faulty op reuses the buffers of a good op before it: the free alone must get them checked.
  run 2 45 --mode freed_buffer --odd 1
  expect_not 1 sync 0
  expect 1 async 15
  has 1 debug "Execution_Error_SDMA(EI0012)" "size:[0x400]"
  has 1 debug "Task run failed, reason is user input buffer" "needs 1024 bytes but it was freed"
  screen_has "Execution_Error_SDMA(EI0012)"
  ;;
F11_qp_memory)
  # 32 QPs x 1 MB per TCP link do not fit 8 MB of device memory (the CCL buffer takes 2 MB).
  export HCCL_RDMA_QPS_PER_CONNECTION=32 VIGIL_DEVICE_MEMORY=8M VIGIL_TRANSPORT=tcp HCCL_CONNECT_TIMEOUT=5
  # Rank 0 dials rank 1 and cannot charge its QPs (EI0011); rank 1 then waits for a dial that
  # never comes (EI0006 naming rank 0 after HCCL_CONNECT_TIMEOUT).
  run 2 45 --mode init
  expect 0 init 0
  expect 0 async 3
  expect 1 init 0
  expect 1 async 9
  has 1 debug "Communication_Error_Get_Socket(EI0006)" "missing: rank[0]"
  screen_has "Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 32MB], Affected by QP depth configuration.] bytes of NPU memory. Possible Cause: Allocation failure due to insufficient NPU memory. Solution: Stop unnecessary processes and ensure the required memory is available."
  has 0 debug "[InitChannelStage][Resource]alloc link resources failed"
  has 0 debug "Task run failed, reason is link establishment could not allocate device memory for its QPs" "HCCL_RDMA_QPS_PER_CONNECTION[32]"
  ;;
F12_buffer_oom)
  export HCCL_BUFFSIZE=64 VIGIL_DEVICE_MEMORY=32M
  run 2 45 --mode init
  for r in 0 1; do
    expect $r init 3
    has $r debug "[InitGroupStage][Resource]CCL buffer allocation failed" "HCCL_BUFFSIZE"
    has $r debug "Resource_Error_Insufficient_CCL_Buffer(EI9001)" "2 x HCCL_BUFFSIZE [64]MB"
  done
  screen_has "Resource_Error_Insufficient_CCL_Buffer(EI9001)"
  if grep -qF "EI0011" "$WORK/err"; then fail "buffer OOM reported as EI0011"; fi
  ;;
F13_missing_rank)
  export HCCL_CONNECT_TIMEOUT=2
  run 3 45 --mode missing_rank --odd 2
  for r in 0 1; do
    expect $r init 9
    has $r debug "Communication_Error_Get_Socket(EI0006): Getting socket times out. Reason: ranks [2] of rankSize[3] did not join"
  done
  screen_has "Communication_Error_Get_Socket(EI0006)"
  ;;
F14_port_in_use)
  # The test holds HCCL_IF_BASE_PORT .. +31; HcclGetRootInfo must fail naming them.
  NRANKS=1
  "$DRIVER" --mode port_in_use >"$WORK/out" 2>"$WORK/err"
  grep -q "^RESULT rank=0 " "$WORK/out" || fail "the driver did not return"
  base=$(sed -n 's/^HELD base=\([0-9]*\).*/\1/p' "$WORK/out")
  [[ -n "$base" ]] || fail "could not hold the ports"
  expect 0 init 7
  screen_has "Communication_Error_Bind_IP_Port(EI0019): Failed to enable listening for the host network adapter socket. Reason: listen on ip["
  screen_has "port[$base-$((base + 31))] failed"
  has 0 debug "[InitGroupStage][Listen]socket type[2], listen on ip[" "port[$base-$((base + 31))] fail"
  ;;
F15_buffsize_mismatch)
  run 2 45 --mode init --odd 1 --odd-env HCCL_BUFFSIZE=2
  for r in 0 1; do expect $r init 1; done
  screen_has "Invalid_Argument(EI0005): The arguments for collective communication are inconsistent between ranks, ccl_op CommInit, group "
  screen_has "parameter buffsize, local end"
  has 0 debug "comm-wide parameter buffsize is inconsistent"
  has 0 debug "[InitChannelStage][ParameterConflict]CMD information cclbufferSize check fail. local[1048576], remote[2097152]"
  has 1 debug "[InitChannelStage][ParameterConflict]CMD information cclbufferSize check fail. local[2097152], remote[1048576]"
  ;;
F15_dfs_config_mismatch)
  # One rank turns the op-consistency check off: a mismatch would end as EI0005 on some ranks and
  # as a timeout on others, so the ranks must agree.
  run 2 45 --mode init --odd 1 --odd-env HCCL_DFS_CONFIG=inconsistent_check:off
  for r in 0 1; do expect $r init 1; done
  screen_has "Invalid_Argument(EI0005): The arguments for collective communication are inconsistent between ranks, ccl_op CommInit, group "
  screen_has "parameter inconsistent_check, local end"
  has 0 debug "comm-wide parameter inconsistent_check is inconsistent"
  ;;
F16_bad_args)
  run 3 60 --mode bad_args
  for r in 0 1 2; do
    expect $r ok 1
    badarg() {  # rank name rc
      grep -q "^BADARG rank=$1 name=$2 rc=$3\$" "$WORK/out" || fail "rank $1: $2 did not return $3"
    }
    badarg $r null_sendBuf 2
    badarg $r count_overflow 1
    badarg $r unknown_dtype 1
    badarg $r unknown_op 1
    badarg $r root_out_of_range 1
    badarg $r null_comm 1
    badarg $r rank_ge_nranks 1
    badarg $r garbage_root_info 1
    badarg $r allgather_after_stranger 0
    badarg $r comm_b_init_after_stranger 0
    badarg $r comm_b_allreduce 0
    badarg $r comm_a_allreduce_at_end 0
    # One ERROR line per bad argument, naming it.
    for s in "ptr [sendBuf] is nullptr" "count[4611686018427387904] is too large" \
      "dataType[99] is not supported" "op[99] is not supported" "root[3] is invalid" \
      "[HcclAllReduce]errNo[0x0000000005000001] comm is null" "rank[3] is invalid: expected < nRanks[3]" \
      "rootInfo is invalid: invalid root info: bad magic"; do
      n=$(count_in $r debug "$s")
      [[ "$n" == 1 ]] || fail "rank $r: $n ERROR lines with '$s', expected 1"
    done
  done
  for r in 0 1; do
    grep -q "^BADARG rank=$r name=reused_rank_id rc=1\$" "$WORK/out" || fail "rank $r: reused rank id not refused"
  done
  has 0 debug "rank id[0] is claimed"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "PASS[$CASE]"
