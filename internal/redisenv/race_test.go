//go:build race

package redisenv_test

// The race detector slows every goroutine several times over: counts that follow the machine's
// speed (Redis commands per order) are not the lab's own under it (as lab's race_test.go says).
func init() { raceDetector = true }
