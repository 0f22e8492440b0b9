package bench

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
)

// roundsOut names the file that report appends every round of every lock to (-rounds=FILE, after
// -args when given to go test).
var roundsOut = flag.String("rounds", "", "append every round of every lock to this file, one Go benchmark line each, for benchstat")

// lockStats is one contender's figures over a set of rounds of one interleaved run.
type lockStats struct {
	ops                     int        // cycles or acquisitions, in all
	ns                      [3]float64 // quartiles over rounds of the round's time per op
	cmdsPerOp               float64    // all commands / all ops
	cmds                    [3]float64 // quartiles over rounds of the round's commands per op
	dialsPerOp              float64    // all connections dialled / all ops
	bytesPerOp, allocsPerOp float64

	// Uncontended: the ratio of its time to the best peer's in the same round.
	best    int        // index of the best peer among the peers with as many nodes; -1 if none
	ratio   [3]float64 // quartiles over rounds
	ratioCI [2]float64 // 95 % bootstrap interval of the median ratio

	// Contended: over every acquisition of every round.
	wait50, wait99     float64
	wait50CI, wait99CI [2]float64
	hand50, hand99     float64
	switchPct          float64
}

// summarize computes every contender's figures over rounds (rounds[r][i]: contender i in round r).
// Hazard: the best peer is the peer with the lowest median over these same rounds, so of two
// peers equal in truth the one that was luckier is the reference (a winner's curse of a percent or
// two here): it can make every ratio slightly worse, never better.
func summarize(r *interleaved, rounds [][]batch) []lockStats {
	st := make([]lockStats, len(r.locks))
	for i := range r.locks {
		s := &st[i]
		var nsPerOp, cmdsPerOp []float64
		var cmds, dials int64
		var bytes, allocs uint64
		allOps := 0
		for _, row := range rounds {
			bt := row[i]
			s.ops += bt.ops
			cmds += bt.cmds
			dials += bt.dials
			allOps += bt.allOps
			bytes += bt.bytes
			allocs += bt.allocs
			nsPerOp = append(nsPerOp, float64(bt.elapsed)/float64(bt.ops))
			cmdsPerOp = append(cmdsPerOp, float64(bt.cmds)/float64(bt.ops))
		}
		s.ns[0], s.ns[1], s.ns[2] = quartiles(nsPerOp)
		s.cmds[0], s.cmds[1], s.cmds[2] = quartiles(cmdsPerOp)
		s.cmdsPerOp = float64(cmds) / float64(s.ops)
		s.dialsPerOp = float64(dials) / float64(s.ops)
		s.bytesPerOp = float64(bytes) / float64(allOps)
		s.allocsPerOp = float64(allocs) / float64(allOps)
		if r.procs > 0 {
			contendedStats(s, rounds, i)
		}
	}
	for i, c := range r.locks {
		st[i].best = -1
		for j, p := range r.locks {
			if p.peer && p.nodes == c.nodes && (st[i].best < 0 || st[j].ns[1] < st[st[i].best].ns[1]) {
				st[i].best = j
			}
		}
	}
	if r.procs == 0 {
		for i := range r.locks {
			ratioStats(&st[i], rounds, i)
		}
	}
	return st
}

// ratioStats fills s's ratio to its best peer: per round, lock i's time per op over the best
// peer's in the same round, so what slowed the whole round cancels.
func ratioStats(s *lockStats, rounds [][]batch, i int) {
	if s.best < 0 {
		return
	}
	ratios := make([]float64, len(rounds))
	for r, row := range rounds {
		mine := float64(row[i].elapsed) / float64(row[i].ops)
		peer := float64(row[s.best].elapsed) / float64(row[s.best].ops)
		ratios[r] = mine / peer
	}
	s.ratio[0], s.ratio[1], s.ratio[2] = quartiles(ratios)
	buf := make([]float64, len(ratios))
	s.ratioCI[0], s.ratioCI[1] = bootstrap(len(rounds), func(idx []int) float64 {
		for k, r := range idx {
			buf[k] = ratios[r]
		}
		slices.Sort(buf)
		return quantile(buf, 0.5)
	})
}

// contendedStats fills s's waits, hand-offs and switches, pooled over every round; the intervals
// of the wait percentiles come from resampling whole rounds.
func contendedStats(s *lockStats, rounds [][]batch, i int) {
	waits := make([][]float64, len(rounds))
	var allWaits, allHand []float64
	switches, handoffs := 0, 0
	for r, row := range rounds {
		waits[r] = nanos(row[i].waits)
		allWaits = append(allWaits, waits[r]...)
		allHand = append(allHand, nanos(row[i].handoffs)...)
		switches += row[i].switches
		handoffs += len(row[i].handoffs)
	}
	slices.Sort(allWaits)
	slices.Sort(allHand)
	s.wait50, s.wait99 = quantile(allWaits, 0.50), quantile(allWaits, 0.99)
	if len(allHand) > 0 {
		s.hand50, s.hand99 = quantile(allHand, 0.50), quantile(allHand, 0.99)
		s.switchPct = 100 * float64(switches) / float64(handoffs)
	}
	var buf []float64
	pool := func(idx []int) []float64 {
		buf = buf[:0]
		for _, r := range idx {
			buf = append(buf, waits[r]...)
		}
		slices.Sort(buf)
		return buf
	}
	s.wait50CI[0], s.wait50CI[1] = bootstrap(len(rounds), func(idx []int) float64 { return quantile(pool(idx), 0.50) })
	s.wait99CI[0], s.wait99CI[1] = bootstrap(len(rounds), func(idx []int) float64 { return quantile(pool(idx), 0.99) })
}

// report prints every recorded run: first one line per contender per run in the Go benchmark
// format (so benchstat reads them: BenchmarkLockUnlock/<name>, BenchmarkContended/<name>/procs=N/cs=D),
// then Markdown tables that pool the rounds of every -count, between two marker lines run.sh
// looks for. Hazard: it runs when the test binary ends; a binary killed by -timeout prints
// nothing.
func report(w io.Writer) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if len(registry.runs) == 0 {
		return
	}
	var keys []string
	byKey := map[string][]*interleaved{}
	for _, r := range registry.runs {
		if _, ok := byKey[r.key]; !ok {
			keys = append(keys, r.key)
		}
		byKey[r.key] = append(byKey[r.key], r)
	}
	cpu := ""
	if p := runtime.GOMAXPROCS(0); p != 1 {
		cpu = fmt.Sprintf("-%d", p)
	}
	for _, k := range keys {
		for _, r := range byKey[k] {
			st := summarize(r, r.rounds)
			for i, c := range r.locks {
				benchLine(w, "Benchmark"+r.bench+"/"+c.name+r.suffix+cpu, r, st[i])
			}
		}
	}

	if *roundsOut != "" {
		if err := writeRounds(*roundsOut, keys, byKey, cpu); err != nil {
			fmt.Fprintf(os.Stderr, "bench: -rounds: %v\n", err)
		}
	}

	fmt.Fprintln(w, tablesBegin)
	pooled := make(map[string]*interleaved)
	for _, k := range keys {
		runs := byKey[k]
		p := *runs[0]
		p.rounds = nil
		for _, r := range runs {
			p.rounds = append(p.rounds, r.rounds...)
		}
		pooled[k] = &p
		st := summarize(&p, p.rounds)
		counts := ""
		if len(runs) > 1 {
			counts = fmt.Sprintf(" (%d runs pooled)", len(runs))
		}
		if p.procs == 0 {
			fmt.Fprintf(w, "\n### %s — %s × %d cycles per lock%s\n\n", p.title, plural(len(p.rounds), "round"), cyclesPerRound, counts)
			uncontendedTable(w, &p, st)
		} else {
			fmt.Fprintf(w, "\n### %s — %s × a %s window per lock%s\n\n", p.title, plural(len(p.rounds), "round"), spaced(window(p.cs)), counts)
			contendedTable(w, &p, st)
		}
	}
	commandsTable(w, pooled, 16)
	fmt.Fprintln(w, tablesEnd)
}

// writeRounds appends one line per lock per round to the file path, in the Go benchmark format:
// time per op, commands per op, the ratio to the best peer in that round (uncontended),
// allocations per op. benchstat then summarises each lock over rounds (a median and its interval)
// and compares two runs round by round. Hazard: benchstat treats rounds as independent samples;
// rounds close in time share the machine's drift, so its p-values are optimistic.
func writeRounds(path string, keys []string, byKey map[string][]*interleaved, cpu string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "goos: %s\ngoarch: %s\npkg: github.com/lockstep-lab/lockstep/bench\n", runtime.GOOS, runtime.GOARCH)
	for _, k := range keys {
		for _, r := range byKey[k] {
			st := summarize(r, r.rounds)
			for _, row := range r.rounds {
				for i, c := range r.locks {
					bt := row[i]
					fmt.Fprintf(&b, "Benchmark%s/%s%s%s\t%8d", r.bench, c.name, r.suffix, cpu, bt.ops)
					per := func(v float64, unit string) {
						b.WriteByte('\t')
						prettyPrint(&b, v, unit)
					}
					per(float64(bt.elapsed)/float64(bt.ops), "ns/op")
					if j := st[i].best; r.procs == 0 && j >= 0 {
						peer := float64(row[j].elapsed) / float64(row[j].ops)
						per(float64(bt.elapsed)/float64(bt.ops)/peer, "x-best-peer")
					}
					per(float64(bt.cmds)/float64(bt.ops), "cmds/op")
					per(float64(bt.dials)/float64(bt.ops), "dials/op")
					per(float64(bt.bytes)/float64(bt.allOps), "B/op")
					per(float64(bt.allocs)/float64(bt.allOps), "allocs/op")
					b.WriteByte('\n')
				}
			}
		}
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The marker lines around the Markdown tables in a run's output.
const (
	tablesBegin = "<!-- interleaved tables: begin -->"
	tablesEnd   = "<!-- interleaved tables: end -->"
)

// benchLine prints one result in the Go benchmark format.
func benchLine(w io.Writer, name string, r *interleaved, s lockStats) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%8d", name, s.ops)
	metric := func(v float64, unit string) {
		b.WriteByte('\t')
		prettyPrint(&b, v, unit)
	}
	metric(s.ns[1], "ns/op")
	if r.procs == 0 && s.best >= 0 {
		metric(s.ratio[1], "x-best-peer")
	}
	metric(s.cmdsPerOp, "cmds/op")
	metric(s.dialsPerOp, "dials/op")
	if r.procs > 0 {
		metric(s.wait50, "p50-wait-ns")
		metric(s.wait99, "p99-wait-ns")
		metric(s.hand50, "p50-handoff-ns")
		metric(s.hand99, "p99-handoff-ns")
		metric(s.switchPct, "switch-%")
	}
	metric(s.bytesPerOp, "B/op")
	metric(s.allocsPerOp, "allocs/op")
	fmt.Fprintln(w, b.String())
}

// prettyPrint writes x and its unit as the testing package does (more digits for small values).
func prettyPrint(w io.Writer, x float64, unit string) {
	var format string
	switch y := math.Abs(x); {
	case y == 0 || y >= 999.95:
		format = "%10.0f %s"
	case y >= 99.995:
		format = "%12.1f %s"
	case y >= 9.9995:
		format = "%13.2f %s"
	case y >= 0.99995:
		format = "%14.3f %s"
	case y >= 0.099995:
		format = "%15.4f %s"
	default:
		format = "%16.5f %s"
	}
	fmt.Fprintf(w, format, x, unit)
}

// uncontendedTable prints the uncontended Markdown table: per lock its commands, time, ratio to
// the best peer with its quartiles and interval, bytes and allocations per cycle. Hazard: the
// quartiles of the time are over rounds of a drifting machine and are wide; only the ratio's
// spread says how two locks compare.
func uncontendedTable(w io.Writer, r *interleaved, st []lockStats) {
	fmt.Fprintln(w, "| lock | nodes | commands/cycle | time/cycle: median (IQR) | × best peer: median (IQR) | 95 % CI of the median ratio | B/cycle | allocs/cycle |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for i, c := range r.locks {
		s := st[i]
		ratio, ci := "no peer", "—"
		switch {
		case s.best == i:
			ratio, ci = "1 (best peer)", "—"
		case s.best >= 0:
			ratio = fmt.Sprintf("%.2f (%.2f–%.2f)", s.ratio[1], s.ratio[0], s.ratio[2])
			ci = fmt.Sprintf("%.2f–%.2f", s.ratioCI[0], s.ratioCI[1])
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s (%s–%s) | %s | %s | %.0f | %s |\n",
			c.name, c.nodes, num(s.cmdsPerOp), dur(s.ns[1]), dur(s.ns[0]), dur(s.ns[2]),
			ratio, ci, s.bytesPerOp, num(s.allocsPerOp))
	}
	fmt.Fprintf(w, "\nThe ratio is taken per round against the best peer (lowest median) on as many nodes, then its median and quartiles over rounds; the interval resamples rounds (%d bootstrap resamples).\n", bootstrapResamples)
}

// contendedTable prints one contended configuration's Markdown table. Hazard: a p99 over a few
// thousand waits rests on a few dozen of them; read its interval, which can be several times
// wider than the p50's.
func contendedTable(w io.Writer, r *interleaved, st []lockStats) {
	fmt.Fprintln(w, "| lock | time/acq: median (IQR) | commands/acq: median (IQR) | p50 wait [95 % CI] | p99 wait [95 % CI] | hand-off p50 / p99 | switch-% | B/acq | allocs/acq |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, c := range r.locks {
		s := st[i]
		fmt.Fprintf(w, "| %s | %s (%s–%s) | %s (%s–%s) | %s [%s–%s] | %s [%s–%s] | %s / %s | %.1f | %.0f | %s |\n",
			c.name, dur(s.ns[1]), dur(s.ns[0]), dur(s.ns[2]),
			num(s.cmds[1]), num(s.cmds[0]), num(s.cmds[2]),
			dur(s.wait50), dur(s.wait50CI[0]), dur(s.wait50CI[1]),
			dur(s.wait99), dur(s.wait99CI[0]), dur(s.wait99CI[1]),
			dur(s.hand50), dur(s.hand99), s.switchPct, s.bytesPerOp, num(s.allocsPerOp))
	}
	fmt.Fprintln(w, "\nTime and commands per acquisition: the window over the acquisitions that got the lock inside it, median and quartiles over rounds. Waits: every acquisition asked for inside the window, pooled over rounds; the interval resamples rounds.")
}

// commandsTable prints the commands per acquisition at procs processes, for every critical
// section that ran with that many processes, and beside them the connections dialled per
// acquisition (a subscription of its own per wait, in 13, 14 and 16). Hazard: the commands of a
// dial (HELLO, two CLIENT SETINFO) are among the commands counted.
func commandsTable(w io.Writer, pooled map[string]*interleaved, procs int) {
	var runs []*interleaved
	for _, r := range pooled {
		if r.procs == procs {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	slices.SortFunc(runs, func(a, b *interleaved) int { return int(a.cs - b.cs) })
	fmt.Fprintf(w, "\n### Commands per acquisition, %d processes — median of rounds (IQR)\n\n", procs)
	head, rule := "| lock |", "|---|"
	stats := make([][]lockStats, len(runs))
	for k, r := range runs {
		head += fmt.Sprintf(" critical section %s |", spaced(r.cs))
		rule += "---:|"
		stats[k] = summarize(r, r.rounds)
	}
	for _, r := range runs {
		head += fmt.Sprintf(" dials/acq, %s |", spaced(r.cs))
		rule += "---:|"
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for i, c := range runs[0].locks {
		row := "| " + c.name + " |"
		for k := range runs {
			s := stats[k][i]
			row += fmt.Sprintf(" %s (%s–%s) |", num(s.cmds[1]), num(s.cmds[0]), num(s.cmds[2]))
		}
		for k := range runs {
			row += fmt.Sprintf(" %s |", num(stats[k][i].dialsPerOp))
		}
		fmt.Fprintln(w, row)
	}
}

// dur formats nanoseconds with three significant digits in a fitting unit.
func dur(ns float64) string {
	unit, v := "ns", ns
	switch {
	case ns >= 1e9:
		unit, v = "s", ns/1e9
	case ns >= 1e6:
		unit, v = "ms", ns/1e6
	case ns >= 1e3:
		unit, v = "µs", ns/1e3
	}
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

// plural writes n and a noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// num formats a count per op: whole numbers without decimals, others with two.
func num(x float64) string {
	if math.Abs(x-math.Round(x)) < 0.005 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.2f", x)
}
