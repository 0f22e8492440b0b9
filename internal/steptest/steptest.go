// Package steptest is the one helper every step's test calls: it runs all scenarios against the
// step on the backend $LAB_REDIS names and checks each verdict against the step's expected row of
// the matrix. With LAB_STRICT=1 every violation found fails the test instead, which is how a
// learner grades a Locker of their own.
package steptest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// Here returns the step whose folder is the current directory (go test runs in the package's own).
// A folder the catalog does not list — a learner's copy of a step, which the catalog cannot import
// without an edit — skips the test and names the command that grades it, so go test ./... stays
// green with a learner's lock beside the steps. Hazard: under LAB_STRICT=1, where a pass is a
// grade, that folder fails instead: a skip must not read as "no violation".
func Here(t *testing.T) *steps.Step {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	name, parent := filepath.Base(wd), filepath.Base(filepath.Dir(wd))
	for _, st := range catalog.Steps {
		// The folder itself, by its exact slug: a copy named "lua_unlock" or "09" is not step 09,
		// and playing step 09 in its place would grade the wrong code.
		if st.Slug == name && parent == "steps" {
			return st
		}
	}
	grade := "go run ./lab grade " + filepath.ToSlash(fromModuleRoot(wd))
	if os.Getenv("LAB_STRICT") == "1" {
		t.Fatalf("%s is not a step of the catalog, so this test cannot grade it (LAB_STRICT=1): %s", name, grade)
	}
	t.Skipf("%s is not a step of the catalog: %s grades it against every scenario", name, grade)
	return nil
}

// fromModuleRoot is dir relative to the folder of the go.mod above it, the folder go run ./lab
// runs in; dir itself when there is none.
func fromModuleRoot(dir string) string {
	for root := filepath.Dir(dir); ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			if rel, err := filepath.Rel(root, dir); err == nil {
				return rel
			}
			return dir
		}
		if filepath.Dir(root) == root {
			return dir
		}
	}
}

// Run plays every scenario against st: a subtest per scenario, and inside it a subtest per
// violation kind found, named after the kind and logging the sentence that explains it.
//
// On the embedded backend every scenario plays in virtual time (Play): a stalled machine costs
// no simulated time, so a verdict cannot depend on load, and all scenarios run in parallel. On
// a backend of real processes (server, container, url) they play on the wall clock; the load
// scenario, whose counts and idle time are measured there rather than staged, runs alone first.
func Run(t *testing.T, st *steps.Step) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	strict := os.Getenv("LAB_STRICT") == "1"
	for _, sc := range scenario.Names() {
		t.Run(string(sc), func(t *testing.T) {
			if sc != steps.Load || Virtual() {
				t.Parallel()
			}
			rep, err := Play(t, st, sc)
			if errors.Is(err, arena.ErrCannotStage) {
				// A failover with no replica, a restart of a server the lab does not own, a
				// command the server does not run (Step.Needs: DELEX on redis-server 7.0). Each
				// is what the backend that was asked for can do, not a backend that is missing,
				// so it skips under CI=true too, with its reason.
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("stock %d → %d, %d orders confirmed, %d oversold, %.0f Redis commands per order",
				rep.InitialStock, rep.FinalStock, rep.Confirmed, rep.Oversold, rep.CommandsPerOrder)
			if !rep.Complete() {
				// A verdict on partial evidence is no verdict: say what was not seen, and fail.
				t.Errorf("%s under %s: the referee could not judge %v: %s\n%s", st.Slug, sc, rep.Unjudged, rep.Why(), rep.Text())
			}
			if rep.Disagree != "" {
				// The second checker reads the same history: where it parts from the referee, one
				// of them is wrong about this run.
				t.Errorf("%s under %s: the checkers disagree: %s\n%s", st.Slug, sc, rep.Disagree, rep.Text())
			}
			for _, f := range rep.Explain {
				t.Run(string(f.Kind), func(t *testing.T) {
					if strict {
						t.Errorf("%s: %s", f.Kind, f.Sentence)
						return
					}
					t.Logf("violated: %s", f.Sentence)
				})
			}
			if strict {
				return
			}
			want := st.Expect[sc]
			if want == nil {
				want = []steps.Kind{}
			}
			if !slices.Equal(rep.Violations, want) {
				t.Errorf("%s under %s: found %v, the matrix expects %v\n%s", st.Slug, sc, rep.Violations, want, rep.Text())
			}
		})
	}
}

// Slow skips t unless $LAB_SLOW is 1, as CI sets it: for a test that waits on the wall clock for
// most of a minute, which CI runs and go test ./... on a laptop need not wait for. what says what
// the test does that takes so long; the skip names the variable.
func Slow(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("LAB_SLOW") != "1" {
		t.Skipf("%s: LAB_SLOW=1 runs it (CI does)", what)
	}
}

// Virtual reports whether the backend $LAB_REDIS names runs in virtual time under go test: the
// embedded one, whose Redis lives in the test's own process.
func Virtual() bool {
	b := os.Getenv("LAB_REDIS")
	return b == "" || b == "embedded"
}

// Bubble runs f inside a testing/synctest bubble when the backend $LAB_REDIS names runs in
// virtual time (Virtual), and directly otherwise: a test that opens its backend with Env inside
// f plays on the bubble's clock where it can, on the wall clock where it must (real processes).
func Bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	if Virtual() {
		synctest.Test(t, f)
		return
	}
	f(t)
}

// Play plays scenario sc against st on a fresh backend of the kind $LAB_REDIS names. On the
// embedded backend it plays inside a testing/synctest bubble: the backend, every buyer, every
// lease and fault run on the bubble's fake clock, which moves only when every goroutine of the
// run waits, so the run takes the same simulated time however loaded the machine is. Hazard:
// nothing that Play's caller started may be used inside the bubble, and the run must end every
// goroutine it started (arena.Run does) or the bubble panics.
func Play(t *testing.T, st *steps.Step, sc steps.Scenario) (rep *referee.Report, err error) {
	t.Helper()
	if !Virtual() {
		env := Env(t, redisenv.Options{Nodes: st.Nodes})
		rep, stalled, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, sc, scenario.StallTries)
		if stalled > 0 {
			t.Logf("played again (%d): the machine stalled the run", stalled)
		}
		return rep, err
	}
	synctest.Test(t, func(t *testing.T) {
		env, oerr := redisenv.NewEmbeddedNodes(max(st.Nodes, 1))
		if oerr != nil {
			err = oerr
			return
		}
		defer env.Close()
		rep, err = scenario.Run(context.Background(), arena.Config{Step: st, Env: env}, sc)
	})
	return rep, err
}

// Env opens the backend $LAB_REDIS names for one test, with the topology o asks for, and closes
// it when the test ends. A backend this machine lacks (no Docker daemon, no redis-server) skips
// the test with the reason, except under CI=true, where a backend asked for and missing fails it.
func Env(t testing.TB, o redisenv.Options) redisenv.Env {
	t.Helper()
	env, err := redisenv.FromEnv(o)
	missing := errors.Is(err, redisenv.ErrNoDocker) || errors.Is(err, redisenv.ErrNoRedisServer) ||
		errors.Is(err, redisenv.ErrNoContainerBackend)
	if missing && os.Getenv("CI") != "true" {
		t.Skip(err) // a backend this machine lacks; under CI=true, a failure
	}
	if errors.Is(err, redisenv.ErrSingleNode) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// Mini starts a miniredis for a test of a step's own idea and a client of it, both closed when
// the test ends. Called inside a testing/synctest bubble (synctest.Test), the server's TTLs,
// the client's deadlines and the step's timers all run on the bubble's clock: the test's
// sleeps cost no wall time and no load can move them.
func Mini(t testing.TB) (*redisenv.Mini, *redis.Client) {
	t.Helper()
	m, err := redisenv.NewMini()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(m.Options())
	t.Cleanup(func() {
		rdb.Close()
		m.Close()
	})
	return m, rdb
}

// LoadHistory reads a history a test keeps in a file (history.WriteHistory's), in any format
// (history.Version), or fails the test.
func LoadHistory(t *testing.T, file string) *history.History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := history.ReadHistory(f)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
