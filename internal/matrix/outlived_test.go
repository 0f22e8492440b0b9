package matrix_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/steps"
)

// sleeper is step 04's lock whose Lock leaves a goroutine behind that waits for ever on a channel
// nobody closes: it sends nothing, so the arena cannot end it, and the run's bubble panics once
// the run is over (all its goroutines but that one have ended).
type sleeper struct {
	p     steps.Proc
	never chan struct{}
}

func (l *sleeper) Lock(ctx context.Context, key string) (bool, error) {
	ok, err := l.p.Redis.SetNX(ctx, key, l.p.ID, l.p.TTL).Result()
	if ok {
		go func() { <-l.never }()
	}
	return ok, err
}

func (l *sleeper) Unlock(ctx context.Context, key string) error { return l.p.Redis.Del(ctx, key).Err() }

func newSleeper(p steps.Proc) steps.Locker { return &sleeper{p: p, never: make(chan struct{})} }

// TestAFinishedRunIsJudged: a run whose report is complete keeps its verdict though a goroutine of
// the lock outlived it, with a note that names the goroutine's frame (before, every such cell was
// '?': "a goroutine not started with Proc.Go, outlives its request").
func TestAFinishedRunIsJudged(t *testing.T) {
	st := &steps.Step{Slug: "sleeper", New: newSleeper, Order: steps.DefaultOrder}
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	out := filepath.Join(t.TempDir(), "plays.json")
	find := func(string) (*steps.Step, error) { return st, nil }
	if err := matrix.PlayCells([]matrix.Want{{Step: "sleeper", Scenario: steps.Slow}}, "", bubble, find, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ps matrix.Plays
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	rep, err := ps.Cells[0].Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease} // step 04's slow
	if !rep.Complete() || strings.Join(kinds(rep.Violations), ",") != strings.Join(kinds(want), ",") {
		t.Fatalf("got %v (complete %v), want %v\n%s", rep.Violations, rep.Complete(), want, rep.Text())
	}
	if !strings.Contains(rep.Text(), "the run ended and is judged, but matrix_test.(*sleeper).Lock.func1 at outlived_test.go:") {
		t.Errorf("no note names the goroutine left waiting:\n%s", rep.Text())
	}
}

func kinds(ks []steps.Kind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return out
}
