#!/usr/bin/env bash
# AllReduce busbw at 1 MiB on 4 ranks, heartbeat on vs off, interleaved in one run so machine
# noise hits both alike. Usage: [ITERS=300] run_bench.sh BUILD_DIR [ROUNDS] [BYTES] [RANKS]
set -euo pipefail
build=${1:?usage: run_bench.sh BUILD_DIR [ROUNDS] [BYTES] [RANKS]}
rounds=${2:-5}
bytes=${3:-1048576}
ranks=${4:-4}
iters=${ITERS:-300}
vigil=$build/src/cli/vigil
bench=$build/bench/heartbeat/hb_allreduce_bench
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
on=() off=() cpu=()
for i in $(seq 1 "$rounds"); do
  for hb in 1 0; do
    line=$(VIGIL_HEARTBEAT=$hb HCCL_IF_BASE_PORT=0 ASCEND_PROCESS_LOG_PATH=$logs/$i-$hb \
           "$vigil" run -n "$ranks" -q --timeout 300 --log-dir "$logs/$i-$hb" -- \
           "$bench" --bytes "$bytes" --iters "$iters" --warmup 20 2>>"$logs/stderr" | grep '^allreduce')
    echo "$line"
    bw=$(sed -n 's/.*busbw_GBps=\([0-9.]*\).*/\1/p' <<<"$line")
    if [ "$hb" = 1 ]; then
      on+=("$bw")
      cpu+=("$(sed -n 's/.*hb_thread_cpu_ms=\([0-9.]*\) wall_ms=\([0-9.]*\).*/\1 \2/p' <<<"$line" | awk '{printf "%.4f", $1 / $2 * 100}')")
    else
      off+=("$bw")
    fi
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mon=$(median "${on[@]}")
moff=$(median "${off[@]}")
awk -v on="$mon" -v off="$moff" -v r="$rounds" -v b="$bytes" -v n="$ranks" 'BEGIN {
  printf "median busbw over %d rounds, %d bytes, %d ranks: heartbeat on %.3f GB/s, off %.3f GB/s, difference %+.2f%%\n",
         r, b, n, on, off, (on - off) / off * 100 }'
echo "heartbeat thread CPU while the AllReduces ran (rank 0, median): $(median "${cpu[@]}")% of one core"
