package grading

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// NeedsOf finds, in a learner's package (its parsed files, and its other files in dir: a script
// it embeds), the commands it sends that not every server runs (referee.Since): a go-redis method
// named for one (rdb.HExpire, HGetDel, WaitAOF…), a Do whose command is a string ("HEXPIRE"), a
// redis.call or redis.pcall of one in a script. A run on a server that lacks one is not played
// (steps.Step.Needs): it says why, as step side_delex's does. Hazard: a command built at run time
// (a variable, a string put together) is not found; the server's error reply to it is still
// named in the report.
func NeedsOf(files []*ast.File, dir string, others []string) []steps.Need {
	found := map[string]bool{}
	note := func(name string) {
		name = strings.ToUpper(name)
		for cmd := range referee.Since {
			if strings.ReplaceAll(cmd, "_", "") == strings.ReplaceAll(name, "_", "") {
				found[cmd] = true
			}
		}
	}
	for _, f := range files {
		pkgs := map[string]bool{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			local := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			pkgs[local] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && pkgs[x.Name] {
					return true // io.Copy, a package's function: no client's method
				}
				name := sel.Sel.Name
				if name == "Do" && len(n.Args) > 1 {
					if lit, ok := n.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if s, err := strconv.Unquote(lit.Value); err == nil {
							note(s)
						}
					}
					return true
				}
				note(strings.TrimSuffix(strings.TrimSuffix(name, "WithArgs"), "Args"))
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil {
						scriptCalls(s, note)
					}
				}
			}
			return true
		})
	}
	for _, name := range others {
		if strings.HasSuffix(name, ".lua") {
			if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
				scriptCalls(string(b), note)
			}
		}
	}
	var out []steps.Need
	for cmd := range found {
		out = append(out, steps.Need{Command: cmd, Since: referee.Since[cmd]})
	}
	slices.SortFunc(out, func(a, b steps.Need) int { return strings.Compare(a.Command, b.Command) })
	return out
}

// luaCall is a script's call of a command by name: redis.call('HEXPIRE', …), redis.pcall("…").
var luaCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z_]+)['"]`)

// scriptCalls notes every command a script's text calls by name.
func scriptCalls(s string, note func(string)) {
	for _, m := range luaCall.FindAllStringSubmatch(s, -1) {
		note(m[1])
	}
}
