package referee

import (
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// Error replies: what a lock node answered a command of the lock with, where it refused it. A
// lock whose commands the server refuses holds nothing it meant to, and the verdict alone would
// say only what followed ("8 orders were turned away"): the report names the command, the
// server's words and the server.

// replyErrors notes the error replies among rec's commands, the first of each command and error
// (a transaction's EXECABORT is said only where none of its commands has an error of its own).
// A NOSCRIPT that its process answers at once with the script itself (EVAL: go-redis's Script
// does so, and the server learns the script) failed nothing, and is taken back.
func (r *Referee) replyErrors(rec history.Record) {
	in := ""
	if c := r.calls[rec.Call]; c != nil {
		in = map[bool]string{true: history.CallLock, false: history.CallUnlock}[c.lock]
	}
	from := [3]int{rec.Buyer, rec.Call, rec.Node}
	if i, ok := r.noScript[from]; ok && len(rec.Cmds) == 1 && strings.EqualFold(rec.Cmds[0].Name, "eval") {
		if r.replies[i].Times--; r.replies[i].Times == 0 {
			r.replies = slices.Delete(r.replies, i, i+1)
			for k, j := range r.noScript {
				if j > i {
					r.noScript[k] = j - 1
				}
			}
		}
	}
	delete(r.noScript, from)
	own := slices.ContainsFunc(rec.Cmds, func(c history.Cmd) bool { return c.Err != "" && !execAbort(c.Err) })
	for _, c := range rec.Cmds {
		if c.Err == "" || own && execAbort(c.Err) {
			continue
		}
		name, say := strings.ToUpper(c.Name), firstLine(c.Err)
		i := slices.IndexFunc(r.replies, func(x ReplyError) bool { return x.Cmd == name && x.Err == say && x.In == in })
		if i >= 0 {
			r.replies[i].Times++
		} else {
			i = len(r.replies)
			r.replies = append(r.replies, ReplyError{Buyer: rec.Buyer, In: in, Cmd: name, Err: say, Server: rec.Server,
				Lacks: slices.ContainsFunc(rec.Lacks, func(l string) bool { return strings.EqualFold(l, name) }), Times: 1, At: rec.At})
		}
		if strings.HasPrefix(say, "NOSCRIPT") && len(rec.Cmds) == 1 {
			r.noScript[from] = i
		}
	}
}

// execAbort tells whether err is the EXECABORT a transaction gets for an error queued in it.
func execAbort(err string) bool { return strings.HasPrefix(err, "EXECABORT") }

// firstLine is err's first line, without what Redis adds after an unknown command's name (", with
// args beginning with: …"), at most 160 characters.
func firstLine(err string) string {
	err, _, _ = strings.Cut(err, "\n")
	err, _, _ = strings.Cut(err, ", with args beginning with")
	if len(err) > 160 {
		err = err[:160] + "…"
	}
	return strings.TrimSpace(err)
}

// failedByReplies tells whether the lock's error replies failed every order: some came, every
// order of a buyer ended with an error, and none was confirmed.
func (r *Referee) failedByReplies() bool {
	if len(r.replies) == 0 || r.confirmed > 0 {
		return false
	}
	n := 0
	for _, o := range r.ranked {
		if o.buyer == 0 {
			continue
		}
		if !o.ended || !o.failed {
			return false
		}
		n++
	}
	return n > 0
}

// Since names the first releases that run each command a lock may send that older servers do not
// (the command, upper case): what an error reply for an unknown command is said with. Hazard: it
// names commands, not their options (SET … IFEQ), and only those it lists.
var Since = map[string]string{
	"HEXPIRE": "Redis 7.4", "HPEXPIRE": "Redis 7.4", "HEXPIREAT": "Redis 7.4", "HPEXPIREAT": "Redis 7.4",
	"HTTL": "Redis 7.4", "HPTTL": "Redis 7.4", "HPERSIST": "Redis 7.4", "HEXPIRETIME": "Redis 7.4", "HPEXPIRETIME": "Redis 7.4",
	"HGETDEL": "Redis 8.0", "HGETEX": "Redis 8.0", "HSETEX": "Redis 8.0",
	"DELEX":   "Redis 8.4 or Valkey 9.2",
	"WAITAOF": "Redis 7.2",
	"FCALL":   "Redis 7.0", "FCALL_RO": "Redis 7.0", "FUNCTION": "Redis 7.0", "EVAL_RO": "Redis 7.0", "EVALSHA_RO": "Redis 7.0",
	"EXPIRETIME": "Redis 7.0", "PEXPIRETIME": "Redis 7.0", "LMPOP": "Redis 7.0", "ZMPOP": "Redis 7.0", "SINTERCARD": "Redis 7.0",
	"GETEX": "Redis 6.2", "GETDEL": "Redis 6.2", "COPY": "Redis 6.2", "LMOVE": "Redis 6.2", "BLMOVE": "Redis 6.2",
	"ZRANGESTORE": "Redis 6.2", "ZRANDMEMBER": "Redis 6.2", "HRANDFIELD": "Redis 6.2", "SMISMEMBER": "Redis 6.2", "ZMSCORE": "Redis 6.2",
}
