package runtime_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's section on this package stays true to its API: it names
// every exported type, and every Type.Method it names exists.
func TestREADMENamesRuntimeTypes(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## The Go runtime\n")
	if !ok {
		t.Fatal("README has no section \"The Go runtime\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`\\*?(?:runtime\\.)?([A-Z][A-Za-z0-9]*(?:\\.[A-Z][A-Za-z0-9]*)?)`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}

	types, methods := exportedAPI(t)
	for ty := range types {
		if !named[ty] {
			t.Errorf("README's runtime section does not name the type %s", ty)
		}
	}
	for n := range named {
		if ty, _, isMethod := strings.Cut(n, "."); isMethod && types[ty] && !methods[n] {
			t.Errorf("README's runtime section names %s, which does not exist", n)
		}
	}
}

// exportedAPI lists the package's exported types and their exported
// methods (Type.Method).
func exportedAPI(t *testing.T) (types, methods map[string]bool) {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	types, methods = map[string]bool{}, map[string]bool{}
	for _, f := range pkgs["runtime"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						types[ts.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && d.Name.IsExported() {
					recv := d.Recv.List[0].Type
					if st, ok := recv.(*ast.StarExpr); ok {
						recv = st.X
					}
					if id, ok := recv.(*ast.Ident); ok {
						methods[id.Name+"."+d.Name.Name] = true
					}
				}
			}
		}
	}
	if len(types) == 0 {
		t.Fatal("no exported types found: is the test run in runtime/?")
	}
	return types, methods
}
