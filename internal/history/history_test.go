package history

import (
	"bytes"
	"strings"
	"testing"
)

// TestNoLockIsSavedAndReadBack: WriteHistory writes NoLock whether true or false, and ReadHistory
// reads it back as written, even against what the records suggest. Hazard: written only when
// true, a locking step's history would read as one saved before the field was kept.
func TestNoLockIsSavedAndReadBack(t *testing.T) {
	for _, noLock := range []bool{true, false} {
		var b bytes.Buffer
		if err := WriteHistory(&b, &History{Step: "s", NoLock: noLock}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `"no_lock"`) {
			t.Errorf("NoLock %v is not written: %s", noLock, b.String())
		}
		h, err := ReadHistory(&b)
		if err != nil {
			t.Fatal(err)
		}
		if h.NoLock != noLock {
			t.Errorf("NoLock %v read back as %v", noLock, h.NoLock)
		}
	}
}

// TestAnOldHistoryTakesNoLockWithoutALockCommand: a history saved before NoLock was kept takes no
// lock when no command reached a lock node, even with a Lock call recorded (reentrant's nested
// Lock on step 1 sends nothing), and takes one when a command did. Hazard: read as taking a
// lock, every read of an old step 1 run would be a peek.
func TestAnOldHistoryTakesNoLockWithoutALockCommand(t *testing.T) {
	for _, c := range []struct {
		json   string
		noLock bool
	}{
		{`{"step":"01_naive","records":[{"kind":"stock","what":"read","buyer":1,"order":1}]}`, true},
		{`{"step":"01_naive","records":[{"kind":"stock","what":"read","buyer":1,"order":1},{"kind":"call","what":"lock","buyer":1,"order":1,"call":1}]}`, true},
		{`{"step":"04_atomic_ttl","records":[{"kind":"call","what":"lock","buyer":1,"order":1,"call":1},{"kind":"cmd","buyer":1,"call":1,"cmds":[{"name":"set"}]},{"kind":"stock","what":"read","buyer":1,"order":1}]}`, false},
	} {
		h, err := ReadHistory(strings.NewReader(c.json))
		if err != nil {
			t.Fatal(err)
		}
		if h.NoLock != c.noLock || h.Step == "" || len(h.Records) != len(strings.Split(c.json, `"kind"`))-1 {
			t.Errorf("%s: read as %+v, want NoLock %v and every field", c.json, h, c.noLock)
		}
	}
}

// TestAHistoryOfThisFormatIsNotGuessed: a history that says it is of this format (Version) is
// read as written: no no_lock is false, whatever its records, and no judged stays none. Hazard:
// guessed like an old one, a locking run whose lock sent nothing would read as a lock-free step's.
func TestAHistoryOfThisFormatIsNotGuessed(t *testing.T) {
	h, err := ReadHistory(strings.NewReader(`{"format":1,"step":"05_owner","scenario":"crash","records":[{"kind":"stock","what":"read","buyer":1,"order":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if h.NoLock || h.Judged != nil || h.Format != 1 {
		t.Errorf("read as NoLock %v, judged %v, format %d: want false, none, 1", h.NoLock, h.Judged, h.Format)
	}
	var b bytes.Buffer
	if err := WriteHistory(&b, &History{Format: Version, Step: "s"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"format": 1`) {
		t.Errorf("the format is not written: %s", b.String())
	}
}
