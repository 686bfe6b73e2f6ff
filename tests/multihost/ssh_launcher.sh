#!/bin/bash
# `vigil run --hosts` with its default launcher (`ssh {host}`), through a stand-in `ssh` early in
# PATH that behaves as ssh does: drops the host and runs the rest, joined by spaces, through a
# shell. Checks that the ranks get their variables (RANK_ID, RANK_SIZE, LOCAL_RANK, DEVICE_ID,
# VIGIL_HOST, VIGIL_ROOT_INFO, the per-host ASCEND_PROCESS_LOG_PATH, HCCL_* of the launcher and
# --env) and their arguments intact (quoting), then runs collective_check over the stand-in.
# Needs no root: both "hosts" are this machine.
#   ssh_launcher.sh VIGIL COLLECTIVE_CHECK WORKDIR
set -u
VIGIL=$1
CHECK=$2
WORKDIR=$3/ssh_launcher
rm -rf "$WORKDIR"
mkdir -p "$WORKDIR/bin"
fail() {
  echo "FAIL [ssh_launcher]: $*"
  exit 1
}
cat >"$WORKDIR/bin/ssh" <<'SH'
#!/bin/sh
echo "$1" >>"$SSH_HOSTS_SEEN"
shift
exec sh -c "$*"
SH
chmod +x "$WORKDIR/bin/ssh"
export PATH="$WORKDIR/bin:$PATH" SSH_HOSTS_SEEN="$WORKDIR/hosts_seen"
export HCCL_BUFFSIZE=1 HCCL_IF_BASE_PORT=0 HCCL_EXEC_TIMEOUT=60 HCCL_CONNECT_TIMEOUT=30
export HCCL_ENTRY_LOG_ENABLE=1
unset HCCL_ALGO VIGIL_TRANSPORT

# 1. Environment and quoting: an argument with a space, a quote and a $.
OUT="$WORKDIR/out dir"
mkdir -p "$OUT"
"$VIGIL" run --hosts alpha:2,beta:1 --log-dir "$WORKDIR/logs" --timeout 60 -q \
  --env "MY_VAR=a b" -- sh -c \
  'echo "$RANK_ID $RANK_SIZE $LOCAL_RANK $DEVICE_ID $VIGIL_HOST ${#VIGIL_ROOT_INFO} $HCCL_BUFFSIZE $MY_VAR $ASCEND_PROCESS_LOG_PATH [$1]" > "$0/rank-$RANK_ID"' \
  "$OUT" "it's \$HOME" || fail "env job failed"
[ "$(sort "$SSH_HOSTS_SEEN" | tr '\n' ' ')" = "alpha alpha beta " ] ||
  fail "hosts dialled: $(cat "$SSH_HOSTS_SEEN")"
want0="0 3 0 0 alpha 8216 1 a b $WORKDIR/logs/alpha [it's \$HOME]"
want1="1 3 1 1 alpha 8216 1 a b $WORKDIR/logs/alpha [it's \$HOME]"
want2="2 3 0 0 beta 8216 1 a b $WORKDIR/logs/beta [it's \$HOME]"
[ "$(cat "$OUT/rank-0")" = "$want0" ] || fail "rank 0 saw: $(cat "$OUT/rank-0")"
[ "$(cat "$OUT/rank-1")" = "$want1" ] || fail "rank 1 saw: $(cat "$OUT/rank-1")"
[ "$(cat "$OUT/rank-2")" = "$want2" ] || fail "rank 2 saw: $(cat "$OUT/rank-2")"

# 2. A real job through the stand-in (one machine: shm, flat algorithms).
"$VIGIL" run --hosts alpha:2,beta:2 --log-dir "$WORKDIR/logs2" --timeout 120 -q -- "$CHECK" \
  >"$WORKDIR/out.txt" 2>&1 || { cat "$WORKDIR/out.txt"; fail "collective_check failed"; }
[ "$(grep -c "checks, 0 wrong" "$WORKDIR/out.txt")" = 4 ] || { cat "$WORKDIR/out.txt"; fail "wrong results"; }

# 3. Bad --hosts values are refused.
"$VIGIL" run --hosts "alpha:0" -- true >/dev/null 2>&1 && fail "--hosts alpha:0 accepted"
"$VIGIL" run --hosts "alpha:2" -n 3 -- true >/dev/null 2>&1 && fail "-n 3 with 2 ranks accepted"
"$VIGIL" run -n 2 --launcher "ssh {host}" -- true >/dev/null 2>&1 && fail "--launcher without --hosts accepted"
echo "PASS [ssh_launcher]"
rm -rf "$WORKDIR"
exit 0
