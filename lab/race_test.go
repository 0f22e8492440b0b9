//go:build race

package main

// The race detector slows every goroutine several times over: counts that follow the machine's
// speed (Redis commands per order) are not the lab's own under it.
func init() { raceDetector = true }
