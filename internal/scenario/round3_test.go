package scenario_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// The third round's learner-style locks (issue 24), each beside a control that differs in the one
// way that matters, played as TestLearnerLocks plays its own.

var (
	// the lock under `lock:` + the key Lock is given: outside the run's keys.
	outsideKey = func(l *learner) { l.key = func(k string) string { return "lock:" + k } }
	// taken where the key is missing or says "free", by a script.
	takeFree = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			for {
				n, err := l.rdb.Eval(ctx, `local v = redis.call('GET', KEYS[1])
if v == false or v == 'free' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`, []string{key}, l.id, l.p.TTL.Milliseconds()).Int()
				if n == 1 || err != nil {
					return n == 1, err
				}
				select {
				case <-time.After(l.p.TTL / 4):
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
		}
	}
	// released, when it is the caller's, by rewriting it to "free" (SET … XX KEEPTTL).
	rewriteFree = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('SET', KEYS[1], 'free', 'XX', 'KEEPTTL') end
return 0`, []string{key}, l.id).Err()
		}
	}
	// released, when it is the caller's, by DEL, in a script.
	scriptDel = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('DEL', KEYS[1]) end
return 0`, []string{key}, l.id).Err()
		}
	}
)

// round3Cases are the classes of issue 24, with their controls.
func round3Cases() []learnerCase {
	type cell = learnerCell
	outside := "your Lock wrote `lock:lockstep:…:lock:product:1001`, outside the run's keys; lock the key Lock is given"
	return []learnerCase{
		// a fault that found nowhere to strike is '?', never ✓; the key outside is named
		{"7. a back-off lock outside the run's keys", newLearner(outsideKey, backOff, getThenDel), orderDefer, []cell{
			{steps.Load, nil, outside}, {steps.Greedy, nil, "the greedy buyer's head start found nowhere to strike: " + outside},
			{steps.UnlockRace, nil, "the unlock-race found nowhere to strike: " + outside},
			{steps.Failover, nil, "the failover found no lock to strike: " + outside},
			{steps.Slow, nil, outside}}, false},
		{"7. …the control: the same lock on the key it is given", newLearner(backOff, getThenDel), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.Greedy, []steps.Kind{steps.Starved}, ""},
			{steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, ""}}, false},
		// a release is the holder's command after which the next Lock can succeed
		{"3. an owner-checked back-off lock released by a rewrite to \"free\"", newLearner(takeFree, rewriteFree), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.UnlockRace, nil, ""}, {steps.Contention, nil, ""}}, false},
		{"3. …the control: released by DEL", newLearner(takeFree, scriptDel), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.UnlockRace, nil, ""}, {steps.Contention, nil, ""}}, false},
		{"7. released by PEXPIRE key 1, under load", newLearner(pexpire1), orderDefer, []cell{{steps.Load, nil, ""}}, false},
		{"7. released by SET … PX 1, under load", newLearner(setPX1), orderDefer, []cell{{steps.Load, nil, ""}}, false},
		{"7. …the control: released by DEL, under load", newLearner(), orderDefer, []cell{{steps.Load, nil, ""}}, false},
		{"a Locker that lies, under load", newLearner(liar), orderDefer, []cell{
			{steps.Load, nil, "none wrote a key of the run"}, {steps.Greedy, nil, "never released a lock its Lock wrote"}}, false},
	}
}

// TestLearnerLocksRoundThree plays issue 24's learner-style locks and their controls.
func TestLearnerLocksRoundThree(t *testing.T) { playLearners(t, round3Cases()) }
