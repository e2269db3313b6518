package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEveryImplementationIsCheckedAtCompileTime: for every interface this
// package declares (Policy and the optional ones the router finds by type
// assertion), every type whose methods cover it carries a compile-time
// check `var _ I = (*T)(nil)`. With the check a misspelt method fails the
// build; without it the router's type assertion would silently drop it.
func TestEveryImplementationIsCheckedAtCompileTime(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	ifaces := map[string][]string{}  // interface → its method names
	methods := map[string][]string{} // type → its method names
	checked := map[[2]string]bool{}  // (interface, type) pairs with a var _ check
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					recv := typeName(d.Recv.List[0].Type)
					methods[recv] = append(methods[recv], d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									ifaces[s.Name.Name] = append(ifaces[s.Name.Name], n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						if len(s.Names) == 1 && s.Names[0].Name == "_" && s.Type != nil && len(s.Values) == 1 {
							checked[[2]string{typeName(s.Type), conversionType(s.Values[0])}] = true
						}
					}
				}
			}
		}
	}
	if len(ifaces["Policy"]) == 0 {
		t.Fatal("found no Policy interface: the test reads the wrong files")
	}
	for iface, want := range ifaces {
		for typ, have := range methods {
			if !allIn(want, have) {
				continue
			}
			if !checked[[2]string{iface, typ}] {
				t.Errorf("%s implements %s but has no compile-time check (var _ %s = (*%s)(nil))", typ, iface, iface, typ)
			}
		}
	}
}

func allIn(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// typeName is the name of T, *T or T's selector's last part.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

// conversionType is T of (*T)(nil), T{} or T(nil).
func conversionType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.CallExpr:
		if p, ok := e.Fun.(*ast.ParenExpr); ok {
			return typeName(p.X)
		}
		return typeName(e.Fun)
	case *ast.CompositeLit:
		return typeName(e.Type)
	}
	return ""
}
