#!/bin/bash
# No false alarms: a real 4-rank job of mixed collectives (noalarm_job.cc: ~10 ops a round,
# every result checked) runs under load that is not a fault, and must end with
#   - the launcher's exit 0, every rank's "wrong=0 failed=0 async=0 lasterr=0" and at least
#     MIN_OPS ops each, over at least 4 LOST-timeout lengths (so >= 12 beat periods);
#   - no LOST, STUCK or ERROR CQE anywhere: no HeartbeatAbnormal / [ROCE CQE ERROR] /
#     Cluster Exception line, no "neighbour .. lost", "is stuck", "aborted with", no ERROR line
#     in any rank's log, and no flight-recorder dump (an op failed or retried);
#   - `vigil health` on the live job after the load: every rank alive, no event.
# Scenario-specific evidence that the load was real is asserted too (below).
#
#   noalarm.sh VIGIL NOALARM_JOB NOALARM_HOG WORKDIR SCENARIO
#
# Scenarios:
#   cpu_hog     2 x nproc busy loops at the job's own nice level for the whole job
#   sigstop     4 times, one rank (a different one each time) is stopped with SIGSTOP for half
#               the LOST timeout, then SIGCONT; 2 s between pauses
#   lossy_link  2 network-namespace hosts x 2 ranks (TCP between them); the hosts' link drops
#               10% of its packets at random both ways (nft: numgen random mod 10) and each end
#               sends at most 100 Mbit/s (tc tbf). Root only: exit 77 (skipped) otherwise.
#   low_memory  a hog holds MemAvailable minus ~1 GiB (given back piece by piece if the machine
#               falls below 256 MiB, so other work never runs out; topped up when other work
#               frees memory) while the job runs
#
# Timeouts, shortened with their ratios kept: VIGIL_HEARTBEAT_LOST_TIMEOUT = LOST (6 s; beats
# every 1 s), HCCL_EXEC_TIMEOUT = 3 x LOST (STUCK checks every LOST), the TCP send timeout
# (HCCL_RDMA_TIMEOUT x HCCL_RDMA_RETRY_CNT) the first step >= LOST. NOALARM_LOST_TIMEOUT and
# NOALARM_STOP_MS override LOST and the pause, NOALARM_MIN_SECONDS the job's length (to show that
# the test sees a real alarm); NOALARM_FILL_SECONDS the memory hog's fill time (60 s), and
# NOALARM_MEM_LEAVE_MB what it leaves (1024).
# Every process the test starts ends with it: hogs are bounded and die with this script, a
# stopped rank is continued, namespaces are deleted, on every exit path.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/netns.sh"
T0=$(date +%s%N)
at() { echo "[+$((($(date +%s%N) - T0) / 1000000)) ms] $*"; }
VIGIL=$1
JOB=$2
HOG=$3
WORK=$4
SCENARIO=$5

LOST=${NOALARM_LOST_TIMEOUT:-6}
STOP_MS=${NOALARM_STOP_MS:-$((LOST * 1000 / 2))}
MIN_S=${NOALARM_MIN_SECONDS:-$((4 * LOST))}
MAX_S=$((MIN_S + 40))
MIN_OPS=400
NRANKS=4
DIR=$WORK/$SCENARIO
LOGS=$DIR/logs
rm -rf "$DIR"
mkdir -p "$DIR"

# The TCP send timeout, 4.096 us x 2^T x 7 retries: the first T whose timeout is >= LOST.
RDMA_T=5
while [ $(((4096 << RDMA_T) * 7 / 1000000)) -lt $((LOST * 1000)) ] && [ $RDMA_T -lt 20 ]; do
  RDMA_T=$((RDMA_T + 1))
done
export VIGIL_HEARTBEAT_LOST_TIMEOUT=$LOST HCCL_EXEC_TIMEOUT=$((3 * LOST)) HCCL_RDMA_TIMEOUT=$RDMA_T
export HCCL_CONNECT_TIMEOUT=30 HCCL_BUFFSIZE=1 HCCL_IF_BASE_PORT=0
unset HCCL_ALGO HCCL_IF_IP HCCL_SOCKET_IFNAME VIGIL_TRANSPORT HCCL_OP_RETRY_ENABLE
unset HCCL_DFS_CONFIG VIGIL_HEARTBEAT

HOGS=()    # pids of hog processes
NSES=()    # network namespaces made here
JOBPID=""  # the launcher
STOPPED="" # a rank's pid while it is stopped

cleanup() {
  [ -n "$STOPPED" ] && kill -CONT "$STOPPED" 2>/dev/null
  for p in "${HOGS[@]}"; do kill -9 "$p" 2>/dev/null; done
  if [ -n "$JOBPID" ] && kill -0 "$JOBPID" 2>/dev/null; then
    kill -9 -- -"$JOBPID" 2>/dev/null || kill -9 "$JOBPID" 2>/dev/null
    for f in "$DIR"/pid-*; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
  fi
  netns_delete "${NSES[@]}"
  wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL [$SCENARIO]: $*"
  [ -f "$DIR/out.txt" ] && { echo "--- launcher output:"; head -40 "$DIR/out.txt"; }
  if [ -d "$LOGS" ]; then
    echo "--- alarm and ERROR lines of the job's logs (first 20):"
    grep -rhE "$ALARMS|\[ERROR\]" "$LOGS" 2>/dev/null | head -20 | cut -c1-400
  fi
  exit 1
}

# What counts as an alarm in a rank's logs (any channel).
ALARMS='HeartbeatAbnormal|ROCE CQE ERROR|Cluster Exception|\[Heartbeat\]neighbour .* lost|'
ALARMS+='is stuck: |aborted with HCCL_E|status\[(LOST|STUCK|ERROR CQE)\]'

# wait_files PREFIX N SECONDS: true once DIR/PREFIX-0..N-1 all exist (bounded).
wait_files() {
  local prefix=$1 n=$2 limit=$(($3 * 10)) i r all
  for ((i = 0; i < limit; ++i)); do
    all=1
    for ((r = 0; r < n; ++r)); do [ -f "$DIR/$prefix-$r" ] || all=0; done
    [ $all = 1 ] && return 0
    kill -0 "$JOBPID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# start_job [PREFIX...] [-- VIGIL RUN OPTIONS]: the job in the background, its own process group.
start_job() {
  local prefix=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do prefix+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  [ $# -gt 0 ] || set -- -n "$NRANKS"
  set -m
  "${prefix[@]}" "$VIGIL" run --timeout $((MAX_S + 60)) -q --log-dir "$LOGS" "$@" -- \
    "$JOB" --out "$DIR" --min-seconds "$MIN_S" --max-seconds "$MAX_S" --min-ops "$MIN_OPS" \
    >"$DIR/out.txt" 2>&1 &
  JOBPID=$!
  set +m
  at "job: $NRANKS ranks, LOST timeout ${LOST}s, exec timeout $((3 * LOST))s," \
    "HCCL_RDMA_TIMEOUT $RDMA_T, at least ${MIN_S}s and $MIN_OPS ops"
}

# finish_job [PREFIX...]: waits for every rank's result, asks `vigil health` (run with PREFIX)
# about the live job, releases it, and checks everything the header lists.
finish_job() {
  wait_files done $NRANKS $((MAX_S + 60)) || fail "not every rank finished its ops"
  at "every rank finished its ops"
  "$@" "$VIGIL" health --timeout 5 "$LOGS" >"$DIR/health.txt" 2>&1
  local health=$?
  touch "$DIR/release"
  wait "$JOBPID"
  local rc=$?
  JOBPID=""
  # The load ends with the job (checked: it lasted as long).
  HOGS_LIVED=1
  for p in "${HOGS[@]}"; do
    kill -0 "$p" 2>/dev/null || HOGS_LIVED=0
    kill -9 "$p" 2>/dev/null
  done
  at "the job exited $rc"
  cat "$DIR/out.txt"
  [ $rc = 0 ] || fail "the job exited $rc"
  local r line ops
  for ((r = 0; r < NRANKS; ++r)); do
    line=$(cat "$DIR/result-$r" 2>/dev/null)
    [[ "$line" == *" wrong=0 failed=0 "*" async=0 lasterr=0" ]] || fail "rank $r: $line"
    ops=$(sed 's/.* ops=\([0-9]*\) .*/\1/' <<<"$line")
    [ "$ops" -ge $MIN_OPS ] || fail "rank $r ran $ops ops, fewer than $MIN_OPS"
  done
  echo "--- vigil health after the load:"
  cat "$DIR/health.txt"
  [ $health = 0 ] || fail "vigil health exited $health"
  grep -q "Summary: $NRANKS alive, 0 lost, 0 stuck, 0 error cqe, 0 unreachable" \
    "$DIR/health.txt" || fail "vigil health does not see $NRANKS healthy ranks"
  # The heartbeat ran with the shortened timeout and its links were up: silence would be seen.
  [ "$(grep -rlh "lost timeout\[${LOST}\]s" "$LOGS" | wc -l)" -ge $NRANKS ] ||
    fail "not every rank's heartbeat runs with lost timeout ${LOST}s"
  grep -rqh "\[Heartbeat\]maintenance link to .* up" "$LOGS" || fail "no maintenance link came up"
  local alarms
  alarms=$(grep -rhE "$ALARMS" "$LOGS" | head -5)
  [ -z "$alarms" ] || fail "false alarm: $alarms"
  alarms=$(grep -rh "\[ERROR\]" "$LOGS" | head -5)
  [ -z "$alarms" ] || fail "ERROR lines: $alarms"
  local dumps
  dumps=$(find "$LOGS" -name 'flight-*.json' | head -3)
  [ -z "$dumps" ] || fail "flight-recorder dumps (an op failed or was retried): $dumps"
}

# NOALARM_PAUSE_MS=T (off by default): after the job starts, rank 1 is stopped for T ms once, a
# fault on top of the load, to show that a scenario's checks see the alarm it causes.
proof_pause() {
  [ -n "${NOALARM_PAUSE_MS:-}" ] || return 0
  local pid
  pid=$(cat "$DIR/pid-1")
  STOPPED=$pid
  kill -STOP "$pid"
  sleep "$(awk -v ms="$NOALARM_PAUSE_MS" 'BEGIN { printf "%.3f", ms / 1000 }')"
  kill -CONT "$pid"
  STOPPED=""
  at "rank 1 was stopped for $NOALARM_PAUSE_MS ms (NOALARM_PAUSE_MS)"
}

# ---- netns hosts (scripts/lib/netns.sh) ----
ID=$$
HUB=vna${ID}h
make_hub() {
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root to create network namespaces"
    exit 77
  fi
  command -v nft >/dev/null && command -v tc >/dev/null || {
    echo "SKIP: needs nft (nftables) and tc (iproute2)"
    exit 77
  }
  NSES+=("$HUB")
  netns_switch "$HUB" 10.78.0
  case $? in
    1) echo "SKIP: cannot create network namespaces here (needs CAP_SYS_ADMIN/CAP_NET_ADMIN)"
      exit 77 ;;
    2) echo "SKIP: cannot make a bridge in a network namespace here"
      exit 77 ;;
  esac
}
add_host() {  # K: namespace vna<ID><K>, address 10.78.0.(K+1)
  NSES+=("vna${ID}$1")
  netns_host "$HUB" "vna${ID}$1" "vn${ID}$1" 10.78.0 "$1"
}

# ---- scenarios ----
case "$SCENARIO" in
  cpu_hog)
    cores=$(nproc)
    for ((i = 0; i < 2 * cores; ++i)); do
      "$HOG" --cpu --seconds $((MAX_S + 90)) &
      HOGS+=($!)
    done
    echo "${#HOGS[@]} busy loops on $cores cores, nice $(nice)"
    start_job
    wait_files ready $NRANKS 60 || fail "the job did not start"
    proof_pause
    finish_job
    [ $HOGS_LIVED = 1 ] || fail "a busy loop ended before the job did"
    ;;
  sigstop)
    start_job
    wait_files ready $NRANKS 60 || fail "the job did not start"
    stops=0
    for victim in 1 2 3 0; do
      [ -f "$DIR/done-$victim" ] && break
      pid=$(cat "$DIR/pid-$victim")
      STOPPED=$pid
      kill -STOP "$pid" || fail "cannot stop rank $victim"
      sleep 0.1
      state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
      [ "$state" = T ] || fail "rank $victim (pid $pid) is in state [$state], not stopped"
      sleep "$(awk -v ms="$STOP_MS" 'BEGIN { printf "%.3f", ms / 1000 - 0.1 }')"
      kill -CONT "$pid"
      STOPPED=""
      stops=$((stops + 1))
      echo "rank $victim stopped for ${STOP_MS} ms"
      sleep 2
    done
    finish_job
    [ $stops = 4 ] || fail "the job ended before the 4 pauses ($stops done)"
    ;;
  lossy_link)
    make_hub
    add_host 1 && add_host 2 || fail "namespace setup"
    for k in 1 2; do
      ns=vna${ID}$k
      tc -n "$ns" qdisc add dev eth0 root tbf rate 100mbit burst 32kb latency 50ms ||
        fail "tc tbf in $ns"
    done
    ns1=vna${ID}1
    ip netns exec "$ns1" nft -f - <<EOF || fail "nft rules"
table inet noalarm {
  chain in { type filter hook input priority 0; ip saddr 10.78.0.3 numgen random mod 10 0 counter drop; }
  chain out { type filter hook output priority 0; ip daddr 10.78.0.3 numgen random mod 10 0 counter drop; }
}
EOF
    NRANKS=4
    start_job ip netns exec "$HUB" -- --hosts "vna${ID}1:2,vna${ID}2:2" \
      --launcher "ip netns exec {host}"
    wait_files ready $NRANKS 60 || fail "the job did not start"
    proof_pause
    finish_job ip netns exec "$HUB"
    ip netns exec "$ns1" nft list table inet noalarm | tee "$DIR/nft.txt" | grep counter
    dropped=$(grep -o 'counter packets [0-9]*' "$DIR/nft.txt" | awk '{s += $3} END {print s + 0}')
    [ "$dropped" -gt 100 ] || fail "only $dropped packets dropped: the link was not lossy"
    grep -rqh "link type\[TCP\]" "$LOGS" || fail "no TCP link between the hosts"
    tc -n "$ns1" -s qdisc show dev eth0 | head -3
    ;;
  low_memory)
    memavail() { awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo; }
    leave=${NOALARM_MEM_LEAVE_MB:-1024}
    avail=$(memavail)
    want=$((avail - leave))
    [ $want -ge 512 ] || { echo "SKIP: only ${avail} MiB available"; exit 77; }
    fill=${NOALARM_FILL_SECONDS:-60}
    "$HOG" --mem-mb $want --keep-mb $leave --fill-seconds "$fill" --seconds $((fill + MAX_S + 120)) \
      --ready "$DIR/hog-ready" >"$DIR/hog.txt" 2>&1 &
    HOGS+=($!)
    for ((i = 0; i < 10 * fill + 100; ++i)); do
      [ -f "$DIR/hog-ready" ] && break
      sleep 0.1
    done
    held=$(cat "$DIR/hog-ready" 2>/dev/null)
    at "memory hog holds ${held:-0} of $want MiB ($avail MiB were available);" \
      "MemAvailable now $(memavail) MiB"
    if [ -z "$held" ] || [ "$held" -lt $((want * 3 / 4)) ]; then
      echo "SKIP: this machine could not fill $want MiB in $fill s (too busy or too small)"
      exit 77
    fi
    start_job
    wait_files ready $NRANKS 60 || fail "the job did not start"
    proof_pause
    least=$(memavail)
    for ((i = 0; i < 10 * (MAX_S + 60); ++i)); do
      m=$(memavail)
      [ "$m" -lt "$least" ] && least=$m
      all=1
      for ((r = 0; r < NRANKS; ++r)); do [ -f "$DIR/done-$r" ] || all=0; done
      [ $all = 1 ] && break
      kill -0 "$JOBPID" 2>/dev/null || break
      sleep 0.1
    done
    at "MemAvailable while the job ran: at least $least MiB"
    finish_job
    [ $HOGS_LIVED = 1 ] || fail "the memory hog ended before the job did"
    [ "$least" -le $((2 * leave)) ] ||
      fail "MemAvailable never fell below $((2 * leave)) MiB: the machine was not short of memory"
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
at "PASS [$SCENARIO]"
rm -rf "$DIR"
exit 0
