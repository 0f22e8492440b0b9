package picture

import (
	"testing"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

// TestOfCommand: each command is the mark its role says, whatever its name.
func TestOfCommand(t *testing.T) {
	for _, c := range []struct {
		cmd    referee.Command
		waiter bool
		want   ID
	}{
		{referee.Command{Name: "GET", Stock: true}, false, StockGet},
		{referee.Command{Name: "SET", Stock: true}, false, StockSet},
		{referee.Command{Name: "SET", NX: true, OnLock: true, In: "lock"}, false, Try},
		{referee.Command{Name: "SET", NX: true, OnLock: true, In: "lock"}, true, Try},
		{referee.Command{Name: "GET", OnLock: true, In: "unlock"}, false, LockGet},
		{referee.Command{Name: "DEL", OnLock: true, In: "unlock"}, false, Del},
		{referee.Command{Name: "EVALSHA", Script: true, OnLock: true, In: "lock"}, true, Try},
		{referee.Command{Name: "EVALSHA", Script: true, OnLock: true, In: "lock"}, false, LockScript},
		{referee.Command{Name: "EVALSHA", Script: true, OnLock: true, In: "unlock"}, false, UnlockScript},
		{referee.Command{Name: "EVALSHA", Script: true, OnLock: true}, false, Renew},
		{referee.Command{Name: "PEXPIRE", OnLock: true}, false, Renew},
		{referee.Command{Name: "GETSET", OnLock: true, In: "lock"}, true, Try},
		{referee.Command{Name: "HSET", OnLock: true, In: "lock"}, false, Other},
		{referee.Command{Name: "WAIT", In: "lock"}, false, WaitAck},
		{referee.Command{Name: "WAITAOF", In: "lock"}, false, WaitAck},
	} {
		if got := OfCommand(&c.cmd, c.waiter); got != c.want {
			t.Errorf("%+v (waiter %v): %c, want %c", c.cmd, c.waiter, Marks[got].Glyph, Marks[c.want].Glyph)
		}
	}
	if OfCommand(nil, false) != None {
		t.Error("no command is a mark")
	}
}

// TestEveryMarkIsDrawn: every mark has a glyph and a class, and the legend names every command
// mark and lock mark once.
func TestEveryMarkIsDrawn(t *testing.T) {
	named := map[ID]int{}
	for _, g := range Legend {
		for _, m := range g.Marks {
			named[m]++
		}
	}
	for m := None + 1; m <= Seen; m++ {
		if Marks[m].Glyph == 0 || Marks[m].Class == "" {
			t.Errorf("mark %d has no glyph or class: %+v", m, Marks[m])
		}
		if (Marks[m].Term || m == Try || m == Other) && named[m] != 1 {
			t.Errorf("the legend names %c %d times", Marks[m].Glyph, named[m])
		}
	}
	if len(Marks) != int(Seen)+1 {
		t.Errorf("the table has %d marks, the IDs %d", len(Marks), Seen+1)
	}
}
