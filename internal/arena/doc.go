// Package arena is lockstep's stage: it runs buyers as processes (each with its own Redis
// clients) against one step's lock and order handler, plays faults into them through their Redis
// hooks and the shop's work (each fault one file, fault_*.go; Moves lists them), records everything it observes as a
// history.History, and hands each record to a referee.Referee as it comes, so that the lab can
// draw a run while it is played. It knows nothing of any particular step or scenario
// (internal/scenario scripts those), and imports nothing of lab/: the terminal lab, the grader and
// the explorer all drive it. Hazard: in virtual time a run's verdict depends on the order the
// arena records things in; anything that records from two goroutines at one instant must say
// which comes first (see crash and gate.go).
package arena
