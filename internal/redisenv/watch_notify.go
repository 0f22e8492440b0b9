package redisenv

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyspaceEvents is the notify-keyspace-events setting the notifying watcher needs: keyspace
// channels (K) for every class of event (A: generic, string, list, set, hash, zset, stream,
// expired, evicted).
const KeyspaceEvents = "KA"

// notifyWatcher is the exact watcher of a real Redis. It subscribes to the key's keyspace channel
// on a connection of its own and brackets each command with a PING on that connection: Redis
// publishes a keyspace event while it runs the command that causes it, and answers the PING only
// after it has written every event published before, so the events between two PINGs are exactly
// the key's history in that interval. "expired" and "evicted" are Redis's own doing; any other
// event before the command is an unseen writer, and any after it is the command's.
//
// Hazard: the node must publish keyspace events (notify-keyspace-events with K and A); a node
// that does not would look unchanged to it for ever, so the backends set it and check.
type notifyWatcher struct {
	key   string
	db    int
	dial  func(ctx context.Context) (net.Conn, error) // a fresh connection to the current primary
	auth  []string                                    // AUTH arguments, if any
	admin *redis.Client                               // reads the value with DUMP

	mu    sync.Mutex
	conn  net.Conn
	rd    *bufio.Reader
	nonce uint64
	last  Value
}

// watchTimeout bounds one barrier when ctx has no deadline of its own.
const watchTimeout = 5 * time.Second

// newNotifyWatcher subscribes to key's keyspace channel in database db and reads its value.
func newNotifyWatcher(key string, db int, opts *redis.Options, admin *redis.Client) (*notifyWatcher, error) {
	w := &notifyWatcher{key: key, db: db, dial: rawDialer(opts), admin: admin}
	if opts.Password != "" {
		w.auth = []string{"AUTH", opts.Password}
		if opts.Username != "" {
			w.auth = []string{"AUTH", opts.Username, opts.Password}
		}
	}
	if _, err := w.Resync(context.Background()); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// rawDialer dials what opts would: its Dialer if it has one, else its address, with its TLS.
func rawDialer(opts *redis.Options) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		network := opts.Network
		if network == "" {
			network = "tcp"
		}
		if opts.Dialer != nil {
			return opts.Dialer(ctx, network, opts.Addr)
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, opts.Addr)
		if err != nil || opts.TLSConfig == nil {
			return c, err
		}
		tc := tls.Client(c, opts.TLSConfig.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
}

func (w *notifyWatcher) channel() string {
	return "__keyspace@" + strconv.Itoa(w.db) + "__:" + w.key
}

// connect (re)opens the subscriber connection; the caller holds mu.
func (w *notifyWatcher) connect(ctx context.Context) error {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
	ctx, cancel := withWatchTimeout(ctx)
	defer cancel()
	c, err := w.dial(ctx)
	if err != nil {
		return fmt.Errorf("redisenv: the referee's subscriber cannot connect: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	rd := bufio.NewReader(c)
	if w.auth != nil {
		if err := writeCommand(c, w.auth...); err != nil {
			c.Close()
			return err
		}
		if _, err := readReply(rd); err != nil {
			c.Close()
			return fmt.Errorf("redisenv: the referee's subscriber cannot authenticate: %w", err)
		}
	}
	if err := writeCommand(c, "SUBSCRIBE", w.channel()); err != nil {
		c.Close()
		return err
	}
	r, err := readReply(rd)
	if err != nil {
		c.Close()
		return fmt.Errorf("redisenv: the referee cannot subscribe to the lock's keyspace events: %w", err)
	}
	if len(r) < 1 || r[0] != "subscribe" {
		c.Close()
		return fmt.Errorf("redisenv: SUBSCRIBE answered %q", r)
	}
	w.conn, w.rd = c, rd
	return nil
}

// barrier returns every event published on the key's channel since the last barrier.
func (w *notifyWatcher) barrier(ctx context.Context) ([]string, error) {
	if w.conn == nil {
		return nil, errors.New("redisenv: the referee's subscriber connection is closed")
	}
	ctx, cancel := withWatchTimeout(ctx)
	defer cancel()
	dl, _ := ctx.Deadline()
	w.conn.SetDeadline(dl)
	w.nonce++
	nonce := "lockstep-" + strconv.FormatUint(w.nonce, 10)
	if err := writeCommand(w.conn, "PING", nonce); err != nil {
		w.conn.Close()
		w.conn = nil
		return nil, fmt.Errorf("redisenv: the referee lost its view of the lock: %w", err)
	}
	var events []string
	for {
		r, err := readReply(w.rd)
		if err != nil {
			w.conn.Close()
			w.conn = nil
			return nil, fmt.Errorf("redisenv: the referee lost its view of the lock: %w", err)
		}
		switch {
		case len(r) == 2 && r[0] == "pong" && r[1] == nonce:
			return events, nil
		case len(r) == 3 && r[0] == "message":
			events = append(events, r[2])
		}
	}
}

// Observe implements Watcher.
func (w *notifyWatcher) Observe(ctx context.Context, send func(before Value)) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pre, err := w.barrier(ctx)
	if err != nil {
		send(w.last)
		return Change{}, err
	}
	ch := Change{Before: w.last}
	for _, ev := range pre {
		if byRedis(ev) {
			if ch.Before.Exists {
				ch.Expired, ch.Before = ch.Before, Value{}
			}
		} else if !ttlOnly(ev) {
			ch.Unseen = true
		}
	}
	if ch.Unseen {
		if ch.Before, err = w.read(ctx); err != nil {
			send(ch.Before)
			return ch, err
		}
	}
	send(ch.Before)
	post, err := w.barrier(ctx)
	if err != nil {
		return ch, err
	}
	ch.After = ch.Before
	mutated := false
	for _, ev := range post {
		switch {
		case byRedis(ev) && !mutated:
			// The value the command found had run out: Redis expired it as the command
			// touched it, or just before.
			if ch.Before.Exists && !ch.Expired.Exists {
				ch.Expired, ch.Before = ch.Before, Value{}
			}
			ch.After = Value{}
		case byRedis(ev):
			ch.After = Value{} // what the command wrote ran out at once
		case !ttlOnly(ev):
			mutated = true
		}
	}
	if mutated {
		if ch.After, err = w.read(ctx); err != nil {
			return ch, err
		}
	}
	w.last = ch.After
	return ch, nil
}

// byRedis reports whether a keyspace event is Redis's own doing, not a command's.
func byRedis(ev string) bool { return ev == "expired" || ev == "evicted" }

// ttlOnly reports whether a keyspace event changed only the key's expiry, not its value.
func ttlOnly(ev string) bool { return ev == "expire" || ev == "persist" }

// read reads the key's value now with DUMP.
func (w *notifyWatcher) read(ctx context.Context) (Value, error) {
	v, err := w.admin.Dump(ctx, w.key).Result()
	if err == redis.Nil {
		return Value{}, nil
	}
	if err != nil {
		return Value{}, fmt.Errorf("redisenv: the referee cannot read the lock (DUMP): %w", err)
	}
	return Value{Exists: true, Print: "dump:" + v}, nil
}

// Peek implements Watcher.
func (w *notifyWatcher) Peek(ctx context.Context) (Value, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var dump *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := w.admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
		dump = p.Dump(ctx, w.key)
		pttl = p.PTTL(ctx, w.key)
		return nil
	})
	if err == redis.Nil || dump.Err() == redis.Nil {
		return Value{}, 0, nil
	}
	if err != nil {
		return Value{}, 0, fmt.Errorf("redisenv: the referee cannot read the lock: %w", err)
	}
	v := Value{Exists: true, Print: "dump:" + dump.Val()}
	v.Text = valueText(ctx, w.admin, w.key)
	return v, pttl.Val(), nil
}

// Resync implements Watcher: it reconnects to the current primary, subscribes and reads the key.
func (w *notifyWatcher) Resync(ctx context.Context) (Value, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.connect(ctx); err != nil {
		return Value{}, err
	}
	// The subscription is in place before the read: a change after it is an event.
	v, err := w.read(ctx)
	if err != nil {
		return v, err
	}
	w.last = v
	return v, nil
}

// Close implements Watcher.
func (w *notifyWatcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	return err
}

func withWatchTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, watchTimeout)
}

// writeCommand writes one RESP2 command.
func writeCommand(w io.Writer, args ...string) error {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// readReply reads one RESP2 reply, flattened to strings: a simple string, integer or bulk string
// as one element, an array as its elements (nested arrays are not expected here). An error reply
// is returned as an error.
func readReply(rd *bufio.Reader) ([]string, error) {
	line, err := readLine(rd)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, errors.New("redisenv: empty RESP line")
	}
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}, nil
	case '-':
		return nil, errors.New(line[1:])
	case '$':
		s, err := readBulk(rd, line)
		return []string{s}, err
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return nil, fmt.Errorf("redisenv: bad RESP array %q", line)
		}
		out := make([]string, 0, max(n, 0))
		for range n {
			el, err := readLine(rd)
			if err != nil {
				return nil, err
			}
			switch {
			case el == "":
				return nil, errors.New("redisenv: empty RESP line")
			case el[0] == '$':
				s, err := readBulk(rd, el)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			case el[0] == '+' || el[0] == ':':
				out = append(out, el[1:])
			default:
				return nil, fmt.Errorf("redisenv: unexpected RESP element %q", el)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("redisenv: unexpected RESP reply %q", line)
}

func readLine(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), nil
}

func readBulk(rd *bufio.Reader, header string) (string, error) {
	n, err := strconv.Atoi(header[1:])
	if err != nil {
		return "", fmt.Errorf("redisenv: bad RESP bulk %q", header)
	}
	if n < 0 {
		return "", nil
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
