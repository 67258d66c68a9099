#!/usr/bin/env bash
# Two ranks on two "hosts" (issue #15): network namespaces joined by a veth
# pair, each with its own hostname (UTS namespace), Open MPI's launcher
# reaching the second one through an agent (plm_rsh_agent) that enters its
# namespace, as ssh would enter a remote machine; MPI traffic is forced onto
# TCP over the veth (btl tcp,self), so the tensor-parallel all-reduces cross
# a real network interface. Checks: the greedy tokens equal a single-process
# run, and the veth carried the traffic (its byte counters grew); then a
# pipeline-parallel run of 8 prompts with steps in flight across the
# namespaces gives the single-process tokens.
# Needs root with CAP_NET_ADMIN/CAP_SYS_ADMIN (`ip netns`, `unshare --uts`);
# exit 77 (ctest: skipped) saying why when the machine does not allow it.
# Usage: netns_test.sh TESSERA_BIN MPIEXEC MODEL
set -euo pipefail
BIN=$(readlink -f "$1")
MPIEXEC=$2
. "$(dirname "$0")/../stories_model.sh"
stories_model "$3"
MODEL=$(readlink -f "$MODEL")
ID=$$
NS_A=tsr_a_$ID NS_B=tsr_b_$ID
WORK=$(mktemp -d)
cleanup() {
  ip netns del "$NS_A" 2>/dev/null || true
  ip netns del "$NS_B" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
skip() { echo "skipped: $*"; exit 77; }
command -v ip >/dev/null || skip "no ip command (Debian: iproute2)"
command -v unshare >/dev/null || skip "no unshare command (util-linux)"
ip netns add "$NS_A" 2>/dev/null || skip "cannot create network namespaces here (needs root with CAP_SYS_ADMIN)"
ip netns add "$NS_B"
A=10.77.$((ID % 200)).1 B=10.77.$((ID % 200)).2 NET=10.77.$((ID % 200)).0/24
VA=va$((ID % 100000)) VB=vb$((ID % 100000))
ip link add "$VA" type veth peer name "$VB" 2>/dev/null || skip "cannot create a veth pair (needs CAP_NET_ADMIN)"
ip link set "$VA" netns "$NS_A"
ip link set "$VB" netns "$NS_B"
ip -n "$NS_A" addr add "$A/24" dev "$VA"
ip -n "$NS_B" addr add "$B/24" dev "$VB"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VA" up
ip -n "$NS_B" link set "$VB" up

# The launcher's agent: `agent HOST COMMAND...` runs COMMAND (Open MPI's orted) inside HOST's namespace.
cat >"$WORK/agent.sh" <<AGENT
#!/bin/sh
host=\$1; shift
if [ "\$host" = "$B" ]; then ns=$NS_B; name=nodeb; else ns=$NS_A; name=nodea; fi
exec ip netns exec \$ns unshare --uts sh -c "hostname \$name; \$*"
AGENT
chmod +x "$WORK/agent.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tx_bytes() { ip netns exec "$NS_A" cat "/sys/class/net/$VA/statistics/tx_bytes"; }
# across WHAT MPI_OPTIONS TESSERA_ARGS: runs `tessera TESSERA_ARGS` as two ranks
# on the two namespace hosts; its stdout must equal $want (exit 1 otherwise).
# --bind-to none: each namespace is a "host" that would bind its one rank to
# core 0, so both ranks would share one core (docs/parallelism.md).
across() {
  set +e
  got=$(ip netns exec "$NS_A" unshare --uts sh -c "hostname nodea; exec $MPIEXEC -q --oversubscribe \
    --mca plm_rsh_agent $WORK/agent.sh --mca btl tcp,self --mca btl_tcp_if_include $NET --mca oob_tcp_if_include $NET \
    --bind-to none $2 --host $A:1,$B:1 -np 2 $BIN $3" 2>"$WORK/err")
  local rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: $1 exited $rc:" >&2
    cat "$WORK/err" >&2
    exit 1
  fi
  if [ "$got" != "$want" ]; then
    echo "FAIL: $1: tokens differ across the veth: got '$got', want '$want'" >&2
    exit 1
  fi
}
before=$(tx_bytes)
want=$("$BIN" run -m "$MODEL" -p "Once upon a time" -n 32 --temp 0 -t 1 2>/dev/null)
across "the two-namespace T = 2 run" "" "run -m $MODEL -p 'Once upon a time' -n 32 --temp 0 -t 1 --tensor-parallel-size 2"
after=$(tx_bytes)
sent=$((after - before))
# 32 decode steps x 5 layers x 2 all-reduces of 64 floats, plus the steps' batches: well over 20 KB.
if [ "$sent" -lt 20000 ]; then
  echo "FAIL: only $sent bytes crossed the veth: the ranks did not talk over it" >&2
  exit 1
fi
echo "ok: T = 2 across two network namespaces ($A on nodea, $B on nodeb): tokens equal the single-process run, $sent bytes sent over $VA"

# P = 2 across the namespaces with steps in flight: 8 greedy prompts at once,
# shares of one sequence allowed (TESSERA_PP_MICRO_BATCH_ROWS=1, sent to the
# remote rank with -x), so rank 0 issues a second step while the first is in
# the other namespace; the tokens equal the single-process run's.
PROMPTS=(-p 'Once upon a time' -p 'The cat' -p 'Lily went to the park' -p 'One day' -p 'Tom had a big red ball'
  -p 'The sun was' -p 'A little bird' -p 'Mom said')
want=$("$BIN" run -m "$MODEL" "${PROMPTS[@]}" -n 24 --temp 0 -t 1 --print-ids 2>/dev/null)
quoted=$(printf "%q " "${PROMPTS[@]}")
across "the two-namespace P = 2 run" "-x TESSERA_PP_MICRO_BATCH_ROWS=1" \
  "run -m $MODEL $quoted -n 24 --temp 0 -t 1 --print-ids --pipeline-parallel-size 2"
overlapped=$(sed -n 's/^pipeline (2 stages): \([0-9]*\) of [0-9]* steps.*/\1/p' "$WORK/err")
if [ -z "$overlapped" ] || [ "$overlapped" -eq 0 ]; then
  echo "FAIL: no P = 2 step was issued while another was in flight:" >&2
  cat "$WORK/err" >&2
  exit 1
fi
echo "ok: P = 2 across the namespaces, 8 prompts: tokens equal the single-process run, $overlapped steps issued while another was in flight"
