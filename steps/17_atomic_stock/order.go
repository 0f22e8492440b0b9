package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
)

// Order sells without a lock: it does the work, then asks the inventory to take one unit off the
// shelf in one atomic step, only if one is left (the shop's Sell: a Lua script on the inventory,
// as article 001's stock decrement). No buyer reads a number it later writes back, so no two can
// sell the same unit, whatever the lock server, the clocks or the pauses do. Hazard: the work
// itself is not protected: it runs for a buyer who then finds the shelf empty, and it would run
// twice for a request that is retried; keeping work from running twice is what a lock is still
// for.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) error {
	if err := s.Work(ctx); err != nil {
		return err
	}
	return s.Sell(ctx)
}
