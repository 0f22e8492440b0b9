package arena

import (
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// payload strips the MULTI and EXEC that go-redis wraps around a transaction's commands.
func payload(cmds []redis.Cmder) []redis.Cmder {
	if n := len(cmds); n >= 2 && cmds[0].Name() == "multi" && cmds[n-1].Name() == "exec" {
		return cmds[1 : n-1]
	}
	return cmds
}

// touches reports whether any argument of cmd is key.
func touches(cmd redis.Cmder, key string) bool {
	for _, a := range cmd.Args()[1:] {
		if s, ok := a.(string); ok && s == key {
			return true
		}
	}
	return false
}

// keyless lists the commands that may change keys they do not name: scripts and functions (a
// script may compute its keys), and commands that act on a whole database.
var keyless = map[string]bool{
	"eval": true, "evalsha": true, "fcall": true,
	"flushdb": true, "flushall": true, "swapdb": true,
}

// cannotDelete lists the commands that cannot delete or replace a value, even one they name:
// reads, commands that only create (SET NX and its kin are checked apart), and connection,
// pub/sub and transaction control.
var cannotDelete = map[string]bool{
	"get": true, "exists": true, "ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true,
	"type": true, "dump": true, "strlen": true, "getrange": true, "mget": true, "substr": true,
	"hget": true, "hgetall": true, "hexists": true, "hlen": true, "hkeys": true, "hvals": true,
	"hmget": true, "hstrlen": true, "hrandfield": true, "hscan": true,
	"lrange": true, "llen": true, "lindex": true, "lpos": true,
	"smembers": true, "sismember": true, "smismember": true, "scard": true, "srandmember": true, "sscan": true,
	"zrange": true, "zrangebyscore": true, "zrevrange": true, "zscore": true, "zrank": true, "zrevrank": true,
	"zcard": true, "zcount": true, "zmscore": true, "zscan": true,
	"xrange": true, "xrevrange": true, "xlen": true, "xinfo": true,
	"scan": true, "keys": true, "randomkey": true, "dbsize": true, "object": true, "memory": true,
	"ping": true, "echo": true, "time": true, "info": true, "client": true, "hello": true, "auth": true,
	"select": true, "command": true, "config": true, "wait": true, "waitaof": true,
	"publish": true, "spublish": true, "pubsub": true, "subscribe": true, "unsubscribe": true,
	"psubscribe": true, "punsubscribe": true, "ssubscribe": true, "sunsubscribe": true,
	"watch": true, "unwatch": true, "multi": true, "exec": true, "discard": true,
	"eval_ro": true, "evalsha_ro": true, "fcall_ro": true, "script": true,
	"setnx": true, "hsetnx": true, "msetnx": true,
}

// mayDelete reports whether cmd could delete or replace the value of key: it names key (or may
// change keys it does not name) and is not a command that cannot. Hazard: it errs on the side of
// "may", so an unknown command can be blamed; the referee only blames what its watcher saw happen.
func mayDelete(cmd redis.Cmder, key string) bool {
	if !keyless[cmd.Name()] && !touches(cmd, key) {
		return false
	}
	return deleting(cmd)
}

// namesAny reports whether any of cmds names one of keys (without the prefix), or may change keys
// it does not name (a script, FLUSHDB: keyless) while there are keys: what may touch them.
func namesAny(cmds []redis.Cmder, prefix string, keys []string) bool {
	for _, c := range cmds {
		if keyless[c.Name()] && len(keys) > 0 {
			return true
		}
		for _, k := range keys {
			if touches(c, prefix+k) {
				return true
			}
		}
	}
	return false
}

// mayDeleteAny reports whether any of cmds could delete or replace one of keys.
func mayDeleteAny(cmds []redis.Cmder, prefix string, keys []string) bool {
	for _, c := range cmds {
		for _, k := range keys {
			if mayDelete(c, prefix+k) {
				return true
			}
		}
	}
	return false
}

// blocking reports whether cmd can block the connection waiting for something to happen, and
// what it does then may change keys (a list's pop): it must not hold a lock node's turn, or every
// other process would wait for it, and the referee cannot see what it did. WAIT and WAITAOF block
// too, but change no key (changeNothing).
func blocking(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin", "bzpopmax", "bzmpop":
		return true
	case "xread", "xreadgroup":
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.EqualFold(s, "block") {
				return true
			}
		}
	}
	return false
}

// changeNothing reports whether cmds are all commands that wait for replicas and change no key
// (WAIT, WAITAOF), on every backend: a real server's, and the embedded node's own answer to WAIT
// (redisenv's feedHook).
func changeNothing(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if n := c.Name(); n != "wait" && n != "waitaof" {
			return false
		}
	}
	return len(cmds) > 0
}

func intArg(a any) (int64, bool) {
	switch v := a.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// deleting reports whether cmd could delete or replace some value: a command that writes (or a
// script), not SET NX and its kin, not a positive expiry.
func deleting(cmd redis.Cmder) bool {
	if cannotDelete[cmd.Name()] {
		return false
	}
	args := cmd.Args()
	switch cmd.Name() {
	case "set":
		// SET … NX only creates; with XX, GET or neither it can replace.
		for _, a := range args[3:] {
			if s, ok := a.(string); ok && strings.EqualFold(s, "nx") {
				return false
			}
		}
	case "expire", "pexpire":
		// A positive timeout only moves the expiry; zero or less deletes the key.
		if len(args) >= 3 {
			if n, ok := intArg(args[2]); ok && n > 0 {
				return false
			}
		}
	}
	return true
}

// plainDeletes reports whether every one of cmds that may delete is a DEL, UNLINK or GETDEL:
// commands whose reply says whether they deleted something.
func plainDeletes(cmds []redis.Cmder) bool {
	for _, c := range payload(cmds) {
		if !deleting(c) {
			continue
		}
		switch c.Name() {
		case "del", "unlink", "getdel":
		default:
			return false
		}
	}
	return true
}

// replyZero reports whether every one of cmds that may delete answered the integer 0 (DEL, UNLINK
// and most compare-and-delete scripts when they deleted nothing) or nil (GETDEL of nothing).
func replyZero(cmds []redis.Cmder) bool {
	for _, cmd := range payload(cmds) {
		if !deleting(cmd) {
			continue
		}
		switch c := cmd.(type) {
		case *redis.IntCmd:
			if c.Err() != nil || c.Val() != 0 {
				return false
			}
		case *redis.StringCmd:
			if c.Err() != redis.Nil {
				return false
			}
		case *redis.Cmd:
			if n, err := c.Int64(); c.Err() != redis.Nil && (err != nil || n != 0) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// creates lists the commands cannotDelete holds that write all the same: they only create.
var creates = map[string]bool{"setnx": true, "hsetnx": true, "msetnx": true}

// mayWriteAny reports whether any of cmds may write a key: none is a read, or control of the
// connection, pub/sub or a transaction.
func mayWriteAny(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if n := c.Name(); !cannotDelete[n] || creates[n] {
			return true
		}
	}
	return false
}
