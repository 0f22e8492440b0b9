package serve

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// Screen is where the trainer watches the room: the terminal running lab serve.
type Screen struct {
	Out   io.Writer
	TTY   bool       // Out is a terminal: the table is redrawn in place; else the log is printed line by line
	Width func() int // its width now (nil: 100)
	Head  []string   // the lines above the table: how to come in, what is exposed
	Save  string     // the room file to keep, or ""
}

// Watch shows the room on the screen until ctx ends, and keeps the room file: on a terminal the
// table is redrawn in place (on the alternate screen) at each change, at most four times a
// second, and every second for the idle times; elsewhere each line of the log is printed as it
// comes. The room file is rewritten at each change, at most once a second, and at the end. At
// the end the room as it stood is printed on the terminal's own screen. Hazard: an error
// saving the file is said on the screen and in the returned error, and the room goes on.
func (s *Server) Watch(ctx context.Context, sc Screen) error {
	var saveErr error
	save := func() {
		if sc.Save == "" {
			return
		}
		if err := s.Room.save(sc.Save); err != nil && saveErr == nil {
			saveErr = fmt.Errorf("saving the room to %s: %w", sc.Save, err)
			s.Room.Logf("%v", saveErr)
		}
	}
	if sc.TTY {
		fmt.Fprint(sc.Out, ansi.SetAltScreenSaveCursorMode+ansi.HideCursor)
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	printed := 0 // log lines printed, off a terminal
	var drawn, saved time.Time
	toDraw, toSave := true, sc.Save != ""
	for {
		select {
		case <-ctx.Done():
			save()
			if sc.TTY {
				fmt.Fprint(sc.Out, ansi.ShowCursor+ansi.ResetAltScreenSaveCursorMode)
			}
			f, _ := s.Room.Snapshot()
			fmt.Fprintln(sc.Out, strings.Join(Table(f, time.Now(), width(sc), false, nil), "\n"))
			return saveErr
		case <-s.Room.changed:
			toDraw, toSave = true, sc.Save != ""
			continue
		case <-tick.C:
		}
		now := time.Now()
		if toSave && now.Sub(saved) >= time.Second {
			save()
			toSave, saved = false, now
		}
		if !sc.TTY {
			var lines []string
			lines, printed = s.Room.logSince(printed)
			for _, l := range lines {
				fmt.Fprintln(sc.Out, l)
			}
			continue
		}
		f, log := s.Room.Snapshot()
		if !toDraw && now.Sub(drawn) < time.Second {
			continue
		}
		lines := slices.Concat(sc.Head, []string{""}, Table(f, now, width(sc), true, nil), []string{"", "LOG"}, log)
		var b strings.Builder
		b.WriteString(ansi.CursorHomePosition)
		for _, l := range lines {
			b.WriteString(ansi.Truncate(l, width(sc), "…") + ansi.EraseLineRight + "\r\n")
		}
		b.WriteString(ansi.EraseScreenBelow)
		io.WriteString(sc.Out, b.String())
		toDraw, drawn = false, now
	}
}

func width(sc Screen) int {
	if sc.Width == nil {
		return 100
	}
	return max(sc.Width(), 40)
}

// Table is the room as a table, a learner a line under a header: their name, since when they
// are here (or when they left, and why), the step on their screen, the last fault key they
// pressed, how long since their last key (live: false for a saved room, whose idle times are
// over), the drive challenges they reached, and the breaks they have seen (each step's kinds). With graded, a column says what it
// says of each learner's name (lab class: their grade).
func Table(f File, now time.Time, w int, live bool, graded func(name string) string) []string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := "LEARNER\tHERE\tSTEP\tLAST FAULT\t"
	if live {
		head += "IDLE\t"
	}
	if graded != nil {
		head += "GRADE\t"
	}
	fmt.Fprintln(tw, head+"DRIVEN\tBREAKS SEEN")
	for _, l := range f.Learners {
		here, idle := "since "+l.Since.Format("15:04"), ""
		switch {
		case !l.Left.IsZero():
			here = fmt.Sprintf("left %s (%s)", l.Left.Format("15:04"), short(l.Why))
			idle = "–\t"
		case live:
			idle = course.Span(now.Sub(l.Key).Round(time.Second))
			if l.Away {
				idle += " (held)"
			}
			idle += "\t"
		}
		if !live {
			idle = ""
		}
		step := dash(l.Step)
		if l.Screen != "" && l.Screen != "arena" && l.Left.IsZero() {
			step += " (" + l.Screen + ")"
		}
		grade := ""
		if graded != nil {
			grade = graded(l.Name) + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s%s\t%s\n", l.Name, here, step, dash(l.Fault), idle, grade, Driven(l.Solved), Breaks(l.Breaks))
	}
	tw.Flush()
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(f.Learners) == 0 {
		lines = append(lines, "(nobody yet)")
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(strings.TrimRight(l, " "), w, "…")
	}
	return lines
}

// Breaks is what a learner has seen break, step by step in the order first seen:
// "04_atomic_ttl: overlap, oversold · 02_setnx: stuck".
func Breaks(bs []Break) string {
	var order []string
	by := map[string][]string{}
	for _, b := range bs {
		if _, ok := by[b.Step]; !ok {
			order = append(order, b.Step)
		}
		by[b.Step] = append(by[b.Step], string(b.Kind))
	}
	var parts []string
	for _, st := range order {
		parts = append(parts, st+": "+strings.Join(by[st], ", "))
	}
	return dash(strings.Join(parts, " · "))
}

// Driven is the drive challenges a learner reached, in the order first reached, each as its
// step's number (a side road's slug), the moves it took and the par: "05 10/10 · 04 11/9".
func Driven(ss []Solved) string {
	var parts []string
	for _, s := range ss {
		n, _, _ := strings.Cut(s.Step, "_")
		if n == "side" {
			n = s.Step
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", n, s.Moves, s.Par))
	}
	return dash(strings.Join(parts, " · "))
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// short is why as the table says it: its first clause.
func short(why string) string {
	if i := strings.IndexAny(why, ":("); i > 0 {
		return strings.TrimSpace(why[:i])
	}
	return why
}
