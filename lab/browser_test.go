package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// A real browser for the pages' tests: headless Chromium, driven through the DevTools protocol
// over a pipe (--remote-debugging-pipe: JSON messages ended by a NUL byte on file descriptors 3
// and 4), so no WebSocket library is needed. Where Chromium is missing the tests skip and say so,
// outside CI; under CI=true they fail (.ci/run installs it).

// browser is one headless Chromium with its DevTools pipe.
type browser struct {
	t    *testing.T
	cmd  *exec.Cmd
	send *os.File // its descriptor 3: what it reads
	mu   sync.Mutex
	next int
	wait map[int]chan cdpMessage
	// problems are the console errors and uncaught exceptions of every page, as they came.
	problems []string
	loaded   map[string]chan struct{} // session → its page's load event
	dead     chan struct{}
}

// cdpMessage is one message of the protocol: a reply (ID) or an event (Method).
type cdpMessage struct {
	ID        int                       `json:"id,omitempty"`
	Method    string                    `json:"method,omitempty"`
	Params    json.RawMessage           `json:"params,omitempty"`
	Result    json.RawMessage           `json:"result,omitempty"`
	Error     *struct{ Message string } `json:"error,omitempty"`
	SessionID string                    `json:"sessionId,omitempty"`
}

// chromiumPath is the headless browser this machine has, or "" and why not.
func chromiumPath() (string, string) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, ""
		}
	}
	return "", "no chromium on PATH (apt-get install -y chromium; .ci/run installs it)"
}

// startBrowser starts headless Chromium for t, or skips t where there is none (fails it under
// CI=true). The browser is stopped when t ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path, why := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	toChrome, send, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	recv, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome} // its descriptors 3 and 4
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	toChrome.Close()
	fromChrome.Close()
	b := &browser{t: t, cmd: cmd, send: send, wait: map[int]chan cdpMessage{}, loaded: map[string]chan struct{}{}, dead: make(chan struct{})}
	go b.read(bufio.NewReader(recv))
	t.Cleanup(func() {
		b.call("", "Browser.close", nil)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		send.Close()
		recv.Close()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", lastLines(stderr.String(), 20))
		}
	})
	return b
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// read takes the browser's messages until its pipe closes.
func (b *browser) read(r *bufio.Reader) {
	defer close(b.dead)
	for {
		raw, err := r.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if c := b.wait[m.ID]; c != nil {
				c <- m
				delete(b.wait, m.ID)
			}
		} else {
			b.event(m)
		}
		b.mu.Unlock()
	}
}

// event notes what the tests want of an event: a page's load, a console error, an exception.
func (b *browser) event(m cdpMessage) {
	switch m.Method {
	case "Page.loadEventFired":
		if c := b.loaded[m.SessionID]; c != nil {
			close(c)
			delete(b.loaded, m.SessionID)
		}
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		json.Unmarshal(m.Params, &p)
		b.problems = append(b.problems, "exception: "+p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description)
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			b.problems = append(b.problems, fmt.Sprintf("console.%s: %v", p.Type, p.Args))
		}
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Level, Text, URL string }
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" {
			b.problems = append(b.problems, "log: "+p.Entry.Text+" "+p.Entry.URL)
		}
	}
}

// call sends one command (to a page's session, or to the browser with "") and waits for its
// reply.
func (b *browser) call(session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.next++
	id := b.next
	c := make(chan cdpMessage, 1)
	b.wait[id] = c
	b.mu.Unlock()
	msg, err := json.Marshal(struct {
		ID        int    `json:"id"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}{id, method, params, session})
	if err != nil {
		return nil, err
	}
	if _, err := b.send.Write(append(msg, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-c:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-b.dead:
		return nil, fmt.Errorf("%s: the browser went away", method)
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("%s: no reply in 60 s", method)
	}
}

// must is call, failing the test on an error.
func (b *browser) must(session, method string, params any) json.RawMessage {
	b.t.Helper()
	r, err := b.call(session, method, params)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// tab is one page of the browser.
type tab struct {
	b       *browser
	session string
}

// open opens file in a new tab of w × h CSS pixels and waits until its script says it is ready
// (body's data-ready), returning the tab and how long that took from the navigation.
func (b *browser) open(file string, w, h int) (*tab, time.Duration) {
	b.t.Helper()
	if _, err := os.Stat(file); err != nil {
		b.t.Fatalf("no page to open: %v", err)
	}
	var target struct{ TargetID string }
	json.Unmarshal(b.must("", "Target.createTarget", map[string]any{"url": "about:blank"}), &target)
	var att struct{ SessionID string }
	json.Unmarshal(b.must("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &att)
	tb := &tab{b: b, session: att.SessionID}
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		b.must(tb.session, m, nil)
	}
	b.must(tb.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false})
	loaded := make(chan struct{})
	b.mu.Lock()
	b.loaded[tb.session] = loaded
	b.mu.Unlock()
	start := time.Now()
	b.must(tb.session, "Page.navigate", map[string]any{"url": "file://" + file})
	select {
	case <-loaded:
	case <-time.After(60 * time.Second):
		b.t.Fatalf("%s: no load event in 60 s", file)
	}
	for deadline := time.Now().Add(30 * time.Second); tb.eval(`document.body && document.body.dataset.ready || ""`) != "1"; {
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: the page's script never said it was ready", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tb, time.Since(start)
}

// eval evaluates a JavaScript expression in the tab and returns its value, as JSON decodes it.
func (tb *tab) eval(expr string) any {
	tb.b.t.Helper()
	var r struct {
		Result           struct{ Value any }
		ExceptionDetails *struct{ Text string }
	}
	json.Unmarshal(tb.b.must(tb.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &r)
	if r.ExceptionDetails != nil {
		tb.b.t.Fatalf("evaluating %s: %s", expr, r.ExceptionDetails.Text)
	}
	return r.Result.Value
}

// str and num are eval's value as a string and as a number.
func (tb *tab) str(expr string) string { return fmt.Sprint(tb.eval(expr)) }
func (tb *tab) num(expr string) float64 {
	tb.b.t.Helper()
	f, ok := tb.eval(expr).(float64)
	if !ok {
		tb.b.t.Fatalf("%s is not a number", expr)
	}
	return f
}

// key presses a key (as the DevTools protocol names it: "ArrowRight", with its key code).
func (tb *tab) key(name string, code int) {
	for _, typ := range []string{"rawKeyDown", "keyUp"} {
		tb.b.must(tb.session, "Input.dispatchKeyEvent", map[string]any{"type": typ, "key": name, "code": name, "windowsVirtualKeyCode": code})
	}
}

// click clicks the left mouse button at x, y (CSS pixels of the viewport); hover only moves there.
func (tb *tab) click(x, y float64) {
	tb.hover(x, y)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		tb.b.must(tb.session, "Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1})
	}
}

func (tb *tab) hover(x, y float64) {
	tb.b.must(tb.session, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": x, "y": y})
}

// center is the middle of the first element selector matches, in the viewport, scrolled into
// view first.
func (tb *tab) center(selector string) (float64, float64) {
	tb.b.t.Helper()
	v, ok := tb.eval(fmt.Sprintf(`(function(){var e=document.querySelector(%q); if(!e) return null; e.scrollIntoView({block:"center"}); var r=e.getBoundingClientRect(); return [r.left+r.width/2, r.top+r.height/2];})()`, selector)).([]any)
	if !ok || len(v) != 2 {
		tb.b.t.Fatalf("no element %s", selector)
	}
	return v[0].(float64), v[1].(float64)
}

// screenshot saves what the tab shows (its whole page when full) as a PNG file.
func (tb *tab) screenshot(file string, full bool) {
	tb.b.t.Helper()
	var r struct{ Data string }
	json.Unmarshal(tb.b.must(tb.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": full}), &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil || len(png) < 1000 {
		tb.b.t.Fatalf("screenshot of %d bytes: %v", len(png), err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		tb.b.t.Fatal(err)
	}
}

// problems are the console errors and exceptions seen so far, and what the page's own script
// wrote into the page (window.onerror).
func (tb *tab) problems() []string {
	tb.b.mu.Lock()
	out := append([]string(nil), tb.b.problems...)
	tb.b.mu.Unlock()
	if s := tb.str(`document.getElementById("page-errors") ? document.getElementById("page-errors").textContent : "no error list"`); s != "" {
		out = append(out, "the page: "+s)
	}
	return out
}
