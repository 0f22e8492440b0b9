//go:build !lockstep_seeded

package explore

// SeedMathRand does nothing in a build without the lockstep_seeded tag (go test, dist.sh's
// grader): see seed.go, which the grader lab explore builds uses instead.
func SeedMathRand(uint64) {}
