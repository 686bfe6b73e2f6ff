#!/bin/bash
# Collectives across "hosts" made of network namespaces, through
# `vigil run --hosts NS1:N,NS2:N --launcher "ip netns exec {host}"`.
#
#   netns_hosts.sh VIGIL COLLECTIVE_CHECK WORKDIR SCENARIO
#
# A hub namespace holds a bridge (10.77.0.1/24); each host namespace has eth0 = 10.77.0.(k+1) on
# it and a default route through the hub, where the launcher runs (so its rendezvous address is
# reachable and the caller's own network is never touched). Ranks of one namespace share a host
# (shm links), ranks of different namespaces are different hosts (TCP links, hierarchical
# algorithms). Exit 77 (ctest: skipped) without root / CAP_SYS_ADMIN / CAP_NET_ADMIN. The
# namespaces are deleted on every exit path.
#
# Scenarios:
#   hier_2x2      2 hosts x 2 ranks, every op/dtype/reduce op; AllReduce/AllGather/ReduceScatter/
#                 Broadcast/Reduce run hierarchically (AlgType asserted), AlltoAll flat; shm inside
#                 a host, TCP between hosts
#   hier_3x2_big  3 hosts x 2 ranks (non-power-of-two hosts), messages larger than the CCL buffer
#   hier_1x2      2 hosts x 1 rank: the inter-host level alone, run flat over all ranks (the
#                 op's fingerprints ride its own transfers: one exchange a call, counted in
#                 TCP segments)
#   flat_ring     HCCL_ALGO=ring forces the flat ring over all ranks
#   level1_ring   HCCL_ALGO=level0:NA;level1:ring picks the level-1 algorithm
#   uneven        hosts of 2 and 1 ranks: no level-1 group per local index, flat algorithms
#   rank_table    2 hosts x 2 ranks joined through HcclCommInitClusterInfo (rank table names
#                 each rank's host by its address)
#   fail_fast     one rank fails: the launcher stops the others after --kill-grace, exits with
#                 the failing rank's code, and leaves no process behind
#   hier_4x2      4 hosts x 2 ranks: every op right, and the op-consistency check along the
#                 hosts' snake (comm/check_ring.h) names a mismatch on the last host at once
#   mismatch_2x2  2 hosts x 2 ranks calling different ops (FAULT_DRIVER: tests/faults'
#                 driver): a whole host or one rank with another count or op, one host flat and
#                 the other in levels; every rank returns (HCCL_EXEC_TIMEOUT set past the
#                 launcher's bound), EI0005 on the screen
set -u
VIGIL=$1
CHECK=$2
WORK=$3
SCENARIO=$4

. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/netns.sh"

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to create network namespaces"
  exit 77
fi
ID=$$
HUB=vmh${ID}h
NSES=()
WORKDIR=$WORK/$SCENARIO
rm -rf "$WORKDIR"
mkdir -p "$WORKDIR"

cleanup() { netns_delete "${NSES[@]}" "$HUB"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_switch "$HUB" 10.77.0
case $? in
  1) echo "SKIP: cannot create network namespaces here (needs CAP_SYS_ADMIN/CAP_NET_ADMIN)"
    exit 77 ;;
  2) echo "SKIP: cannot make a bridge in a network namespace here"
    exit 77 ;;
esac

# add_host K: namespace vmh<ID><K>, address 10.77.0.(K+1)
add_host() {
  NSES+=("vmh${ID}$1")
  netns_host "$HUB" "vmh${ID}$1" "vm${ID}$1" 10.77.0 "$1"
}

fail() {
  echo "FAIL [$SCENARIO]: $*"
  # What the ranks said, so a failure in CI can be read from ctest's output alone.
  if [ -d "${LOGS:-}" ]; then
    echo "--- first ERROR lines of the job's logs:"
    grep -rh "\[ERROR\]" "$LOGS" 2>/dev/null | head -20 | cut -c1-400
  fi
  exit 1
}

export HCCL_BUFFSIZE=1 HCCL_IF_BASE_PORT=0 HCCL_EXEC_TIMEOUT=60 HCCL_CONNECT_TIMEOUT=30
export HCCL_ENTRY_LOG_ENABLE=1
unset HCCL_ALGO HCCL_IF_IP HCCL_SOCKET_IFNAME VIGIL_TRANSPORT

LOGS=$WORKDIR/logs
# run_job HOSTS [vigil run options...] -- PROGRAM ARGS: the launcher runs in the hub.
run_job() {
  local hosts=$1
  shift
  ip netns exec "$HUB" "$VIGIL" run --hosts "$hosts" --launcher "ip netns exec {host}" \
    --timeout 90 -q --log-dir "$LOGS" "$@" >"$WORKDIR/out.txt" 2>&1
  local rc=$?
  cat "$WORKDIR/out.txt"
  return $rc
}

# The AlgType every logged op of type OP ran with (unique values).
algtypes() {
  grep -rh "\[SelectAlg\]tag\[$1_" "$LOGS" | sed 's/.*AlgType(level 0-1-2):\[\([^]]*\)\].*/\1/' |
    sort -u | tr '\n' ' '
}

expect_algtype() {  # OP EXPECTED...: every op of type OP used one of EXPECTED
  local op=$1
  shift
  local got
  got=$(algtypes "$op")
  [ -n "$got" ] || fail "no [SelectAlg] line for $op"
  for a in $got; do
    local ok=0
    for e in "$@"; do [ "$a" = "$e" ] && ok=1; done
    [ $ok = 1 ] || fail "$op ran with AlgType [$a], expected one of [$*] (all: $got)"
  done
}

expect_all_right() {  # N: every rank printed 0 wrong
  local n=$1 good
  good=$(grep -c "checks, 0 wrong" "$WORKDIR/out.txt")
  [ "$good" = "$n" ] || fail "$good of $n ranks report every check right"
}

# tcp_out_segs K: TCP segments host K has sent (OutSegs of its namespace's /proc/net/snmp).
tcp_out_segs() {
  ip netns exec "vmh${ID}$1" awk '/^Tcp:/ && ++n == 2 {print $12}' /proc/net/snmp
}

# link_type A B: the type of the link rank A logged to rank B.
link_type() {
  grep -rh "link established: .*local rank\[$1\] remote rank\[$2\]" "$LOGS" |
    sed 's/.*link type\[\([A-Z]*\)\].*/\1/' | sort -u | tr -d '\n'
}

case "$SCENARIO" in
  hier_2x2)
    add_host 1 && add_host 2 || fail "namespace setup"
    run_job "vmh${ID}1:2,vmh${ID}2:2" -- "$CHECK" || fail "job failed"
    expect_all_right 4
    # Up to 512 B over 4 ranks: flat, every rank to every rank in one round (fullmesh's
    # one-shot); blocks of up to 512 B go to every host in one round, larger by H-D.
    expect_algtype AllReduce null-fullmesh-null ring-H-D-null ring-fullmesh-null
    [[ "$(algtypes AllReduce)" == *null-fullmesh-null* ]] || fail "a tiny AllReduce ran in levels"
    expect_algtype AllGather ring-ring-null
    expect_algtype ReduceScatter ring-fullmesh-null
    expect_algtype Broadcast HD-H-D-null ring-ring-null
    expect_algtype Reduce HD-H-D-null ring-ring-null
    expect_algtype AlltoAll null-pairwise-null
    [ "$(link_type 0 1)" = SHM ] || fail "rank 0 -> 1 (one host) is [$(link_type 0 1)], not SHM"
    [ "$(link_type 2 3)" = SHM ] || fail "rank 2 -> 3 (one host) is [$(link_type 2 3)], not SHM"
    [ "$(link_type 0 2)" = TCP ] || fail "rank 0 -> 2 (two hosts) is [$(link_type 0 2)], not TCP"
    [ "$(link_type 1 3)" = TCP ] || fail "rank 1 -> 3 (two hosts) is [$(link_type 1 3)], not TCP"
    grep -rqh "serverNum\[2\]" "$LOGS" || fail "no 'serverNum[2]' in the Communicator Key Info"
    # One log folder per host.
    [ -d "$LOGS/vmh${ID}1" ] && [ -d "$LOGS/vmh${ID}2" ] || fail "no per-host log folders"
    ;;
  hier_3x2_big)
    add_host 1 && add_host 2 && add_host 3 || fail "namespace setup"
    run_job "vmh${ID}1:2,vmh${ID}2:2,vmh${ID}3:2" -- "$CHECK" --big || fail "job failed"
    expect_all_right 6
    # Three hosts: one round for tiny blocks, H-D for small ones, ring for large ones.
    expect_algtype AllReduce null-fullmesh-null ring-fullmesh-null ring-H-D-null ring-ring-null
    [[ "$(algtypes AllReduce)" == *ring-ring-null* ]] || fail "no ring level 1 for a big AllReduce"
    # Small blocks to every host in one round, large ones around the ring (no incast).
    expect_algtype ReduceScatter ring-fullmesh-null ring-ring-null
    [[ "$(algtypes ReduceScatter)" == *ring-ring-null* ]] ||
      fail "no ring level 1 for a big ReduceScatter"
    ;;
  hier_1x2)
    add_host 1 && add_host 2 || fail "namespace setup"
    run_job "vmh${ID}1:1,vmh${ID}2:1" -- "$CHECK" || fail "job failed"
    expect_all_right 2
    expect_algtype AllReduce null-H-D-null null-fullmesh-null
    [[ "$(algtypes AllReduce)" == *null-fullmesh-null* ]] || fail "no one-shot AllReduce for a tiny one"
    expect_algtype AllGather null-ring-null
    expect_algtype ReduceScatter null-fullmesh-null
    [ "$(link_type 0 1)" = TCP ] || fail "rank 0 -> 1 is [$(link_type 0 1)], not TCP"
    # One exchange a call: a loop of 8 B AllReduces sends about two segments a call from a host
    # (its data and an ack); a round of fingerprints of its own before each would double that.
    calls=3000
    before=$(tcp_out_segs 1)
    HCCL_ENTRY_LOG_ENABLE=0 run_job "vmh${ID}1:1,vmh${ID}2:1" -- "$VIGIL" bench allreduce \
      -b 8 -e 8 -n $calls -w 0 -z 1 >/dev/null || fail "bench job failed"
    segs=$(($(tcp_out_segs 1) - before))
    [ "$segs" -lt $((3 * calls)) ] || fail "$segs TCP segments from host 1 for $calls calls"
    ;;
  flat_ring)
    add_host 1 && add_host 2 || fail "namespace setup"
    HCCL_ALGO=ring run_job "vmh${ID}1:2,vmh${ID}2:2" -- "$CHECK" || fail "job failed"
    expect_all_right 4
    expect_algtype AllReduce null-ring-null
    expect_algtype AllGather null-ring-null
    ;;
  level1_ring)
    add_host 1 && add_host 2 || fail "namespace setup"
    HCCL_ALGO="level0:NA;level1:ring" run_job "vmh${ID}1:2,vmh${ID}2:2" -- "$CHECK" ||
      fail "job failed"
    expect_all_right 4
    expect_algtype AllReduce ring-ring-null
    ;;
  uneven)
    add_host 1 && add_host 2 || fail "namespace setup"
    run_job "vmh${ID}1:2,vmh${ID}2:1" -- "$CHECK" || fail "job failed"
    expect_all_right 3
    got=$(algtypes AllReduce)
    [[ "$got" != *ring-H-D* && "$got" == *null-* ]] || fail "uneven hosts ran AllReduce as [$got]"
    ;;
  rank_table)
    add_host 1 && add_host 2 || fail "namespace setup"
    cat >"$WORKDIR/rank_table.json" <<'JSON'
{"status": "completed", "version": "1.0", "server_count": "2",
 "server_list": [
  {"server_id": "10.77.0.2", "device": [{"device_id": "0", "device_ip": "192.168.100.1", "rank_id": "0"},
                                        {"device_id": "1", "device_ip": "192.168.100.2", "rank_id": "1"}]},
  {"server_id": "10.77.0.3", "device": [{"device_id": "0", "device_ip": "192.168.101.1", "rank_id": "2"},
                                        {"device_id": "1", "device_ip": "192.168.101.2", "rank_id": "3"}]}]}
JSON
    # Rank 0 serves the rendezvous on its server_id at HCCL_IF_BASE_PORT (its namespace's own
    # port space, so a fixed port cannot clash).
    HCCL_IF_BASE_PORT=60000 run_job "vmh${ID}1:2,vmh${ID}2:2" -- "$CHECK" \
      --rank-table "$WORKDIR/rank_table.json" || fail "job failed"
    expect_all_right 4
    expect_algtype AllReduce null-fullmesh-null ring-H-D-null ring-fullmesh-null
    grep -rqh "hostIp\[10.77.0.3\]" "$LOGS" || fail "rank table host address not used"
    [ "$(link_type 0 1)" = SHM ] || fail "rank 0 -> 1 is [$(link_type 0 1)], not SHM"
    [ "$(link_type 0 3)" = TCP ] || fail "rank 0 -> 3 is [$(link_type 0 3)], not TCP"
    ;;
  fail_fast)
    add_host 1 && add_host 2 || fail "namespace setup"
    start=$(date +%s)
    run_job "vmh${ID}1:2,vmh${ID}2:2" --kill-grace 1 -- sh -c \
      'if [ "$RANK_ID" = 2 ]; then exit 3; fi; exec sleep 60'
    rc=$?
    took=$(($(date +%s) - start))
    [ $rc = 3 ] || fail "launcher exited $rc, expected the failing rank's 3"
    # The others sleep 60 s: ending well before that means they were stopped.
    [ $took -lt 50 ] || fail "the ranks still running were not stopped (${took}s)"
    grep -q "rank 2 failed" "$WORKDIR/out.txt" || fail "no 'rank 2 failed' line"
    for ns in "${NSES[@]}"; do
      [ -z "$(ip netns pids "$ns")" ] || fail "processes left in $ns: $(ip netns pids "$ns")"
    done
    ;;
  hier_4x2 | mismatch_2x2)
    if [ "$SCENARIO" = hier_4x2 ]; then
      add_host 1 && add_host 2 && add_host 3 && add_host 4 || fail "namespace setup"
      hosts="vmh${ID}1:2,vmh${ID}2:2,vmh${ID}3:2,vmh${ID}4:2"
      nranks=8
      run_job "$hosts" -- "$CHECK" || fail "job failed"
      expect_all_right 8
      expect_algtype AllReduce null-fullmesh-null ring-fullmesh-null ring-H-D-null
      # The last host against the rest: the snake's edge back to host 1 joins local index 0.
      cases=("count 1024 --odd-from 6" "count 100 --odd-from 6")
    else
      add_host 1 && add_host 2 || fail "namespace setup"
      hosts="vmh${ID}1:2,vmh${ID}2:2"
      nranks=4
      # A whole host (ranks 2, 3) or rank 3 alone; 100 floats run flat (a tiny AllReduce), 200
      # in levels.
      cases=("count 1024 --odd-from 2" "op 1024 --odd-from 2" "count 100 --odd-from 2"
        "count 1024 --odd 3" "count 100 --odd 3")
    fi
    [ -x "${FAULT_DRIVER:-}" ] || fail "FAULT_DRIVER not set"
    rm -rf "$LOGS"
    for c in "${cases[@]}"; do
      set -- $c
      # HCCL_EXEC_TIMEOUT past the launcher's 90 s: only ranks that learn of the mismatch
      # return; one left waiting is killed and prints no RESULT line.
      HCCL_EXEC_TIMEOUT=600 run_job "$hosts" -- "$FAULT_DRIVER" --mode mismatch --what "$1" \
        --count "$2" "$3" "$4" >/dev/null
      n=$(grep -c '^RESULT ' "$WORKDIR/out.txt")
      [ "$n" = "$nranks" ] || fail "[$c] $n of $nranks ranks returned"
      grep -q "EI0005" "$WORKDIR/out.txt" || fail "[$c] no EI0005 on the screen"
      grep -q "ok=1" "$WORKDIR/out.txt" && fail "[$c] a rank completed the mismatched op"
      rm -rf "$LOGS"
    done
    ;;
  *)
    fail "unknown scenario"
    ;;
esac
echo "PASS [$SCENARIO]"
rm -rf "$WORKDIR"
exit 0
