// Package bench measures what each lockstep step costs against the best Go Redis lock libraries
// (github.com/bsm/redislock and github.com/go-redsync/redsync/v4), interleaved: every lock runs in
// every round, in a freshly shuffled order, so the drift of a shared machine falls on all of them
// alike, and each lock is reported as a ratio to the best peer in the same rounds, with its spread.
//
// BenchmarkLockUnlock times an uncontended Lock + Unlock cycle and counts its Redis commands and
// allocations; BenchmarkContended runs N processes on one key (a critical section of 0 and of
// 1 ms) and reports the wait from asking to holding, the hand-off between holders and the commands
// per acquisition. The locks are one table (contenders in lockers_test.go): adding a lock is one
// line there. -locks REGEXP (after -args; run.sh's LOCKS) runs only the locks whose name matches,
// e.g. -locks '14_fair|redislock|redsync$': one contended configuration of a lock and its peers
// then takes minutes, not the hour all of them take (the back-off steps wait seconds per try). A
// lock's ratio is to the best peer among those that match. When the test binary ends it prints
// one Go-benchmark-format line per lock (which benchstat reads) and Markdown tables with the
// spreads.
//
// It is its own module, so the peers never become dependencies of the lab. The benchmarks start
// their own redis-servers on free loopback ports (a second and third only for a lock on three
// nodes) and stop them at the end; without redis-server on PATH they skip. Hazard: the servers run
// on the same cores as the benchmark, so absolute times move with everything else on the machine;
// the ratios within a round are what this package is built to make stable. See
// docs/performance.md for the numbers and how to read them, and run.sh to reproduce them.
package bench
