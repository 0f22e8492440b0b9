package main

// The terminal lab. How it is put together:
//
//   - model (this file) owns the screen state and at most one session: live buyers (sim.Live) or
//     a canned scenario (sim.Run in a goroutine). Every session has its own Redis (redisenv.Env)
//     and a generation number; messages of an older generation are dropped. Starting a session
//     stops the previous one in the background (model.bg), and quitting waits for all of them.
//   - feed (tui_feed.go) carries a session's events to the program: the arena's OnEvent appends
//     to a queue and returns; a re-armed tea.Cmd takes everything queued as one message.
//   - arena (tui_arena.go) is the picture the events make: the shop's numbers, the invariants, a
//     bounded log and the timeline, one ring of time buckets per lane, so memory stays fixed
//     however long a session runs and however hard its buyers spin.
//   - tui_view.go draws it; tui_diff.go is the code pane's line diff; tui_keys.go the keys.
//
// The only thing read from Redis directly is the lock's value and TTL, on a tick.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// speeds are the slow-down factors [ and ] step through: 1 is the tests' pace (TTL 200 ms).
var speeds = []float64{1, 2, 5, 10, 20}

// tuiOptions configure the lab.
type tuiOptions struct {
	backend string
	slow    float64 // slow-down factor of sim.DefaultTiming
	buyers  int
	stock   int
	offline bool // tests: never open a backend
}

// tuiCmd opens the terminal lab.
func tuiCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lab", "lab [-redis embedded] [-speed 10] [-buyers 5] [-stock 100]\n\n"+
		"Opens the terminal lab: pick a step, break it, read the lesson, see the fix. Press ? in the lab for\n"+
		"every key. Headless: lab run -step 04 -scenario slow, lab matrix (each takes -h).", stderr)
	backend := fs.String("redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	slow := fs.Float64("speed", 10, "slow time down this many times, so a person can follow a TTL (1 = the tests' pace, TTL 200 ms; 10 = TTL 2 s);\n"+
		"from 1 to 100; in the lab [ and ] step through 1, 2, 5, 10, 20, from any -speed to the nearest level that way")
	buyers := fs.Int("buyers", 5, "buyers placing orders in the live arena (1…50)")
	stock := fs.Int("stock", 100, "units on the shelf at the start and after each reset (1…1000)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *slow < 1 || *slow > 100:
		return usageError("-speed %g: want a slow-down factor from 1 to 100", *slow)
	case *buyers < 1 || *buyers > maxBuyers:
		return usageError("-buyers %d: want 1…%d", *buyers, maxBuyers)
	case *stock < 1 || *stock > 1000:
		return usageError("-stock %d: want 1…1000", *stock)
	}
	// Fail before the screen changes if the backend cannot start.
	env, err := redisenv.Open(*backend)
	if err != nil {
		return usageError("%v", err)
	}
	env.Close()
	m := newModel(tuiOptions{backend: *backend, slow: *slow, buyers: *buyers, stock: *stock})
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithOutput(stdout))
	_, err = p.Run()
	m.shutdown()
	if errors.Is(err, tea.ErrProgramPanic) {
		// Bubble Tea has restored the terminal and printed the trace.
		return errors.New("the lab panicked (trace above); the terminal was restored")
	}
	return err
}

const maxBuyers = 50

type screen int

const (
	scrPicker screen = iota
	scrArena
	scrCode
)

// session is one arena the lab is watching: live buyers, or a canned scenario.
type session struct {
	gen    int
	env    redisenv.Env
	live   *sim.Live
	feed   *feed
	cancel context.CancelFunc // a canned run
	ran    chan struct{}      // closed when the canned run returned
	start  time.Time
}

// stop ends everything the session started; it may block (orders finishing), so the model runs
// it in the background.
func (s *session) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.ran
	}
	if s.live != nil {
		s.live.Stop()
	}
	s.env.Close()
	s.feed.close()
}

// now is the session's clock, as its events' At count it.
func (s *session) now() time.Duration {
	if s.live != nil {
		return s.live.Arena().Since()
	}
	return time.Since(s.start)
}

type model struct {
	opt     tuiOptions
	steps   []*steps.Step
	cur     int // index into steps
	scr     screen
	help    bool
	helpOff int // the help screen's scroll
	width   int
	height  int

	slow    float64
	buyers  int
	paused  bool
	sess    *session
	gen     int
	ar      *arena
	msg     string // the answer to the last key
	broke   bool   // the last canned run broke the step: → leads to the fix's diff
	diffOut bool   // show the next step's diff when it opens

	code     viewport.Model
	codeDiff bool
	codeFor  string // what the viewport holds: step slug, mode and width
	codeFrom screen // where esc in the code pane goes back to

	keys keyMap
	hm   help.Model
	bg   *sync.WaitGroup // sessions stopping in the background
}

func newModel(o tuiOptions) *model {
	if o.slow == 0 {
		o.slow = 10
	}
	if o.buyers == 0 {
		o.buyers = 5
	}
	if o.stock == 0 {
		o.stock = 100
	}
	m := &model{opt: o, steps: catalog.Steps, slow: o.slow, buyers: o.buyers,
		width: 100, height: 30, codeDiff: true, keys: newKeyMap(), hm: help.New(), bg: &sync.WaitGroup{}}
	m.code = viewport.New(m.width, m.height-4)
	return m
}

func (m *model) step() *steps.Step { return m.steps[m.cur] }

func (m *model) timing() sim.Timing { return sim.DefaultTiming().Scaled(m.slow) }

func (m *model) Init() tea.Cmd { return nil }

// msgs the program receives besides keys and feeds.
type (
	tickMsg struct {
		gen  int
		held bool
		val  string
		ttl  time.Duration
		at   time.Duration // when the read started, in session time
	}
	injectMsg struct {
		gen int
		f   sim.Fault
		who int
		err error
	}
)

// tick reads the lock from Redis every so often (its TTL is Redis's to tell) and moves the
// timeline's clock.
func (m *model) tick() tea.Cmd {
	s := m.sess
	if s == nil {
		return nil
	}
	key := s.env.Prefix() + sim.LockName
	adm := s.env.Nodes()[0].Admin()
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		t := tickMsg{gen: s.gen, at: s.now()}
		v, err := adm.Get(ctx, key).Result()
		if err == nil {
			t.held, t.val = true, v
			t.ttl, _ = adm.PTTL(ctx, key).Result()
		}
		return t
	})
}

// stopSession hands the current session to the background to stop.
func (m *model) stopSession() {
	s := m.sess
	m.sess = nil
	m.gen++
	m.paused = false
	if s == nil {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		s.stop()
	}()
}

// shutdown stops the session and waits for everything the lab started to end.
func (m *model) shutdown() {
	m.stopSession()
	m.bg.Wait()
}

func (m *model) openEnv() (redisenv.Env, error) {
	if m.opt.offline {
		return nil, errors.New("offline")
	}
	return redisenv.Open(m.opt.backend)
}

// prepareArena sets up the screen's arena for scenario ("" for live buyers) and opens a fresh
// backend and event feed for it. It returns a nil Env when there is nothing to run: offline, or
// Redis could not start (m.msg then says why).
func (m *model) prepareArena(scenario steps.Scenario, t sim.Timing, stock int) (redisenv.Env, *feed) {
	m.ar = newArena(scenario, t, stock, sim.LockName, true)
	m.ar.noLock = m.step().Number == 1
	if m.opt.offline {
		return nil, nil
	}
	env, err := m.openEnv()
	if err != nil {
		m.msg = "cannot start Redis: " + err.Error()
		return nil, nil
	}
	m.ar.lockKey, m.ar.canFail = env.Prefix()+sim.LockName, env.Nodes()[0].CanFailover()
	return env, newFeed(m.gen)
}

// startLive stops any session and starts live buyers on a fresh backend for the current step.
func (m *model) startLive() tea.Cmd {
	m.stopSession()
	m.broke = false
	t := m.timing()
	env, f := m.prepareArena("", t, m.opt.stock)
	if env == nil {
		return nil
	}
	live, err := sim.StartLive(sim.Config{Step: m.step(), Env: env, Timing: t, Stock: m.opt.stock, OnEvent: f.push}, m.buyers)
	if err != nil {
		env.Close()
		m.msg = "cannot start the arena: " + err.Error()
		return nil
	}
	m.sess = &session{gen: m.gen, env: env, live: live, feed: f, start: time.Now()}
	return tea.Batch(f.next(), m.tick())
}

// startBreak stops any session and plays the step's breaking scenario on a fresh backend.
func (m *model) startBreak() tea.Cmd {
	st := m.step()
	if st.BreakWith == "" {
		m.msg = "no canned scenario breaks this step on one Redis"
		return nil
	}
	m.stopSession()
	m.broke = false
	t := m.timing()
	m.msg = fmt.Sprintf("breaking step %d with %q: %s", st.Number, st.BreakWith, steps.Describe[st.BreakWith])
	env, f := m.prepareArena(st.BreakWith, t, -1)
	if env == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{gen: m.gen, env: env, feed: f, cancel: cancel, ran: make(chan struct{}), start: time.Now()}
	m.sess = s
	go func() {
		defer close(s.ran)
		var rep *sim.Report
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the scenario panicked: %v\n%s", r, debug.Stack())
			}
			f.finish(rep, err)
		}()
		rep, err = sim.Run(ctx, sim.Config{Step: st, Env: env, Timing: t, OnEvent: f.push}, st.BreakWith)
	}()
	return tea.Batch(f.next(), m.tick())
}

// setStep moves to step i; the arena restarts with live buyers if it is on screen.
func (m *model) setStep(i int) tea.Cmd {
	if i < 0 || i >= len(m.steps) {
		return nil
	}
	broke := m.broke && i == m.cur+1
	if i != m.cur {
		m.stopSession()
		m.ar = nil
		m.broke = false
		m.msg = ""
	}
	m.cur = i
	if broke {
		// After a break, the next step is the fix: show what it changes.
		m.scr, m.codeDiff, m.codeFrom = scrCode, true, scrArena
		m.msg = fmt.Sprintf("step %d is the fix: its diff from step %d", m.step().Number, m.step().Number-1)
		return nil
	}
	if m.scr == scrArena && m.sess == nil && m.ar == nil {
		return m.startLive()
	}
	return nil
}

// openArena shows the arena, starting live buyers if nothing runs yet.
func (m *model) openArena() tea.Cmd {
	m.scr = scrArena
	if m.ar == nil {
		return m.startLive()
	}
	return nil
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.hm.Width = msg.Width
		return m, nil
	case feedMsg:
		if msg.gen != m.gen || m.ar == nil {
			return m, nil
		}
		was := m.ar.failedOver
		for _, e := range msg.evs {
			m.ar.apply(e)
		}
		if !was && m.ar.failedOver && m.ar.scenario == "" {
			m.msg = "failed over: the primary died before the lock write reached the replica, which is primary now"
		}
		m.ar.drops += msg.drops
		if msg.done {
			if m.sess != nil && m.sess.cancel != nil {
				m.finishBreak(msg.rep, msg.err)
			}
			return m, nil
		}
		return m, m.sess.feed.next()
	case tickMsg:
		if msg.gen != m.gen || m.sess == nil || m.ar == nil {
			return m, nil
		}
		m.ar.lockHeld, m.ar.lockVal, m.ar.lockTTL, m.ar.lockReadAt = msg.held, msg.val, msg.ttl, msg.at
		if !m.ar.done {
			m.ar.advance(m.sess.now())
			m.ar.checkStuck()
		}
		return m, m.tick()
	case injectMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		m.msg = injectAnswer(msg)
		if msg.f == sim.FaultFailover && msg.err == nil && m.ar != nil {
			m.ar.armed = true
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

func (m *model) finishBreak(rep *sim.Report, err error) {
	m.ar.finish(rep, err)
	st := m.step()
	switch {
	case err != nil:
		m.msg = "the scenario failed: " + err.Error()
	case len(rep.Violations) > 0:
		m.broke = true
		m.msg = fmt.Sprintf("step %d broke under %s", st.Number, st.BreakWith)
	default:
		m.msg = fmt.Sprintf("step %d held under %s this time", st.Number, st.BreakWith)
	}
}

func injectAnswer(msg injectMsg) string {
	switch {
	case errors.Is(msg.err, sim.ErrNoHolder):
		return fmt.Sprintf("%s: nobody holds the lock right now, so nothing was hit — try again when a bar is drawn", msg.f)
	case msg.err != nil:
		return fmt.Sprintf("%s: %v", msg.f, msg.err)
	case msg.f == sim.FaultFailover:
		return "failover armed: the next lock write will not reach the replica, then the primary dies"
	}
	what := map[sim.Fault]string{
		sim.FaultCrash:      "crashed: its process died, its deferred code will never run",
		sim.FaultError:      "its work will return an error",
		sim.FaultSlow:       "its work now takes 3 × TTL",
		sim.FaultPause:      "frozen (stop-the-world) for 3 × TTL",
		sim.FaultUnlockRace: "will freeze just before the command that deletes its lock",
		sim.FaultReentrant:  "its work calls a helper that takes the same lock again",
	}[msg.f]
	return fmt.Sprintf("%s → buyer %d: %s", msg.f, msg.who, what)
}

// repeatable are the keys a quick typist (or tmux send-keys) may deliver several of in one message.
const repeatable = "+=-_[]"

func (m *model) key(k tea.KeyMsg) tea.Cmd {
	km := m.keys
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !m.help && strings.Trim(string(k.Runes), repeatable) == "" {
		return m.repeated(k.Runes)
	}
	if key.Matches(k, km.Quit) {
		m.stopSession()
		return tea.Quit
	}
	if m.help {
		switch {
		case key.Matches(k, km.Help) || key.Matches(k, km.Back):
			m.help = false
		case k.String() == "down" || k.String() == "j" || k.String() == "pgdown":
			m.helpOff++
		case k.String() == "up" || k.String() == "k" || k.String() == "pgup":
			m.helpOff = max(0, m.helpOff-1)
		}
		return nil
	}
	switch {
	case key.Matches(k, km.Help):
		m.help, m.helpOff = true, 0
		return nil
	case key.Matches(k, km.Prev):
		return m.setStep(m.cur - 1)
	case key.Matches(k, km.Next):
		return m.setStep(m.cur + 1)
	case key.Matches(k, km.Jump):
		return m.setStep(int(k.Runes[0] - '1'))
	case key.Matches(k, km.Break):
		m.scr = scrArena
		return m.startBreak()
	}
	switch m.scr {
	case scrPicker:
		switch {
		case key.Matches(k, km.Open), k.String() == " ":
			return m.openArena()
		case key.Matches(k, km.Code):
			m.scr, m.codeFrom = scrCode, scrPicker
		case k.String() == "up":
			return m.setStep(m.cur - 1)
		case k.String() == "down":
			return m.setStep(m.cur + 1)
		}
		return nil
	case scrCode:
		switch {
		case key.Matches(k, km.Code):
			return m.openArena()
		case key.Matches(k, km.Back):
			if m.codeFrom == scrArena {
				m.msg = ""
				return m.openArena()
			}
			m.scr = scrPicker
		case key.Matches(k, km.Diff):
			m.codeDiff = !m.codeDiff
		default:
			m.syncCode()
			switch k.String() {
			case "up", "k":
				m.code.ScrollUp(1)
			case "down", "j":
				m.code.ScrollDown(1)
			case "pgup":
				m.code.PageUp()
			case "pgdown", " ":
				m.code.PageDown()
			case "home", "g":
				m.code.GotoTop()
			case "end", "G":
				m.code.GotoBottom()
			}
		}
		return nil
	}
	// the arena
	switch {
	case key.Matches(k, km.Code):
		m.scr, m.codeFrom = scrCode, scrArena
		return nil
	case key.Matches(k, km.Back):
		m.scr = scrPicker
		m.stopSession()
		m.ar = nil
		return nil
	case key.Matches(k, km.Reset):
		m.msg = "reset: a fresh Redis, the shelf restocked"
		return m.startLive()
	case key.Matches(k, km.Slower), key.Matches(k, km.Faster):
		slower := key.Matches(k, km.Slower)
		return m.setSpeed(nextSpeed(m.slow, slower), slower)
	}
	if m.sess == nil || m.sess.live == nil {
		if isLiveKey(km, k) {
			m.msg = "no live buyers now: press r to start them (b replays the scenario)"
		}
		return nil
	}
	live, gen := m.sess.live, m.gen
	switch {
	case key.Matches(k, km.Hold):
		m.paused = !m.paused
		live.SetPaused(m.paused)
		if m.paused {
			m.msg = "new orders paused (orders under way go on); space resumes"
		} else {
			m.msg = "orders resumed"
		}
	case key.Matches(k, km.More), key.Matches(k, km.Fewer):
		n := m.buyers + 1
		if key.Matches(k, km.Fewer) {
			n = m.buyers - 1
		}
		if n < 1 || n > maxBuyers {
			m.msg = fmt.Sprintf("buyers: 1…%d", maxBuyers)
			return nil
		}
		m.buyers = n
		live.SetBuyers(n)
		m.msg = fmt.Sprintf("%d buyers", n)
	default:
		for _, f := range sim.Faults {
			if key.Matches(k, km.faultKeys()[f]) {
				m.msg = fmt.Sprintf("%s → …", f)
				return func() tea.Msg {
					who, err := live.Inject(f)
					return injectMsg{gen: gen, f: f, who: who, err: err}
				}
			}
		}
	}
	return nil
}

// setSpeed moves to slow-down factor to and restarts live buyers at that pace.
func (m *model) setSpeed(to float64, slower bool) tea.Cmd {
	if to == m.slow {
		m.msg = fmt.Sprintf("speed: %s is already the %s", speedText(m.slow), map[bool]string{true: "slowest", false: "fastest"}[slower])
		return nil
	}
	m.slow = to
	m.msg = fmt.Sprintf("speed: %s — the arena restarts at that pace", speedText(m.slow))
	if m.ar != nil && m.ar.scenario != "" {
		m.msg = fmt.Sprintf("speed: %s — press b to replay, r for live buyers", speedText(m.slow))
		return nil
	}
	return m.startLive()
}

// repeated handles several of + - [ ] arriving as one message: each rune counts once, and the
// arena restarts at most once for a change of speed.
func (m *model) repeated(runes []rune) tea.Cmd {
	var speed, other []rune
	for _, r := range runes {
		if r == '[' || r == ']' {
			speed = append(speed, r)
		} else {
			other = append(other, r)
		}
	}
	var cmds []tea.Cmd
	for _, r := range other {
		cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
	}
	if len(speed) > 0 && m.scr == scrArena {
		to := m.slow
		for _, r := range speed {
			to = nextSpeed(to, r == '[')
		}
		cmds = append(cmds, m.setSpeed(to, speed[len(speed)-1] == '['))
	}
	return tea.Batch(cmds...)
}

func isLiveKey(km keyMap, k tea.KeyMsg) bool {
	for _, b := range []key.Binding{km.Hold, km.More, km.Fewer, km.Crash, km.Error, km.Slow, km.Pause, km.UnlockRace, km.Failover, km.Nested} {
		if key.Matches(k, b) {
			return true
		}
	}
	return false
}

// nextSpeed moves to the nearest level slower or faster than cur (a -speed between levels moves
// to the level next to it); past the last level that way it stays where it is.
func nextSpeed(cur float64, slower bool) float64 {
	if slower {
		for _, s := range speeds {
			if s > cur {
				return s
			}
		}
		return cur
	}
	for i := len(speeds) - 1; i >= 0; i-- {
		if speeds[i] < cur {
			return speeds[i]
		}
	}
	return cur
}

func speedText(slow float64) string {
	t := sim.DefaultTiming().Scaled(slow)
	if slow == 1 {
		return fmt.Sprintf("real pace, TTL %s", roundDur(t.TTL))
	}
	return fmt.Sprintf("%g× slower, TTL %s", slow, roundDur(t.TTL))
}

func roundDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}
