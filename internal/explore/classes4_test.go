package explore_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Issue 34: a lock whose goroutines outlive its runs is explored to verdicts, not thrown away:
// before, a renewal goroutine started with a plain go statement left 1196 of 1197 programs
// without a verdict ("nothing broke…"), each run's bubble ending with it still asleep.

// strayWatchdog is step 04's lock with a renewal goroutine started by a plain go statement with
// context.Background, never stopped: renew is its renewal (owner-checked or not).
func strayWatchdog(renew func(l *classLock, key string)) func(*classLock) {
	return func(l *classLock) {
		l.lock = func(l *classLock, ctx context.Context, key string) (bool, error) {
			ok, err := l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
			if ok && err == nil {
				go func() {
					for {
						time.Sleep(l.p.TTL / 3)
						renew(l, key)
					}
				}()
			}
			return ok, err
		}
	}
}

// TestExploreAStrayWatchdog: an owner-checked stray renewal is explored to a verdict in every
// program; an unchecked one (Redisson #7272) is found renewing another's lock, foreign-renewal.
func TestExploreAStrayWatchdog(t *testing.T) {
	noLeak(t)
	checked := classStep("stray-checked", strayWatchdog(func(l *classLock, key string) {
		l.rdb.Eval(context.Background(), `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`,
			[]string{key}, l.id, l.p.TTL.Milliseconds())
	}))
	const n = 40
	res := explored(t, checked, classRequest(n, safeFaults, vocab.ForeignRenewal))
	mustNotFind(t, res, n)
	unchecked := classStep("stray-unchecked", strayWatchdog(func(l *classLock, key string) {
		l.rdb.PExpire(context.Background(), key, l.p.TTL)
	}))
	mustFind(t, explored(t, unchecked, classRequest(n, safeFaults, vocab.ForeignRenewal)), vocab.ForeignRenewal)
}
