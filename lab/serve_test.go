package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeBadInput: a bad flag, a -save file that is not a room (left as it was) and a host
// key that is no key: one line each, exit 2 for bad input, before anything listens.
func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.json")
	os.WriteFile(notes, []byte(`{"mine": true}`), 0o600)
	notKey := filepath.Join(dir, "key")
	os.WriteFile(notKey, []byte("not a key"), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-max", "0"}, 2, "-max 0: want 1…1000"},
		{[]string{"-idle", "-1s"}, 2, "want a duration ≥ 0"},
		{[]string{"-addr", "2222"}, 2, "-addr 2222: want host:port"},
		{[]string{"-buyers", "51"}, 2, "-buyers 51"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"-save", notes, "-addr", "127.0.0.1:0"}, 2, "is not a room file lab serve -save wrote"},
		{[]string{"-hostkey", notKey, "-addr", "127.0.0.1:0"}, 1, "is not an SSH private key"},
	} {
		var out, errw bytes.Buffer
		err := run(append([]string{"serve"}, tc.args...), &out, &errw)
		if exitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("serve %v: exit %d, %v; want %d and one line with %q", tc.args, exitCode(err), err, tc.code, tc.want)
		}
	}
	if b, _ := os.ReadFile(notes); string(b) != `{"mine": true}` {
		t.Errorf("the -save file that was not a room was changed: %q", b)
	}
}
