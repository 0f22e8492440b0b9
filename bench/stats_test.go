package bench

import (
	"context"
	"math"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ q, want float64 }{
		{0, 1}, {0.25, 2}, {0.5, 3}, {0.9, 4.6}, {1, 5},
	} {
		if got := quantile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v, %v) = %v, want %v", xs, c.q, got, c.want)
		}
	}
	if got := quantile([]float64{7}, 0.99); got != 7 {
		t.Errorf("quantile of one value = %v, want 7", got)
	}
}

func TestBootstrap(t *testing.T) {
	xs := []float64{0.9, 1.1, 1.0, 0.95, 1.05, 1.2, 0.8, 1.0, 1.02, 0.98}
	median := func(idx []int) float64 {
		s := make([]float64, len(idx))
		for k, i := range idx {
			s[k] = xs[i]
		}
		_, m, _ := quartiles(s)
		return m
	}
	lo, hi := bootstrap(len(xs), median)
	if !(lo <= 1.0 && 1.0 <= hi && lo >= 0.8 && hi <= 1.2) {
		t.Errorf("interval of the median = [%v, %v], want one around 1.0 inside the data", lo, hi)
	}
	if lo2, hi2 := bootstrap(len(xs), median); lo2 != lo || hi2 != hi {
		t.Errorf("bootstrap is not repeatable: [%v, %v] then [%v, %v]", lo, hi, lo2, hi2)
	}
}

// TestRatioPerRound: a lock exactly 1.5× the best peer in every round has ratio 1.5 with no spread,
// however much the rounds themselves differ; the slower peer is never the reference.
func TestRatioPerRound(t *testing.T) {
	r := &interleaved{locks: []contender{
		{name: "ours", nodes: 1},
		{name: "fast-peer", peer: true, nodes: 1},
		{name: "slow-peer", peer: true, nodes: 1},
		{name: "other-group", peer: true, nodes: 3},
	}}
	for _, pace := range []time.Duration{100, 300, 120, 1000} { // drift: whole rounds slow down
		r.rounds = append(r.rounds, []batch{
			{ops: 1, allOps: 1, elapsed: 3 * pace / 2},
			{ops: 1, allOps: 1, elapsed: pace},
			{ops: 1, allOps: 1, elapsed: 2 * pace},
			{ops: 1, allOps: 1, elapsed: 50 * pace},
		})
	}
	st := summarize(r, r.rounds)
	if st[0].best != 1 || st[2].best != 1 || st[3].best != 3 {
		t.Fatalf("best peers = %d, %d, %d; want 1, 1, 3", st[0].best, st[2].best, st[3].best)
	}
	if st[0].ratio != [3]float64{1.5, 1.5, 1.5} || st[0].ratioCI != [2]float64{1.5, 1.5} {
		t.Errorf("ratio = %v, interval %v; want 1.5 everywhere", st[0].ratio, st[0].ratioCI)
	}
	if st[3].ratio[1] != 1 {
		t.Errorf("a lone peer's ratio to itself = %v, want 1", st[3].ratio[1])
	}
}

func TestRunLogKeepsLastCallPerCount(t *testing.T) {
	var l runLog
	probe1, final1, probe2, final2 := &interleaved{}, &interleaved{}, &interleaved{}, &interleaved{}
	l.add("BenchmarkX", 1, probe1)
	l.add("BenchmarkY", 1, &interleaved{})
	l.add("BenchmarkX", 20, final1)
	l.add("BenchmarkX", 1, probe2)
	l.add("BenchmarkX", 20, final2)
	var xs []*interleaved
	for _, r := range l.runs {
		if r.key == "BenchmarkX" {
			xs = append(xs, r)
		}
	}
	if len(xs) != 2 || xs[0] != final1 || xs[1] != final2 {
		t.Errorf("runs of BenchmarkX = %p, want [%p %p] (the last call of each -count)", xs, final1, final2)
	}
}

// TestWireConnParse: the wire count and names come out the same however the stream is cut into
// writes, a bulk string's bytes and its CRLF included.
func TestWireConnParse(t *testing.T) {
	stream := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$12\r\nva\r\nl*ue\r\n$$\r\n" + // a value holding CRLF, '*', '$'
		"*1\r\n$4\r\nPING\r\n" +
		"*4\r\n$7\r\nevalsha\r\n$40\r\n" + strings.Repeat("a", 40) + "\r\n$1\r\n0\r\n$0\r\n\r\n"
	want := []string{"set", "ping", "evalsha"}
	for size := 1; size <= len(stream); size++ {
		var c counter
		c.rec.Store(true)
		w := &wireConn{c: &c}
		for s := stream; len(s) > 0; {
			k := min(size, len(s))
			w.parse([]byte(s[:k]))
			s = s[k:]
		}
		_, names := c.take()
		if c.n.Load() != int64(len(want)) || !slices.Equal(names, want) {
			t.Fatalf("writes of %d bytes: %d commands %v, want %d %v", size, c.n.Load(), names, len(want), want)
		}
	}
}

// TestWireConnIsSocket: a counted connection to a socket is still a syscall.Conn, so go-redis's
// health check peeks at it as it would without the counter.
func TestWireConnIsSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var c counter
	dial := c.DialHook(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return net.Dial(network, addr)
	})
	conn, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, ok := conn.(syscall.Conn); !ok {
		t.Errorf("%T is not a syscall.Conn: go-redis would skip its health check", conn)
	}
	if c.dials.Load() != 1 {
		t.Errorf("dials = %d, want 1", c.dials.Load())
	}
}
