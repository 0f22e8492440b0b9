package drive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// Driver is the lab's end of a drive session: it sends requests to a Serve (in the grader, over
// its stdin and stdout, or in this process for a test) and reads its replies. It is not safe for
// concurrent use.
type Driver struct {
	w     io.Writer
	lines chan []byte
	stop  func() error
	after []func()
	// Patience is how long a reply may take, on the wall clock (0: a minute). Hazard: a lock that
	// holds a sync.Mutex across a command while another goroutine of its process waits for it stops
	// the bubble's clock for good: that move never answers, and only this bound says so.
	Patience time.Duration
}

// NewDriver talks to a Serve that reads w and writes r; stop ends it (the grader's process, or
// the pipes of an in-process Serve). Lines of r that are no reply (a test binary's PASS) are
// skipped.
func NewDriver(w io.Writer, r io.Reader, stop func() error) *Driver {
	d := &Driver{w: w, lines: make(chan []byte, 16), stop: stop}
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<28)
		for sc.Scan() {
			if b := sc.Bytes(); bytes.HasPrefix(b, []byte("{")) {
				d.lines <- bytes.Clone(b)
			}
		}
	}()
	return d
}

// Local is a Driver whose Serve runs in this process, each session in bubble with settle (a
// test's synctest.Test and synctest.Wait): the lab's tests drive without building a grader.
func Local(find func(string) (*steps.Step, error), bubble func(func()), settle func()) *Driver {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(inR, outW, find, bubble, settle)
		outW.Close()
	}()
	return NewDriver(inW, outR, func() error {
		inW.Close()
		<-done
		return nil
	})
}

// ErrStopped is a session that stopped answering.
var ErrStopped = errors.New("the drive session stopped answering")

// ask sends r and reads the reply.
func (d *Driver) ask(r Request) (Reply, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return Reply{}, err
	}
	if _, err := d.w.Write(append(b, '\n')); err != nil {
		return Reply{}, fmt.Errorf("%w: %v", ErrStopped, err)
	}
	patience := d.Patience
	if patience <= 0 {
		patience = time.Minute
	}
	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case line, ok := <-d.lines:
		if !ok {
			return Reply{}, fmt.Errorf("%w: the grader ended", ErrStopped)
		}
		var rep Reply
		if err := json.Unmarshal(line, &rep); err != nil {
			return Reply{}, fmt.Errorf("%w: %v", ErrStopped, err)
		}
		return rep, nil
	case <-t.C:
		return Reply{}, fmt.Errorf("%w: no answer in %s — the lock may hold a sync.Mutex across a command while another goroutine waits for it, which stops virtual time", ErrStopped, patience)
	}
}

// frame is the frame of a reply, or its error (wrapping ErrBadMove for a move not played).
func frame(r Reply, err error) (*Frame, error) {
	switch {
	case err != nil:
		return nil, err
	case r.Err != "" && r.Bad:
		return nil, &badMove{r.Err}
	case r.Err != "":
		return nil, errors.New(r.Err)
	case r.Frame == nil:
		return nil, fmt.Errorf("%w: a reply with no frame", ErrStopped)
	}
	return r.Frame, nil
}

// badMove is a move the session refused, in its words.
type badMove struct{ msg string }

func (e *badMove) Error() string { return e.msg }
func (e *badMove) Unwrap() error { return ErrBadMove }

// Open opens a session (ending the one under way) and plays its moves.
func (d *Driver) Open(op Opening) (*Frame, error) { return frame(d.ask(Request{Open: &op})) }

// Move plays m.
func (d *Driver) Move(m Move) (*Frame, error) { return frame(d.ask(Request{Move: &m})) }

// End ends the session and returns its report.
func (d *Driver) End() (*referee.Report, error) {
	r, err := d.ask(Request{End: true})
	switch {
	case err != nil:
		return nil, err
	case r.Err != "":
		return nil, errors.New(r.Err)
	case r.Report == nil:
		return nil, fmt.Errorf("%w: a reply with no report", ErrStopped)
	}
	return r.Report, nil
}

// Close ends the driver and what serves it, then what OnClose added.
func (d *Driver) Close() error {
	err := d.stop()
	for _, f := range d.after {
		f()
	}
	return err
}

// OnClose has Close run f once what serves the driver has ended (the grader's build removed).
func (d *Driver) OnClose(f func()) { d.after = append(d.after, f) }
