#!/usr/bin/env bash
# run-ranks.sh N STORE_DIR COMMAND [ARGS...]: starts N local ranks of COMMAND
# with RANK, WORLD_SIZE, LOCAL_RANK and a file rendezvous store in STORE_DIR
# (the variables a torchrun-style launcher sets), or with the TCP store on
# 127.0.0.1:$TCP_STORE_PORT when that is set; waits for all of them and prints
# each rank's exit status; exits 1 if any rank failed. Output of rank r goes
# to STORE_DIR.r.log and is printed afterwards, rank by rank.
set -u
n=$1 store=$2
shift 2
rm -rf "$store"
pids=()
for ((r = 0; r < n; r++)); do
  if [ -n "${TCP_STORE_PORT:-}" ]; then
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOOM_STORE=tcp MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$TCP_STORE_PORT "$@" > "$store.$r.log" 2>&1 &
  else
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOOM_STORE="file:$store" \
      "$@" > "$store.$r.log" 2>&1 &
  fi
  pids+=($!)
done
failed=0
for ((r = 0; r < n; r++)); do
  wait "${pids[$r]}"
  status=$?
  echo "rank $r exited with $status"
  [ "$status" -eq 0 ] || failed=1
done
for ((r = 0; r < n; r++)); do cat "$store.$r.log"; done
exit $failed
