package scenario_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// The fourth round's learner-style locks (issue 34), each beside a control that differs in the
// one way that matters, played as TestLearnerLocks plays its own: on $LAB_REDIS, the embedded
// backend in virtual time by default, redis-server with LAB_REDIS=server.

const (
	// renewChecked extends the lock only while it holds the caller's token.
	renewChecked = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`
)

var (
	// 1: a renewal goroutine started with a plain go statement and context.Background, renewing
	// with an owner-checked script every TTL/3 for ever: its Unlock never stops it.
	strayRenewal = func(l *learner) {
		l.lock = waitThen(func(l *learner, key string) {
			go func() {
				for {
					time.Sleep(l.p.TTL / 3)
					l.rdb.Eval(context.Background(), renewChecked, []string{key}, l.id, l.p.TTL.Milliseconds())
				}
			}()
		})
	}
	// 1: …the control: the same renewal through Proc.Go, stopped by Unlock.
	procRenewal = func(l *learner) {
		stop := map[string]chan struct{}{}
		l.lock = waitThen(func(l *learner, key string) {
			s := make(chan struct{})
			stop[key] = s
			l.p.Go(func(ctx context.Context) {
				t := time.NewTicker(l.p.TTL / 3)
				defer t.Stop()
				for {
					select {
					case <-s:
						return
					case <-ctx.Done():
						return
					case <-t.C:
						l.rdb.Eval(ctx, renewChecked, []string{key}, l.id, l.p.TTL.Milliseconds())
					}
				}
			})
		})
		l.free = func(l *learner, ctx context.Context, key string) error {
			if s := stop[key]; s != nil {
				close(s)
				delete(stop, key)
			}
			return l.rdb.Del(ctx, key).Err()
		}
	}
	// 1: released by UNLINK from a goroutine of its own (fire and forget), with
	// context.Background: the release leaves the request's path.
	fireAndForget = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			go func() { l.rdb.Unlink(context.Background(), key) }()
			return nil
		}
	}
	// 6: a watchdog that renews with a plain PEXPIRE (no owner check), not stopped by Unlock:
	// Redisson #7272's, keeping whoever holds the key next alive.
	strayPexpire = func(l *learner) {
		l.lock = waitThen(func(l *learner, key string) {
			go func() {
				for {
					time.Sleep(l.p.TTL / 3)
					l.rdb.PExpire(context.Background(), key, l.p.TTL)
				}
			}()
		})
	}
	// 6: PERSIST from such a watchdog: a lease extended for ever.
	strayPersist = func(l *learner) {
		l.lock = waitThen(func(l *learner, key string) {
			go func() {
				for range 9 {
					time.Sleep(l.p.TTL / 3)
					l.rdb.Persist(context.Background(), key)
				}
			}()
		})
	}
	// 2: the lock's TTL set with HPEXPIRE on a hash field, in one MULTI: a command miniredis
	// v2.40 and Redis 7.0 lack (7.4 has it). Every acquire is refused: EXECABORT.
	hashPexpire = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			var set *redis.BoolCmd
			_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				set = p.HSetNX(ctx, key, "owner", l.id)
				p.Do(ctx, "HPEXPIRE", key, l.p.TTL.Milliseconds(), "FIELDS", 1, "owner")
				return nil
			})
			return err == nil && set.Val(), err
		}
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.Del(ctx, key).Err() }
	}
	// 6: HSETNX and PEXPIRE in one MULTI, as a learner may write "take it and set its lease":
	// the PEXPIRE runs whether or not the HSETNX took the lock, so every refused acquire
	// extends the holder's lease.
	multiRenews = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			var set *redis.BoolCmd
			_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				set = p.HSetNX(ctx, key, "owner", l.id)
				p.PExpire(ctx, key, l.p.TTL)
				return nil
			})
			return err == nil && set.Val(), err
		}
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.Del(ctx, key).Err() }
	}
	// 2, 6: …the control: the lease set only by the acquire that took the lock, in a script.
	hashTakeThenPexpire = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			n, err := l.rdb.Eval(ctx, `if redis.call('HSETNX', KEYS[1], 'owner', ARGV[1]) == 1 then
redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end return 0`, []string{key}, l.id, l.p.TTL.Milliseconds()).Int()
			return n == 1, err
		}
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.Del(ctx, key).Err() }
	}
	// 2: an owner check by HGET on a lock taken with SET: WRONGTYPE, and the Unlock then leaves
	// the lock to its lease.
	wrongType = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			v, err := l.rdb.HGet(ctx, key, "owner").Result()
			if err != nil || v != l.id {
				return errors.Join(steps.ErrNotOwner, err)
			}
			return l.rdb.Del(ctx, key).Err()
		}
	}
	// 2: released by EVALSHA of a script it never loaded: NOSCRIPT every time.
	noScript = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.EvalSha(ctx, "0123456789abcdef0123456789abcdef01234567", []string{key}, l.id).Err()
		}
	}
	// 3: acquires, then WAITs for one replica to acknowledge the lock write (50 ms at most), and
	// keeps the lock whatever WAIT answers.
	waitReplica = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			ok, err := l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
			if ok && err == nil {
				err = l.rdb.Wait(ctx, 1, 50*time.Millisecond).Err()
			}
			return ok, err
		}
	}
	// 3: WAITAOF (Redis 7.2): an error reply on miniredis and Redis 7.0, named.
	waitAOF = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			ok, err := l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
			if ok && err == nil {
				l.rdb.WaitAOF(ctx, 1, 0, 50*time.Millisecond) // its answer ignored
			}
			return ok, err
		}
	}
	// 7: re-entrant by a hash of owner → holds, by Lua, as step 11 keeps it (one owner per
	// Locker: a process's).
	hashReentrant = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			n, err := l.rdb.Eval(ctx, `if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
redis.call('HINCRBY', KEYS[1], ARGV[1], 1) redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end return 0`,
				[]string{key}, l.id, l.p.TTL.Milliseconds()).Int()
			return n == 1, err
		}
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return -1 end
if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) > 0 then return 1 end
return redis.call('DEL', KEYS[1])`, []string{key}, l.id).Err()
		}
	}
	// 7: re-entrant by SET again (no NX) when the key already holds the caller's token: the
	// nested Lock rewrites the lock, lease and all.
	resetReentrant = func(l *learner) {
		depth := 0
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			n, err := l.rdb.Eval(ctx, `local v = redis.call('GET', KEYS[1])
if v == false or v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end return 0`,
				[]string{key}, l.id, l.p.TTL.Milliseconds()).Int()
			if n == 1 {
				depth++
			}
			return n == 1, err
		}
		l.free = func(l *learner, ctx context.Context, key string) error {
			if depth--; depth > 0 {
				return nil
			}
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, []string{key}, l.id).Err()
		}
	}
	// 4: a sorted-set semaphore whose waiters ZADD themselves and are in at rank 0 alone, or
	// ZREM themselves and try again a tenth of a TTL later; tokens fixed by the process, so
	// only the order of commands at one instant can move its verdict.
	zsetRank = func(l *learner) {
		l.id = l.p.ID
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			for {
				now := l.p.Now().UnixMilli()
				l.rdb.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(now-l.p.TTL.Milliseconds(), 10))
				if err := l.rdb.ZAdd(ctx, key, redis.Z{Score: float64(now), Member: l.id}).Err(); err != nil {
					return false, err
				}
				if r, err := l.rdb.ZRank(ctx, key, l.id).Result(); err != nil {
					return false, err
				} else if n, _ := l.rdb.ZCard(ctx, key).Result(); r == 0 && n == 1 {
					return true, nil
				}
				if err := l.rdb.ZRem(ctx, key, l.id).Err(); err != nil {
					return false, err
				}
				select {
				case <-time.After(l.p.TTL / 10):
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
		}
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.ZRem(ctx, key, l.id).Err() }
	}
)

// waitThen is a Lock that tries SET NX PX every quarter TTL until it holds the lock or its
// context ends, and then calls then (a renewal it starts).
func waitThen(then func(l *learner, key string)) func(l *learner, ctx context.Context, key string) (bool, error) {
	return func(l *learner, ctx context.Context, key string) (bool, error) {
		for {
			ok, err := l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
			if err != nil {
				return false, err
			}
			if ok {
				then(l, key)
				return true, nil
			}
			select {
			case <-time.After(l.p.TTL / 4):
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
	}
}

// r4cell is one scenario a round-four lock is played under: the violations it must find (or,
// with why, no verdict and its reason), and words its report must say (in its notes, its
// sentences, or "also seen").
type r4cell struct {
	sc   steps.Scenario
	want []steps.Kind
	why  string
	says []string
	not  []string // words it must not say
	// virtual: played in virtual time only, where the arrivals' order is the lab's
	virtual bool
}

// r4case is one round-four lock with its handler and cells.
type r4case struct {
	name  string
	new   func(steps.Proc) steps.Locker
	order func(context.Context, steps.Locker, steps.Shop) error
	cells []r4cell
	// needs: the step carries Needs (what a grade finds in the source), so a server that
	// lacks them does not play it.
	needs []steps.Need
}

func round4Cases() []r4case {
	ov, os_, fr, fw := steps.Overlap, steps.Oversold, steps.ForeignRelease, steps.ForeignRenewal
	stray := "goroutine started at round4_test.go"
	unknown := "your Lock's HPEXPIRE failed: ERR unknown command "
	never := func(f string) string {
		return "the " + f + " fault never struck: buyer 1's order never called Shop.Work"
	}
	return []r4case{
		// 1: a run whose report is complete is judged; the stray is named
		{"1. a renewal goroutine outside Proc.Go, never stopped", newLearner(strayRenewal), orderDefer, []r4cell{
			{sc: steps.Contention, says: []string{stray, "still running after the last order"}},
			{sc: steps.Slow, says: []string{stray, "in a server it would keep running: renewing a lock it no longer holds"}},
			{sc: steps.UnlockRace, want: []steps.Kind{fr}, says: []string{stray}},
			{sc: steps.Greedy, want: []steps.Kind{steps.Starved}, says: []string{stray}},
			{sc: steps.Crash}, {sc: steps.Load, want: []steps.Kind{steps.Idle}, says: []string{stray}}}, nil},
		{"1. …the control: the same renewal through Proc.Go, stopped by Unlock", newLearner(procRenewal), orderDefer, []r4cell{
			{sc: steps.Contention, not: []string{"goroutine"}}, {sc: steps.Slow, not: []string{"goroutine"}},
			{sc: steps.UnlockRace, want: []steps.Kind{fr}}, {sc: steps.Crash}, {sc: steps.Load, want: []steps.Kind{steps.Idle}}}, nil},
		{"1. released by UNLINK from a goroutine of its own", newLearner(fireAndForget), orderDefer, []r4cell{
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}}, {sc: steps.Slow, want: []steps.Kind{ov, os_, fr}},
			{sc: steps.UnlockRace, want: []steps.Kind{fr}}, {sc: steps.Crash}, {sc: steps.Error}, {sc: steps.Load}}, nil},
		// 6: a renewal of a lock its renewer does not hold
		{"6. an unchecked watchdog Unlock never stops (Redisson #7272)", newLearner(strayPexpire), orderDefer, []r4cell{
			{sc: steps.Slow, want: []steps.Kind{fw}, says: []string{"buyer 1 extended the lease of the lock that buyer 2 held (PEXPIRE lock"}},
			{sc: steps.Pause, want: []steps.Kind{ov, os_, fw}}, {sc: steps.Partition, want: []steps.Kind{ov, os_, fw}},
			{sc: steps.Contention, says: []string{"also seen, not judged by contention: foreign-renewal"}}}, nil},
		{"6. …the control: the watchdog checks the owner", newLearner(strayRenewal), orderDefer, []r4cell{
			{sc: steps.Slow, not: []string{"foreign renewal"}}, {sc: steps.Pause, want: []steps.Kind{ov, os_}},
			{sc: steps.Partition, want: []steps.Kind{ov, os_}}, {sc: steps.Contention, not: []string{"foreign-renewal"}}}, nil},
		{"6. a stray PERSIST: another's lease made endless", newLearner(strayPersist), orderDefer, []r4cell{
			{sc: steps.Slow, want: []steps.Kind{fw}, says: []string{"(PERSIST lock)"}}}, nil},
		{"6. a refused acquire that renews (HSETNX and PEXPIRE in one MULTI)", newLearner(multiRenews), orderDefer, []r4cell{
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, says: []string{"also seen, not judged by contention: foreign-renewal", "extended the lease of the lock that buyer", "held (HSETNX lock + PEXPIRE lock)"}}}, nil},
		{"6. …the control: the lease set only by the acquire that took the lock", newLearner(hashTakeThenPexpire), orderDefer, []r4cell{
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, not: []string{"foreign-renewal"}}}, nil},
		// 2: a Redis error reply is named, with the command and the server
		{"2. HPEXPIRE in the acquire's MULTI: every acquire refused", newLearner(hashPexpire), orderDefer, []r4cell{
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, says: []string{unknown, " — this server is ", "; HPEXPIRE needs Redis 7.4 (8 times)"}},
			{sc: steps.Slow, why: never("slow"), says: []string{unknown}}, {sc: steps.Crash, why: never("crash"), says: []string{unknown}}}, nil},
		{"2. …the control: the lease set only by the acquire that took the lock", newLearner(hashTakeThenPexpire), orderDefer, []r4cell{
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, not: []string{"failed:"}},
			{sc: steps.Slow, want: []steps.Kind{ov, os_, fr}, not: []string{"failed:"}}}, nil},
		{"2. …HPEXPIRE, its need known from its source: a server that lacks it does not play it", newLearner(hashPexpire), orderDefer, []r4cell{
			{sc: steps.Contention, why: "learner needs HPEXPIRE (Redis 7.4), and the"}}, []steps.Need{{Command: "HPEXPIRE", Since: "Redis 7.4"}}},
		{"2. an owner check by HGET on a string: WRONGTYPE", newLearner(wrongType), orderDefer, []r4cell{
			{sc: steps.Slow, want: []steps.Kind{ov, os_}, says: []string{"your Unlock's HGET failed: WRONGTYPE Operation against a key holding the wrong kind of value (2 times)"}},
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, says: []string{"your Unlock's HGET failed: WRONGTYPE"}}}, nil},
		{"2. a release by a script never loaded: NOSCRIPT", newLearner(noScript), orderDefer, []r4cell{
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, says: []string{"your Unlock's EVALSHA failed: NOSCRIPT"}}}, nil},
		// 3: WAIT changes no key
		{"3. a WAIT for one replica after the acquire", newLearner(waitReplica), orderDefer, []r4cell{
			{sc: steps.Slow, want: []steps.Kind{ov, os_, fr}}, {sc: steps.UnlockRace, want: []steps.Kind{fr}},
			{sc: steps.Contention, want: []steps.Kind{steps.LostSales}, not: []string{"blocking"}}}, nil},
		{"3. a WAITAOF the server does not run", newLearner(waitAOF), orderDefer, []r4cell{
			{sc: steps.Slow, want: []steps.Kind{ov, os_, fr}, says: []string{"your Lock's WAITAOF failed: ERR unknown command", "; WAITAOF needs Redis 7.2"}}}, nil},
		// 7: a re-entry is no release
		{"7. re-entrant by a hash of holds", newLearner(hashReentrant), orderDefer, []r4cell{
			{sc: steps.Reentrant}, {sc: steps.TwoRequests, want: []steps.Kind{ov, os_}}}, nil},
		{"7. re-entrant by SET again over its own token", newLearner(resetReentrant), orderDefer, []r4cell{
			{sc: steps.Reentrant}}, nil},
		{"7. …the control: not re-entrant", newLearner(), orderDefer, []r4cell{
			{sc: steps.Reentrant, want: []steps.Kind{steps.ReentryFailed}}}, nil},
		// 4: one verdict whatever the scheduler does at one instant (TestLearnerRowsAreOneRow); on a
		// real server's wall clock greedy's verdict is the machine's (a waiter's pause against the
		// greedy retry, staged with no margin: starved there)
		{"4. a sorted-set semaphore at rank 0", newLearner(zsetRank), orderDefer, []r4cell{
			{sc: steps.Greedy, virtual: true}, {sc: steps.Contention}}, nil},
	}
}

// check says whether rep is what x wants.
func (x r4cell) check(t *testing.T, backend string, rep *referee.Report) {
	t.Helper()
	learnerCell{sc: x.sc, want: x.want, why: x.why}.check(t, backend, rep)
	text := rep.Text()
	for _, s := range x.says {
		if !strings.Contains(text, s) {
			t.Errorf("%s: the report does not say %q:\n%s", backend, s, text)
		}
	}
	for _, s := range x.not {
		if strings.Contains(text, s) {
			t.Errorf("%s: the report says %q:\n%s", backend, s, text)
		}
	}
}

// TestLearnerLocksRoundFour plays issue 34's learner-style locks and their controls.
func TestLearnerLocksRoundFour(t *testing.T) {
	for _, c := range round4Cases() {
		for _, x := range c.cells {
			t.Run(c.name+"/"+string(x.sc), func(t *testing.T) {
				if steptest.Virtual() {
					t.Parallel()
				} else if x.virtual {
					t.Skip("virtual time only: on the wall clock this cell's verdict is the machine's")
				}
				st := &steps.Step{Slug: "learner", New: c.new, Order: c.order, Needs: c.needs}
				steptest.Bubble(t, func(t *testing.T) {
					env := steptest.Env(t, redisenv.Options{})
					rep, _, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, x.sc, scenario.StallTries)
					if c.needs != nil {
						// the server's own: miniredis and Redis 7.0 lack HPEXPIRE, 7.4 has it
						if !errors.Is(err, arena.ErrCannotStage) || !strings.Contains(err.Error(), strings.TrimPrefix(x.why, "skipped: ")) {
							t.Errorf("%s: want the cell not played (%s), got %v", env.Backend(), x.why, err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					x.check(t, env.Backend(), rep)
				})
			})
		}
	}
}

// TestErrorRepliesFailEveryOrder: a lock whose every acquire the server refuses (EXECABORT)
// fails every order, and its report says so (FailedByReplies: what grade says first of its row);
// its control, whose commands every server runs, does not.
func TestErrorRepliesFailEveryOrder(t *testing.T) {
	for name, c := range map[string]struct {
		new  func(steps.Proc) steps.Locker
		want bool
	}{"HPEXPIRE": {newLearner(hashPexpire), true}, "the control": {newLearner(hashTakeThenPexpire), false}} {
		t.Run(name, func(t *testing.T) {
			steptest.Bubble(t, func(t *testing.T) {
				env := steptest.Env(t, redisenv.Options{})
				st := &steps.Step{Slug: "learner", New: c.new, Order: orderDefer}
				rep, err := scenario.Run(context.Background(), arena.Config{Step: st, Env: env}, steps.Contention)
				if err != nil {
					t.Fatal(err)
				}
				if rep.FailedByReplies != c.want || c.want && (len(rep.Replies) == 0 || rep.Replies[0].Cmd != "HPEXPIRE" || !rep.Replies[0].Lacks || rep.Replies[0].Server == "") {
					t.Errorf("%s: failed by replies %v %+v, want %v\n%s", env.Backend(), rep.FailedByReplies, rep.Replies, c.want, rep.Text())
				}
			})
		})
	}
}

// TestAReentryIsNotARelease: a Lock granted to the process that holds the lock is a re-entry: the
// outer hold goes on, and the events say no release until the outer Unlock's (11–14 × reentrant
// said buyer 1 released and took its own lock again at the nested Lock's return).
func TestAReentryIsNotARelease(t *testing.T) {
	for name, nw := range map[string]func(steps.Proc) steps.Locker{"a hash of holds": newLearner(hashReentrant), "SET over its own token": newLearner(resetReentrant)} {
		t.Run(name, func(t *testing.T) {
			steptest.Bubble(t, func(t *testing.T) {
				env := steptest.Env(t, redisenv.Options{})
				var seen []string
				cfg := arena.Config{Step: &steps.Step{Slug: "learner", New: nw, Order: orderDefer}, Env: env, OnEvent: func(e referee.Event) {
					if e.Buyer == 1 && (e.Kind == referee.EvAcquired || e.Kind == referee.EvReleased || e.Kind == referee.EvNested) {
						seen = append(seen, string(e.Kind)+strings.Repeat("+", e.Depth))
					}
				}}
				rep, err := scenario.Run(context.Background(), cfg, steps.Reentrant)
				if err != nil {
					t.Fatal(err)
				}
				if want := []string{"acquired", "nested++", "nested+", "released"}; !slices.Equal(seen, want) {
					t.Errorf("%s: buyer 1's lock events %v, want %v\n%s", env.Backend(), seen, want, rep.Text())
				}
			})
		})
	}
}

// TestLearnerRowsAreOneRow plays the whole row of every learner-style lock of the tests (rounds
// one to four) again and again: the same row each time, whatever the Go scheduler does at one
// simulated instant (LAB_ROW_PLAYS plays, 2 by default; 20 measured). On the wall clock of a real
// server it does not run: there the margins hold the verdicts, and the stall watch says where
// they could not.
func TestLearnerRowsAreOneRow(t *testing.T) {
	if !steptest.Virtual() {
		t.Skip("virtual time only: a real server's runs are ordered by the wall clock")
	}
	if testing.Short() {
		t.Skip("every learner lock's row, twice: -short leaves it out")
	}
	plays := max(envInt("LAB_ROW_PLAYS"), 2)
	var cases []learnerCase
	for _, c := range round4Cases() {
		if c.needs == nil {
			cases = append(cases, learnerCase{name: c.name, new: c.new, order: c.order})
		}
	}
	cases = append(cases, semaphores()...)
	cases = append(cases, round3Cases()...)
	cases = append(cases, learnerCases()...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := &steps.Step{Slug: "learner", New: c.new, Order: c.order}
			var first []string
			for i := range plays {
				var row []string
				for _, sc := range scenario.Names() {
					steptest.Bubble(t, func(t *testing.T) {
						env := steptest.Env(t, redisenv.Options{})
						rep, err := scenario.Run(context.Background(), arena.Config{Step: st, Env: env}, sc)
						cell := "skipped"
						if err == nil {
							cell = string(sc) + ":" + joinKinds(rep.Violations) + "?" + joinKinds(rep.Unjudged)
						}
						row = append(row, cell)
					})
				}
				if i == 0 {
					first = row
				} else if !slices.Equal(row, first) {
					t.Fatalf("play %d: %v\nplay 1: %v", i+1, row, first)
				}
			}
		})
	}
}

func joinKinds(ks []steps.Kind) string {
	var s []string
	for _, k := range ks {
		s = append(s, string(k))
	}
	return strings.Join(s, "+")
}

// holdsPackage is one load of a learner's package whose reentrant lock keeps its holds in a
// package-level map (Java's static map): each call is the package loaded once more, with a map of
// its own. Its lock is step 04's SET NX PX, re-entered by whoever finds the map's count above 0.
func holdsPackage() func(steps.Proc) steps.Locker {
	var mu sync.Mutex
	holds := map[string]int{} // the package-level state
	return newLearner(func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			mu.Lock()
			n := holds[key]
			if n > 0 {
				holds[key]++
			}
			mu.Unlock()
			if n > 0 {
				return true, nil
			}
			ok, err := l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
			if ok {
				mu.Lock()
				holds[key] = 1
				mu.Unlock()
			}
			return ok, err
		}
		l.free = func(l *learner, ctx context.Context, key string) error {
			mu.Lock()
			holds[key]--
			n := holds[key]
			mu.Unlock()
			if n > 0 {
				return nil
			}
			return l.rdb.Del(ctx, key).Err()
		}
	})
}

// TestStatePerProcess: package-level state is played per process where the step gives each
// process its own copy of its package (steps.Step.PerProcess, what lab grade builds): a hold map
// one buyer's Lock fills no longer lets another buyer in (reentrant: the nested call's helper
// and the buyers who come meanwhile; clock-skew: the skewed buyer). Two requests of one process
// share their process's copy, as a server's do.
func TestStatePerProcess(t *testing.T) {
	for _, c := range []struct {
		name    string
		perProc bool
		sc      steps.Scenario
		want    []steps.Kind
	}{
		{"shared by every buyer", false, steps.Reentrant, []steps.Kind{steps.Overlap}},
		{"shared by every buyer", false, steps.ClockSkew, []steps.Kind{steps.Overlap, steps.Oversold}},
		{"per process", true, steps.Reentrant, nil},
		{"per process", true, steps.ClockSkew, nil},
		{"per process, two requests of one", true, steps.TwoRequests, []steps.Kind{steps.Overlap, steps.Oversold}},
	} {
		t.Run(c.name+"/"+string(c.sc), func(t *testing.T) {
			st := &steps.Step{Slug: "learner", New: holdsPackage(), Order: orderDefer}
			if c.perProc {
				var mu sync.Mutex
				loads := map[int]func(steps.Proc) steps.Locker{}
				st.PerProcess = func(n int) (func(steps.Proc) steps.Locker, func(context.Context, steps.Locker, steps.Shop) error) {
					mu.Lock()
					defer mu.Unlock()
					if loads[n] == nil {
						loads[n] = holdsPackage()
					}
					return loads[n], orderDefer
				}
			}
			steptest.Bubble(t, func(t *testing.T) {
				env := steptest.Env(t, redisenv.Options{})
				rep, _, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, c.sc, scenario.StallTries)
				if err != nil {
					t.Fatal(err)
				}
				learnerCell{sc: c.sc, want: c.want}.check(t, env.Backend(), rep)
			})
		})
	}
}
