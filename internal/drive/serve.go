package drive

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// Env names the variable the lab sets when it runs the grader's TestDrive: the grader then plays
// drive sessions with the requests on its stdin (Serve).
const Env = "LOCKSTEP_DRIVE"

// Request is what a driver asks of Serve, one JSON object a line: open a session (ending the one
// under way, undo's way: the session played again from its start), play one move, or end the
// session with its report.
type Request struct {
	Open *Opening `json:"open,omitempty"`
	Move *Move    `json:"move,omitempty"`
	End  bool     `json:"end,omitempty"`
}

// Opening is a session to open: the step (its slug), how it starts, and the moves to play at once.
type Opening struct {
	Step   string `json:"step"`
	Buyers int    `json:"buyers,omitempty"`
	Stock  int    `json:"stock,omitempty"`
	Moves  []Move `json:"moves,omitempty"`
}

// Reply is Serve's answer to a Request: a frame after an opening or a move, the report after an
// end, or what went wrong (Bad: a move that cannot be played, which was not).
type Reply struct {
	Frame  *Frame          `json:"frame,omitempty"`
	Report *referee.Report `json:"report,omitempty"`
	Err    string          `json:"err,omitempty"`
	Bad    bool            `json:"bad,omitempty"`
}

// Frame is a session as it stands after a move: what each move played since the last frame said,
// the records they added (all of them, with the header, after an opening), each buyer's lane, the
// lock, and every violation the referee has announced.
type Frame struct {
	Header  *history.History `json:"header,omitempty"`
	Moves   []Move           `json:"moves"`
	Said    [][]string       `json:"said,omitempty"`
	Records []history.Record `json:"records,omitempty"`
	Lanes   []Lane           `json:"lanes"`
	Lock    string           `json:"lock"`
	Found   []Found          `json:"found,omitempty"`
	At      time.Duration    `json:"at"`
}

// Serve plays drive sessions: it reads Requests from in, one a line, and writes a Reply a line to
// out. Each session plays inside a bubble of its own (bubble: a testing/synctest.Test of the
// grader's TestDrive), settle being that bubble's synctest.Wait; the requests reach it on a
// channel made outside the bubble, so while the session waits for the next move its goroutine is
// not durably blocked, and the bubble's clock stands still however long the learner thinks. find
// is the catalog's Find (the learner's lock too, in a grader built with one). It returns when in
// ends.
func Serve(in io.Reader, out io.Writer, find func(string) (*steps.Step, error), bubble func(func()), settle func()) error {
	reqs := make(chan Request)
	bad := make(chan error, 1)
	go func() {
		defer close(reqs)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var r Request
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				bad <- fmt.Errorf("drive: a request that is not one: %v", err)
				return
			}
			reqs <- r
		}
	}()
	enc := json.NewEncoder(out)
	send := func(r Reply) { enc.Encode(r) }
	var open *Opening
	for {
		if open == nil {
			r, ok := <-reqs
			if !ok {
				select {
				case err := <-bad:
					return err
				default:
					return nil
				}
			}
			switch {
			case r.Open != nil:
				open = r.Open
			case r.End:
				send(Reply{Err: "no session to end"})
				continue
			default:
				send(Reply{Err: "open a session first", Bad: true})
				continue
			}
		}
		op := open
		open = nil
		bubble(func() { open = drive(op, reqs, send, find, settle) })
	}
}

// drive plays the session op opens, in its bubble, until it ends: with an end request (the report
// is sent), with another opening (returned: it is the next session), or when the requests end.
func drive(op *Opening, reqs <-chan Request, send func(Reply), find func(string) (*steps.Step, error), settle func()) *Opening {
	st, err := find(op.Step)
	if err != nil {
		send(Reply{Err: err.Error(), Bad: true})
		return nil
	}
	s, err := Open(Config{Step: st, Buyers: op.Buyers, Stock: op.Stock}, settle)
	if err != nil {
		send(Reply{Err: err.Error()})
		return nil
	}
	h := s.Header()
	f := &Frame{Header: &h}
	for _, m := range op.Moves {
		said, err := s.Play(m)
		if err != nil {
			s.Close()
			send(Reply{Err: err.Error(), Bad: errors.Is(err, ErrBadMove)})
			return nil
		}
		f.Said = append(f.Said, said)
	}
	send(Reply{Frame: s.frame(f)})
	for r := range reqs {
		switch {
		case r.Open != nil:
			s.Close()
			return r.Open
		case r.End:
			send(Reply{Report: s.End()})
			return nil
		case r.Move != nil:
			said, err := s.Play(*r.Move)
			if err != nil {
				send(Reply{Err: err.Error(), Bad: errors.Is(err, ErrBadMove)})
				continue
			}
			send(Reply{Frame: s.frame(&Frame{Said: [][]string{said}})})
		}
	}
	s.Close()
	return nil
}

// frame fills f with the session as it stands.
func (s *Session) frame(f *Frame) *Frame {
	f.Moves = s.Moves()
	f.Records = s.Records()
	f.Lanes = s.Lanes()
	f.Lock = s.Lock()
	f.Found = s.Found()
	f.At = s.a.Since()
	return f
}
