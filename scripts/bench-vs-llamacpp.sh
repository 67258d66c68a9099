#!/usr/bin/env bash
# tessera against llama.cpp on the same GGUF files, side by side on one
# machine: for every model and round, `tessera bench` and llama-bench
# (`-p 0 -n N` for decode, `-p P -n 0` for prefill) run one after the other,
# the order swapped every round (this machine's bandwidth drifts in spells),
# and the table gives each engine's median over the rounds and the ratio
# tessera / llama.cpp.
#
#   scripts/bench-vs-llamacpp.sh [options] LLAMA_CPP MODEL.gguf...
#
# LLAMA_CPP is a llama.cpp build directory (holding bin/llama-bench) or the
# llama-bench binary itself; nothing of llama.cpp is built or kept here.
# Options: -t THREADS (2), -p PROMPT_TOKENS (256), -n DECODE_TOKENS (32),
# -r ROUNDS (3), --tessera PATH (build/release/bin/tessera). Environment
# variables reach both engines, e.g. TESSERA_ISA=avx2 for tessera's AVX2 path.
#
# Notes: tessera's decode figure is at a context of ~P tokens (it decodes
# after the prompt), llama-bench's `-p 0 -n N` from an empty context; both
# are the best of one run per round. On a machine shared with other work, set
# OMP_WAIT_POLICY=passive: llama.cpp's OpenMP threads otherwise spin at
# barriers and, preempted, collapse (measured here under a load of 6-9 on 2
# cores: b4748 Q4_0 decode 0.5-1.4 tokens/s spinning, 6.1 passive). Exit status: 2 for a usage error, 1
# when a file is missing or an engine fails or prints something unexpected.
set -euo pipefail

usage() {
  echo "usage: $0 [-t THREADS] [-p PROMPT_TOKENS] [-n DECODE_TOKENS] [-r ROUNDS] [--tessera PATH] LLAMA_CPP MODEL.gguf..." >&2
  exit 2
}
die() {
  echo "bench-vs-llamacpp: $*" >&2
  exit 1
}
positive_int() {  # name value
  [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "bench-vs-llamacpp: $1 must be a positive integer, got '$2'" >&2; usage; }
}

threads=2 prompt=256 decode=32 rounds=3
tessera="$(cd "$(dirname "$0")/.." && pwd)/build/release/bin/tessera"
args=()
while (($#)); do
  case "$1" in
    -t | -p | -n | -r | --tessera)
      (($# >= 2)) || { echo "bench-vs-llamacpp: $1 needs a value" >&2; usage; }
      case "$1" in
        -t) positive_int "-t" "$2"; threads=$2 ;;
        -p) positive_int "-p" "$2"; prompt=$2 ;;
        -n) positive_int "-n" "$2"; decode=$2 ;;
        -r) positive_int "-r" "$2"; rounds=$2 ;;
        --tessera) tessera=$2 ;;
      esac
      shift 2 ;;
    -h | --help)
      # The help is the header comment above (everything before `set -euo pipefail`).
      sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
      exit 0 ;;
    -*) echo "bench-vs-llamacpp: unknown option $1" >&2; usage ;;
    *) args+=("$1"); shift ;;
  esac
done
((${#args[@]} >= 2)) || usage
((decode >= 2)) || { echo "bench-vs-llamacpp: -n must be at least 2 (tessera bench's minimum)" >&2; usage; }

llama=${args[0]}
models=("${args[@]:1}")
if [[ -d "$llama" ]]; then
  if [[ -x "$llama/bin/llama-bench" ]]; then llama="$llama/bin/llama-bench"; else llama="$llama/llama-bench"; fi
fi
[[ -f "$llama" && -x "$llama" ]] || die "no llama-bench executable at ${args[0]} (give a llama.cpp build directory or its llama-bench)"
[[ -x "$tessera" ]] || die "no tessera executable at $tessera (build it, or pass --tessera PATH)"
for m in "${models[@]}"; do [[ -f "$m" ]] || die "model not found: $m"; done

# tessera bench -> "DECODE PREFILL" (tokens/s).
run_tessera() {
  local out
  out=$("$tessera" bench -m "$1" -t "$threads" -p "$prompt" -n "$decode" -r 1 --skip-bandwidth 2>&1) ||
    die "tessera bench failed on $1: $(tail -n 1 <<<"$out")"
  awk '/^decode \(batch 1/ { for (i = 1; i <= NF; ++i) if ($i == "tokens/s,") d = $(i - 1) }
       /^prefill \(/ { for (i = 1; i <= NF; ++i) if ($i == "tokens/s,") p = $(i - 1) }
       END { if (d == "" || p == "") exit 1; print d, p }' <<<"$out" ||
    die "could not read tessera bench's output for $1"
}

# llama-bench -p P -n N -> tokens/s (its CSV column avg_ts).
run_llama() {  # model prompt decode
  local out
  out=$("$llama" -m "$1" -t "$threads" -p "$2" -n "$3" -r 1 -o csv 2>/dev/null) ||
    die "llama-bench failed on $1 (-p $2 -n $3)"
  # The header line is unquoted (b4748) or quoted, the values quoted ("a","b",...).
  awk 'NR == 1 { gsub(/"/, ""); n = split($0, h, ","); for (i = 1; i <= n; ++i) if (h[i] == "avg_ts") col = i; next }
       col { line = $0; gsub(/^"|"$/, "", line); n = split(line, f, "\",\""); if (n >= col) v = f[col] }
       END { if (v == "" || v !~ /^[0-9.]+$/) exit 1; print v }' \
    <<<"$out" || die "could not read llama-bench's output for $1 (no avg_ts column: is $llama a llama-bench?)"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

declare -A t_dec t_pre l_dec l_pre
for ((round = 0; round < rounds; ++round)); do
  for m in "${models[@]}"; do
    echo "round $((round + 1))/$rounds: $(basename "$m")" >&2
    if ((round % 2 == 0)); then
      read -r td tp < <(run_tessera "$m") || exit 1
      ld=$(run_llama "$m" 0 "$decode")
      lp=$(run_llama "$m" "$prompt" 0)
    else
      ld=$(run_llama "$m" 0 "$decode")
      lp=$(run_llama "$m" "$prompt" 0)
      read -r td tp < <(run_tessera "$m") || exit 1
    fi
    t_dec[$m]+="$td "; t_pre[$m]+="$tp "; l_dec[$m]+="$ld "; l_pre[$m]+="$lp "
  done
done

echo "tessera / llama.cpp, $threads threads, decode $decode tokens, prefill $prompt tokens, median of $rounds alternating rounds (tokens/s)"
printf '| %-28s | %14s | %14s | %6s | %15s | %15s | %6s |\n' model "decode tessera" "decode llama" ratio "prefill tessera" "prefill llama" ratio
printf '| %-28s | %14s | %14s | %6s | %15s | %15s | %6s |\n' "---" "---:" "---:" "---:" "---:" "---:" "---:"
for m in "${models[@]}"; do
  td=$(tr ' ' '\n' <<<"${t_dec[$m]}" | grep . | median)
  tp=$(tr ' ' '\n' <<<"${t_pre[$m]}" | grep . | median)
  ld=$(tr ' ' '\n' <<<"${l_dec[$m]}" | grep . | median)
  lp=$(tr ' ' '\n' <<<"${l_pre[$m]}" | grep . | median)
  awk -v m="$(basename "$m")" -v td="$td" -v tp="$tp" -v ld="$ld" -v lp="$lp" 'BEGIN {
    printf "| %-28s | %14.2f | %14.2f | %6.2f | %15.1f | %15.1f | %6.2f |\n", m, td, ld, (ld > 0 ? td / ld : 0), tp, lp, (lp > 0 ? tp / lp : 0) }'
done
