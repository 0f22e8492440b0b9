package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/steps"
)

// TestHeadlessBadInput: every kind of bad input is a usage error (exit 2) with one line.
func TestHeadlessBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-step", "13", "-scenario", "slow"},
		{"run", "-step", "04", "-scenario", "nope"},
		{"run", "-step", "04"},
		{"run", "-bogus"},
		{"run", "-step", "04", "-scenario", "slow", "extra"},
		{"run", "-step", "04", "-scenario", "slow", "-redis", "mongodb://x"},
		{"matrix", "-json=maybe"},
	} {
		var out, errw bytes.Buffer
		err := run(args, &out, &errw)
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: want a usage error, got %v", args, err)
			continue
		}
		if msg := unwrapUsage(err); strings.Contains(msg, "\n") || msg == "" {
			t.Errorf("%v: want one line, got %q", args, msg)
		}
	}
}

// TestHeadlessRunJSON: the JSON report names the step, the scenario and the judged violations.
func TestHeadlessRunJSON(t *testing.T) {
	var out, errw bytes.Buffer
	if err := run([]string{"run", "-step", "atomic_ttl", "-scenario", "slow", "-json"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Step, Scenario string
		Violations     []steps.Kind
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	want := []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease}
	if rep.Step != "04_atomic_ttl" || rep.Scenario != "slow" || !slices.Equal(rep.Violations, want) {
		t.Fatalf("got %s %s %v, want 04_atomic_ttl slow %v", rep.Step, rep.Scenario, rep.Violations, want)
	}
}

// TestRenderMatrix: a row per step, ✓ for no violation, kinds joined otherwise.
func TestRenderMatrix(t *testing.T) {
	var cells []cell
	for i, sc := range steps.Scenarios {
		c := cell{Step: "01_naive", Scenario: string(sc), Violations: []steps.Kind{}}
		if i == 0 {
			c.Violations = []steps.Kind{steps.Overlap, steps.Oversold}
		}
		cells = append(cells, c)
	}
	got := renderMatrix(cells)
	want := "| 01_naive | overlap, oversold | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |\n"
	if !strings.HasSuffix(got, want) {
		t.Fatalf("last row:\n%s\nwant:\n%s", got, want)
	}
	b, _ := json.Marshal(cells[1])
	if string(b) != `{"step":"01_naive","scenario":"error","violations":[]}` {
		t.Fatalf("cell JSON: %s", b)
	}
}
