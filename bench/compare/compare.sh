#!/usr/bin/env bash
# Vigil vs OpenMPI vs Gloo, side by side, in one run on the same sizes and rank count.
#
#   bench/compare/compare.sh                 # 4 ranks, results in build-compare/results-<time>/
#   RANKS=2 VIGIL=build/src/cli/vigil bench/compare/compare.sh
#
# It installs (apt-get, when missing) libopenmpi-dev openmpi-bin libgloo-dev, builds Vigil's
# `vigil` (unless VIGIL points at one) and three small harnesses (OpenMPI, Gloo, memcpy), then
# runs per series (AllReduce latency 8 B-1 KiB, with Vigil's ops back to back as nccl-tests
# times them and, series allreduce-latz, with a stream synchronize after each; the same
# blocking latency for Broadcast, AllGather, ReduceScatter, Reduce and AlltoAll, series broadcast-latz,
# allgather-latz, reducescatter-latz, reduce-latz, alltoall-latz, not in the default list; AllReduce,
# AllGather, ReduceScatter, Broadcast, AlltoAll 1-64 MiB), back to back so they share the
# machine's load:
#   vigil-shm   vigil bench --transport shm           (heartbeat and flight recorder on: defaults)
#   ompi-shm    mpirun (OpenMPI's default: shared memory)
#   vigil-tcp   vigil bench --transport tcp
#   ompi-tcp    mpirun --mca pml ob1 --mca btl tcp,self
#   gloo        Gloo, TCP on loopback, file-store rendezvous (AllReduce: ring and bcube)
# and prints busbw (latency: time) side by side with the ratios Vigil/peer, the memcpy ceiling
# and the performance targets (bench/compare/summarize.py), and draws one chart per op (busbw
# against size, bench/compare/plot.py, as bench/cluster does). Every run is bounded by `timeout`.
#
# Knobs (environment): RANKS (4), LAT_ITERS (200), LAT_WARMUP (200), BW_ITERS (10), BW_WARMUP (2),
# MAX_BYTES (64M), RUN_TIMEOUT (s per run, 240), REPEAT (rounds, 1; the summary keeps each
# size's best round: on a shared machine that filters out other jobs' load), OUT (results
# folder), BUILD (build folder), VIGIL (a built vigil binary; VIGIL_REV names its source),
# SERIES (space-separated subset of the series names), TOOLS (subset of the runs above:
# "vigil-shm ompi-shm vigil-tcp ompi-tcp gloo"; e.g. TOOLS="vigil-shm ompi-shm" for a quick
# look at one target; the summary shows "—" for what did not run).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
. "$REPO/scripts/lib/bench.sh"
RANKS="${RANKS:-4}"
LAT_ITERS="${LAT_ITERS:-200}"
LAT_WARMUP="${LAT_WARMUP:-200}"
BW_ITERS="${BW_ITERS:-10}"
BW_WARMUP="${BW_WARMUP:-2}"
MAX_BYTES="${MAX_BYTES:-64M}"
RUN_TIMEOUT="${RUN_TIMEOUT:-240}"
BUILD="${BUILD:-$REPO/build-compare}"
OUT="${OUT:-$BUILD/results-$(date +%Y%m%d-%H%M%S)}"
SERIES="${SERIES:-allreduce-lat allreduce-latz allreduce allgather reducescatter broadcast alltoall}"
JOBS="${JOBS:-2}"
REPEAT="${REPEAT:-1}"   # rounds of every run; the summary keeps each size's best round
TOOLS="${TOOLS:-vigil-shm ompi-shm vigil-tcp ompi-tcp gloo}"
want() { [[ " $TOOLS " == *" $1 "* ]]; }

log() { printf '[compare] %s\n' "$*" >&2; }

# --- 1. Peers' packages -------------------------------------------------------------------
need=()
command -v mpicxx >/dev/null 2>&1 || need+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
[ -f /usr/include/gloo/allreduce.h ] || need+=(libgloo-dev)
bench_apt_install "${need[@]}"
command -v timeout >/dev/null || { log "coreutils timeout missing"; exit 1; }

mkdir -p "$BUILD/compare" "$OUT/logs"
BIN="$BUILD/compare"

# --- 2. Harnesses ---------------------------------------------------------------------------
log "building harnesses in $BIN"
bench_build_peers "$HERE" "$BIN"
gcc -O2 -o "$BIN/memcpy_bw" "$HERE/memcpy_bw.c" || exit 1
gcc -O2 -pthread -o "$BIN/line_rtt" "$HERE/line_rtt.c" || exit 1

# --- 3. Vigil -------------------------------------------------------------------------------
bench_build_vigil "$REPO" "$BUILD" "$OUT/logs/cmake.log" "$JOBS"
[ -x "$VIGIL" ] || { log "no vigil binary at $VIGIL"; exit 1; }

# --- 4. Runs --------------------------------------------------------------------------------
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$RANKS")
# Quiet the warnings OpenMPI prints in containers (no effect on the transports chosen).
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_rmaps_base_oversubscribe=1

LOAD_BEFORE="$(bench_load)"
run() { bench_run "$@"; }  # run NAME -- COMMAND...: scripts/lib/bench.sh

vigil_run() {  # vigil_run NAME TRANSPORT OP ARGS...
  local name="$1" tp="$2" op="$3"; shift 3
  local place=--outofplace
  [ "$op" = broadcast ] && place=--inplace  # HcclBroadcast has one buffer
  run "$name" -- "$VIGIL" bench "$op" --ranks "$RANKS" --transport "$tp" $place --json \
      --log-dir "$OUT/logs/$name" --timeout "$RUN_TIMEOUT" "$@"
}

gloo_run() {  # gloo_run NAME OP ARGS...
  local name="$1" op="$2"; shift 2
  local store; store="$(mktemp -d "${TMPDIR:-/tmp}/gloo-store.XXXXXX")"
  run "$name" -- "$BIN/gloo_bench" "$op" --ranks "$RANKS" --store "$store" --label gloo "$@"
  rm -rf "$store"
}

run memcpy -- "$BIN/memcpy_bw" 64 10

for series in $SERIES; do
  case "$series" in
    allreduce-lat) op=allreduce; sizes=(-b 8 -e 1K -f 2 -n "$LAT_ITERS" -w "$LAT_WARMUP") ;;
    # The same with Vigil synchronizing its stream after every op (-z 1), as a blocking
    # MPI_Allreduce returns only when done: the latency a program that waits for each op sees.
    allreduce-latz) op=allreduce; sizes=(-b 8 -e 1K -f 2 -n "$LAT_ITERS" -w "$LAT_WARMUP") ;;
    broadcast-latz|allgather-latz|reducescatter-latz|reduce-latz|alltoall-latz)
      op=${series%-latz}; sizes=(-b 8 -e 1K -f 2 -n "$LAT_ITERS" -w "$LAT_WARMUP") ;;
    allreduce|allgather|reducescatter|broadcast|alltoall)
      op=$series; sizes=(-b 1M -e "$MAX_BYTES" -f 2 -n "$BW_ITERS" -w "$BW_WARMUP") ;;
    *) log "unknown series $series"; continue ;;
  esac
  vz=(); [[ "$series" == *-latz ]] && vz=(-z 1)
  for rep in $(seq 1 "$REPEAT"); do
    log "== $series (round $rep of $REPEAT)"
    r=".r$rep"
    # The core-to-core round trip now: small-message rounds are read against it (summary).
    run "line_rtt.$series$r" -- "$BIN/line_rtt"
    want vigil-shm && vigil_run "${series}__vigil-shm$r" shm "$op" "${sizes[@]}" "${vz[@]}"
    want ompi-shm && run "${series}__ompi-shm$r" -- "${MPIRUN[@]}" "$BIN/mpi_bench" "$op" \
        "${sizes[@]}" --label ompi-shm
    want vigil-tcp && vigil_run "${series}__vigil-tcp$r" tcp "$op" "${sizes[@]}" "${vz[@]}"
    want ompi-tcp && run "${series}__ompi-tcp$r" -- "${MPIRUN[@]}" --mca pml ob1 \
        --mca btl tcp,self "$BIN/mpi_bench" "$op" "${sizes[@]}" --label ompi-tcp
    want gloo || continue
    [[ "$series" == *-latz ]] && continue  # Gloo: its calls are those of allreduce-lat
    case "$op" in
      allreduce)
        gloo_run "${series}__gloo-ring$r" "$op" --algo ring "${sizes[@]}"
        gloo_run "${series}__gloo-bcube$r" "$op" --algo bcube "${sizes[@]}" ;;
      *) gloo_run "${series}__gloo$r" "$op" "${sizes[@]}" ;;
    esac
  done
done

LOAD_AFTER="$(bench_load)"
OMPI_VER="$(mpirun --version 2>/dev/null | head -1)"
GLOO_VER="$(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || echo unknown)"
VIGIL_VER="${VIGIL_REV:-$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
cat >"$OUT/meta.json" <<EOF
{"nranks": $RANKS, "date": "$(date -Is)", "host": "$(hostname)", "cpus": "$(nproc)",
 "load_before": "$LOAD_BEFORE", "load_after": "$LOAD_AFTER",
 "vigil": "$VIGIL_VER (heartbeat and flight recorder on)", "openmpi": "$OMPI_VER", "gloo": "libgloo-dev $GLOO_VER",
 "command": "TOOLS=\\"$TOOLS\\" RANKS=$RANKS REPEAT=$REPEAT LAT_ITERS=$LAT_ITERS LAT_WARMUP=$LAT_WARMUP BW_ITERS=$BW_ITERS MAX_BYTES=$MAX_BYTES bench/compare/compare.sh"}
EOF

python3 "$HERE/summarize.py" "$OUT" | tee "$OUT/summary.md"
"$HERE/plot.sh" "$OUT/charts.json" "$OUT" || log "no charts drawn (matplotlib or gnuplot needed)"
log "results in $OUT (summary.md, one chart per op, one JSON per run, logs/)"
