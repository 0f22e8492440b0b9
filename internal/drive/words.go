package drive

import (
	"fmt"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
)

// speaker says the commands at the gate in words, as a learner reads them: the command as it
// leaves (the run's prefix off its keys, a lock's random token as whose it is), then what it asks
// ("GET lock:product:1001 — is the lock still mine?"). It names each token by the buyer that first
// sent it, so the same moves say the same words.
type speaker struct {
	tokens map[string]string // a token → "buyer 2's token"
	count  map[int]int       // tokens named per buyer
	nodes  []string          // the lock nodes' names, where there are several
}

func newSpeaker() *speaker { return &speaker{tokens: map[string]string{}, count: map[int]int{}} }

// command says c in words.
func (s *speaker) command(c arena.Held) string {
	if c.Node < 0 {
		return stockWords(c.Cmds)
	}
	var parts []string
	for _, cmd := range c.Cmds {
		parts = append(parts, s.cmd(c.Buyer, cmd))
	}
	out := strings.Join(parts, " + ")
	if len(s.nodes) > 1 && c.Node < len(s.nodes) {
		out += " on " + s.nodes[c.Node]
	}
	if why := gloss(c); why != "" {
		out += " — " + why
	}
	return out
}

// cmd says one command of buyer n: its name, then its arguments.
func (s *speaker) cmd(n int, c history.Cmd) string {
	name := strings.ToUpper(c.Name)
	args := c.Args
	words := []string{name}
	if strings.HasPrefix(name, "EVALSHA") || strings.HasPrefix(name, "EVAL") {
		words = append(words, "‹script›")
		if len(args) > 1 {
			args = args[2:] // the SHA (or body) and the count of keys
		} else {
			args = nil
		}
	}
	for _, a := range args {
		words = append(words, s.arg(n, a))
	}
	return strings.Join(words, " ")
}

// arg is an argument as the learner reads it: a token by whose it is.
func (s *speaker) arg(n int, a string) string {
	if !isToken(a) {
		return a
	}
	if w, ok := s.tokens[a]; ok {
		return w
	}
	s.count[n]++
	w := fmt.Sprintf("‹buyer %d's token›", n)
	if s.count[n] > 1 {
		w = fmt.Sprintf("‹buyer %d's token %d›", n, s.count[n])
	}
	s.tokens[a] = w
	return w
}

// isToken reports whether a looks like a lock's random owner token: long, no key (no colon), not
// a number.
func isToken(a string) bool {
	if len(a) < 16 || strings.ContainsAny(a, ": ") {
		return false
	}
	digits := true
	for _, r := range a {
		if r < '0' || r > '9' {
			digits = false
		}
	}
	return !digits
}

// stockWords says a command to the inventory: a read, a write, a fenced one, a sale.
func stockWords(cmds []history.Cmd) string {
	for _, c := range cmds {
		switch strings.ToLower(c.Name) {
		case "get":
			return "GET stock — read the stock"
		case "set":
			if len(c.Args) > 1 {
				return "SET stock " + c.Args[1] + " — write the stock back, one unit less"
			}
		case "evalsha", "eval":
			// fence.lua: KEYS stock, seq, fence; ARGV token [, n]. sell.lua: KEYS stock, seq.
			if len(c.Args) >= 2 && c.Args[1] == "3" && len(c.Args) >= 6 {
				tok := c.Args[5]
				if len(c.Args) >= 7 {
					return fmt.Sprintf("SET stock %s, fenced with token %s — write the stock back, if no newer token was seen", c.Args[6], tok)
				}
				return fmt.Sprintf("GET stock, fenced with token %s — read the stock, if no newer token was seen", tok)
			}
			return "sell one unit, if one is left — one atomic script on the inventory"
		}
	}
	return "a command to the inventory"
}

// gloss is what a lock command asks, by the call it is sent in.
func gloss(c arena.Held) string {
	if len(c.Cmds) == 0 {
		return ""
	}
	name := strings.ToLower(c.Cmds[0].Name)
	script := strings.HasPrefix(name, "eval") || strings.HasPrefix(name, "fcall")
	nx := name == "setnx"
	for _, a := range c.Cmds[0].Args {
		if strings.EqualFold(a, "nx") {
			nx = true
		}
	}
	switch c.In {
	case history.CallLock:
		switch {
		case nx:
			return "take the lock if it is free"
		case script:
			return "the lock script: take the lock if it is free (or count one more hold)"
		case name == "get":
			return "whose is the lock, and is its time up?"
		case name == "getset":
			return "take the lock over, if nobody did first"
		case name == "pexpire" || name == "expire":
			return "give the lock its lease"
		case name == "incr":
			return "draw a fencing token"
		}
		return "part of Lock"
	case history.CallUnlock:
		switch {
		case name == "get":
			return "is the lock still mine?"
		case name == "del" || name == "unlink":
			return "delete the lock"
		case name == "delex":
			return "delete the lock if it still holds my token"
		case script:
			return "the unlock script: give the lock back if it is mine"
		case name == "publish":
			return "tell the waiters the lock is free"
		}
		return "part of Unlock"
	}
	switch {
	case name == "pexpire" || name == "expire":
		return "renew the lease (the watchdog)"
	case script:
		return "renew the lease (the watchdog or lease guard)"
	}
	return ""
}
