#!/usr/bin/env bash
# soak.sh plays every cell of the matrix N times (lab run -repeat N) and reports the cells whose
# verdict ever differed from the matrix or went without a verdict: the check that a staged
# interleaving holds on a loaded machine.
#
#   scripts/soak.sh [-n 200] [-burners 2] [-steps "04 05"] [-scenarios "slow pause"] [-redis server]
#
# With -burners K it runs K `yes > /dev/null` processes for the whole soak and kills them (by
# PID) at the end, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
n=200 burners=0 only_steps="" only_scenarios="" redis="${LAB_REDIS:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    -burners) burners=$2; shift 2 ;;
    -steps) only_steps=$2; shift 2 ;;
    -scenarios) only_scenarios=$2; shift 2 ;;
    -redis) redis=$2; shift 2 ;;
    *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=$(mktemp -d)/lab
go build -o "$bin" ./lab
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$(dirname "$bin")"; }
trap cleanup EXIT INT TERM
for _ in $(seq 1 "$burners"); do
  yes > /dev/null &
  pids+=($!)
done
steps=${only_steps:-$("$bin" list steps)}
scenarios=${only_scenarios:-$("$bin" list scenarios)}
echo "soak: $n runs of every cell, $burners burners, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
bad=0 total=0
for st in $steps; do
  for sc in $scenarios; do
    total=$((total + 1))
    if out=$("$bin" run -step "$st" -scenario "$sc" -repeat "$n" ${redis:+-redis "$redis"} 2>/dev/null); then
      echo "ok   $(echo "$out" | head -1)"
    else
      bad=$((bad + 1))
      echo "DIFF $out"
    fi
  done
done
echo "soak: $bad of $total cells differed at least once; load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
[ "$bad" -eq 0 ]
