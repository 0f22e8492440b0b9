package redisenv

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memPipe returns the two ends of an in-memory connection, the embedded backend's way from a
// client to a miniredis without a listener. Unlike net.Pipe, a write never waits for the reader:
// each direction has a buffer, as a socket does. Hazard: with net.Pipe, a PUBLISH to a subscriber
// whose process is frozen (it reads nothing) blocks miniredis inside the command, with its lock
// held, and every other client of the node waits with it; a real server's socket buffer takes
// the message and moves on. Everything here blocks on channels and timers only, so it runs inside
// a testing/synctest bubble.
func memPipe() (client, server net.Conn) {
	a, b := newMemBuf(), newMemBuf()
	client = &memConn{in: a, out: b, rd: newDeadline(), wd: newDeadline()}
	server = &memConn{in: b, out: a, rd: newDeadline(), wd: newDeadline()}
	return client, server
}

// memBuf is one direction of a memPipe: what one end wrote and the other has not read yet.
type memBuf struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
	ready  chan struct{} // one slot: something arrived, or the pipe closed
}

func newMemBuf() *memBuf { return &memBuf{ready: make(chan struct{}, 1)} }

func (b *memBuf) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

func (b *memBuf) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.signal()
}

// memConn is one end of a memPipe.
type memConn struct {
	in, out *memBuf
	rd, wd  *deadline
	shut    atomic.Bool // this end was closed: its own reads and writes fail

	// A client end counts what it sends into strangers until someone claims it (Claim): a
	// connection the lab handed out is claimed as it is dialled, so what is counted came from a
	// client the lab did not give (a Locker's own go-redis client).
	claimed   atomic.Bool
	strangers *atomic.Int64
}

func (c *memConn) Read(p []byte) (int, error) {
	for {
		if c.shut.Load() {
			return 0, net.ErrClosed
		}
		c.in.mu.Lock()
		if c.in.buf.Len() > 0 {
			n, _ := c.in.buf.Read(p)
			more := c.in.buf.Len() > 0
			c.in.mu.Unlock()
			if more {
				c.in.signal() // another reader, or this one's next call, need not wait
			}
			return n, nil
		}
		closed := c.in.closed
		c.in.mu.Unlock()
		if closed {
			return 0, io.EOF
		}
		select {
		case <-c.in.ready:
		case <-c.rd.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (c *memConn) Write(p []byte) (int, error) {
	if c.shut.Load() {
		return 0, net.ErrClosed
	}
	if c.strangers != nil && !c.claimed.Load() {
		c.strangers.Add(1)
	}
	select {
	case <-c.wd.wait():
		return 0, os.ErrDeadlineExceeded
	default:
	}
	c.out.mu.Lock()
	if c.out.closed {
		// The other end is gone. As over TCP, the write is taken and lost, and the reply that
		// never comes reads as io.EOF: a client retries on a new connection.
		c.out.mu.Unlock()
		return len(p), nil
	}
	n, _ := c.out.buf.Write(p)
	c.out.mu.Unlock()
	c.out.signal()
	return n, nil
}

// Close closes both directions: the other end reads what is left, then io.EOF.
func (c *memConn) Close() error {
	c.shut.Store(true)
	c.in.close()
	c.out.close()
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }

func (c *memConn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}
func (c *memConn) SetReadDeadline(t time.Time) error  { c.rd.set(t); return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

// deadline is a read or write deadline of a memConn: a channel closed once it has passed (as
// net.Pipe keeps its own).
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{}
}

func newDeadline() *deadline { return &deadline{cancel: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: wait until its function has closed cancel
	}
	d.timer = nil
	closed := isClosed(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		c := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(c) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Claim marks c as a connection the lab handed out: a process's hook, or the lab's own client,
// claims each connection it dials. What an unclaimed connection of the embedded backend sends is
// counted (Embedded.Strangers); a TCP connection's two ends are remembered, so a server's CLIENT
// LIST can tell the lab's clients from others (see fleet's Strangers), for as long as the
// connection is open. Hazard: a hook that forgets to claim makes its process a stranger.
func Claim(c net.Conn) {
	switch c := c.(type) {
	case *memConn:
		c.claimed.Store(true)
	default:
		if l, r := c.LocalAddr(), c.RemoteAddr(); l != nil && r != nil {
			claimedAddrs.Store(claimKey{l.String(), r.String()}, c)
		}
	}
}

// claimKey is a claimed TCP connection's local address and the address it is connected to.
// Hazard: the kernel gives one local port to connections to different servers at once, so the
// local address alone named a live connection of the lab's after another of its connections, on
// the same port to another server, had closed: a stranger, in CI's server and Sentinel stages.
type claimKey struct{ local, remote string }

// claimedAddrs holds the claimed TCP connections by their two ends.
var claimedAddrs sync.Map

// claimedAddr reports whether addr, connected to laddr (a server's CLIENT LIST: a client's addr
// and laddr), is a claimed connection that is still open (lab), and whether it was one that is
// closed now (closed). A closed one is forgotten: the kernel gives its port to the next
// connection, which may be a stranger's (in one test process that ran many backends, a stranger
// was taken for the lab's in 4 of 10 runs while closed claims were kept). Hazard: a server may
// list a connection the lab has just closed, its FIN not read yet; a caller asks the server again
// before it calls that one a stranger (see fleet's Strangers).
func claimedAddr(addr, laddr string) (lab, closed bool) {
	k := claimKey{addr, laddr}
	v, ok := claimedAddrs.Load(k)
	if !ok {
		return false, false
	}
	if sc, ok := v.(syscall.Conn); ok {
		rc, err := sc.SyscallConn()
		if err == nil {
			err = rc.Control(func(uintptr) {})
		}
		if err != nil { // closed
			claimedAddrs.CompareAndDelete(k, v)
			return false, true
		}
	}
	return true, false
}
