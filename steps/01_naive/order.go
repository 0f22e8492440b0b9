package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
)

// Order is the article's first submitOrder: read the stock, work, write stock-1. Hazard: nothing
// stops two buyers from reading the same stock, so both sell the same unit.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) error {
	stock, err := s.Stock(ctx)
	if err != nil {
		return err
	}
	if stock <= 0 {
		return steps.ErrSoldOut
	}
	if err := s.Work(ctx); err != nil {
		return err
	}
	return s.SetStock(ctx, stock-1)
}
