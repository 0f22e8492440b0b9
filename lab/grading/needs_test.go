package grading

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockstep-lab/lockstep/steps"
)

// TestNeedsOf: the commands a lock sends that not every server runs are read from its source —
// a go-redis method named for one, a Do of one by name, a redis.call in a script (a string of
// the Go source, or an embedded .lua file) — and nothing else: a package's function of the same
// name (io.Copy), a command every server runs, a name built at run time.
func TestNeedsOf(t *testing.T) {
	dir := t.TempDir()
	src := `package lock

import (
	"context"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
)

const release = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.pcall(\"HGETDEL\", KEYS[1], 'FIELDS', 1, 'o') end"

func use(ctx context.Context, rdb *redis.Client, name string) {
	rdb.HPExpire(ctx, "k", 0, "f")
	rdb.HSetEXWithArgs(ctx, "k", nil)
	rdb.Do(ctx, "DELEX", "k", "IFEQ", "t")
	rdb.Do(ctx, name, "k")
	rdb.PExpire(ctx, "k", 0)
	io.Copy(os.Stdout, os.Stdin)
}
`
	if err := os.WriteFile(filepath.Join(dir, "lock.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "renew.lua"), []byte("return redis.call('WAITAOF', 1, 0, 50)"), 0o644); err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "lock.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range NeedsOf([]*ast.File{f}, dir, []string{"lock.go", "renew.lua"}) {
		got = append(got, n.Command+" ("+n.Since+")")
	}
	want := []string{"DELEX (Redis 8.4 or Valkey 9.2)", "HGETDEL (Redis 8.0)", "HPEXPIRE (Redis 7.4)", "HSETEX (Redis 8.0)", "WAITAOF (Redis 7.2)"}
	if !slices.Equal(got, want) {
		t.Errorf("NeedsOf: %v\nwant %v", got, want)
	}
	// a step's own lock needs nothing but what its catalog says (side_delex: DELEX)
	for _, slug := range []string{"09_lua_unlock", "11_hash_owner", "side_delex"} {
		p, err := Inspect(filepath.Join("..", "..", "steps", slug))
		if err != nil {
			t.Fatal(err)
		}
		want := []steps.Need(nil)
		if slug == "side_delex" {
			want = []steps.Need{{Command: "DELEX", Since: "Redis 8.4 or Valkey 9.2"}}
		}
		if !slices.Equal(p.Needs, want) {
			t.Errorf("%s needs %v, want %v", slug, p.Needs, want)
		}
	}
}
