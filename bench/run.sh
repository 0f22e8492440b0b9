#!/usr/bin/env bash
# run.sh: run lockstep's interleaved lock benchmarks against redislock and redsync on redis-servers
# the benchmarks start themselves, save the raw output with the machine it ran on, and print the
# Markdown tables (the spreads over rounds), and benchstat's summary of every lock over rounds
# (and, with PREV, the change from an earlier run).
#
#   bench/run.sh                                   # both benchmarks, output in bench/results/
#   BENCH=LockUnlock bench/run.sh                  # only one ("LockUnlock", "Contended",
#   BENCH=Contended/procs=4/cs=1ms bench/run.sh    #  or one contended configuration)
#   LOCKS='14_fair|redislock|redsync$' bench/run.sh  # only the locks this regexp matches (the
#                                                  #  peers too, or no ratio): minutes, not an hour
#   ROUNDS_UNCONTENDED=1000 ROUNDS_CONTENDED=20 bench/run.sh
#   PREV=results/<earlier>.txt bench/run.sh        # also compare with an earlier run (benchstat)
#
# A round runs every lock once, in a shuffled order; more rounds narrow the intervals. COUNT runs
# each benchmark that many times in one binary; the tables pool their rounds.
set -euo pipefail
cd "$(dirname "$0")"

command -v redis-server >/dev/null || { echo "run.sh: redis-server not on PATH (apt-get install -y redis-server)" >&2; exit 1; }
benches=${BENCH:-LockUnlock Contended}
rounds_uncontended=${ROUNDS_UNCONTENDED:-400}
rounds_contended=${ROUNDS_CONTENDED:-12}
count=${COUNT:-1}
out=${OUT:-results/$(date -u +%Y%m%dT%H%M%SZ).txt}
mkdir -p "$(dirname "$out")"
out=$(realpath "$out")
rounds_out=${out%.txt}.rounds.txt # every round of every lock, for benchstat
rm -f "$rounds_out"

benchstat=$(command -v benchstat || true)
if [ -z "$benchstat" ]; then
	GOBIN=$(go env GOPATH)/bin
	[ -x "$GOBIN/benchstat" ] || go install golang.org/x/perf/cmd/benchstat@latest
	benchstat=$GOBIN/benchstat
fi

# The load average every 10 s while the benchmarks run (they and their redis-servers alone keep
# it near 2 on 2 cores); the sampler is stopped on every exit.
loadlog=$(mktemp)
(
	trap 'kill "$nap" 2>/dev/null; exit 0' TERM
	while :; do
		sleep 10 &
		nap=$!
		wait "$nap"
		cut -d' ' -f1 /proc/loadavg
	done
) >"$loadlog" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null; rm -f "$loadlog"' EXIT

# cpu_ticks prints the machine's busy and total CPU time (/proc/stat), and this script's children's
# (go test, the test binaries and their redis-servers, once waited for), in clock ticks: what the
# rest of the machine used is the machine's busy time less ours.
cpu_ticks() {
	awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat
	awk '{ print $16+$17 }' /proc/$$/stat
}
read -r busy0 total0 ours0 < <(cpu_ticks | paste -sd' ')

{
	echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/ *$//')"
	echo "# $(go version) | $(redis-server --version)"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# rounds: uncontended $rounds_uncontended, contended $rounds_contended; count $count; locks ${LOCKS:-all}"
	for b in $benches; do
		case $b in
		LockUnlock*) rounds=$rounds_uncontended ;;
		*) rounds=$rounds_contended ;;
		esac
		go test -run '^$' -bench "^Benchmark$b\$" -benchtime="${rounds}x" -count="$count" -timeout 600m . \
			-args -rounds="$rounds_out" -locks="${LOCKS:-}"
	done
	echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# load average every 10 s during the run (1-minute): $(paste -sd' ' "$loadlog")"
} | tee "$out"
read -r busy1 total1 ours1 < <(cpu_ticks | paste -sd' ')
awk -v b="$((busy1 - busy0))" -v t="$((total1 - total0))" -v o="$((ours1 - ours0))" -v n="$(nproc)" 'BEGIN {
	others = b - o; if (others < 0) others = 0
	printf "# CPU used by other processes during the run: %.0f %% of the machine (%.1f of %d cores); this run: %.0f %%\n",
		100 * others / t, n * others / t, n, 100 * o / t
}' | tee -a "$out"

echo
echo "raw output: $out"
echo
awk '/interleaved tables: begin/ { on = 1; next } /interleaved tables: end/ { on = 0 } on' "$out"
echo
echo "## benchstat over rounds ($rounds_out): each lock's median and its 95 % interval"
echo
"$benchstat" -filter '.unit:(sec/op OR x-best-peer OR cmds/op)' "$rounds_out"
if [ -n "${PREV:-}" ]; then
	prev_rounds=${PREV%.txt}.rounds.txt
	echo
	echo "## benchstat $prev_rounds $rounds_out (rounds as samples: read the change, its p-value is optimistic)"
	echo
	"$benchstat" -filter '.unit:(sec/op OR x-best-peer OR cmds/op)' "$prev_rounds" "$rounds_out"
fi
