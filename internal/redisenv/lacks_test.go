package redisenv_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestEmbeddedLacks: the embedded node answers from miniredis's own command table (its COMMAND
// answers a fixed list): it runs DELEX (miniredis ≥ v2.38), not a command nobody has, and says so
// after a failover too, on the promoted instance.
func TestEmbeddedLacks(t *testing.T) {
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	node := env.Nodes()[0]
	ctx := context.Background()
	for _, when := range []string{"before", "after"} {
		if when == "after" {
			node.HoldReplication()
			if err := node.Failover(ctx); err != nil {
				t.Fatal(err)
			}
		}
		lacks, server, err := node.Lacks(ctx, []string{"DELEX", "get", "NOSUCHCMD"})
		if err != nil {
			t.Fatalf("%s a failover: %v", when, err)
		}
		if !slices.Equal(lacks, []string{"NOSUCHCMD"}) {
			t.Errorf("%s a failover the embedded node lacks %v; want [NOSUCHCMD]", when, lacks)
		}
		if !strings.HasPrefix(server, "miniredis") {
			t.Errorf("%s a failover the embedded node's server is %q; want miniredis", when, server)
		}
	}
}

// TestServerLacks: a real server is asked with COMMAND INFO, which changes nothing: it runs GET,
// not a command nobody has, and DELEX exactly when its version is 8.4 or later (Debian's 7.0
// is not). The server is named with its version.
func TestServerLacks(t *testing.T) {
	s := openServer(t)
	node := s.Nodes()[0]
	ctx := context.Background()
	before, err := node.Admin().DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lacks, server, err := node.Lacks(ctx, []string{"GET", "DELEX", "NOSUCHCMD"})
	if err != nil {
		t.Fatal(err)
	}
	version, ok := strings.CutPrefix(server, "Redis ")
	if !ok {
		t.Fatalf("the server is named %q; want Redis <version>", server)
	}
	major, minor := versionOf(t, version)
	want := []string{"NOSUCHCMD"}
	if major < 8 || (major == 8 && minor < 4) {
		want = []string{"DELEX", "NOSUCHCMD"}
	}
	if !slices.Equal(lacks, want) {
		t.Errorf("%s lacks %v; want %v", server, lacks, want)
	}
	if after, err := node.Admin().DBSize(ctx).Result(); err != nil || after != before {
		t.Errorf("asking changed the node: %d keys before, %d (%v) after", before, after, err)
	}
	t.Logf("%s lacks %v", server, lacks)
}

// versionOf reads "7.0.15" as 7, 0.
func versionOf(t *testing.T, v string) (int, int) {
	t.Helper()
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("version %q", v)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("version %q", v)
	}
	return major, minor
}

// TestURLRunRefusesWhatTheServerLacks: on an existing server without DELEX, a run of the road
// that needs it is refused before anything is played (arena.ErrCannotStage), with a reason that
// names the command, the releases that have it and the server's version, and leaves no key.
func TestURLRunRefusesWhatTheServerLacks(t *testing.T) {
	srv := openServer(t)
	ctx := context.Background()
	env, err := redisenv.Open("redis://"+srv.InventoryOptions().Addr+"/4", redisenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	lacks, server, err := env.Nodes()[0].Lacks(ctx, []string{"DELEX"})
	if err != nil {
		t.Fatal(err)
	}
	if len(lacks) == 0 {
		t.Skipf("%s runs DELEX: nothing to refuse", server)
	}
	st, err := catalog.Find("side_delex")
	if err != nil {
		t.Fatal(err)
	}
	_, err = scenario.Run(ctx, arena.Config{Step: st, Env: env}, steps.Slow)
	if !errors.Is(err, arena.ErrCannotStage) {
		t.Fatalf("a run of side_delex on %s = %v; want arena.ErrCannotStage", server, err)
	}
	for _, want := range []string{"side_delex", "DELEX", st.Needs[0].Since, server, "url"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the reason %q does not name %q", err, want)
		}
	}
	if keys, err := env.Nodes()[0].Admin().Keys(ctx, env.Prefix()+"*").Result(); err != nil || len(keys) > 0 {
		t.Errorf("the refused run left %v (%v) under its prefix", keys, err)
	}
	t.Log(err)
}
