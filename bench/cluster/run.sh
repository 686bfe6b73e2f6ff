#!/usr/bin/env bash
# Vigil vs OpenMPI vs Gloo across hosts whose links are shaped to a rate, in one run.
#
#   sudo bench/cluster/run.sh                              # 2 hosts x 1 rank, 1 Gbit/s links
#   HOSTS=4 RANKS_PER_HOST=2 RATE=5gbit bench/cluster/run.sh
#   HOSTS=2 RATE=1gbit LOSS=0.01 VIGIL=build/src/cli/vigil bench/cluster/run.sh
#
# The cluster: a switch namespace holding a bridge (10.78.0.1/24) and HOSTS host namespaces, each
# joined to the bridge by a veth pair (eth0 = 10.78.0.(k+1)); both ends of every host's veth pair
# are shaped with tc tbf to RATE, so each host has a full-duplex link of RATE to the switch. Ranks
# of one host share its namespace (and so shared memory and loopback), ranks of different hosts
# talk over the shaped links. LOSS (percent) drops that share of the packets each host receives
# from the others at random (nftables `numgen random`). The kernel has no netem: no added delay.
#
# Then, on that cluster, for each op (AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll,
# fp32, sum) and each round, back to back:
#   vigil   vigil run --hosts NS1:K,NS2:K --launcher "ip netns exec {host}" -- vigil bench ...
#   ompi    mpirun with the same placement (a hostfile of the namespaces, a remote-shell agent that
#           runs `ip netns exec`), TCP between hosts, shared memory inside one (pml ob1, btl
#           tcp,vader,self); bench/compare/mpi_bench.cc
#   gloo    bench/compare/gloo_bench.cc, one process per rank started in its namespace, TCP on the
#           host's address, file-store rendezvous on the shared file system (AllReduce: ring and
#           bcube)
# at 8 B and 1 KiB (latency: LAT_ITERS calls) and 64 KiB-64 MiB (bandwidth: BW_ITERS calls), with
# the link's round trip and single-stream goodput measured first (netpp.c), and prints per op the
# busbw of each library, the bound (bench/cluster/README.md: the model) and each library's
# fraction of it (summarize.py; medians over the rounds), and draws one chart per op
# (bench/compare/plot.py). Every command is bounded by `timeout`; the namespaces are deleted on
# every exit path.
#
# Knobs (environment): HOSTS (2-4), RANKS_PER_HOST (1-2), RATE (tc rate: 1gbit, 5gbit, 500mbit),
# LOSS (percent, e.g. 0.01; empty: none), MTU (1500), REPEAT (rounds, 3), OPS (subset of
# "allreduce allgather reducescatter broadcast alltoall"), TOOLS (subset of "vigil ompi gloo"),
# LAT_ITERS (200), LAT_WARMUP (200), BW_ITERS (5), BW_WARMUP (1), BW_MIN (64K), MAX_BYTES (64M),
# BW_FACTOR (4), RUN_TIMEOUT (s per run, 300), OUT (results folder), BUILD (build folder), VIGIL
# (a built vigil; VIGIL_REV names its source), VIGIL_ENV (extra NAME=VALUE words for Vigil's
# ranks, e.g. "HCCL_RDMA_QPS_PER_CONNECTION=2").
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
COMPARE="$REPO/bench/compare"
. "$REPO/scripts/lib/netns.sh"
. "$REPO/scripts/lib/bench.sh"
HOSTS="${HOSTS:-2}"
RANKS_PER_HOST="${RANKS_PER_HOST:-1}"
RATE="${RATE:-1gbit}"
LOSS="${LOSS:-}"
MTU="${MTU:-1500}"
REPEAT="${REPEAT:-3}"
OPS="${OPS:-allreduce allgather reducescatter broadcast alltoall}"
TOOLS="${TOOLS:-vigil ompi gloo}"
LAT_ITERS="${LAT_ITERS:-200}"
LAT_WARMUP="${LAT_WARMUP:-200}"
BW_ITERS="${BW_ITERS:-5}"
BW_WARMUP="${BW_WARMUP:-1}"
BW_MIN="${BW_MIN:-64K}"
MAX_BYTES="${MAX_BYTES:-64M}"
BW_FACTOR="${BW_FACTOR:-4}"
RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
JOBS="${JOBS:-2}"
BUILD="${BUILD:-$REPO/build-cluster}"
TAG="h${HOSTS}x${RANKS_PER_HOST}-${RATE}${LOSS:+-loss$LOSS}"
OUT="${OUT:-$BUILD/results-$TAG-$(date +%Y%m%d-%H%M%S)}"
VIGIL_ENV="${VIGIL_ENV:-}"
want() { [[ " $TOOLS " == *" $1 "* ]]; }
log() { printf '[cluster] %s\n' "$*" >&2; }

NRANKS=$((HOSTS * RANKS_PER_HOST))
case "$HOSTS" in 2|3|4) ;; *) log "HOSTS must be 2-4"; exit 2 ;; esac
case "$RANKS_PER_HOST" in 1|2) ;; *) log "RANKS_PER_HOST must be 1 or 2"; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { log "needs root (network namespaces, tc)"; exit 2; }

# --- 1. Packages ----------------------------------------------------------------------------
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
[ -n "$LOSS" ] && ! command -v nft >/dev/null 2>&1 && need+=(nftables)
command -v mpicxx >/dev/null 2>&1 || need+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
[ -f /usr/include/gloo/allreduce.h ] || need+=(libgloo-dev)
/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1 || command -v gnuplot >/dev/null 2>&1 ||
  need+=(python3-matplotlib)
bench_apt_install "${need[@]}"
command -v timeout >/dev/null || { log "coreutils timeout missing"; exit 1; }

mkdir -p "$BUILD/bin" "$OUT/logs"
BIN="$BUILD/bin"

# --- 2. Harnesses and Vigil -----------------------------------------------------------------
log "building harnesses in $BIN"
bench_build_peers "$COMPARE" "$BIN"
gcc -O2 -o "$BIN/netpp" "$HERE/netpp.c" || exit 1
# OpenMPI's remote shell: "agent [options] HOST COMMAND..." runs COMMAND in namespace HOST.
# The namespaces share one host name and /tmp: each host's daemon gets a session directory of its
# own, or the ranks of two hosts map one another's shared-memory (vader) segments and crash.
cat >"$BIN/netns_rsh" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
dir="${TMPDIR:-/tmp}/vcl-ompi-$host"
mkdir -p "$dir"
exec ip netns exec "$host" env OMPI_MCA_orte_tmpdir_base="$dir" \
  OMPI_MCA_btl_vader_backing_directory="$dir" /bin/sh -c "$*"
EOF
chmod +x "$BIN/netns_rsh"

bench_build_vigil "$REPO" "$BUILD" "$OUT/logs/cmake.log" "$JOBS"
VIGIL="$(cd "$(dirname "$VIGIL")" && pwd)/$(basename "$VIGIL")"
[ -x "$VIGIL" ] || { log "no vigil binary at $VIGIL"; exit 1; }

# --- 3. The cluster -------------------------------------------------------------------------
ID="$$"
SW="vcl${ID}s"
NSES=()
NET=10.78.0
cleanup() {
  netns_delete "${NSES[@]}" "$SW"
  rm -rf "${TMPDIR:-/tmp}/vcl-ompi-vcl${ID}"h*  # netns_rsh's session directories
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# tc rate -> bits per second ("1gbit", "500mbit", "5Gbit").
rate_bps() {
  local r="${1,,}" n unit
  n="${r%%[a-z]*}"
  unit="${r#"$n"}"
  case "$unit" in
    gbit) echo $((n * 1000000000)) ;; mbit) echo $((n * 1000000)) ;; kbit) echo $((n * 1000)) ;;
    bit|"") echo "$n" ;; *) log "RATE $1: use Nbit, Nkbit, Nmbit or Ngbit"; exit 2 ;;
  esac
}
RATE_BPS="$(rate_bps "$RATE")" || exit 2
# Bucket: 1 ms at the rate, at least 64 KiB. A smaller one cost a single TCP stream 6% of a
# 1 Gbit/s link (timer granularity); a message much smaller than the bucket can pass faster than
# the rate (README.md: the bound below ~1 MiB).
BURST=$((RATE_BPS / 8 / 1000))
[ "$BURST" -lt 65536 ] && BURST=65536

shape() {  # shape NS DEV: tbf at RATE on DEV's egress
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$RATE" burst "$BURST" latency 20ms
}

netns_switch "$SW" "$NET" || { log "cannot create network namespaces"; exit 1; }
HOSTLIST=""
for k in $(seq 1 "$HOSTS"); do
  ns="vcl${ID}h$k"
  NSES+=("$ns")
  netns_host "$SW" "$ns" "vcl${ID}p$k" "$NET" "$k" "$MTU" &&
    shape "$ns" eth0 && shape "$SW" "vcl${ID}p$k" || { log "host $k setup failed"; exit 1; }
  if [ -n "$LOSS" ]; then
    # numgen counts in 1/100000: LOSS percent = LOSS * 1000 of them.
    per=$(awk -v l="$LOSS" 'BEGIN { printf "%d", l * 1000 + 0.5 }')
    ip netns exec "$ns" nft -f - <<EOF || { log "nftables loss rule failed"; exit 1; }
table inet vcl_loss {
  chain in {
    type filter hook input priority 0; policy accept;
    ip saddr $NET.0/24 ip saddr != $NET.$((k + 1)) numgen random mod 100000 < $per drop
  }
}
EOF
  fi
  HOSTLIST+="${HOSTLIST:+,}$ns:$RANKS_PER_HOST"
done
log "cluster: $HOSTS hosts x $RANKS_PER_HOST ranks, links $RATE (tbf burst $BURST B), MTU $MTU${LOSS:+, loss $LOSS%}"

# --- 4. Link properties ---------------------------------------------------------------------
H1="vcl${ID}h1" H2="vcl${ID}h2"
measure() {  # measure MODE ARGS...: netpp client in host 1 against a server in host 2
  ip netns exec "$H2" timeout 90 "$BIN/netpp" serve 5999 &
  local srv=$!
  ip netns exec "$H1" timeout 90 "$BIN/netpp" "$1" "$NET.3" 5999 "${@:2}"
  wait "$srv"
}
RTT_JSON="$(measure rtt 2000)" || { log "round-trip measurement failed"; exit 1; }
STREAM_JSON="$(measure stream $((RATE_BPS / 8 / 1048576 * 2 + 16)))" || { log "stream measurement failed"; exit 1; }
log "link: $RTT_JSON $STREAM_JSON"

# --- 5. Runs --------------------------------------------------------------------------------
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HOSTFILE="$OUT/hostfile"
: >"$HOSTFILE"
for ns in "${NSES[@]}"; do echo "$ns slots=$RANKS_PER_HOST" >>"$HOSTFILE"; done
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$NRANKS"
  --hostfile "$HOSTFILE" --map-by slot --mca plm_rsh_agent "$BIN/netns_rsh"
  --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$NET.0/24"
  --mca pml ob1 --mca btl tcp,vader,self --mca btl_tcp_if_include "$NET.0/24")

LOAD_BEFORE="$(bench_load)"
FAILED=0
run() { bench_run "$@"; }  # run NAME -- COMMAND...: scripts/lib/bench.sh; counts FAILED

vigil_run() {  # vigil_run NAME OP ENTRY_LOG ARGS...
  local name="$1" op="$2" entry="$3"; shift 3
  local place=--outofplace
  [ "$op" = broadcast ] && place=--inplace  # HcclBroadcast has one buffer
  local envs=(--env "HCCL_ENTRY_LOG_ENABLE=$entry")
  for e in $VIGIL_ENV; do envs+=(--env "$e"); done
  run "$name" -- ip netns exec "$SW" "$VIGIL" run --hosts "$HOSTLIST" \
    --launcher "ip netns exec {host}" --timeout "$RUN_TIMEOUT" -q --log-dir "$OUT/logs/$name" \
    "${envs[@]}" -- "$VIGIL" bench "$op" $place --json "$@"
}

gloo_run() {  # gloo_run NAME OP ARGS...: every rank in its namespace; rank 0 prints the JSON
  local name="$1"; shift
  local t0=$SECONDS store pids=() rc=0 r
  store="$(mktemp -d "${TMPDIR:-/tmp}/gloo-store.XXXXXX")"
  for r in $(seq 0 $((NRANKS - 1))); do
    local h=$((r / RANKS_PER_HOST + 1))
    timeout -k 10 "$RUN_TIMEOUT" ip netns exec "vcl${ID}h$h" "$BIN/gloo_bench" "$@" --rank "$r" \
      --ranks "$NRANKS" --hostname "$NET.$((h + 1))" --store "$store" --label gloo \
      >"$OUT/$name.rank$r.out" 2>>"$OUT/logs/$name.err" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=$?; done
  mv "$OUT/$name.rank0.out" "$OUT/$name.json"
  rm -rf "$store" "$OUT/$name".rank*.out
  if [ $rc -ne 0 ]; then
    FAILED=$((FAILED + 1))
    log "$name: exit $rc after $((SECONDS - t0))s (see $OUT/logs/$name.err)"
  else
    log "$name: $((SECONDS - t0))s"
  fi
}

for rep in $(seq 1 "$REPEAT"); do
  for op in $OPS; do
    for series in lat bw; do
      if [ $series = lat ]; then
        sizes=(-b 8 -e 1K -f 128 -n "$LAT_ITERS" -w "$LAT_WARMUP")
      else
        sizes=(-b "$BW_MIN" -e "$MAX_BYTES" -f "$BW_FACTOR" -n "$BW_ITERS" -w "$BW_WARMUP")
      fi
      r=".r$rep"
      log "== $op $series (round $rep of $REPEAT)"
      if want vigil; then
        # The choice log ([SelectAlg]) costs a line per op: on for the bandwidth series only.
        vigil_run "$op-${series}__vigil$r" "$op" $([ $series = bw ] && echo 1 || echo 0) "${sizes[@]}"
      fi
      if want ompi; then
        run "$op-${series}__ompi$r" -- ip netns exec "$SW" "${MPIRUN[@]}" "$BIN/mpi_bench" "$op" \
          "${sizes[@]}" --label ompi
      fi
      if want gloo; then
        if [ "$op" = allreduce ]; then
          gloo_run "$op-${series}__gloo-ring$r" "$op" --algo ring "${sizes[@]}"
          gloo_run "$op-${series}__gloo-bcube$r" "$op" --algo bcube "${sizes[@]}"
        else
          gloo_run "$op-${series}__gloo$r" "$op" "${sizes[@]}"
        fi
      fi
    done
  done
done

LOAD_AFTER="$(bench_load)"
# The round trip again: the bound takes the shorter of the two (summarize.py).
RTT_AFTER_JSON="$(measure rtt 2000)" || RTT_AFTER_JSON=null
log "link after the runs: $RTT_AFTER_JSON"
cat >"$OUT/meta.json" <<EOF
{"hosts": $HOSTS, "ranks_per_host": $RANKS_PER_HOST, "rate": "$RATE", "rate_bps": $RATE_BPS,
 "mtu": $MTU, "loss_pct": "${LOSS:-0}", "tbf_burst": $BURST, "rtt": $RTT_JSON,
 "rtt_after": $RTT_AFTER_JSON, "stream": $STREAM_JSON,
 "date": "$(date -Is)", "cpus": "$(nproc)", "load_before": "$LOAD_BEFORE", "load_after": "$LOAD_AFTER",
 "vigil": "${VIGIL_REV:-$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)}",
 "vigil_env": "$VIGIL_ENV", "openmpi": "$(mpirun --version 2>/dev/null | head -1)",
 "gloo": "libgloo-dev $(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || echo unknown)",
 "rounds": $REPEAT, "failed_runs": $FAILED,
 "command": "HOSTS=$HOSTS RANKS_PER_HOST=$RANKS_PER_HOST RATE=$RATE${LOSS:+ LOSS=$LOSS} REPEAT=$REPEAT LAT_ITERS=$LAT_ITERS LAT_WARMUP=$LAT_WARMUP bench/cluster/run.sh"}
EOF

/usr/bin/python3 "$HERE/summarize.py" "$OUT" | tee "$OUT/summary.md"
"$COMPARE/plot.sh" "$OUT/charts.json" "$OUT" || log "no charts drawn (matplotlib or gnuplot needed)"
log "results in $OUT (summary.md, charts, one JSON per run, logs/)"
