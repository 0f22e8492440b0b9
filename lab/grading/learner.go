// Package grading is what lab grade and lab -dir need of a learner's lock package before any
// scenario is played: checking it from its source (Inspect), laying a generated file over a
// package of this module that imports it (Overlay), and building that (Build); and, after, which
// step's row a learner's row is like (Like, DiffersUnder), whether it is the row the learner aims
// for (Target), and the way on from what broke it (WayOn). Its errors about the learner's input
// wrap ErrUsage: the lab exits 2 on them.
package grading

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/steps"
)

// ModulePath is this module's path: a learner's package must live inside it, so that the lab can
// import it without an edit to go.mod.
const ModulePath = "github.com/lockstep-lab/lockstep"

// The signatures the lab needs, as a learner reads them in an error.
const (
	WantNew   = "func New(steps.Proc) steps.Locker"
	WantOrder = "func Order(context.Context, steps.Locker, steps.Shop) error"
)

// Pkg is a learner's lock package, checked from its source: where it is and what it
// exports.
type Pkg struct {
	Abs        string // its folder, absolute, symbolic links resolved
	Root       string // the module's folder
	Rel        string // its folder from root, with slashes: "steps/mine"
	ImportPath string // ModulePath + "/" + rel
	Name       string // its package name
	HasOrder   bool   // it exports its own order handler
	HasSource  bool   // it exports Source, an embed.FS of its files (as every step does)
	ReadsNodes bool   // its code reads a Nodes field (Proc.Nodes): it may want -nodes
	// Shared is its package-level state every simulated process shares (SharedState).
	Shared []Shared
	// Files are its folder's files and those of its subfolders, its tests left out, from its
	// folder with slashes: what a copy of the package needs (Overlay.Copies).
	Files []string
	// Needs are the commands it sends that not every server runs (NeedsOf).
	Needs []steps.Need
}

// Inspect checks, from the source alone, that dir holds a Go package of this module that
// exports New and, if it has one, Order with the signatures the catalog's steps have. Every error
// is bad input, in one line that says what is wrong. Hazard: it reads the syntax, not the types
// (no build happens here): a signature spelled through a type alias is refused, and the build
// that follows is what checks everything else.
func Inspect(dir string) (*Pkg, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, usageError("no such folder: %s", dir)
	case err != nil:
		return nil, usageError("%v", err)
	case !fi.IsDir():
		return nil, usageError("%s is a file: give the folder of your lock's package", dir)
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, usageError("%v", err)
	}
	root, mod, err := moduleOf(abs)
	if err != nil {
		return nil, usageError("%s: %v", dir, err)
	}
	if mod != ModulePath {
		return nil, usageError("%s is in module %s, not in lockstep's (%s): copy your folder under steps/", dir, mod, ModulePath)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, usageError("%v", err)
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		return nil, usageError("%s is the module's root, not a lock package: give a folder such as steps/mine", dir)
	}
	for _, el := range strings.Split(rel, "/") {
		if el == "testdata" || strings.HasPrefix(el, ".") || strings.HasPrefix(el, "_") {
			return nil, usageError("%s: Go ignores folders named testdata or starting with . or _ (%q): rename it", dir, el)
		}
	}
	p := &Pkg{Abs: abs, Root: root, Rel: rel, ImportPath: ModulePath + "/" + rel}
	bp, err := build.ImportDir(abs, 0)
	var noGo *build.NoGoError
	var multi *build.MultiplePackageError
	switch {
	case errors.As(err, &noGo):
		return nil, usageError("%s has no Go files: not a Go package", dir)
	case errors.As(err, &multi):
		return nil, usageError("%s holds several packages (%s in %s, %s in %s): one folder, one package", dir, multi.Packages[0], multi.Files[0], multi.Packages[1], multi.Files[1])
	case err != nil:
		return nil, usageError("%s: %v", dir, FirstOfLines(err.Error()))
	}
	p.Name = bp.Name
	if p.Name == "main" {
		return nil, usageError("%s is package main: a lock is a library package (every step's is package lock)", dir)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(abs, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, usageError("%s does not parse: %s", dir, FirstOfLines(RelError(err.Error(), root)))
		}
		files = append(files, f)
	}
	var newFn, order *ast.FuncDecl
	var newFile, orderFile *ast.File
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					continue
				}
				switch d.Name.Name {
				case "New":
					newFn, newFile = d, f
				case "Order":
					order, orderFile = d, f
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					for _, name := range specNames(s) {
						switch name {
						case "New":
							return nil, usageError("%s: New is a %s; the lab needs %s", dir, d.Tok, WantNew)
						case "Order":
							return nil, usageError("%s: Order is a %s; the lab needs %s, or no Order at all", dir, d.Tok, WantOrder)
						case "Source":
							p.HasSource = p.HasSource || isEmbedFS(f, s)
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "Nodes" {
				p.ReadsNodes = true
			}
			return true
		})
	}
	if newFn == nil {
		return nil, usageError("%s (package %s) exports no New: the lab needs %s, and optionally %s", dir, p.Name, WantNew, WantOrder)
	}
	if !sigIs(newFile, newFn, []qualName{{"steps", "Proc"}}, []qualName{{"steps", "Locker"}}) {
		return nil, usageError("%s: New is %s; the lab needs %s", dir, renderSig(fset, newFn), WantNew)
	}
	if order != nil {
		if !sigIs(orderFile, order, []qualName{{"context", "Context"}, {"steps", "Locker"}, {"steps", "Shop"}}, []qualName{{"", "error"}}) {
			return nil, usageError("%s: Order is %s; the lab needs %s, or no Order at all (then the lab's steps.DefaultOrder is the handler)", dir, renderSig(fset, order), WantOrder)
		}
		p.HasOrder = true
	}
	p.Shared = SharedState(fset, p.Name, files)
	if p.Files, err = packageFiles(abs); err != nil {
		return nil, usageError("%s: %v", dir, err)
	}
	p.Needs = NeedsOf(files, abs, p.Files)
	return p, nil
}

// packageFiles lists dir's files and those of its subfolders, from dir with slashes: all but
// tests, hidden files and folders, testdata, and copies a build lays over it (matrix.PerProcessDir).
func packageFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(at string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if at != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == matrix.PerProcessDir) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(dir, at)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out, err
}

// moduleOf finds the go.mod at or above dir and returns its folder and module path.
func moduleOf(dir string) (root, mod string, err error) {
	for root = dir; ; root = filepath.Dir(root) {
		b, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
					return root, strings.Trim(f[1], `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s has no module line", filepath.Join(root, "go.mod"))
		}
		if filepath.Dir(root) == root {
			return "", "", fmt.Errorf("not inside a Go module (no go.mod above it): copy your folder under lockstep's steps/")
		}
	}
}

// qualName is a qualified name: package path's last element and name ("steps", "Proc"); a predeclared
// type has no package ("", "error").
type qualName struct{ pkg, name string }

var qualPaths = map[string]string{"steps": ModulePath + "/steps", "context": "context"}

// sigIs tells whether fn, a function of f, is generic-free and takes exactly params and returns
// exactly results, however the file names its imports.
func sigIs(f *ast.File, fn *ast.FuncDecl, params, results []qualName) bool {
	if fn.Type.TypeParams != nil {
		return false
	}
	return fieldsAre(f, fn.Type.Params, params) && fieldsAre(f, fn.Type.Results, results)
}

func fieldsAre(f *ast.File, fl *ast.FieldList, want []qualName) bool {
	var types []ast.Expr
	if fl != nil {
		for _, fd := range fl.List {
			for range max(len(fd.Names), 1) {
				types = append(types, fd.Type)
			}
		}
	}
	if len(types) != len(want) {
		return false
	}
	for i, t := range types {
		if !namesQual(f, t, want[i]) {
			return false
		}
	}
	return true
}

// namesQual tells whether e names s in file f: pkg.Name through the file's import of s's package
// (renamed or not), Name through a dot import, or a predeclared Name.
func namesQual(f *ast.File, e ast.Expr, s qualName) bool {
	if s.pkg == "" {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == s.name
	}
	path := qualPaths[s.pkg]
	for _, im := range f.Imports {
		if strings.Trim(im.Path.Value, `"`) != path {
			continue
		}
		local := s.pkg
		if im.Name != nil {
			local = im.Name.Name
		}
		switch e := e.(type) {
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok && x.Name == local && e.Sel.Name == s.name {
				return true
			}
		case *ast.Ident:
			if local == "." && e.Name == s.name {
				return true
			}
		}
	}
	return false
}

// isEmbedFS tells whether the value spec s of f declares its names as embed.FS or fs.FS.
func isEmbedFS(f *ast.File, s ast.Spec) bool {
	vs, ok := s.(*ast.ValueSpec)
	if !ok || vs.Type == nil {
		return false
	}
	x, ok := vs.Type.(*ast.SelectorExpr)
	if !ok || x.Sel.Name != "FS" {
		return false
	}
	id, ok := x.X.(*ast.Ident)
	if !ok {
		return false
	}
	for _, im := range f.Imports {
		path := strings.Trim(im.Path.Value, `"`)
		local := path[strings.LastIndexByte(path, '/')+1:]
		if im.Name != nil {
			local = im.Name.Name
		}
		if local == id.Name && (path == "embed" || path == "io/fs") {
			return true
		}
	}
	return false
}

func specNames(s ast.Spec) []string {
	var out []string
	switch s := s.(type) {
	case *ast.ValueSpec:
		for _, n := range s.Names {
			out = append(out, n.Name)
		}
	case *ast.TypeSpec:
		out = append(out, s.Name.Name)
	}
	return out
}

// renderSig prints fn's signature as Go source, without its body: "func New(p steps.Proc) *Locker".
func renderSig(fset *token.FileSet, fn *ast.FuncDecl) string {
	var b strings.Builder
	printer.Fprint(&b, fset, &ast.FuncDecl{Name: fn.Name, Type: fn.Type})
	return strings.Join(strings.Fields(b.String()), " ")
}

// RelError shortens the absolute paths under root in a compiler's or parser's message.
func RelError(msg, root string) string {
	return strings.ReplaceAll(msg, root+string(filepath.Separator), "")
}

// FirstOfLines keeps the first line of msg and says how many more there were.
func FirstOfLines(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%s (and %d more lines)", lines[0], len(lines)-1)
}

// ErrUsage marks an error caused by bad input (the lab's exit status 2).
var ErrUsage = errors.New("usage")

// usageError wraps a message as bad input.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUsage}, a...)...)
}
