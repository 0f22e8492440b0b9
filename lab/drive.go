package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// Drive mode, headless: lab drive STEP -moves "1 1 2 w 1" plays a drive session (internal/drive:
// the learner is the scheduler) move by move and says each in words, then the verdict and
// whether the step's challenge was reached; -solve plays the par solution. It plays in virtual
// time in the grader (TestDrive), as run and matrix play their cells.

// driveCmd is lab drive.
func driveCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("drive", "lab drive STEP -moves \"1 1 2 w 1\" | -solve [-save FILE] [-html FILE]\n\n"+
		"Drive mode, headless, on the embedded backend in virtual time (in the grader, as run plays): time\n"+
		"stands still and each buyer's next Redis command waits until a move\n"+
		"sends it. A buyer's number (1-9) sends that buyer's next command; w lets a quarter TTL pass; +\n"+
		"brings another buyer with an order; k another whose wall clock runs 3 × TTL ahead; a fault key\n"+
		"(e x s u n p f i t y, as in the lab) strikes the buyer chosen last (x2: buyer 2). Each move is\n"+
		"said in words, then the verdict. Exit 0 when the step's challenge is reached, 1 when it is not\n"+
		"(17's cannot be: \"this step holds\"), 2 on bad input (a bad move is one line each).", stderr)
	moves := fs.String("moves", "", "the moves, separated by spaces")
	solve := fs.Bool("solve", false, "play the step's par solution (its hint, move by move)")
	save := fs.String("save", "", "write the session (its history and verdict) to this file, for lab judge and lab -program")
	html := fs.String("html", "", "write the session as one self-contained page to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("drive needs a step: lab drive 05 -moves \"1 1 w\" (see -h)")
	}
	st, err := catalog.Find(fs.Arg(0))
	if err != nil {
		return usageError("%v", err)
	}
	if err := parse(fs, fs.Args()[1:]); err != nil { // flags after the step, as a learner types them
		return err
	}
	ch, hasChallenge := catalog.ChallengeOf(st.Slug)
	var ms []drive.Move
	switch {
	case *solve && *moves != "":
		return usageError("-solve plays the par solution: it does not go with -moves")
	case *solve && !hasChallenge:
		return usageError("%s has no challenge, so no par solution: say the moves with -moves", st.Slug)
	case *solve:
		ms, err = drive.Parse(ch.Solution)
	case *moves == "":
		return usageError("drive needs -moves \"…\" or -solve (see -h)")
	default:
		ms, err = drive.Parse(*moves)
	}
	if err != nil {
		return usageError("%v", err)
	}
	pl, err := newPlayer("embedded", stderr)
	if err != nil {
		return err
	}
	defer pl.close()
	d, err := openDriver(pl)
	if err != nil {
		return err
	}
	defer d.Close()
	if hasChallenge {
		fmt.Fprintf(stdout, "%s — the challenge: %s (par %d)\n", course.Name(st), ch.Says, ch.Par())
	}
	f, err := d.Open(drive.Opening{Step: st.Slug})
	if err != nil {
		return err
	}
	for _, l := range f.Lanes {
		fmt.Fprintf(stdout, "  %s\n", l)
	}
	var bad, said []string
	reached := 0
	for i, m := range ms {
		g, err := d.Move(m)
		if errors.Is(err, drive.ErrBadMove) { // f stays the last move's frame
			bad = append(bad, fmt.Sprintf("move %d: %v", i+1, err))
			fmt.Fprintf(stdout, "%3d. %-3s not played: %v\n", i+1, m.Key, err)
			continue
		}
		if err != nil {
			return err
		}
		f = g
		printMove(stdout, len(f.Moves), m, f.Said[0])
		said = append(said, fmt.Sprintf("%d. %s: %s", len(f.Moves), moveKey(m), f.Said[0][0]))
		if hasChallenge && reached == 0 && goal(f.Found, ch.Goal) {
			reached = len(f.Moves)
		}
	}
	fmt.Fprintf(stdout, "     %s\n", f.Lock)
	for _, l := range f.Lanes {
		fmt.Fprintf(stdout, "     %s\n", l)
	}
	rep, err := d.End()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, rep.Text())
	if err := keepSession(st, rep, driven{Moves: drive.Format(f.Moves), Said: said}, *save, *html); err != nil {
		return err
	}
	for _, b := range bad {
		fmt.Fprintln(stderr, "lab: drive:", b)
	}
	if len(bad) > 0 {
		return usageError("%s not played", course.Count(len(bad), "move was", "moves were"))
	}
	if !hasChallenge {
		return nil
	}
	atEnd := false
	if reached == 0 && slices.Contains(rep.Violations, ch.Goal) {
		reached, atEnd = len(f.Moves), true
	}
	return challengeOutcome(stdout, st, ch, reached, atEnd)
}

// printMove says the n-th move played, m, and what came of it.
func printMove(w io.Writer, n int, m drive.Move, said []string) {
	fmt.Fprintf(w, "%3d. %-3s %s\n", n, moveKey(m), said[0])
	for _, s := range said[1:] {
		fmt.Fprintf(w, "          %s\n", s)
	}
}

// moveKey is m as a key and, for a fault, the buyer it strikes: "x1".
func moveKey(m drive.Move) string {
	if m.Fault() != nil {
		return m.Key + fmt.Sprint(m.Buyer)
	}
	return m.Key
}

// goal reports whether the referee has announced kind k.
func goal(found []drive.Found, k vocab.Kind) bool {
	return slices.ContainsFunc(found, func(f drive.Found) bool { return f.Kind == k })
}

// challengeOutcome says whether the challenge was reached (at move reached; 0: not; atEnd: found
// as the session ended, by the end-of-run probe or the shelf read back), and the step that fixes
// it; the error is the exit status 1 of a challenge not reached.
func challengeOutcome(w io.Writer, st *steps.Step, ch catalog.Challenge, reached int, atEnd bool) error {
	if reached == 0 {
		if ch.Holds {
			fmt.Fprintf(w, "this step holds: the referee found no %s — %s\n", ch.Goal, st.Breaks)
			return errors.New("this step holds")
		}
		fmt.Fprintf(w, "goal not reached: %s (par %d; lab drive %s -solve plays it)\n", ch.Says, ch.Par(), st.Slug)
		return errors.New("the challenge was not reached")
	}
	how := ""
	if atEnd {
		how = ", found as the session ended"
	}
	fmt.Fprintf(w, "goal reached in %s (par %d)%s: %s\n", course.Count(reached, "move", "moves"), ch.Par(), how, ch.Says)
	if i := slices.Index(catalog.Steps, st); i >= 0 {
		fmt.Fprintln(w, course.NewHandoff(catalog.Steps, i, ch.Scenario, []steps.Kind{ch.Goal}, learner).Headline(catalog.Steps))
	}
	return nil
}

// keepSession writes the session's run to save and its page to html (either may be "").
func keepSession(st *steps.Step, rep *referee.Report, d driven, save, html string) error {
	now := time.Now()
	if save != "" {
		if err := writeDriven(save, rep, d, now); err != nil {
			return err
		}
	}
	if html != "" {
		if err := writeDrivePage(html, st, rep, d.story(), now); err != nil {
			return err
		}
	}
	return nil
}

// savedDrive is what drive -save writes: the session's run as run -save writes one (lab judge
// reads it), and its moves (lab -program plays its run with them in words).
type savedDrive struct {
	savedRuns
	Drive driven `json:"drive"`
}

// driven is a drive session's moves: as lab drive -moves reads them, and each in words.
type driven struct {
	Moves string   `json:"moves"`
	Said  []string `json:"said"`
}

// story is the session in words: its moves, then what each sent or did.
func (d *driven) story() []string {
	return append([]string{"drive session: " + d.Moves}, d.Said...)
}

// writeDriven writes the session's run and moves to file.
func writeDriven(file string, rep *referee.Report, d driven, played time.Time) error {
	out := savedDrive{savedRuns: savedOf([]*referee.Report{rep}, played), Drive: d}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return fmt.Errorf("writing the drive session: %w", err)
	}
	return nil
}

// openDriver opens a drive session's driver: in the grader pl built (TestDrive), or, where a test
// has set bubble and settle, in this process.
func openDriver(pl *player) (*drive.Driver, error) {
	if pl.gr == nil {
		if bubble == nil || settle == nil {
			return nil, errors.New("drive mode plays in virtual time, in the grader: it needs the embedded backend")
		}
		return drive.Local(catalog.Find, bubble, settle), nil
	}
	cmd := pl.gr.command("TestDrive", []string{drive.Env + "=1"})
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return drive.NewDriver(in, out, func() error {
		in.Close() // the grader's Serve ends with its stdin, and its test with it
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second): // a session whose clock a lock stopped never ends
			cmd.Process.Kill()
			return <-done
		}
	}), nil
}

// tuiDriver opens drive mode's driver for the terminal lab: the grader built as the headless
// commands build it (newPlayer), saying nothing on stderr (the screen is the lab's); closing the
// driver removes the build. Hazard: newPlayer catches the stop signals for as long as the grader
// lives, and the terminal lab, which reads Ctrl-C as a key, would then outlive its terminal (a
// hang-up) or a SIGTERM: on one, the grader is stopped, its build removed, and the lab exits 130.
func tuiDriver() (*drive.Driver, error) {
	pl, err := newPlayer("embedded", io.Discard)
	if err != nil {
		return nil, err
	}
	d, err := openDriver(pl)
	if err != nil {
		pl.close()
		return nil, err
	}
	d.OnClose(pl.close)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, stopSignals...)
	closed := make(chan struct{})
	go func() {
		select {
		case <-sig:
			d.Close()
			redisenv.CloseAll()
			os.Exit(130)
		case <-closed:
		}
	}()
	d.OnClose(func() {
		signal.Stop(sig)
		close(closed)
	})
	return d, nil
}

// settle is nil in the lab; the lab's tests set it to synctest.Wait, beside bubble, so that a
// drive session plays in their bubbles.
var settle func()
