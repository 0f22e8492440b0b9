package redisenv

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Refusal is the error a command gets from the URL backend's guard (urlNode.Hook) instead of
// being sent: it would read or write keys outside the run's prefix, or act beyond the keys it
// names, on a server that is not the lab's. Nothing of it reached the server. A pipeline or
// transaction with one such command is refused whole, every command of it with the same
// Refusal. Find it with errors.As.
type Refusal struct {
	// Command is the refused command as a person writes it: "FLUSHDB", "SCRIPT FLUSH", "DEL".
	Command string
	// Why says what it would have done: "it deletes every key of the database".
	Why string
	// Prefix is the run's prefix, under which alone keys may be touched.
	Prefix string
	// Batch is the number of commands of the pipeline or transaction refused with it (MULTI and
	// EXEC not counted); 0 for a command sent alone.
	Batch int
}

// Error is one line: what was refused and why.
func (r *Refusal) Error() string {
	head := "refused " + r.Command
	if r.Batch > 0 {
		head = fmt.Sprintf("refused a batch of %d commands for its %s", r.Batch, r.Command)
	}
	return fmt.Sprintf("%s: %s, and this server is not the lab's (only keys under %s may be touched)", head, r.Why, r.Prefix)
}

// guard is the URL backend's hook on every buyer's client: before a command leaves, it checks
// that every key the command names is under the run's prefix, finding the keys where the server
// itself would (its own key specifications, read once with COMMAND when the backend opens), and
// that the command's effect is confined to the keys it names. What fails is refused with a
// Refusal and never sent. A script is checked by its keys (numkeys) and its body: one that calls
// a command the guard refuses (FLUSHDB, KEYS…) is refused too; an EVALSHA of a body the guard
// has not seen (through EVAL or SCRIPT LOAD) is answered NOSCRIPT, as a server without it would,
// and go-redis's Script.Run then sends the body with EVAL.
//
// Hazard: it sees names, not intentions. It cannot see a script that builds a key name (or a
// command name) inside Lua, or reads one from ARGV: a script's keys are the ones it declares. A
// function (FCALL) is checked by its keys only: its body is on the server. A MULTI sent as
// separate commands, not as one transaction pipeline, is checked command by command. A command
// renamed on the server (rename-command) is judged by the name it is sent under. Channels are
// not keys: a PUBLISH or SUBSCRIBE on any channel goes through. And it guards
// only the clients it is added to: a Locker that makes its own Redis client bypasses it, which
// on a server the lab does not own nothing else can stop.
type guard struct {
	prefix string
	db     int
	cmds   map[string]*cmdKeys // by lower-case name; a subcommand as "config|get"

	mu      sync.Mutex
	scripts map[string]string // every script body seen (EVAL, SCRIPT LOAD), by lower-case SHA1
	refused []Refusal         // every refusal so far, in order
}

// cmdKeys is where a command's keys are, from the server's COMMAND reply.
type cmdKeys struct {
	subs  bool      // it is a container: its subcommands have specs of their own
	specs []keySpec // its key specifications
}

// keySpec is one key specification of Redis 7's COMMAND reply: where the search for keys begins
// (an index, or after a keyword) and how keys are found from there (a range, or a count).
type keySpec struct {
	notKey  bool   // a channel, not a key (SPUBLISH)
	begin   string // "index", "keyword" or "unknown"
	index   int    // begin "index": the first key's position
	keyword string // begin "keyword": the keys follow it…
	from    int    // …searched for from this position (negative: from the end, backwards)
	find    string // "range", "keynum" or "unknown"
	lastkey int    // find "range": the last key, relative to the first (negative: from the end)
	step    int    // find "range" and "keynum": the distance between keys
	limit   int    // find "range" with lastkey -1: only 1/limit of the remaining arguments
	numIdx  int    // find "keynum": where the count is, relative to the begin
	first   int    // find "keynum": where the first key is, relative to the begin
}

// readCommands reads the server's command table with COMMAND on c, which must speak RESP2.
func readCommands(ctx context.Context, c *redis.Client) (map[string]*cmdKeys, error) {
	reply, err := c.Do(ctx, "COMMAND").Slice()
	if err != nil {
		return nil, err
	}
	out := map[string]*cmdKeys{}
	var add func(entry any)
	add = func(entry any) {
		e, ok := entry.([]any)
		if !ok || len(e) < 6 {
			return
		}
		name := strings.ToLower(fmt.Sprint(e[0]))
		ck := &cmdKeys{}
		if len(e) > 8 {
			specs, _ := e[8].([]any)
			for _, s := range specs {
				ck.specs = append(ck.specs, parseKeySpec(s))
			}
		} else {
			// A server before Redis 7 gives only the first key, the last and the step.
			first, last, step := toInt(e[3]), toInt(e[4]), toInt(e[5])
			if first > 0 {
				ck.specs = []keySpec{{begin: "index", index: first, find: "range", lastkey: last - first, step: step}}
				if last < 0 {
					ck.specs[0].lastkey = last
				}
			}
		}
		if len(e) > 9 {
			subs, _ := e[9].([]any)
			ck.subs = len(subs) > 0
			for _, s := range subs {
				add(s)
			}
		}
		out[name] = ck
	}
	for _, entry := range reply {
		add(entry)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("COMMAND answered no command")
	}
	return out, nil
}

// parseKeySpec reads one key specification (RESP2: a flat list of names and values).
func parseKeySpec(s any) keySpec {
	f := pairs(s)
	ks := keySpec{begin: "unknown", find: "unknown"}
	if flags, ok := f["flags"].([]any); ok {
		for _, fl := range flags {
			if strings.EqualFold(fmt.Sprint(fl), "not_key") {
				ks.notKey = true
			}
		}
	}
	bs := pairs(f["begin_search"])
	bspec := pairs(bs["spec"])
	switch fmt.Sprint(bs["type"]) {
	case "index":
		ks.begin, ks.index = "index", toInt(bspec["index"])
	case "keyword":
		ks.begin, ks.keyword, ks.from = "keyword", fmt.Sprint(bspec["keyword"]), toInt(bspec["startfrom"])
	}
	fk := pairs(f["find_keys"])
	fspec := pairs(fk["spec"])
	switch fmt.Sprint(fk["type"]) {
	case "range":
		ks.find, ks.lastkey, ks.step, ks.limit = "range", toInt(fspec["lastkey"]), toInt(fspec["keystep"]), toInt(fspec["limit"])
	case "keynum":
		ks.find, ks.numIdx, ks.first, ks.step = "keynum", toInt(fspec["keynumidx"]), toInt(fspec["firstkey"]), toInt(fspec["keystep"])
	}
	return ks
}

// pairs reads a flat list of names and values.
func pairs(v any) map[string]any {
	out := map[string]any{}
	if l, ok := v.([]any); ok {
		for i := 0; i+1 < len(l); i += 2 {
			out[fmt.Sprint(l[i])] = l[i+1]
		}
	}
	return out
}

func toInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return 0
}

// keys finds the positions of a command's keys in argv as the server does (getKeysUsingKeySpecs):
// ok is false where a specification cannot be followed without running the command (its type is
// unknown).
func (ck *cmdKeys) keys(argv []string) (pos []int, ok bool) {
	argc := len(argv)
	for _, s := range ck.specs {
		if s.notKey {
			continue
		}
		var first int
		switch s.begin {
		case "index":
			first = s.index
		case "keyword":
			start, end := s.from, argc-1
			if s.from <= 0 {
				start, end = argc+s.from, 0
			}
			for i := start; i >= 0 && i < argc; {
				if strings.EqualFold(argv[i], s.keyword) {
					first = i + 1
					break
				}
				if i == end {
					break
				}
				if start <= end {
					i++
				} else {
					i--
				}
			}
			if first == 0 {
				continue // the keyword is not there: no keys of this kind
			}
		default:
			return nil, false
		}
		var last, step int
		switch s.find {
		case "range":
			switch {
			case s.lastkey >= 0:
				last = first + s.lastkey
			case s.limit == 0:
				last = argc + s.lastkey
			default:
				last = first + ((argc-first)/s.limit + s.lastkey)
			}
			step = s.step
		case "keynum":
			if first+s.numIdx >= argc {
				continue // the server answers a syntax error
			}
			n, err := strconv.Atoi(argv[first+s.numIdx])
			if err != nil || n < 0 {
				continue
			}
			step = s.step
			first += s.first
			last = first + n - 1
		default:
			return nil, false
		}
		for i := first; i <= last && i < argc; i += max(step, 1) {
			pos = append(pos, i)
		}
	}
	return pos, true
}

// newGuard is the guard of a run under prefix on database db of a server whose commands are cmds.
func newGuard(prefix string, db int, cmds map[string]*cmdKeys) *guard {
	return &guard{prefix: prefix, db: db, cmds: cmds, scripts: map[string]string{}}
}

// args is a command's arguments as the server reads them: strings.
func args(cmd redis.Cmder) []string {
	raw := cmd.Args()
	out := make([]string, len(raw))
	for i, a := range raw {
		switch x := a.(type) {
		case string:
			out[i] = x
		case []byte:
			out[i] = string(x)
		default:
			out[i] = fmt.Sprint(x)
		}
	}
	return out
}

// wide are the commands whose effect reaches beyond the keys they name, whatever their
// arguments, by name or "name|subcommand", with what they do.
var wide = map[string]string{
	"flushdb":          "it deletes every key of the database",
	"flushall":         "it deletes every key of every database",
	"swapdb":           "it swaps two whole databases",
	"move":             "it moves a key into another database",
	"randomkey":        "it reads the name of a random key of the database",
	"migrate":          "it moves keys to another server",
	"config":           "it reads or changes the server's configuration",
	"shutdown":         "it stops the server",
	"debug":            "it can crash, reload or alter the whole server",
	"save":             "it writes the whole dataset to disk",
	"bgsave":           "it writes the whole dataset to disk",
	"bgrewriteaof":     "it rewrites the server's append-only file",
	"replicaof":        "it changes the server's replication, and can replace every key",
	"slaveof":          "it changes the server's replication, and can replace every key",
	"failover":         "it hands the server's role to a replica",
	"sync":             "it reads the whole dataset, as a replica does",
	"psync":            "it reads the whole dataset, as a replica does",
	"monitor":          "it reads every command every client sends",
	"module":           "it loads or unloads server modules",
	"script|flush":     "it empties the server's script cache, every client's scripts",
	"script|kill":      "it kills a script another client may be running",
	"function|flush":   "it deletes every function library of the server",
	"function|delete":  "it deletes a function library of the server",
	"function|restore": "it replaces the server's function libraries",
	"function|load":    "it adds a function library to the whole server, which the lab does not remove",
	"function|kill":    "it kills a function another client may be running",
	"client|kill":      "it closes other clients' connections",
	"client|pause":     "it pauses every client of the server",
	"client|unpause":   "it ends a pause of every client of the server",
	"client|unblock":   "it interrupts another client's blocking command",
	"acl|setuser":      "it changes the server's users",
	"acl|deluser":      "it deletes users of the server",
	"acl|load":         "it reloads the server's users",
	"acl|save":         "it rewrites the server's users file",
}

// scriptCalls are the ways a script calls a command: the name is the call's first argument.
var scriptCalls = []string{"redis.call", "redis.pcall", "server.call", "server.pcall"}

// refuse says why the guard refuses argv, or nil; unseen is set for an EVALSHA whose body the
// guard has not seen.
func (g *guard) refuse(argv []string) (r *Refusal, unseen bool) {
	if len(argv) == 0 {
		return nil, false
	}
	name := strings.ToLower(argv[0])
	full := name
	ck := g.cmds[name]
	if ck != nil && ck.subs && len(argv) > 1 {
		full = name + "|" + strings.ToLower(argv[1])
		if sub := g.cmds[full]; sub != nil {
			ck = sub
		}
	}
	no := func(why string, a ...any) (*Refusal, bool) {
		shown := strings.ToUpper(name)
		if full != name {
			shown += " " + strings.ToUpper(argv[1])
		}
		return &Refusal{Command: shown, Why: fmt.Sprintf(why, a...), Prefix: g.prefix}, false
	}
	if why, ok := wide[full]; ok {
		return no("%s", why)
	}
	if why, ok := wide[name]; ok {
		return no("%s", why)
	}
	switch full {
	case "acl|log":
		if len(argv) > 2 && strings.EqualFold(argv[2], "reset") {
			return no("it empties the server's security log")
		}
	case "select":
		if len(argv) > 1 && argv[1] != strconv.Itoa(g.db) {
			return no("it switches to database %s, whose keys are all someone else's", argv[1])
		}
	case "keys":
		if len(argv) > 1 && !g.confined(argv[1]) {
			return no("its pattern %q is not confined to the run's prefix: it reads other keys' names", argv[1])
		}
	case "scan":
		match := ""
		for i := 2; i+1 < len(argv); i++ {
			if strings.EqualFold(argv[i], "match") {
				match = argv[i+1]
			}
		}
		if match == "" {
			return no("it lists every key name of the database (give it MATCH under the run's prefix)")
		}
		if !g.confined(match) {
			return no("its pattern %q is not confined to the run's prefix: it reads other keys' names", match)
		}
	case "copy":
		for i := 3; i+1 < len(argv); i++ {
			if strings.EqualFold(argv[i], "db") && argv[i+1] != strconv.Itoa(g.db) {
				return no("it copies a key into database %s", argv[i+1])
			}
		}
	case "sort", "sort_ro":
		for i := 2; i < len(argv); i++ {
			switch strings.ToLower(argv[i]) {
			case "by", "get":
				if i+1 < len(argv) {
					p := argv[i+1]
					// GET # is the element itself; a BY pattern without * sorts nothing.
					reads := p != "#" && (strings.EqualFold(argv[i], "get") || strings.Contains(p, "*"))
					if reads && !g.confined(p) {
						return no("its %s pattern %q reads keys outside the run's prefix", strings.ToUpper(argv[i]), p)
					}
				}
				i++
			case "store":
				if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], g.prefix) {
					return no("it names the key %q, outside the run's prefix", argv[i+1])
				}
				i++
			case "limit":
				i += 2
			}
		}
		if len(argv) > 1 && !strings.HasPrefix(argv[1], g.prefix) {
			return no("it names the key %q, outside the run's prefix", argv[1])
		}
		return nil, false // its specs of unknown type are the patterns and STORE, checked above
	case "eval", "eval_ro":
		if len(argv) > 1 {
			g.remember(argv[1])
			if called, why := g.scriptCalls(argv[1]); called != "" {
				return no("its script calls %s: %s", called, why)
			}
		}
	case "evalsha", "evalsha_ro":
		if len(argv) > 1 {
			body, seen := g.script(argv[1])
			if !seen {
				return nil, true
			}
			if called, why := g.scriptCalls(body); called != "" {
				return no("its script calls %s: %s", called, why)
			}
		}
	case "script|load":
		if len(argv) > 2 {
			g.remember(argv[2])
		}
	}
	if ck == nil {
		return nil, false // the server does not know it, and will say so
	}
	pos, ok := ck.keys(argv)
	if !ok {
		return no("the guard cannot tell which keys it touches")
	}
	for _, p := range pos {
		if !strings.HasPrefix(argv[p], g.prefix) {
			return no("it names the key %q, outside the run's prefix", argv[p])
		}
	}
	return nil, false
}

// note keeps r for Refusals.
func (g *guard) note(r *Refusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refused = append(g.refused, *r)
}

// refusals is every refusal so far, in order.
func (g *guard) refusals() []Refusal {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Refusal(nil), g.refused...)
}

// confined reports whether every key a glob pattern matches is under the prefix: its literal
// beginning, up to the first wildcard, starts with the prefix.
func (g *guard) confined(pattern string) bool {
	var lit strings.Builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c == '\\' && i+1 < len(pattern) {
			i++
			lit.WriteByte(pattern[i])
			continue
		}
		if c == '*' || c == '?' || c == '[' {
			break
		}
		lit.WriteByte(c)
	}
	return strings.HasPrefix(lit.String(), g.prefix)
}

// remember keeps a script body by its SHA1, for a later EVALSHA.
func (g *guard) remember(body string) {
	sum := sha1.Sum([]byte(body))
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scripts[hex.EncodeToString(sum[:])] = body
}

// script is the body of the script whose SHA1 is sha, if the guard has seen it.
func (g *guard) script(sha string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	body, ok := g.scripts[strings.ToLower(sha)]
	return body, ok
}

// scriptCalls names a command a script's body calls by a literal name (redis.call('FLUSHDB'))
// that the guard refuses whatever its arguments, or that reads keys by a pattern (KEYS, SCAN,
// SORT, SELECT: a script's arguments to them are not seen), and what it does; "" if none.
func (g *guard) scriptCalls(body string) (string, string) {
	lower := strings.ToLower(body)
	for _, call := range scriptCalls {
		for at := 0; ; {
			i := strings.Index(lower[at:], call)
			if i < 0 {
				break
			}
			at += i + len(call)
			name, ok := firstLiteral(body[at:])
			if !ok {
				continue
			}
			n := strings.ToLower(name)
			if why, ok := wide[n]; ok {
				return strings.ToUpper(n), why
			}
			switch n {
			case "keys", "scan":
				return strings.ToUpper(n), "it reads key names by a pattern the guard cannot see"
			case "select":
				return "SELECT", "it switches to another database"
			case "sort", "sort_ro":
				return strings.ToUpper(n), "it can read keys by a pattern the guard cannot see"
			case "copy":
				return "COPY", "it can copy a key into another database"
			}
		}
	}
	return "", ""
}

// firstLiteral reads, after a call's name, "(" and a Lua string literal ('…', "…" or [[…]]),
// and returns the literal.
func firstLiteral(s string) (string, bool) {
	s = strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(s, "(") {
		return "", false
	}
	s = strings.TrimLeft(s[1:], " \t\r\n")
	if s == "" {
		return "", false
	}
	switch q := s[0]; q {
	case '\'', '"':
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return "", false
		}
		return s[1 : 1+end], true
	case '[':
		rest := strings.TrimLeft(s[1:], "=")
		level := len(s[1:]) - len(rest)
		if !strings.HasPrefix(rest, "[") {
			return "", false
		}
		closing := "]" + strings.Repeat("=", level) + "]"
		end := strings.Index(rest[1:], closing)
		if end < 0 {
			return "", false
		}
		return rest[1 : 1+end], true
	}
	return "", false
}

// DialHook lets connections through.
func (g *guard) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook refuses a command the guard refuses; an EVALSHA of a body it has not seen is
// answered NOSCRIPT.
func (g *guard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r, unseen := g.refuse(args(cmd))
		if r != nil {
			g.note(r)
			cmd.SetErr(r)
			return r
		}
		if unseen {
			cmd.SetErr(redis.ErrNoScript)
			return redis.ErrNoScript
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook refuses a whole pipeline or transaction with one command the guard
// refuses, or an EVALSHA of a body it has not seen: a batch cannot be sent in part.
func (g *guard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, cmd := range cmds {
			if name := cmd.Name(); name != "multi" && name != "exec" {
				n++
			}
		}
		for _, cmd := range cmds {
			argv := args(cmd)
			r, unseen := g.refuse(argv)
			if unseen {
				r = &Refusal{Command: strings.ToUpper(argv[0]), Prefix: g.prefix,
					Why: "it runs a script by its SHA1 whose body the guard has not seen (send it with EVAL or SCRIPT LOAD first)"}
			}
			if r != nil {
				r.Batch = n
				g.note(r)
				for _, c := range cmds {
					c.SetErr(r)
				}
				return r
			}
		}
		return next(ctx, cmds)
	}
}
