package referee

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// TestLiveReadsNoVerdict: what the arena stages by — Live's answers and the staging events — is
// the same, record after record of every play of every saved cell, when everything the checkers
// keep (every field of the Referee but its facts) is wiped after each record. A fact that came to
// depend on a finding (an overlap, a foreign release, a buyer turned away…) would differ here, and
// a change to judging would change how a scenario plays.
func TestLiveReadsNoVerdict(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(CellsDir, "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved cells in %s (%v)", CellsDir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json.gz"), func(t *testing.T) {
			t.Parallel()
			c, err := ReadCell(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range append([]*history.History{c.History}, c.Others...) {
				var ea, eb []Event
				a := NewReferee(*h, func(e Event) {
					if e.Staging() {
						ea = append(ea, e)
					}
				})
				b := NewReferee(*h, func(e Event) {
					if e.Staging() {
						eb = append(eb, e)
					}
				})
				for i, rec := range h.Records {
					a.Add(rec)
					b.Add(rec)
					wipeVerdicts(b)
					if d := liveDiff(a.Live(), b.Live(), rec); d != "" {
						t.Fatalf("play %d, record %d (%s): %s", h.Play, i, rec.Kind, d)
					}
					if !reflect.DeepEqual(ea, eb) {
						t.Fatalf("play %d, record %d (%s): staging events differ:\n%v\n%v", h.Play, i, rec.Kind, ea, eb)
					}
				}
			}
		})
	}
}

// TestWipeVerdictsWipes: the wipe TestLiveReadsNoVerdict leans on reaches the checkers' state: a
// referee that found an overlap and a foreign release reports neither once wiped.
func TestWipeVerdictsWipes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(CellsDir, "05_owner__unlock-race.json.gz"))
	if len(files) != 1 {
		t.Fatal("no saved cell 05_owner × unlock-race")
	}
	c, err := ReadCell(files[0])
	if err != nil {
		t.Fatal(err)
	}
	r := NewReferee(*c.History, nil)
	for _, rec := range c.History.Records {
		r.Add(rec)
	}
	if len(r.foreign) == 0 {
		t.Fatal("05_owner × unlock-race found no foreign release: the test needs one")
	}
	wipeVerdicts(r)
	if len(r.foreign) != 0 || len(r.told) != 0 || r.facts.h.Stock == 0 {
		t.Errorf("wiped: %d foreign releases, %d kinds told, stock %d", len(r.foreign), len(r.told), r.facts.h.Stock)
	}
}

// wipeVerdicts sets every field of r but its facts and its emit to a fresh value: empty maps, zero
// the rest.
func wipeVerdicts(r *Referee) {
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Name == "facts" || f.Name == "emit" {
			continue
		}
		w := reflect.NewAt(f.Type, unsafe.Pointer(v.Field(i).UnsafeAddr())).Elem()
		if f.Type.Kind() == reflect.Map {
			w.Set(reflect.MakeMap(f.Type))
		} else {
			w.Set(reflect.Zero(f.Type))
		}
	}
}

// liveDiff says how a's answers differ from b's ("" if they do not), for every buyer and node the
// run has so far, and the command rec carries.
func liveDiff(a, b Live, rec history.Record) string {
	var out []string
	same := func(what string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			out = append(out, fmt.Sprintf("%s: %v, wiped %v", what, x, y))
		}
	}
	same("Inside", a.Inside(), b.Inside())
	same("Shelf", a.Shelf(), b.Shelf())
	same("SoldOut", a.SoldOut(), b.SoldOut())
	same("NoVerdict", a.NoVerdict(), b.NoVerdict())
	for n := range 20 {
		same(fmt.Sprint("Releasing ", n), a.Releasing(n), b.Releasing(n))
		same(fmt.Sprint("HoldKeys ", n), a.HoldKeys(n), b.HoldKeys(n))
	}
	for node := range 5 {
		ka, oa, okA := a.HeldKey(node)
		kb, ob, okB := b.HeldKey(node)
		same(fmt.Sprint("HeldKey ", node), fmt.Sprintf("%q %d %v", ka, oa, okA), fmt.Sprintf("%q %d %v", kb, ob, okB))
		same(fmt.Sprint("Values ", node), a.Values(node), b.Values(node))
	}
	same("Renewed", a.Renewed(rec.Buyer, rec.Node, rec.Seq), b.Renewed(rec.Buyer, rec.Node, rec.Seq))
	same("CommandOf", a.CommandOf(rec.Cmds, rec.Node, rec.Call), b.CommandOf(rec.Cmds, rec.Node, rec.Call))
	return strings.Join(out, "; ")
}
