package grading

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestSharedState: package-level state a function writes, or one drawn once at init and read
// after, is found, by name and how; sentinels, scripts, embedded files, constants, per-Locker
// state and a local that shadows a package-level name are not, nor is anything in the steps.
func TestSharedState(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"a reentrancy map written by Lock", `package lock
import "sync"
var mu sync.Mutex
var holds = map[string]int{}
type L struct{}
func (l *L) Lock(key string) bool { mu.Lock(); defer mu.Unlock(); holds[key]++; return true }
func (l *L) Unlock(key string) { delete(holds, key) }`, []string{"holds (written by L.Lock)", "mu (written by L.Lock)"}},
		{"a sync.Map stored into by New", `package lock
import "sync"
var seen sync.Map
func New(id string) int { seen.Store(id, true); return 0 }`, []string{"seen (written by New)"}},
		{"a counter of processes", `package lock
var n int
func New() int { n++; return n }`, []string{"n (written by New)"}},
		{"an owner token drawn once at init", `package lock
import ("crypto/rand"; "encoding/hex")
var owner = token()
func token() string { b := make([]byte, 8); rand.Read(b); return hex.EncodeToString(b) }
type L struct{ id string }
func New() *L { return &L{id: owner} }`, []string{"owner (drawn once at init, read by New)"}},
		{"a uuid drawn in init", `package lock
import "github.com/google/uuid"
var owner string
func init() { owner = uuid.NewString() }
type L struct{}
func (l *L) Lock() string { return owner }`, []string{"owner (drawn once at init, read by L.Lock)"}},
		{"nothing shared", `package lock
import ("embed"; "errors"; "time"; "github.com/redis/go-redis/v9")
//go:embed *.go
var Source embed.FS
var ErrBusy = errors.New("busy")
var script = redis.NewScript("return 1")
var wait = 10 * time.Millisecond
var holds = map[string]int{}
var _ = script
type L struct{ holds map[string]int; n int }
func New() *L { return &L{holds: map[string]int{}} }
func (l *L) Lock(key string) error { l.holds[key]++; l.n++; holds := map[string]int{}; holds[key] = 1; time.Sleep(wait); return ErrBusy }`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "lock.go", tc.src, parser.SkipObjectResolution|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range SharedState(fset, "lock", []*ast.File{f}) {
				got = append(got, s.Name+" ("+s.How+")")
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	want := "package-level `holds` (written by Locker.Lock) is shared by every buyer here; in a deployment each process has its own — keep per-process state in the Locker"
	if got := (Shared{Name: "holds", How: "written by Locker.Lock"}).Says(); got != want {
		t.Errorf("Says: %q, want %q", got, want)
	}
	// the steps keep their state in their Lockers: nothing of theirs is shared
	for _, st := range catalog.Steps {
		if got := sharedIn(t, filepath.Join("..", "..", "steps", filepath.Base(st.Slug))); len(got) > 0 {
			t.Errorf("%s shares %v", st.Slug, got)
		}
	}
	// the learner-style packages the grade tests keep
	for name, want := range map[string]string{"package_holds": "holds", "package_token": "owner", "flushdb_release": ""} {
		var names []string
		for _, s := range sharedIn(t, filepath.Join("..", "testdata", "learners", name)) {
			names = append(names, s.Name)
		}
		if want == "" && len(names) > 0 || want != "" && !slices.Contains(names, want) {
			t.Errorf("%s: shared %v, want %q", name, names, want)
		}
	}
}

// sharedIn is SharedState of the package in dir.
func sharedIn(t *testing.T, dir string) []Shared {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return SharedState(fset, "lock", files)
}
