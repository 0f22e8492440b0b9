// Package bench measures what each lockstep step costs against the best Go Redis lock libraries
// (github.com/bsm/redislock and github.com/go-redsync/redsync/v4): ns per lock+unlock cycle, Redis
// commands per cycle (rtt/op), and, with N processes on one key, the hand-off latency from one
// holder's Unlock to the next holder's Lock.
//
// It is its own module, so the peers never become dependencies of the lab. The benchmarks start
// their own redis-server on a free loopback port and stop it at the end; without redis-server on
// PATH they skip. See docs/performance.md for the numbers and how to read them, and run.sh to
// reproduce them.
package bench
