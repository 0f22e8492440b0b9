package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/steps"
)

// TestGradeSaysEveryOrderFailed: a lock whose every acquire the server refuses (a command it does
// not run, queued in the acquire's MULTI: EXECABORT) fails every order of every scenario, and the
// grade says so first, with the command, the server's words and the server; each cell's notes
// name it too.
func TestGradeSaysEveryOrderFailed(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	code, out, errs := grade(t, sharedLearner(t, "reply_errors"))
	first := "Every order of every scenario failed, the server refusing your lock's commands: your Lock's HPEXPIRE failed: ERR unknown command 'HPEXPIRE' — this server is "
	if code != 1 || !strings.Contains(out, first) || strings.Index(out, first) > strings.Index(out, "every scenario (judged kinds") {
		t.Fatalf("exit %d, want 1, saying first %q\n%s\n%s", code, first, out, errs)
	}
	if n := strings.Count(out, "note: your Lock's HPEXPIRE failed"); n != 15 {
		t.Errorf("%d cells name the error reply, want 15:\n%s", n, out)
	}
}

// TestListKinds: lab list kinds names every kind of violation, a line each, in a report's order,
// foreign-renewal among them.
func TestListKinds(t *testing.T) {
	var out, errw bytes.Buffer
	if err := run([]string{"list", "kinds"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range steps.Kinds {
		want = append(want, string(k))
	}
	if got := strings.TrimSpace(out.String()); got != strings.Join(want, "\n") || !strings.Contains(got, "\nforeign-renewal\n") {
		t.Errorf("lab list kinds:\n%s", got)
	}
}
