package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// BenchmarkRoom is a room as a trainer runs it: lab serve built and started as its own process,
// and learners connected to it over SSH with a terminal (120×40, xterm-256color), each on step 4
// with 8 live buyers at the default speed. An op is one learner, in turn, pressing space twice
// (hold the orders, then let them go on), each press timed until its answer reaches the learner's
// terminal: key to frame. Reported: the p50 and p99 of those times, each learner's frames a
// second (the least and the median), and the server's CPU (cores, over the ops) and memory (RSS
// at the end, and its peak). Linux only (it reads /proc).
//
//	go test -run '^$' -bench 'Room/learners=30' -benchtime 300x ./lab/serve/
func BenchmarkRoom(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads the server's CPU and memory from /proc")
	}
	bin := buildLab(b)
	for _, n := range []int{1, 30, 60} {
		var r *benchRoom // set up once: go test runs the function with b.N = 1 first
		b.Run(fmt.Sprintf("learners=%d", n), func(sb *testing.B) {
			if r == nil {
				r = openRoom(b, bin, n)
			}
			r.bench(sb)
		})
	}
}

// BenchmarkRoomHeld is the same room of 30 whose learners have all stopped pressing keys: each
// lab holds its buyers after -pause 3s. Reported: the server's CPU and each learner's frames a
// second over 10 s once every lab is held.
//
//	go test -run '^$' -bench RoomHeld -benchtime 1x ./lab/serve/
func BenchmarkRoomHeld(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads the server's CPU and memory from /proc")
	}
	const n = 30
	srv, addr := startLab(b, buildLab(b), "-pause", "3s")
	terms := openTerms(b, addr, n)
	for _, t := range terms {
		if _, err := t.wait("held: no key for 3s"); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the orders under way when the hold came finish
	b.ResetTimer()
	for range b.N {
		cpu0, frames0, at0 := procCPU(b, srv.Process.Pid), countFrames(terms), time.Now()
		time.Sleep(10 * time.Second)
		wall := time.Since(at0)
		fps := 0.0
		for i, f := range countFrames(terms) {
			fps = max(fps, float64(f-frames0[i])/wall.Seconds())
		}
		b.ReportMetric((procCPU(b, srv.Process.Pid)-cpu0).Seconds()/wall.Seconds(), "cpu-cores-held")
		b.ReportMetric(fps, "fps-max")
	}
	rss, _ := procMem(b, srv.Process.Pid)
	b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
	b.Logf("load average %s", loadavg())
}

// openTerms brings n learners into the room at addr, each on step 4's live buyers.
func openTerms(b *testing.B, addr string, n int) []*benchTerm {
	terms := make([]*benchTerm, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range terms {
		wg.Go(func() {
			t, err := openBenchTerm(addr, fmt.Sprintf("learner%02d", i+1))
			if err != nil {
				errs <- err
				return
			}
			terms[i] = t
			errs <- t.openStep4()
		})
	}
	wg.Wait()
	close(errs)
	b.Cleanup(func() {
		for _, t := range terms {
			if t != nil {
				t.client.Close()
			}
		}
	})
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return terms
}

// benchRoom is a room of learners on lab serve, each with step 4's live buyers on screen.
type benchRoom struct {
	srv   *exec.Cmd
	terms []*benchTerm
	fps   []float64 // each learner's frames a second while nobody pressed a key, the least first
	sold  []float64 // and the orders their buyers confirmed a second
	quiet float64   // the server's cores then
}

// openRoom starts lab serve, brings n learners in, opens step 4 on each, and measures the
// frames each receives and the server's CPU over 10 s while nobody presses a key.
func openRoom(b *testing.B, bin string, n int) *benchRoom {
	r := &benchRoom{}
	var addr string
	r.srv, addr = startLab(b, bin)
	r.terms = openTerms(b, addr, n)
	r.restock(b)
	time.Sleep(5 * time.Second) // the buyers under way, the Go runtime warmed
	cpu0, frames0, sold0, at0 := procCPU(b, r.srv.Process.Pid), countFrames(r.terms), countSold(r.terms), time.Now()
	time.Sleep(10 * time.Second)
	wall := time.Since(at0)
	r.quiet = (procCPU(b, r.srv.Process.Pid) - cpu0).Seconds() / wall.Seconds()
	for i, f := range countFrames(r.terms) {
		r.fps = append(r.fps, float64(f-frames0[i])/wall.Seconds())
	}
	for i, s := range countSold(r.terms) {
		r.sold = append(r.sold, float64(s-sold0[i])/wall.Seconds())
	}
	slices.Sort(r.fps)
	slices.Sort(r.sold)
	return r
}

// restock resets every learner's arena (r): a fresh Redis, a full shelf, orders going on. 8 buyers at the
// default speed sell about 4 units a second, and a sold-out shelf has no buyer left ordering:
// 1000 units (startLab's -stock) last a phase of the benchmark more than 3 minutes.
func (r *benchRoom) restock(b *testing.B) {
	var wg sync.WaitGroup
	for _, t := range r.terms {
		wg.Go(func() {
			// space first, so that the status line changes whatever it said before r
			for _, p := range [][2]string{{" ", "new orders paused"}, {"r", "reset: a fresh Redis"}} {
				if _, err := t.probe(p[0], p[1]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// bench presses keys: b.N learners in turn each press space twice, and each press is timed
// until its answer is drawn on the learner's terminal.
func (r *benchRoom) bench(b *testing.B) {
	n := len(r.terms)
	r.restock(b)
	load0 := loadavg()
	cpu0, at0 := procCPU(b, r.srv.Process.Pid), time.Now()
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t := r.terms[i%n]
		for _, p := range [][2]string{{" ", "new orders paused"}, {" ", "orders resumed"}} {
			d, err := t.probe(p[0], p[1])
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, d)
		}
		time.Sleep(100 * time.Millisecond) // a room's pace of keys: 30 learners, a key every few seconds each
	}
	b.StopTimer()
	wall := time.Since(at0)
	cpu := procCPU(b, r.srv.Process.Pid) - cpu0
	rss, hwm := procMem(b, r.srv.Process.Pid)
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "key-p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "key-p99-ms")
	b.ReportMetric(r.fps[0], "fps-min")
	b.ReportMetric(r.fps[n/2], "fps-median")
	b.ReportMetric(r.sold[n/2], "orders/s-median")
	b.ReportMetric(r.quiet, "cpu-cores-quiet")
	b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cpu-cores-keys")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MB")
	b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MB")
	b.Logf("%d learners, %d key presses over %v; load average %s before, %s after", n, len(lat), wall.Round(time.Second), load0, loadavg())
}

// buildLab builds the lab binary once, into a folder removed at the end.
func buildLab(b *testing.B) string {
	dir := b.TempDir()
	bin := filepath.Join(dir, "lab")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/lockstep-lab/lockstep/lab").CombinedOutput()
	if err != nil {
		b.Fatalf("go build ./lab: %v\n%s", err, out)
	}
	return bin
}

// startLab starts lab serve on a free loopback port, 8 buyers a lab and 1000 units on its shelf,
// no hold and no idle end (unless flags, added last, say),
// and stops it with Ctrl-C's signal at the end; its stdout (the room's log, off a terminal) is
// read all along.
func startLab(b *testing.B, bin string, flags ...string) (*exec.Cmd, string) {
	dir := b.TempDir()
	args := append([]string{"serve", "-addr", "127.0.0.1:0", "-buyers", "8", "-pause", "0", "-idle", "0", "-max", "1000",
		"-stock", "1000", "-hostkey", filepath.Join(dir, "hostkey")}, flags...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("lab serve ended with %v", err)
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			b.Errorf("lab serve did not end within a minute of Ctrl-C")
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`ssh -p (\d+) `).FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	select {
	case p := <-port:
		return cmd, "127.0.0.1:" + p
	case <-time.After(longStop):
		b.Fatal("lab serve never said its port")
	}
	return nil, ""
}

// benchTerm is a learner's terminal for the benchmark: it counts the frames it receives (each
// begins by moving the cursor home) and finds a probe's answer in what came after its key.
type benchTerm struct {
	client *gossh.Client
	in     io.Writer
	frames atomic.Int64
	sold   atomic.Int64 // the orders confirmed, as the SHOP line last said

	mu     sync.Mutex
	seen   []byte        // what came since the probe's key, its last 64 KB
	want   string        // the probe's answer
	found  chan struct{} // closed when it came
	ended  chan struct{}
	endErr error
}

var (
	home      = []byte("\x1b[H")
	confirmed = regexp.MustCompile(`· confirmed (\d+)`)
)

func openBenchTerm(addr, user string) (*benchTerm, error) {
	c, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{User: user, HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: longStop})
	if err != nil {
		return nil, err
	}
	s, err := c.NewSession()
	if err != nil {
		return nil, err
	}
	if err := s.RequestPty("xterm-256color", 40, 120, gossh.TerminalModes{}); err != nil {
		return nil, err
	}
	t := &benchTerm{client: c, ended: make(chan struct{})}
	if t.in, err = s.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := s.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.Shell(); err != nil {
		return nil, err
	}
	go t.read(out)
	return t, nil
}

func (t *benchTerm) read(r io.Reader) {
	defer close(t.ended)
	buf := make([]byte, 64<<10)
	var carry []byte // the end of the last read, for a cursor-home split between two
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := append(carry, buf[:n]...)
			t.frames.Add(int64(bytes.Count(chunk, home)))
			if m := confirmed.FindAllSubmatch(chunk, -1); m != nil {
				n, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
				t.sold.Store(n)
			}
			carry = append(carry[:0], chunk[max(0, len(chunk)-len(home)+1):]...)
			if bytes.HasSuffix(chunk, home) {
				carry = carry[:0]
			}
			t.mu.Lock()
			t.seen = append(t.seen, buf[:n]...)
			if t.found != nil && bytes.Contains(t.seen, []byte(t.want)) {
				close(t.found)
				t.found = nil
			}
			if len(t.seen) > 64<<10 {
				t.seen = append(t.seen[:0], t.seen[len(t.seen)-64<<10:]...)
			}
			t.mu.Unlock()
		}
		if err != nil {
			t.endErr = err
			return
		}
	}
}

// probe presses key and waits until want is drawn after it, within longStop.
func (t *benchTerm) probe(key, want string) (time.Duration, error) {
	found := make(chan struct{})
	t.mu.Lock()
	t.seen, t.want, t.found = t.seen[:0], want, found
	t.mu.Unlock()
	start := time.Now()
	if _, err := io.WriteString(t.in, key); err != nil {
		return 0, err
	}
	return t.until(found, start, key, want)
}

// wait waits until want is drawn, in what came since the last probe (its last 64 KB) or after,
// within longStop.
func (t *benchTerm) wait(want string) (time.Duration, error) {
	found := make(chan struct{})
	t.mu.Lock()
	t.want, t.found = want, found
	if bytes.Contains(t.seen, []byte(want)) {
		close(found)
		t.found = nil
	}
	t.mu.Unlock()
	return t.until(found, time.Now(), "", want)
}

func (t *benchTerm) until(found chan struct{}, start time.Time, key, want string) (time.Duration, error) {
	select {
	case <-found:
		return time.Since(start), nil
	case <-t.ended:
		return 0, fmt.Errorf("the session ended waiting for %q: %v", want, t.endErr)
	case <-time.After(longStop):
		return 0, fmt.Errorf("%q never drawn after %q", want, key)
	}
}

// openStep4 waits for the picker, opens step 4 and waits for its live buyers.
func (t *benchTerm) openStep4() error {
	for _, p := range [][2]string{{"", "No lock: GET stock"}, {"4", "Step 4/17"}, {"\r", "live buyers"}} {
		if _, err := t.probe(p[0], p[1]); err != nil {
			return err
		}
	}
	return nil
}

func countSold(ts []*benchTerm) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.sold.Load()
	}
	return out
}

func countFrames(ts []*benchTerm) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t.frames.Load()
	}
	return out
}

// procCPU is the CPU time process pid has used (user and system), from /proc/PID/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}

// procMem is process pid's resident memory now and at its peak, from /proc/PID/status.
func procMem(b *testing.B, pid int) (rss, peak int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak
}

func loadavg() string {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
