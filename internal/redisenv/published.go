package redisenv

import (
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
)

// Message is one message a command published (Channel without the run's prefix, where it has
// it): a lock's way to wake its waiters (step 13's release, 14's "your turn").
type Message struct {
	Channel, Text string
}

// embListener hears what is published on a miniredis, on any channel (the node is the run's own:
// step 14's turn channels are not under the run's prefix), in-process: miniredis hands
// each message to the listener's goroutine before the PUBLISH (or the script that ran it) returns,
// so after a command has returned, drain has every message it published.
//
// Hazard: miniredis blocks a PUBLISH until a subscriber takes the message; close unsubscribes
// before the goroutine stops, so a later PUBLISH finds nobody to wait for.
type embListener struct {
	m      *miniredis.Miniredis
	sub    *miniredis.Subscriber
	prefix string
	ask    chan chan []Message
	stop   chan struct{}
	done   sync.WaitGroup
}

func newEmbListener(m *miniredis.Miniredis, prefix string) *embListener {
	l := &embListener{m: m, sub: m.NewSubscriber(), prefix: prefix,
		ask: make(chan chan []Message), stop: make(chan struct{})}
	l.sub.Psubscribe("*")
	l.done.Add(1)
	go l.listen()
	return l
}

// listen keeps what is published until drain asks for it. A message is taken whole (received and
// kept) before the listener can answer drain, so drain never misses one whose PUBLISH returned.
func (l *embListener) listen() {
	defer l.done.Done()
	var kept []Message
	for {
		select {
		case pm, ok := <-l.sub.Pmessages():
			if !ok {
				return
			}
			kept = append(kept, Message{Channel: strings.TrimPrefix(pm.Channel, l.prefix), Text: pm.Message})
		case reply := <-l.ask:
			reply <- kept
			kept = nil
		case <-l.stop:
			return
		}
	}
}

// drain returns what was published since the last drain.
func (l *embListener) drain() []Message {
	reply := make(chan []Message)
	l.ask <- reply
	return <-reply
}

func (l *embListener) close() {
	l.sub.Punsubscribe("*")
	close(l.stop)
	l.done.Wait()
}

// escapeGlob escapes the glob characters of s for a PSUBSCRIBE pattern.
func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)
	return r.Replace(s)
}
