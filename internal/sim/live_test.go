package sim_test

import (
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestLiveCrashLeavesStuckLock injects a crash into the holder of step 03's lock (no TTL) in a
// live session, and checks the session reports the stuck lock and stops every goroutine.
func TestLiveCrashLeavesStuckLock(t *testing.T) {
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	st, _ := catalog.Find("03")
	tm := sim.DefaultTiming()
	l, err := sim.StartLive(sim.Config{Step: st, Env: env, Stock: 50, Timing: tm}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var who int
	deadline := time.Now().Add(5 * time.Second)
	for who == 0 && time.Now().Before(deadline) {
		who, _ = l.Inject(sim.FaultCrash)
		time.Sleep(time.Millisecond)
	}
	if who == 0 {
		t.Fatal("no buyer ever held the lock")
	}
	time.Sleep(3 * tm.TTL)
	rep := l.Stop()
	if !rep.Stuck || rep.StuckOwner != who {
		t.Fatalf("crashed holder %d: want a stuck lock owned by it, got stuck=%v owner=%d\n%s", who, rep.Stuck, rep.StuckOwner, rep.Text())
	}
}
