package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Reading the documentation: the go run ./lab commands README.md and docs/*.md show, each with
// what the text says beside it (TestDocumentedCommands runs them).

// docCmd is one documented command.
type docCmd struct {
	where   string   // "README.md:53"
	env     []string // NAME=value before go run
	args    []string // after go run ./lab
	context string   // what the text says beside it: the rest of its sentence, or its # comment
	next    []string // the lines of the block after it when its sentence ends with ":" (a table it prints)
	para    string   // its paragraph, for flags a -h is said to list
}

var (
	goRunLab = regexp.MustCompile(`go run \./lab\b`)
	spanRe   = regexp.MustCompile("`([^`]+)`")
)

// docFiles are the files whose commands are run: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "README.md")}, files...)
}

// parseDoc finds the commands of one Markdown file. A line that mentions go run ./lab where no
// command can be read is an error naming the line: it must not be skipped in silence.
func parseDoc(name, text string) (cmds []docCmd, errs []string) {
	lines := strings.Split(text, "\n")
	fence := ""
	var para []int // the lines of the current paragraph, outside code blocks
	flush := func() {
		if len(para) == 0 {
			return
		}
		// Join the paragraph, keeping where each of its bytes came from.
		var b strings.Builder
		var from []int
		for _, i := range para {
			s := strings.TrimSpace(lines[i]) + " "
			b.WriteString(s)
			for range s {
				from = append(from, i)
			}
		}
		p := b.String()
		for _, m := range spanRe.FindAllStringSubmatchIndex(p, -1) {
			code := strings.Join(strings.Fields(p[m[2]:m[3]]), " ")
			if !goRunLab.MatchString(code) {
				continue
			}
			where := fmt.Sprintf("%s:%d", name, from[m[0]]+1)
			rest := p[m[1]:]
			if end := regexp.MustCompile(`[.!?](\s|$)`).FindStringIndex(rest); end != nil {
				rest = rest[:end[1]]
			}
			c, err := readCmd(where, code)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			c.context, c.para = strings.TrimSpace(rest), p
			if strings.HasSuffix(strings.TrimSpace(rest), ":") {
				c.next = blockAfter(lines, para[len(para)-1]+1)
			}
			cmds = append(cmds, c)
		}
		blanked := spanRe.ReplaceAllStringFunc(p, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range goRunLab.FindAllStringIndex(blanked, -1) {
			errs = append(errs, fmt.Sprintf("%s:%d: go run ./lab outside backticks: write the command as code", name, from[m[0]]+1))
		}
		para = nil
	}
	for i, l := range lines {
		trim := strings.TrimSpace(l)
		if f := fenceOf(trim); f != "" && (fence == "" || strings.HasPrefix(trim, fence)) {
			flush()
			if fence == "" {
				fence = f
			} else {
				fence = ""
			}
			continue
		}
		if fence != "" {
			if !goRunLab.MatchString(l) {
				continue
			}
			code, comment := splitComment(trim)
			for _, seg := range regexp.MustCompile(`&&|;|\|\|`).Split(code, -1) {
				seg = strings.TrimPrefix(strings.TrimSpace(seg), "$ ")
				if !goRunLab.MatchString(seg) {
					continue
				}
				c, err := readCmd(fmt.Sprintf("%s:%d", name, i+1), seg)
				if err != nil {
					errs = append(errs, err.Error())
					continue
				}
				c.context = comment
				cmds = append(cmds, c)
			}
			continue
		}
		if trim == "" || regexp.MustCompile(`^([-*+] |\d+\. |#|\|)`).MatchString(trim) {
			flush()
		}
		if trim != "" {
			para = append(para, i)
		}
	}
	flush()
	return cmds, errs
}

func fenceOf(trim string) string {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(trim, f) {
			return f
		}
	}
	return ""
}

// blockAfter is the next block of non-blank lines from line i on.
func blockAfter(lines []string, i int) []string {
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	var out []string
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		out = append(out, strings.TrimSpace(lines[i]))
	}
	return out
}

// splitComment cuts a shell line at its # comment (one outside quotes).
func splitComment(s string) (code, comment string) {
	q := rune(0)
	for i, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q == 0 && (r == '"' || r == '\''):
			q = r
		case q == 0 && r == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
		}
	}
	return s, ""
}

// readCmd reads "[NAME=value …] go run ./lab args…" as a shell would, refusing what this test
// cannot run as written (pipes, substitutions, unbalanced quotes, a placeholder other than a
// folder to grade).
func readCmd(where, s string) (docCmd, error) {
	c := docCmd{where: where}
	if strings.ContainsAny(regexp.MustCompile(`<[^<>]+>`).ReplaceAllString(s, "x"), "|><`$") || strings.Contains(s, "…") || strings.Contains(s, "...") {
		return c, fmt.Errorf("%s: cannot run %q as written (a pipe, a redirection, a substitution or an ellipsis)", where, s)
	}
	var words []string
	var w strings.Builder
	q, in := rune(0), false
	for _, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			q, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if q != 0 {
		return c, fmt.Errorf("%s: unbalanced quote in %q", where, s)
	}
	if in {
		words = append(words, w.String())
	}
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
		c.env, words = append(c.env, words[0]), words[1:]
	}
	if len(words) < 3 || words[0] != "go" || words[1] != "run" || words[2] != "./lab" {
		return c, fmt.Errorf("%s: cannot read %q as [NAME=value …] go run ./lab …", where, s)
	}
	c.args = words[3:]
	for i, a := range c.args {
		if strings.Contains(a, "<") && !(i > 0 && (c.args[0] == "grade" || c.args[i-1] == "-dir")) {
			return c, fmt.Errorf("%s: placeholder %q in %q: only the folder of grade or -dir may be one", where, a, s)
		}
	}
	return c, nil
}

// TestParseDoc: commands are read from code blocks (with their # comment) and from backticks,
// also across a line break; what cannot be run as written is an error naming its line.
func TestParseDoc(t *testing.T) {
	doc := "Intro `go run ./lab run -step 07\n  -scenario load` counts well over a thousand (`flood`). Then more.\n" +
		"\n```sh\nLAB_REDIS=server go run ./lab run -step 4 -scenario slow   # one scenario\n" +
		"go build ./... && go run ./lab list steps\n```\n\n" +
		"Run `go run ./lab matrix` prints:\n\n| step | a |\n|---|---|\n| 01_naive | ✓ |\n\n" +
		"Grade it: `go run ./lab grade steps/<your folder>`.\n\n" +
		"Bad: `go run ./lab run -step <n>`, `go run ./lab matrix | head`, `go run ./lab run \"x`.\n" +
		"And go run ./lab in prose.\n"
	cmds, errs := parseDoc("doc.md", doc)
	type got struct{ where, env, args, ctx string }
	var g []got
	for _, c := range cmds {
		g = append(g, got{c.where, strings.Join(c.env, " "), strings.Join(c.args, " "), c.context})
	}
	want := []got{
		{"doc.md:1", "", "run -step 07 -scenario load", "counts well over a thousand (`flood`)."},
		{"doc.md:5", "LAB_REDIS=server", "run -step 4 -scenario slow", "one scenario"},
		{"doc.md:6", "", "list steps", ""},
		{"doc.md:9", "", "matrix", "prints:"},
		{"doc.md:15", "", "grade steps/<your folder>", "."},
	}
	if !slices.Equal(g, want) {
		t.Errorf("commands:\n%q\nwant:\n%q", g, want)
	}
	if len(cmds) > 3 && !slices.Equal(cmds[3].next, []string{"| step | a |", "|---|---|", "| 01_naive | ✓ |"}) {
		t.Errorf("the table after \"prints:\": %q", cmds[3].next)
	}
	wantErrs := []string{"doc.md:17: placeholder", "doc.md:17: cannot run", "doc.md:17: unbalanced quote", "doc.md:18: go run ./lab outside backticks"}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors: %q", errs)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e, wantErrs[i]) {
			t.Errorf("error %d: %q, want %q…", i, e, wantErrs[i])
		}
	}
}
