package lock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"go.uber.org/goleak"
)

// This step's idea: with no lock at all, the shelf cannot be oversold, because no buyer writes back
// a number it read: one script on the inventory takes a unit off only if one is left. The
// contention scenario's eight buyers start together against three units, and do their work side
// by side: exactly three are sold, the other five are told the shelf is empty.
//
// On the embedded backend the run plays inside a testing/synctest bubble, as the step's scenarios
// do: the backend, the buyers and their work run on the bubble's fake clock, so no load on the
// machine can move them. A backend of real processes ($LAB_REDIS) plays on the wall clock.

func TestAtomicSaleSellsExactlyTheShelf(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // after the backend's own cleanup closes it
	st := steptest.Here(t)
	if steptest.Virtual() {
		synctest.Test(t, func(t *testing.T) { atomicSale(t, st) })
		return
	}
	atomicSale(t, st)
}

// atomicSale plays the contention scenario against st, on the backend $LAB_REDIS names (opened
// inside the bubble when the test runs in one), and checks what it sold.
func atomicSale(t *testing.T, st *steps.Step) {
	env := steptest.Env(t, redisenv.Options{})
	var mu sync.Mutex
	done := map[string]int{} // how each order ended: "ok", "sold out", or the error
	rep, err := scenario.Run(context.Background(), arena.Config{Step: st, Env: env, OnEvent: func(e referee.Event) {
		if e.Kind != referee.EvDone {
			return
		}
		d := e.Err
		switch {
		case d == "":
			d = "ok"
		case strings.Contains(d, steps.ErrSoldOut.Error()):
			d = "sold out"
		}
		mu.Lock()
		done[d]++
		mu.Unlock()
	}}, steps.Contention)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete() {
		t.Fatalf("the referee could not judge the run: %s", rep.Why())
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d buyers, stock %d → %d, %d confirmed; orders ended: %v", rep.Buyers, rep.InitialStock, rep.FinalStock, rep.Confirmed, done)
	if rep.Buyers <= rep.InitialStock {
		t.Fatalf("%d buyers for %d units: the run must have more buyers than units", rep.Buyers, rep.InitialStock)
	}
	if sold := rep.InitialStock - rep.FinalStock; rep.Confirmed != sold {
		t.Errorf("%d orders confirmed, %d units left the shelf; want them equal", rep.Confirmed, sold)
	}
	if rep.FinalStock != 0 || rep.Confirmed != rep.InitialStock {
		t.Errorf("stock %d → %d with %d confirmed; want the whole shelf sold, and no more", rep.InitialStock, rep.FinalStock, rep.Confirmed)
	}
	if done["ok"] != rep.InitialStock || done["sold out"] != rep.Buyers-rep.InitialStock {
		t.Errorf("orders ended %v; want %d ok and %d sold out", done, rep.InitialStock, rep.Buyers-rep.InitialStock)
	}
	if rep.Commands != rep.Buyers {
		t.Errorf("%d Redis commands for %d buyers; want one each, its sale: no lock, no read of the stock", rep.Commands, rep.Buyers)
	}
	if len(rep.Overlaps) != 0 || rep.Oversold != 0 || len(rep.LostSales) != 0 {
		t.Errorf("overlaps %v, oversold %d, lost sales %v; want none", rep.Overlaps, rep.Oversold, rep.LostSales)
	}
}
