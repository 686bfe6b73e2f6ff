#!/usr/bin/env bash
# AllReduce busbw at 1 MiB on 4 ranks, heartbeat on vs off, interleaved in one run so machine
# noise hits both alike. Usage: run_bench.sh BUILD_DIR [ROUNDS] [BYTES] [RANKS]
set -euo pipefail
build=${1:?usage: run_bench.sh BUILD_DIR [ROUNDS] [BYTES] [RANKS]}
rounds=${2:-5}
bytes=${3:-1048576}
ranks=${4:-4}
vigil=$build/src/cli/vigil
bench=$build/bench/heartbeat/hb_allreduce_bench
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
on=() off=()
for i in $(seq 1 "$rounds"); do
  for hb in 1 0; do
    line=$(VIGIL_HEARTBEAT=$hb HCCL_IF_BASE_PORT=0 ASCEND_PROCESS_LOG_PATH=$logs/$i-$hb \
           "$vigil" run -n "$ranks" -q --timeout 300 --log-dir "$logs/$i-$hb" -- \
           "$bench" --bytes "$bytes" --iters 200 --warmup 20 | grep '^allreduce')
    echo "$line"
    bw=$(sed -n 's/.*busbw_GBps=\([0-9.]*\).*/\1/p' <<<"$line")
    if [ "$hb" = 1 ]; then on+=("$bw"); else off+=("$bw"); fi
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mon=$(median "${on[@]}")
moff=$(median "${off[@]}")
awk -v on="$mon" -v off="$moff" -v r="$rounds" -v b="$bytes" -v n="$ranks" 'BEGIN {
  printf "median busbw over %d rounds, %d bytes, %d ranks: heartbeat on %.3f GB/s, off %.3f GB/s, difference %+.2f%%\n",
         r, b, n, on, off, (on - off) / off * 100 }'
