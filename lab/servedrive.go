package main

import (
	"io"
	"sync"

	"github.com/lockstep-lab/lockstep/internal/drive"
)

// roomDriver is drive mode for lab serve's room: one grader for every learner, built (or found
// packed beside a downloaded lab) when the first learner presses m, and a drive session of its
// own for each learner who does (a grader process each, ended when that learner leaves drive
// mode or the room). Hazard: the first m of a lab built from source waits for the grader's build
// (a minute or more on a fresh machine), and every learner's m behind it waits for the same build.
type roomDriver struct {
	mu sync.Mutex
	pl *player
}

// open is tui.Options.Driver for one learner's lab.
func (r *roomDriver) open() (*drive.Driver, error) {
	r.mu.Lock()
	if r.pl == nil {
		pl, err := newPlayer("embedded", io.Discard)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		r.pl = pl
	}
	pl := r.pl
	r.mu.Unlock()
	return openDriver(pl)
}

// close removes the room's grader, once every session has ended.
func (r *roomDriver) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pl != nil {
		r.pl.close()
		r.pl = nil
	}
}
