package sim

import (
	"context"
	"slices"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine an arena started outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// plain is a step that never touches the lock by itself: the referee tests drive its processes'
// clients and shops by hand, planting exactly the interleaving they judge.
var plain = &steps.Step{
	Slug:  "00_planted",
	New:   func(p steps.Proc) steps.Locker { return nil },
	Order: func(ctx context.Context, l steps.Locker, s steps.Shop) error { return nil },
}

func newTestArena(t *testing.T, stock int) (*Arena, *process, *process) {
	t.Helper()
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewArena(context.Background(), Config{Step: plain, Env: env, Stock: stock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		env.Close()
	})
	return a, a.addBuyer(), a.addBuyer()
}

func sell(t *testing.T, p *process) {
	t.Helper()
	s := &shop{p: p}
	n, err := s.Stock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetStock(context.Background(), n-1); err != nil {
		t.Fatal(err)
	}
}

// TestRefereeCatchesPlantedOverlap: two buyers read the stock before either writes it.
func TestRefereeCatchesPlantedOverlap(t *testing.T) {
	ctx := context.Background()
	a, p1, p2 := newTestArena(t, 5)
	s1, s2 := &shop{p: p1}, &shop{p: p2}
	n1, _ := s1.Stock(ctx)
	n2, _ := s2.Stock(ctx)
	s1.SetStock(ctx, n1-1)
	s2.SetStock(ctx, n2-1)
	rep := a.Report(ctx, steps.Contention)
	if len(rep.Overlaps) != 1 || rep.Overlaps[0].A != 1 || rep.Overlaps[0].B != 2 {
		t.Fatalf("want one overlap of buyers 1 and 2, got %+v", rep.Overlaps)
	}
	if rep.Confirmed != 2 || rep.FinalStock != 4 || rep.Oversold != 1 {
		t.Fatalf("want 2 confirmed, stock 4, 1 oversold; got %d, %d, %d", rep.Confirmed, rep.FinalStock, rep.Oversold)
	}
	if want := []steps.Kind{steps.Overlap, steps.Oversold}; !slices.Equal(rep.Violations, want) {
		t.Fatalf("want violations %v, got %v", want, rep.Violations)
	}
}

// TestRefereeCatchesPlantedForeignRelease: buyer 1 takes the lock, buyer 2 deletes it.
func TestRefereeCatchesPlantedForeignRelease(t *testing.T) {
	ctx := context.Background()
	a, p1, p2 := newTestArena(t, 5)
	if err := p1.lock.SetNX(ctx, a.lockKey, "buyer-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p2.lock.Del(ctx, a.lockKey).Err(); err != nil {
		t.Fatal(err)
	}
	rep := a.Report(ctx, steps.UnlockRace)
	if len(rep.ForeignReleases) != 1 || rep.ForeignReleases[0].By != 2 || rep.ForeignReleases[0].Owner != 1 {
		t.Fatalf("want buyer 2 deleting buyer 1's lock, got %+v", rep.ForeignReleases)
	}
	if want := []steps.Kind{steps.ForeignRelease}; !slices.Equal(rep.Violations, want) {
		t.Fatalf("want violations %v, got %v", want, rep.Violations)
	}
}

// TestRefereeQuietOnCorrectRun: buyers take the lock in turn, sell one unit each and delete
// their own lock; nothing is violated, and the stuck lock check sees no key.
func TestRefereeQuietOnCorrectRun(t *testing.T) {
	ctx := context.Background()
	a, p1, p2 := newTestArena(t, 5)
	for _, p := range []*process{p1, p2, p1} {
		if ok, err := p.lock.SetNX(ctx, a.lockKey, p.name, 0).Result(); !ok || err != nil {
			t.Fatalf("%s could not lock: %v %v", p.name, ok, err)
		}
		sell(t, p)
		if err := p.lock.Del(ctx, a.lockKey).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, sc := range steps.Scenarios {
		rep := a.Report(ctx, sc)
		if len(rep.Found) != 0 {
			t.Fatalf("%s: a correct run was judged %v\n%s", sc, rep.Found, rep.Text())
		}
		if rep.Confirmed != 3 || rep.FinalStock != 2 || rep.Commands != 3*4 {
			t.Fatalf("want 3 confirmed, stock 2, 12 commands; got %d, %d, %d", rep.Confirmed, rep.FinalStock, rep.Commands)
		}
	}
}

// TestRefereeStuckAndExpiry: a lock left behind with stock on the shelf is stuck; once it has
// expired, it is not.
func TestRefereeStuckAndExpiry(t *testing.T) {
	ctx := context.Background()
	a, p1, _ := newTestArena(t, 5)
	if err := p1.lock.SetNX(ctx, a.lockKey, "buyer-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	rep := a.Report(ctx, steps.Crash)
	if !rep.Stuck || rep.StuckOwner != 1 || !slices.Equal(rep.Violations, []steps.Kind{steps.Stuck}) {
		t.Fatalf("want the lock stuck with buyer 1, got stuck=%v owner=%d %v", rep.Stuck, rep.StuckOwner, rep.Violations)
	}
	if err := p1.lock.PExpire(ctx, a.lockKey, 1).Err(); err != nil {
		t.Fatal(err)
	}
	for a.Lock(ctx).Held {
	}
	if rep := a.Report(ctx, steps.Crash); rep.Stuck {
		t.Fatalf("an expired lock was judged stuck")
	}
}

// TestRefereeFollowsValueNotExistence: buyer 2 overwrites the lock buyer 1 holds (the key never
// stops existing); the referee must see the lock change hands by its value, so buyer 1's DEL
// afterwards deletes buyer 2's lock.
func TestRefereeFollowsValueNotExistence(t *testing.T) {
	ctx := context.Background()
	a, p1, p2 := newTestArena(t, 5)
	if err := p1.lock.SetNX(ctx, a.lockKey, "buyer-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p2.lock.Set(ctx, a.lockKey, "buyer-2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p1.lock.Del(ctx, a.lockKey).Err(); err != nil {
		t.Fatal(err)
	}
	rep := a.Report(ctx, steps.Slow)
	if len(rep.ForeignReleases) != 1 || rep.ForeignReleases[0].By != 1 || rep.ForeignReleases[0].Owner != 2 {
		t.Fatalf("want buyer 1 deleting buyer 2's lock, got %+v", rep.ForeignReleases)
	}
}
