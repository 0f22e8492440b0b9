package redisenv

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
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

// notifyWatcher is the exact watcher of a real Redis. It subscribes to the keyspace channels of
// every key under the run's prefix on a connection of its own and brackets each command with a
// PING on that connection: Redis publishes a keyspace event while it runs the command that causes
// it, and answers the PING only after it has written every event published before, so the events
// between two PINGs are exactly the keys' history in that interval. "expired" and "evicted" are
// Redis's own doing; any other event before the command is an unseen writer, and any after it is
// the command's.
//
// Hazard: the node must publish keyspace events (notify-keyspace-events with K and A); a node
// that does not would look unchanged to it for ever, so the backends set it and check.
type notifyWatcher struct {
	prefix string
	except string // keys under it are not watched (the inventory's, on a shared server)
	db     int
	dial   func(ctx context.Context) (net.Conn, error) // a fresh connection to the current primary
	auth   []string                                    // AUTH arguments, if any
	admin  *redis.Client                               // reads values with DUMP and PTTL

	mu    sync.Mutex
	conn  net.Conn
	rd    *bufio.Reader
	nonce uint64
	last  snapshot
}

// watchTimeout bounds one barrier when ctx has no deadline of its own.
const watchTimeout = 5 * time.Second

// newNotifyWatcher subscribes to the keyspace channels of prefix's keys in database db and reads
// them.
func newNotifyWatcher(prefix, except string, db int, opts *redis.Options, admin *redis.Client) (*notifyWatcher, error) {
	w := &notifyWatcher{prefix: prefix, except: except, db: db, dial: rawDialer(opts), admin: admin}
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

// rawDialer dials what opts would: its Dialer if it has one, else its address, with its TLS. The
// connection is the lab's own (claimed).
func rawDialer(opts *redis.Options) func(ctx context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		network := opts.Network
		if network == "" {
			network = "tcp"
		}
		if opts.Dialer != nil {
			c, err := opts.Dialer(ctx, network, opts.Addr)
			if err == nil {
				Claim(c)
			}
			return c, err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, opts.Addr)
		if err != nil {
			return nil, err
		}
		Claim(c)
		if opts.TLSConfig == nil {
			return c, nil
		}
		tc := tls.Client(c, opts.TLSConfig.Clone())
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
}

// pattern is the keyspace channel pattern of every key under the prefix.
func (w *notifyWatcher) pattern() string {
	return "__keyspace@" + strconv.Itoa(w.db) + "__:" + w.prefix + "*"
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
	// The keyspace events, and what is published on the run's own channels (a lock's wake-up).
	if err := writeCommand(c, "PSUBSCRIBE", w.pattern(), escapeGlob(w.prefix)+"*"); err != nil {
		c.Close()
		return err
	}
	for range 2 {
		r, err := readReply(rd)
		if err != nil {
			c.Close()
			return fmt.Errorf("redisenv: the referee cannot subscribe to the lock's keyspace events: %w", err)
		}
		if len(r) < 1 || r[0] != "psubscribe" {
			c.Close()
			return fmt.Errorf("redisenv: PSUBSCRIBE answered %q", r)
		}
	}
	w.conn, w.rd = c, rd
	return nil
}

// event is one keyspace event: the key (without the prefix) and what happened to it.
type event struct{ key, what string }

// barrier returns every event published on the keys' channels since the last barrier, and every
// message published on the run's own channels.
func (w *notifyWatcher) barrier(ctx context.Context) ([]event, []Message, error) {
	if w.conn == nil {
		return nil, nil, errors.New("redisenv: the referee's subscriber connection is closed")
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
		return nil, nil, fmt.Errorf("redisenv: the referee lost its view of the lock: %w", err)
	}
	chPrefix := "__keyspace@" + strconv.Itoa(w.db) + "__:" + w.prefix
	var events []event
	var published []Message
	for {
		r, err := readReply(w.rd)
		if err != nil {
			w.conn.Close()
			w.conn = nil
			return nil, nil, fmt.Errorf("redisenv: the referee lost its view of the lock: %w", err)
		}
		switch {
		case len(r) == 2 && r[0] == "pong" && r[1] == nonce:
			return events, published, nil
		case len(r) == 4 && r[0] == "pmessage" && r[1] != w.pattern():
			published = append(published, Message{Channel: strings.TrimPrefix(r[2], w.prefix), Text: r[3]})
		case len(r) == 4 && r[0] == "pmessage":
			key := strings.TrimPrefix(r[2], chPrefix)
			if w.except == "" || !strings.HasPrefix(key, w.except) {
				events = append(events, event{key: key, what: r[3]})
			}
		}
	}
}

// Observe implements Watcher.
func (w *notifyWatcher) Observe(ctx context.Context, send func()) (Change, error) {
	return w.observe(ctx, send, false)
}

// ObserveAll implements Watcher: after the command, every key under the prefix is read (SCAN,
// then DUMP and PTTL), and each one whose value or lease moved is the command's, with the ones its
// events name.
func (w *notifyWatcher) ObserveAll(ctx context.Context, send func()) (Change, error) {
	return w.observe(ctx, send, true)
}

// observe is Observe, reading every key after the command if all.
func (w *notifyWatcher) observe(ctx context.Context, send func(), all bool) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pre, _, err := w.barrier(ctx)
	if err != nil {
		send()
		return Change{}, err
	}
	var ch Change
	cur := maps.Clone(w.last)
	var unseen, lapsed []string
	for _, ev := range pre {
		if byRedis(ev.what) {
			lapsed = append(lapsed, ev.key)
		} else {
			unseen = append(unseen, ev.key)
		}
	}
	if len(pre) > 0 {
		keys := dedupe(append(slices.Clone(unseen), lapsed...))
		fresh, now, err := w.read(ctx, keys)
		if err != nil {
			send()
			return ch, err
		}
		for _, k := range keys {
			if kn, ok := fresh[k]; ok {
				cur[k] = kn
			} else {
				delete(cur, k)
			}
		}
		moved := withTTL(diff(pick(w.last, keys), pick(cur, keys)), cur, now)
		for _, m := range moved {
			if slices.Contains(unseen, m.Key) {
				ch.Unseen = append(ch.Unseen, m)
			} else {
				ch.Lapsed = append(ch.Lapsed, m)
			}
		}
	}
	send()
	post, published, err := w.barrier(ctx)
	if err != nil {
		w.last = cur
		return ch, err
	}
	ch.Published = published
	var touched []string
	for _, ev := range post {
		if byRedis(ev.what) && !slices.Contains(touched, ev.key) {
			// The value the command found had run out: Redis expired it as the command touched
			// it, or just before.
			if b, ok := cur[ev.key]; ok {
				ch.Lapsed = append(ch.Lapsed, KeyChange{Key: ev.key, Before: b.v})
				delete(cur, ev.key)
			}
			continue
		}
		touched = append(touched, ev.key)
	}
	touched = dedupe(touched)
	after := maps.Clone(cur)
	if all {
		fresh, now, err := readPrefix(ctx, w.admin, w.prefix)
		if err != nil {
			w.last = cur
			return ch, err
		}
		after = without(fresh, w.except)
		for _, k := range diff(cur, after) {
			touched = append(touched, k.Key)
		}
		for _, k := range dedupe(touched) {
			ch.Keys = append(ch.Keys, KeyChange{Key: k, Before: cur[k].v, After: after[k].v})
		}
		ch.Keys = withTTL(ch.Keys, after, now)
		w.last = after
		return ch, nil
	}
	if len(touched) > 0 {
		fresh, now, err := w.read(ctx, touched)
		if err != nil {
			w.last = cur
			return ch, err
		}
		for _, k := range touched {
			if kn, ok := fresh[k]; ok {
				after[k] = kn
			} else {
				delete(after, k)
			}
			b, a := cur[k], after[k]
			ch.Keys = append(ch.Keys, KeyChange{Key: k, Before: b.v, After: a.v})
		}
		ch.Keys = withTTL(ch.Keys, after, now)
	}
	w.last = after
	return ch, nil
}

// pick is the part of s that names keys.
func pick(s snapshot, keys []string) snapshot {
	out := snapshot{}
	for _, k := range keys {
		if kn, ok := s[k]; ok {
			out[k] = kn
		}
	}
	return out
}

func dedupe(keys []string) []string {
	slices.Sort(keys)
	return slices.Compact(keys)
}

// byRedis reports whether a keyspace event is Redis's own doing, not a command's.
func byRedis(ev string) bool { return ev == "expired" || ev == "evicted" }

// read reads keys (without the prefix) now, each with DUMP and PTTL in one MULTI; a key that does
// not exist is missing from the result. It returns when the read began: the deadlines it reckons
// are from then.
func (w *notifyWatcher) read(ctx context.Context, keys []string) (snapshot, time.Time, error) {
	return readDumps(ctx, w.admin, w.prefix, keys)
}

// readDumps reads keys (without prefix) on c in one MULTI: each one's DUMP and PTTL, and the
// moment the read began, from which the leases are reckoned.
func readDumps(ctx context.Context, c *redis.Client, prefix string, keys []string) (snapshot, time.Time, error) {
	out := snapshot{}
	began := time.Now()
	if len(keys) == 0 {
		return out, began, nil
	}
	dumps := make([]*redis.StringCmd, len(keys))
	pttls := make([]*redis.DurationCmd, len(keys))
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			dumps[i] = p.Dump(ctx, prefix+k)
			pttls[i] = p.PTTL(ctx, prefix+k)
		}
		return nil
	})
	replied := time.Now()
	if err != nil && err != redis.Nil {
		return nil, began, fmt.Errorf("redisenv: the referee cannot read the lock (DUMP, PTTL): %w", err)
	}
	for i, k := range keys {
		if dumps[i].Err() != nil {
			continue // redis.Nil: no such key
		}
		kn := known{v: Value{Exists: true, Print: "dump:" + dumps[i].Val()}}
		// PTTL answers -1 (go-redis: -1ns) for a key without expiry, and 0 for one that
		// expires within the millisecond: that one has a deadline, now. The server read its
		// clock between began and replied, and PTTL drops the part of a millisecond: the
		// lease ends in that window, never exactly where one read reckons it.
		if ttl := pttls[i].Val(); ttl >= 0 {
			kn.deadline = began.Add(ttl)
			kn.latest = replied.Add(ttl + time.Millisecond)
		}
		out[k] = kn
	}
	return out, began, nil
}

// scanKeys lists the keys under prefix on c, without the prefix.
func scanKeys(ctx context.Context, c *redis.Client, prefix string) ([]string, error) {
	var keys []string
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, strings.TrimPrefix(iter.Val(), prefix))
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("redisenv: the referee cannot list the run's keys (SCAN): %w", err)
	}
	return dedupe(keys), nil
}

// readPrefix reads every key under prefix on c, and when the read of their values began.
func readPrefix(ctx context.Context, c *redis.Client, prefix string) (snapshot, time.Time, error) {
	keys, err := scanKeys(ctx, c, prefix)
	if err != nil {
		return nil, time.Time{}, err
	}
	return readDumps(ctx, c, prefix, keys)
}

// peekKey reads one key for a person: its value, Text and remaining lease.
func peekKey(ctx context.Context, c *redis.Client, key string) (Value, time.Duration, error) {
	var dump *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		dump = p.Dump(ctx, key)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err == redis.Nil || (dump != nil && dump.Err() == redis.Nil) {
		return Value{}, 0, nil
	}
	if err != nil {
		return Value{}, 0, fmt.Errorf("redisenv: the referee cannot read the lock: %w", err)
	}
	v := Value{Exists: true, Print: "dump:" + dump.Val()}
	v.Text = valueText(ctx, c, key)
	return v, pttl.Val(), nil
}

// Peek implements Watcher.
func (w *notifyWatcher) Peek(ctx context.Context, key string) (Value, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return peekKey(ctx, w.admin, w.prefix+key)
}

// Resync implements Watcher: it reconnects to the current primary, subscribes and reads the keys.
func (w *notifyWatcher) Resync(ctx context.Context) ([]KeyValue, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	// The subscription is in place before the read: a change after it is an event.
	s, now, err := readPrefix(ctx, w.admin, w.prefix)
	if err != nil {
		return nil, err
	}
	s = without(s, w.except)
	w.last = s
	return s.list(now), nil
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
