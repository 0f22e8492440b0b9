package page

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/lab/picture"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The page as a file: html/template writes what a reader reads without the script (the table,
// each run's verdict, lesson, hand-off and report); page.js draws the timelines from the view
// (Data as JSON); the runs themselves, the histories lab judge reads, ride along as the file
// -save writes. Styles, script and data are inline: the file opens from a chat attachment or a
// USB stick, with no server and nothing fetched.

var (
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// The two script elements that hold a page's data, by id.
const (
	viewID = "lockstep-view" // Data: what the script draws
	runsID = "lockstep-runs" // savedRuns: what lab judge reads back
)

// PlainRunsLimit is the most the runs may weigh as plain JSON in a page. Past it they are stored
// gzipped, in base64 (type "application/gzip"): the whole matrix's histories are about 6 MB of
// JSON, mostly the load scenario's spinning waiters, and a page must stay well under 5 MB. A run's
// page, and a few steps' matrix, hold them as plain JSON, readable in any text editor.
const PlainRunsLimit = 2 << 20

// laneHeight is a timeline lane's height in CSS pixels, and timelineChrome what a timeline adds to
// its lanes (the ruler, its controls and the line that says the event at the cursor): a timeline's
// place is kept at its height before the script draws it, so a link lands where it will be.
const (
	laneHeight     = 22
	timelineChrome = 96
)

// Write writes the page of d, with runs as its data, to file.
func Write(file string, d Data, runs any) error {
	var b bytes.Buffer
	if err := WriteTo(&b, d, runs, PlainRunsLimit); err != nil {
		return err
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

// WriteTo writes the page to w, the runs as plain JSON up to limit bytes, gzipped past it.
func WriteTo(w io.Writer, d Data, runs any, limit int) error {
	view, err := json.Marshal(d)
	if err != nil {
		return err
	}
	data, err := json.Marshal(runs)
	if err != nil {
		return err
	}
	if err := pageTemplate.Execute(w, struct {
		Data
		CSS, Colours template.CSS
	}{d, template.CSS(pageCSS), template.CSS(picture.CSSVars())}); err != nil {
		return err
	}
	// json.Marshal escapes <, > and &, so no "</script" can end these elements early.
	fmt.Fprintf(w, "<script type=\"application/json\" id=%q>%s</script>\n", viewID, view)
	if len(data) <= limit {
		fmt.Fprintf(w, "<script type=\"application/json\" id=%q>%s</script>\n", runsID, data)
	} else {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(data)
		if err := zw.Close(); err != nil {
			return err
		}
		fmt.Fprintf(w, "<script type=\"application/gzip\" data-encoding=\"base64\" id=%q>%s</script>\n", runsID, base64.StdEncoding.EncodeToString(z.Bytes()))
	}
	_, err = fmt.Fprintf(w, "<script>%s</script>\n</body>\n</html>\n", pageJS)
	return err
}

// IsPage tells whether b is a page a lab command wrote (and not a file of runs).
func IsPage(b []byte) bool {
	head := bytes.ToLower(bytes.TrimSpace(b[:min(len(b), 512)]))
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html"))
}

var runsElement = regexp.MustCompile(`<script([^>]*)\bid="` + runsID + `"([^>]*)>`)

// RunsOf is the runs a page carries, as the JSON -save writes.
func RunsOf(b []byte) ([]byte, error) {
	loc := runsElement.FindSubmatchIndex(b)
	if loc == nil {
		return nil, errors.New("a page without runs (no " + runsID + " element): not one lab wrote")
	}
	tag := string(b[loc[0]:loc[1]])
	body := b[loc[1]:]
	end := bytes.Index(body, []byte("</script>"))
	if end < 0 {
		return nil, errors.New("the page's runs are cut short")
	}
	body = bytes.TrimSpace(body[:end])
	switch {
	case strings.Contains(tag, `type="application/json"`):
		return body, nil
	case strings.Contains(tag, `type="application/gzip"`) && strings.Contains(tag, `data-encoding="base64"`):
		z, err := base64.StdEncoding.DecodeString(string(body))
		if err != nil {
			return nil, fmt.Errorf("the page's runs: %v", err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, fmt.Errorf("the page's runs: %v", err)
		}
		out, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("the page's runs: %v", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the page's runs are in a form this lab does not read: %s", tag)
}

// playedWords is an RFC 3339 time as a page says it: "2026-11-24 21:30 UTC"; "" stays "".
func playedWords(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// RunPage is the page of one run.
func RunPage(c matrix.Cell, st *steps.Step, played string, learner *steps.Step) Data {
	tb := NewTables()
	r := newRun(c, st, playedWords(played), tb, learner)
	return Data{Kind: "run", Runs: []Run{r}, Words: tb.Words, Styles: tb.Styles, Title: fmt.Sprintf("%s × %s", c.Step, c.Scenario),
		Backend: r.Backend, Played: r.Played}
}

// MatrixPage is the page of several cells: the table, a row per step in the order the cells
// came, each played cell linked to its run's section below it. played gives each run's time.
func MatrixPage(title string, cells []matrix.Cell, played func(c matrix.Cell) string, learner *steps.Step) Data {
	d := Data{Kind: "matrix", Title: title}
	tb := NewTables()
	for _, sc := range scenario.Names() {
		d.Scenarios = append(d.Scenarios, string(sc))
	}
	idx := map[string]int{}
	for _, c := range cells {
		i, ok := idx[c.Step]
		if !ok {
			i = len(d.Rows)
			idx[c.Step] = i
			row := Row{Step: c.Step, Cells: make([]Cell, len(d.Scenarios))}
			if st, err := catalog.Find(c.Step); err == nil {
				row.Title = st.Title
			}
			d.Rows = append(d.Rows, row)
		}
		if j := slices.Index(d.Scenarios, c.Scenario); j >= 0 {
			d.Rows[i].Cells[j] = cellOf(c)
		}
		if c.Report != nil {
			st, _ := catalog.Find(c.Step)
			r := newRun(c, st, playedWords(played(c)), tb, learner)
			d.Runs = append(d.Runs, r)
			if d.Backend == "" {
				d.Backend = r.Backend
			}
			if d.Played == "" {
				d.Played = r.Played
			}
		}
	}
	d.Words, d.Styles = tb.Words, tb.Styles
	return d
}

// GradePage is the page of a learner's grade: their row, then the rows the catalog expects of the
// steps nearest it (the one it equals first, if any), each cell of theirs that differs marked.
func GradePage(slug string, row []matrix.Cell, played string, shared []grading.Shared, learner *steps.Step) Data {
	d := MatrixPage("your lock: "+slug, row, func(matrix.Cell) string { return played }, learner)
	d.Kind = "grade"
	for _, s := range shared {
		d.Shared = append(d.Shared, s.PerProcessSays())
	}
	if len(d.Rows) == 0 {
		return d
	}
	d.Rows[0].Mine, d.Rows[0].Note = true, "your lock"
	d.Like = grading.Like(catalog.Steps, row, learner)
	near := grading.NearestRows(catalog.Steps, row)
	for _, n := range near[:min(len(near), NearestRows)] {
		r := Row{Step: n.Step.Slug, Title: n.Step.Title, Note: "the same row, cell for cell"}
		if u := grading.Unjudged(row); u > 0 {
			_, judged := grading.DiffersUnder(n.Step, row)
			r.Note = fmt.Sprintf("the same on the %d cells judged; %d not judged", judged, u)
		}
		if len(n.Diff) > 0 {
			r.Note = "differs under " + strings.Join(n.Diff, ", ")
		}
		for _, sc := range d.Scenarios {
			c := matrix.Cell{Step: n.Step.Slug, Scenario: sc, Violations: n.Step.Expect[steps.Scenario(sc)]}
			pc := Cell{Text: course.CellText(c), Class: course.CellClass(c), Differs: slices.Contains(n.Diff, sc)}
			r.Cells = append(r.Cells, pc)
		}
		d.Rows = append(d.Rows, r)
	}
	return d
}

// NearestRows is how many of the catalog's rows a grade's page shows beside the learner's.
const NearestRows = 3

// timelineHeight is the height a play's timeline takes, in CSS pixels (see laneHeight).
func timelineHeight(p Play) int { return timelineChrome + laneHeight*len(p.Lanes) }

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{"height": timelineHeight, "g": pageGlyph, "buyerMarks": buyerMarks}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="lockstep lab">
<title>lockstep · {{.Title}}</title>
<style>:root { {{.Colours}} }
{{.CSS}}</style>
</head>
<body data-kind="{{.Kind}}">
<header class="top">
<h1>lockstep · {{.Title}}</h1>
<p class="meta">{{range $i, $m := .Meta}}{{if $i}} · {{end}}{{$m}}{{end}}</p>
{{if .Runs}}<p class="keys">Hover or click a mark to read what happened; <kbd>←</kbd> <kbd>→</kbd> step through a timeline's events (<kbd>Home</kbd> <kbd>End</kbd>: the first and the last), as the terminal lab's rewind does.</p>{{end}}
</header>
<ul id="page-errors" hidden></ul>
{{if .Rows}}<section class="table">
{{if .Like}}<p class="like">{{.Like}}</p>{{end}}
{{if .Target}}<pre class="target">{{.Target}}</pre>{{end}}
{{range .Shared}}<p class="shared">{{.}}</p>
{{end}}<table class="matrix">
<thead><tr><th>step</th>{{range .Scenarios}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Mine}} class="mine"{{end}}><th title="{{.Title}}">{{.Step}}{{if .Note}}<small>{{.Note}}</small>{{end}}{{if .Met}}<small class="met {{if eq .Met "met"}}ok{{else}}bad{{end}}">target {{.Met}}</small>{{end}}</th>{{range .Cells}}<td class="{{.Class}}{{if .Differs}} differs{{end}}"{{if .Hint}} title="{{.Hint}}"{{end}}>{{if .Run}}<a href="#{{.Run}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{if .WayOn}}<p class="wayon"><b>The way on, scenario by scenario:</b></p><ul class="wayon">{{range .WayOn}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Explored}}<pre class="explored">{{.Explored}}</pre>{{end}}
</section>{{end}}
{{range $i, $r := .Runs}}<section class="run" id="{{$r.ID}}">
<h2 class="{{$r.Said.Class}}">{{$r.Step}} × {{$r.Scenario}}</h2>
<p class="meta">step <b>{{$r.Step}}</b>{{if $r.Title}}: {{$r.Title}}{{end}} · scenario <b>{{$r.Scenario}}</b>{{if $r.What}}: {{$r.What}}{{end}} · {{$r.Backend}} backend{{if $r.Played}} · played {{$r.Played}}{{end}}</p>
{{if $r.Story}}<ul class="story">{{range $r.Story}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if $r.Replay}}<p class="replay">found from seed {{$r.Seed}}; <b>replay:</b> <code>{{$r.Replay}}</code></p>{{end}}
<div class="verdict {{$r.Said.Class}}"><p class="cell">verdict: <b>{{$r.Said.Line}}</b></p>{{if $r.Said.AlsoLine}}<p class="also">{{$r.Said.AlsoLine}}</p>{{end}}{{if $r.Explain}}
<ul class="explain">{{range $r.Explain}}<li><b>{{.Kind}}</b>: <span class="sentence">{{.Sentence}}</span></li>{{end}}</ul>{{end}}</div>
{{if $r.Lesson}}<p class="lesson"><b>lesson:</b> {{$r.Lesson}}</p>{{end}}
{{if $r.Next}}<p class="next"><b>next:</b> {{$r.Next}}{{if $r.FixAt}} The fix's code: <code>{{$r.FixAt}}</code>.{{end}}</p>{{end}}
{{range $j, $p := $r.Plays}}<div class="timeline" data-run="{{$i}}" data-play="{{$j}}" style="min-height: {{height $p}}px">{{if $p.Label}}<p class="play">{{$p.Label}}</p>{{end}}</div>
{{end}}<details class="report"><summary>the referee's report, as <code>lab run</code> prints it</summary><pre>{{$r.Report}}</pre></details>
</section>
{{end}}{{if .Runs}}<footer class="legend">
<p><b>Lanes:</b> one per buyer, one per lock node, one for the inventory; on the ruler above them, <b>{{g "Violation"}}</b> marks each violation where the referee found it (<b>{{g "Seen"}}</b> a kind the scenario does not judge, seen anyway: no violation). <span class="sw wait"></span> waiting (from the order's start to its first stock read once its Lock said yes) · <span class="sw work"></span> at work, with no lock to take (a step that takes none) · <span class="sw hold"></span> holds the lock (<span class="sw nest"></span> entered again: a Lock its process made while it held it, until that entry is given back) · <span class="sw in"></span> inside the critical section (from the read its write was computed from to that write) · <span class="sw over"></span> inside while another order is inside too (an overlap) · <span class="sw frozen"></span> frozen · <span class="sw cut"></span> cut off from the lock server · <span class="sw dead"></span> crashed. On a lock node: a bar per hold, in the holding blue (two holds side by side in two shades), labelled with its holder, begun where the node took it (<b>{{g "Acquired"}}</b>) and ended by <b>{{g "Released"}}</b> released, <b>{{g "Foreign"}}</b> deleted by another buyer, <b>{{g "Expired"}}</b> ran out (its TTL; drawn where it ran out, said when the referee saw it), <b>{{g "Lost"}}</b> lost in a failover or restart (<b>{{g "Failover"}}</b>, <b>{{g "Restart"}}</b>). A quorum's hold ends on every node when its first key is gone, as the referee judges it; where its key stays on another node a while longer, that node's bar says <b>· left</b> and ends when the key goes (<b>{{g "Left"}}</b> if another buyer deleted it), which blames nobody. On the inventory: each stock read and write, with its fencing token (<b>t</b>) where the step shows one; <b>{{g "Fenced"}}</b> a write the inventory refused for its stale token. Buyer marks: {{buyerMarks}}, <b>{{g "Waiting"}}</b> waits for another's lock, <b>{{g "Reentry"}}</b> a re-entry, <b>{{g "Fault"}}</b> a fault, <b>{{g "Crashed"}}</b> crashed, <b>{{g "Sold"}}</b>/<b>{{g "NoSale"}}</b>/<b>{{g "Failed"}}</b> the order's end: sold, nothing sold, an error (<b>{{g "Rejected"}}</b> the shop turned it away). Where many marks fall on one spot they are drawn as one, with their count.</p>
</footer>{{end}}
`))

// Meta is the page's line under its title: the backend, when it was played, who wrote it and
// how to judge it again, each only where there is one (a class's page has no backend of its own).
func (d Data) Meta() []template.HTML {
	var m []template.HTML
	if d.Backend != "" {
		m = append(m, template.HTML(template.HTMLEscapeString(d.Backend)+" backend"))
	}
	if d.Played != "" {
		m = append(m, template.HTML("played "+template.HTMLEscapeString(d.Played)))
	}
	w := "written by <code>lab</code>"
	if len(d.Runs) > 0 {
		w += "; <code>go run ./lab judge</code> this file judges its runs again from their histories"
	}
	return append(m, template.HTML(w))
}

// pageGlyphs names the marks the page's legend says in its prose.
var pageGlyphs = map[string]picture.ID{"Acquired": picture.Acquired, "Released": picture.Released,
	"Foreign": picture.Foreign, "Expired": picture.Expired, "Lost": picture.Lost, "Failover": picture.Failover,
	"Restart": picture.Restart, "Left": picture.Left, "Fenced": picture.Fenced, "Waiting": picture.Waiting,
	"Refused": picture.Refused, "Reentry": picture.Reentry, "Fault": picture.Fault, "Crashed": picture.Crashed,
	"Sold": picture.Sold, "Violation": picture.Violation, "Seen": picture.Seen, "NoSale": picture.NoSale, "Failed": picture.Failed, "Rejected": picture.Rejected}

// pageGlyph is the glyph of the mark the legend names name; a name it does not know fails the
// page's template, so the legend cannot name a mark the table lacks.
func pageGlyph(name string) (string, error) {
	m, ok := pageGlyphs[name]
	if !ok {
		return "", fmt.Errorf("the page's legend names no mark %q", name)
	}
	return m.Glyph(), nil
}

// buyerMarks is the legend's list of a buyer's command marks (picture.Legend, less the lock lane's
// and the inventory's refused write): "<b>G</b>/<b>S</b> GET/SET stock, …".
func buyerMarks() template.HTML {
	var items []string
	for _, g := range picture.Legend {
		if g.Lock || slices.Contains(g.Marks, picture.Fenced) {
			continue
		}
		var gl []string
		for _, m := range g.Marks {
			gl = append(gl, "<b>"+template.HTMLEscapeString(m.Glyph())+"</b>")
		}
		items = append(items, strings.Join(gl, "/")+" "+template.HTMLEscapeString(g.Says))
	}
	return template.HTML(strings.Join(items, ", "))
}
