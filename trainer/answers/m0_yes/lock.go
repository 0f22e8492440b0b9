// Package lock is the answer to module 0's exercise in docs/curriculum.md: the smallest package
// that lab grade accepts. Its Lock says yes to everyone and its Unlock does nothing, so every
// order runs steps.DefaultOrder's critical section as if there were no lock at all.
package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
)

// Locker is a lock that never refuses anyone.
type Locker struct{}

// New is what lab grade calls for each simulated process.
func New(p steps.Proc) steps.Locker { return Locker{} }

// Lock says yes at once, whoever holds the key.
func (Locker) Lock(ctx context.Context, key string) (bool, error) { return true, nil }

// Unlock has nothing to give back.
func (Locker) Unlock(ctx context.Context, key string) error { return nil }
