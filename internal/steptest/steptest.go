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

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
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
// The scenarios run in parallel (go test's -parallel, GOMAXPROCS by default), each on its own
// backend: a staged interleaving holds however late either side runs. The load scenario, whose
// counts and idle time are measured rather than staged, runs alone first.
func Run(t *testing.T, st *steps.Step) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	strict := os.Getenv("LAB_STRICT") == "1"
	for _, sc := range steps.Scenarios {
		t.Run(string(sc), func(t *testing.T) {
			if sc != steps.Load {
				t.Parallel()
			}
			env := Env(t, redisenv.Options{Nodes: st.Nodes})
			rep, err := sim.Run(context.Background(), sim.Config{Step: st, Env: env}, sc)
			if errors.Is(err, sim.ErrCannotStage) {
				t.Skip(err) // a failover with no replica, a restart of a server the lab does not own
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

// Env opens the backend $LAB_REDIS names for one test, with the topology o asks for, and closes
// it when the test ends. A backend this machine lacks (no Docker daemon, no redis-server) skips
// the test with the reason, except under CI=true, where a backend asked for and missing fails it.
func Env(t testing.TB, o redisenv.Options) redisenv.Env {
	t.Helper()
	env, err := redisenv.FromEnv(o)
	missing := errors.Is(err, redisenv.ErrNoDocker) || errors.Is(err, redisenv.ErrNoRedisServer)
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
