#!/usr/bin/env bash
# run.sh: run lockstep's lock benchmarks against redislock and redsync (-count=6) on a redis-server
# the benchmark starts itself, save the raw output, and print a benchstat table.
#
#   bench/run.sh                 # both benchmarks, output in bench/results/
#   BENCH=LockUnlock bench/run.sh  # only one of them (a -bench regexp)
#   COUNT=10 BENCHTIME=2s bench/run.sh
set -euo pipefail
cd "$(dirname "$0")"

command -v redis-server >/dev/null || { echo "run.sh: redis-server not on PATH (apt-get install -y redis-server)" >&2; exit 1; }
bench=${BENCH:-.}
count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}
out=${OUT:-results/$(date -u +%Y%m%dT%H%M%SZ).txt}
mkdir -p "$(dirname "$out")"

benchstat=$(command -v benchstat || true)
if [ -z "$benchstat" ]; then
	GOBIN=$(go env GOPATH)/bin
	[ -x "$GOBIN/benchstat" ] || go install golang.org/x/perf/cmd/benchstat@latest
	benchstat=$GOBIN/benchstat
fi

{
	echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(go version) | $(redis-server --version) | $(nproc) cores"
	go test -run '^$' -bench "$bench" -count="$count" -benchtime="$benchtime" -timeout 60m .
} | tee "$out"
echo
echo "raw output: bench/$out"
echo
"$benchstat" "$out"
