package arena

import (
	"bufio"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/redis/go-redis/v9"
)

// TestStallWatchSeesASlowServer: a server that answers one PING 300 ms late stalls the run by at
// least that, longer than a quarter of a 200 ms TTL whatever the machine's load (load only adds),
// so the watch records the run as unjudged, once, in words Stalled knows; a margin above what
// was seen records nothing.
func TestStallWatchSeesASlowServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					if !strings.HasPrefix(line, "*") {
						continue // the arguments of a command; its header names how many
					}
					n := 0
					for _, ch := range line[1 : len(line)-2] {
						n = n*10 + int(ch-'0')
					}
					var args []string
					for range n {
						rd.ReadString('\n') // $len
						a, _ := rd.ReadString('\n')
						args = append(args, strings.TrimSpace(a))
					}
					if strings.EqualFold(args[0], "ping") {
						if pings.Add(1) == 5 {
							time.Sleep(300 * time.Millisecond)
						}
						c.Write([]byte("+PONG\r\n"))
						continue
					}
					c.Write([]byte("-ERR unknown command\r\n"))
				}
			}()
		}
	}()
	defer ln.Close()
	inv := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1})
	defer inv.Close()
	w := watchStalls(inv, time.Now())
	for pings.Load() < 8 {
		time.Sleep(stallTick)
	}
	w.close()
	if _, ok := w.blind(time.Second); ok {
		t.Errorf("a stall of %v was taken for one longer than 1s", w.worst)
	}
	rec, ok := w.blind(50 * time.Millisecond)
	if !ok {
		t.Fatalf("a 300ms stall was not seen: the worst was %v", w.worst)
	}
	if !Stalled(&referee.Report{Untracked: []referee.Blind{{Kinds: rec.Kinds, What: rec.What}}}) {
		t.Errorf("Stalled does not know the watch's words: %q", rec.What)
	}
	if _, again := w.blind(50 * time.Millisecond); again {
		t.Error("the same stall was recorded twice")
	}
}
