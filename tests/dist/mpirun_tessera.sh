#!/usr/bin/env bash
# Runs `tessera ARGS... --tensor-parallel-size 2` as two MPI ranks on this
# machine: the official openai client test (tests/server/node) drives a server
# started through it (TESSERA_BIN=this script, TESSERA_REAL_BIN=tessera,
# TESSERA_MPIEXEC=mpirun). Commands that run no model (e.g. `tokenize`) run
# as one plain process. A SIGTERM to this script goes to rank 0 only: rank 0
# drains, exits 0 and tells the workers to exit, so the run exits 0 (mpirun
# itself, given SIGTERM, kills the whole job and exits non-zero).
set -euo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case "${1:-}" in
  serve | run) ;;
  *) exec "$TESSERA_REAL_BIN" "$@" ;;
esac
"$TESSERA_MPIEXEC" --oversubscribe -q -np 2 "$TESSERA_REAL_BIN" "$@" --tensor-parallel-size 2 &
MPI_PID=$!
rank0() {
  for pid in $(pgrep -P "$MPI_PID"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then echo "$pid"; fi
  done
}
forward() { kill -"$1" "$(rank0)" 2>/dev/null || kill -"$1" "$MPI_PID"; }
trap 'forward TERM' TERM
trap 'forward INT' INT
rc=0
while :; do
  wait "$MPI_PID" && rc=0 || rc=$?
  kill -0 "$MPI_PID" 2>/dev/null || break  # wait returns early when a trapped signal arrives
done
exit "$rc"
