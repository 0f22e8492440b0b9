package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/lab/tui"
)

// The host key is made once, 0600 in a folder made 0700, and the same key is read after; a key
// others can read is refused, and a file that is no key is neither used nor overwritten.
func TestHostKeyIsKept(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lockstep", "host")
	first, made, err := HostKey(file)
	if err != nil || !made {
		t.Fatalf("first HostKey: made %v, %v", made, err)
	}
	again, made, err := HostKey(file)
	if err != nil || made || !bytes.Equal(first, again) {
		t.Fatalf("second HostKey: made %v, %v, same key %v", made, err, bytes.Equal(first, again))
	}
	if runtime.GOOS != "windows" {
		for f, want := range map[string]os.FileMode{file: 0o600, filepath.Dir(file): 0o700} {
			if st, err := os.Stat(f); err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: %v, mode %v, want %v", f, err, st.Mode().Perm(), want)
			}
		}
		os.Chmod(file, 0o644)
		if _, _, err := HostKey(file); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("a key others can read: %v", err)
		}
	}
	notKey := filepath.Join(dir, "notes.txt")
	os.WriteFile(notKey, []byte("my notes"), 0o600)
	if _, _, err := HostKey(notKey); err == nil || !strings.Contains(err.Error(), "is not an SSH private key") {
		t.Errorf("a file that is no key: %v", err)
	}
	if b, _ := os.ReadFile(notKey); string(b) != "my notes" {
		t.Errorf("the file that is no key was changed: %q", b)
	}
}

// The room file is written whole and read back as it was; a room carried on from it has
// everyone left, and a learner who comes back under their name goes on in their row.
func TestRoomFile(t *testing.T) {
	r := NewRoom(nil)
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return at }
	ada, bob := r.join("ada"), r.join("bob")
	ada2 := r.join("ada") // a second terminal under the same name
	r.tell(ada, tui.Activity{Step: "04_atomic_ttl", Screen: "arena", Fault: "x crash"})
	r.tell(ada, tui.Activity{Step: "04_atomic_ttl", Screen: "arena", Broke: "overlap"})
	r.tell(ada, tui.Activity{Step: "04_atomic_ttl", Screen: "arena", Broke: "overlap"})
	r.tell(bob, tui.Activity{Step: "05_owner", Screen: "arena", Solved: 12, Par: 10})
	r.tell(bob, tui.Activity{Step: "05_owner", Screen: "arena", Solved: 11, Par: 10})
	r.tell(bob, tui.Activity{Step: "05_owner", Screen: "arena", Solved: 14, Par: 10})
	r.tell(bob, tui.Activity{Step: "02_setnx", Screen: "picker"})
	r.leave(ada2, "left")
	file := filepath.Join(t.TempDir(), "room.json")
	if err := r.save(file); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	table := strings.Join(Table(*f, at, 200, false, nil), "\n")
	for _, want := range []string{"ada ", "04_atomic_ttl", "x crash", "04_atomic_ttl: overlap", "bob ", "02_setnx (picker)", "05 11/10", "ada (2)", "left 09:00 (left)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if _, log := r.Snapshot(); !slices.Contains(log, "09:00:00  bob reached 05_owner's drive goal in 11 moves (par 10)") || strings.Contains(strings.Join(log, "\n"), "in 14 moves") {
		t.Errorf("the log says of bob's drive goal:\n%s", strings.Join(log, "\n"))
	}
	if n := strings.Count(table, "overlap"); n != 1 {
		t.Errorf("overlap on 04 told twice is in the table %d times", n)
	}
	again := NewRoom(f)
	if again.Here() != 0 {
		t.Errorf("%d learners here in a room carried on from a file", again.Here())
	}
	back := again.join("ada")
	if back.Visits != 2 || back.Fault != "x crash" || len(back.Breaks) != 1 {
		t.Errorf("ada came back to %+v, want her row", back)
	}
	if err := os.WriteFile(file, []byte(`{"lockstep":"runs"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(file); err == nil {
		t.Error("a file of runs was read as a room")
	}
}
