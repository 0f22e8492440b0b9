package grading

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// Shared is one package-level variable of a learner's package that holds state every simulated
// process shares: the lab plays every buyer in one Go process, where a deployment runs each in its
// own, with a package of its own.
type Shared struct {
	Name string // the variable
	How  string // what makes it state: "written by Lock", "drawn once at init, read by New"
}

// Says is the line the terminal lab (lab -dir) says of it: it plays every buyer in its one
// process, on the state they share there.
func (s Shared) Says() string {
	return fmt.Sprintf("package-level `%s` (%s) is shared by every buyer here; in a deployment each process has its own — keep per-process state in the Locker", s.Name, s.How)
}

// PerProcessSays is the line a grade (and an exploration) says of it: they play each process on
// a copy of the package of its own (steps.Step.PerProcess), so the verdicts are a deployment's.
func (s Shared) PerProcessSays() string {
	return fmt.Sprintf("package-level `%s` (%s) is each process's own in a deployment, and was here: every buyer played its own copy of your package (two-requests' two requests share one, as a server's do); the terminal lab (lab -dir) shares it between its buyers", s.Name, s.How)
}

// mutators are the methods that change what they are called on: a sync.Map's, an atomic's, a
// mutex's (a package-level mutex serialises every buyer here, and no two processes in a
// deployment).
var mutators = map[string]bool{
	"Store": true, "LoadOrStore": true, "LoadAndDelete": true, "Delete": true, "Swap": true,
	"CompareAndSwap": true, "Add": true, "Set": true, "Lock": true, "RLock": true, "TryLock": true,
	"Clear": true,
}

// drawers are the packages whose calls draw a value that differs from process to process: an
// owner token drawn once at init is one value for every buyer here.
var drawers = map[string]bool{"rand": true, "uuid": true, "time": true, "os": true, "ulid": true, "xid": true}

// SharedState finds, in a package's parsed files, its package-level variables that hold state
// every simulated process shares: those a function or method other than init writes (assigns,
// increments, stores into, deletes from, locks), and those drawn once at init (from a function
// of the package, or of rand, uuid, time, os…, at their declaration or in init) that a function
// or method reads. Hazard: it resolves names by type-checking the files alone (imports are
// empty packages, their errors ignored), so a package-level name is told from a local one that
// shadows it, but a write through a pointer to the variable handed elsewhere is not seen.
func SharedState(fset *token.FileSet, name string, files []*ast.File) []Shared {
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: emptyImporter{}, Error: func(error) {}}
	pkg, _ := conf.Check(name, fset, files, info)
	if pkg == nil {
		return nil
	}
	pkgVar := func(id *ast.Ident) *types.Var {
		v, ok := info.Uses[id].(*types.Var)
		if !ok || v.Parent() != pkg.Scope() {
			return nil
		}
		return v
	}
	// root is the package-level variable an expression writes into: v, v[k], v.f, *v, (v).
	var root func(e ast.Expr) *types.Var
	root = func(e ast.Expr) *types.Var {
		switch e := e.(type) {
		case *ast.Ident:
			return pkgVar(e)
		case *ast.IndexExpr:
			return root(e.X)
		case *ast.SelectorExpr:
			return root(e.X)
		case *ast.StarExpr:
			return root(e.X)
		case *ast.ParenExpr:
			return root(e.X)
		case *ast.UnaryExpr:
			return root(e.X)
		}
		return nil
	}
	written := map[*types.Var]string{}
	drawn := map[*types.Var]bool{}
	read := map[*types.Var]string{}
	draws := func(e ast.Node) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch f := call.Fun.(type) {
			case *ast.Ident:
				if fn, ok := info.Uses[f].(*types.Func); ok && fn.Pkg() == pkg {
					found = true
				}
			case *ast.SelectorExpr:
				if x, ok := f.X.(*ast.Ident); ok {
					if pn, ok := info.Uses[x].(*types.PkgName); ok && drawers[lastElem(pn.Imported().Path())] {
						found = true
					}
				}
			}
			return !found
		})
		return found
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					for i, id := range vs.Names {
						v, _ := info.Defs[id].(*types.Var)
						if v == nil || id.Name == "_" {
							continue
						}
						if len(vs.Values) == len(vs.Names) && draws(vs.Values[i]) || len(vs.Values) == 1 && len(vs.Names) > 1 && draws(vs.Values[0]) {
							drawn[v] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Body == nil {
					continue
				}
				fn := d.Name.Name
				if d.Recv != nil {
					fn = recvName(d) + "." + fn
				}
				init := d.Recv == nil && d.Name.Name == "init"
				write := func(v *types.Var) {
					if v == nil {
						return
					}
					if init {
						drawn[v] = true
						return
					}
					if _, ok := written[v]; !ok {
						written[v] = fn
					}
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.AssignStmt:
						for _, l := range n.Lhs {
							write(root(l))
						}
					case *ast.IncDecStmt:
						write(root(n.X))
					case *ast.CallExpr:
						if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(n.Args) > 0 {
							if _, builtin := info.Uses[id].(*types.Builtin); builtin {
								write(root(n.Args[0]))
							}
						}
						if sel, ok := n.Fun.(*ast.SelectorExpr); ok && mutators[sel.Sel.Name] {
							write(root(sel.X))
						}
					case *ast.Ident:
						if v := pkgVar(n); v != nil && !init {
							if _, ok := read[v]; !ok {
								read[v] = fn
							}
						}
					}
					return true
				})
			}
		}
	}
	var out []Shared
	for _, v := range pkg.Scope().Names() {
		obj, ok := pkg.Scope().Lookup(v).(*types.Var)
		if !ok {
			continue
		}
		switch {
		case written[obj] != "":
			out = append(out, Shared{Name: v, How: "written by " + written[obj]})
		case drawn[obj] && read[obj] != "":
			out = append(out, Shared{Name: v, How: "drawn once at init, read by " + read[obj]})
		}
	}
	slices.SortFunc(out, func(a, b Shared) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// recvName is the name of a method's receiver type: "Locker" of (l *Locker).
func recvName(d *ast.FuncDecl) string {
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name
		}
		return "?"
	}
}

func lastElem(path string) string {
	path = strings.TrimSuffix(path, "/v2")
	return path[strings.LastIndexByte(path, '/')+1:]
}

// emptyImporter gives every import as an empty package: SharedState needs the package's own
// names resolved, not what its imports declare.
type emptyImporter struct{}

func (emptyImporter) Import(path string) (*types.Package, error) {
	p := types.NewPackage(path, lastElem(path))
	p.MarkComplete()
	return p, nil
}
