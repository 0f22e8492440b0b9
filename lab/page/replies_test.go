package page

import (
	"bytes"
	"context"
	"html"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// hashLock takes a hash field's lock in one MULTI with a lease set by HPEXPIRE when hpexpire (a
// command of Redis 7.4, which miniredis and Redis 7.0 lack: every acquire is refused,
// EXECABORT), by PEXPIRE otherwise (its control, which every server runs).
type hashLock struct {
	p        steps.Proc
	hpexpire bool
}

func (l *hashLock) Lock(ctx context.Context, key string) (bool, error) {
	var set *redis.BoolCmd
	_, err := l.p.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, key, "owner", l.p.ID)
		if l.hpexpire {
			p.Do(ctx, "HPEXPIRE", key, l.p.TTL.Milliseconds(), "FIELDS", 1, "owner")
		}
		return nil
	})
	if err == nil && set.Val() && !l.hpexpire {
		err = l.p.Redis.PExpire(ctx, key, l.p.TTL).Err()
	}
	return err == nil && set.Val(), err
}

func (l *hashLock) Unlock(ctx context.Context, key string) error {
	return l.p.Redis.Del(ctx, key).Err()
}

// TestAnErrorReplyIsOnThePage: the error reply a learner's lock got is named on its run's page,
// with the command and the server (issue 34, item 2: the report, the grade and the page); its
// control's page names none.
func TestAnErrorReplyIsOnThePage(t *testing.T) {
	for name, hp := range map[string]bool{"HPEXPIRE": true, "the control": false} {
		t.Run(name, func(t *testing.T) {
			steptest.Bubble(t, func(t *testing.T) {
				env := steptest.Env(t, redisenv.Options{})
				st := &steps.Step{Slug: "learner", New: func(p steps.Proc) steps.Locker { return &hashLock{p: p, hpexpire: hp} },
					Order: steps.DefaultOrder}
				rep, err := scenario.Run(context.Background(), arena.Config{Step: st, Env: env}, steps.Contention)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := WriteTo(&b, RunPage(matrix.CellOf(rep), nil, "", st), nil, PlainRunsLimit); err != nil {
					t.Fatal(err)
				}
				text := html.UnescapeString(b.String())
				named := strings.Contains(text, "your Lock's HPEXPIRE failed: ERR unknown command") && strings.Contains(text, " — this server is ")
				if named != hp {
					t.Errorf("%s: the page names an error reply: %v, want %v\n%s", env.Backend(), named, hp, rep.Text())
				}
			})
		})
	}
}
