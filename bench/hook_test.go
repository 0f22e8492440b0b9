package bench

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// counter counts the commands a process's clients send, on the wire: its DialHook wraps every
// connection the clients dial, and the commands written on it are counted in n (see wireConn).
// So a command go-redis writes without running its hooks counts too: SUBSCRIBE, on the connection
// of its own that each PubSub dials (13, 14 and 16 subscribe once per wait). hooked counts the
// commands go-redis's hooks see (one per ProcessHook call, one per pipelined command), and dials
// the connections dialled. A script run that falls back from EVALSHA to EVAL counts 2. One counter
// may be shared by many clients. Hazard: a connection dialled before the hook was added is not
// wrapped; newClient adds it before the first command.
type counter struct {
	n      atomic.Int64 // commands written on the wire
	hooked atomic.Int64 // commands go-redis's process hooks saw
	dials  atomic.Int64 // connections dialled

	mu    sync.Mutex
	names []string // hooked command names, while rec is set (tests only)
	wire  []string // command names written on the wire, while rec is set
	rec   atomic.Bool
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.dials.Add(1)
		w := &wireConn{Conn: conn, c: c}
		if _, ok := conn.(syscall.Conn); ok {
			return sysWireConn{w}, nil
		}
		return w, nil
	}
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.hooked.Add(1)
		if c.rec.Load() {
			c.note(&c.names, cmd.Name())
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.hooked.Add(int64(len(cmds)))
		if c.rec.Load() {
			for _, cmd := range cmds {
				c.note(&c.names, cmd.Name())
			}
		}
		return next(ctx, cmds)
	}
}

func (c *counter) note(list *[]string, name string) {
	c.mu.Lock()
	*list = append(*list, name)
	c.mu.Unlock()
}

// take returns the hooked and the wire names recorded since the last take and forgets them.
func (c *counter) take() (hooked, wire []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hooked, wire = c.names, c.wire
	c.names, c.wire = nil, nil
	return hooked, wire
}

// wireConn is a connection whose written bytes are read as the client's side of RESP: each
// command is an array of bulk strings (*N CRLF, then N times $len CRLF, len bytes, CRLF), which is
// how go-redis writes every command. Each array counts one command. Hazard: it assumes its writes
// come one at a time, as go-redis's do (a connection serves one command, or one pipeline, at a
// time), and it does not parse inline commands, which go-redis never sends.
type wireConn struct {
	net.Conn
	c *counter

	state   int   // what the next byte is (wire* below)
	num     int64 // the number being read
	args    int64 // bulk strings left in this command
	skip    int64 // bytes left of this bulk string, its CRLF included
	first   bool  // the bulk string being read is the command's name
	nameBuf []byte
}

const (
	wireArray    = iota // expecting '*', a command's start
	wireArrayLen        // reading N of *N
	wireBulk            // expecting '$'
	wireBulkLen         // reading len of $len
	wirePayload         // skipping a bulk string's bytes and CRLF
)

// NetConn returns the connection wrapped.
func (w *wireConn) NetConn() net.Conn { return w.Conn }

// sysWireConn is a wireConn whose connection is a socket (syscall.Conn), and says so: go-redis's
// health check, on every connection taken from the pool, peeks at the socket only through
// syscall.Conn on the connection it was given. Hazard: without it the check is skipped, and
// every command would save a syscall and three allocations that a client without the counter
// pays, which would flatter every lock by its number of commands.
type sysWireConn struct{ *wireConn }

// SyscallConn returns the socket's raw connection.
func (w sysWireConn) SyscallConn() (syscall.RawConn, error) {
	return w.Conn.(syscall.Conn).SyscallConn()
}

func (w *wireConn) Write(b []byte) (int, error) {
	w.parse(b)
	return w.Conn.Write(b)
}

// parse advances the RESP reader over b, counting every command whose array starts in it.
func (w *wireConn) parse(b []byte) {
	for len(b) > 0 {
		switch w.state {
		case wireArray:
			if b[0] == '*' {
				w.c.n.Add(1)
				w.state, w.num = wireArrayLen, 0
			}
			b = b[1:]
		case wireArrayLen, wireBulkLen:
			switch ch := b[0]; {
			case ch >= '0' && ch <= '9':
				w.num = 10*w.num + int64(ch-'0')
			case ch == '\n' && w.state == wireArrayLen:
				w.args, w.first = w.num, true
				w.nameBuf = w.nameBuf[:0]
				w.state = wireBulk
				if w.args == 0 {
					w.state = wireArray
				}
			case ch == '\n':
				w.skip, w.state = w.num+2, wirePayload
			}
			b = b[1:]
		case wireBulk:
			if b[0] == '$' {
				w.state, w.num = wireBulkLen, 0
			}
			b = b[1:]
		case wirePayload:
			k := min(int64(len(b)), w.skip)
			if w.first && w.c.rec.Load() {
				w.nameBuf = append(w.nameBuf, b[:k]...)
			}
			w.skip -= k
			b = b[k:]
			if w.skip > 0 {
				continue
			}
			if w.first && w.c.rec.Load() {
				name := w.nameBuf[:max(0, len(w.nameBuf)-2)] // without its CRLF
				w.c.note(&w.c.wire, string(toLower(name)))
			}
			w.first = false
			if w.args--; w.args == 0 {
				w.state = wireArray
			} else {
				w.state = wireBulk
			}
		}
	}
}

// toLower lowers ASCII letters in place, as go-redis's Cmder.Name does.
func toLower(b []byte) []byte {
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return b
}

// newClient returns a client of the redis-server at addr whose commands c counts.
func newClient(addr string, c *counter) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	rdb.AddHook(c)
	return rdb
}
