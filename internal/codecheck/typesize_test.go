package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// typeLimits bound the method sets of the types that once grew into god
// objects (issue 40). A new job goes to a type of its own, as the named
// package doc says, not onto these.
var typeLimits = []struct {
	dir, typ string
	max      int
	advice   string
}{
	{"chip", "Chip", 45, "per-core behaviour belongs on Core, a job spanning cores on a type of its own (chip/doc.go)"},
	{"device", "System", 50, "give the new job a type of its own (device/doc.go)"},
	{"device", "Device", 50, "give the new job a type of its own (device/doc.go)"},
}

// methodsOf lists the methods the non-test files of package dir declare
// on type typ.
func methodsOf(t *testing.T, root, dir, typ string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", n, err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && receiverName(fn) == typ {
				methods = append(methods, fn.Name.Name)
			}
		}
	}
	return methods
}

// receiverName is the type name of fn's receiver, "" for a function.
func receiverName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestTypesStaySmall: each bounded type has methods (else the parse is
// wrong) and no more than its limit.
func TestTypesStaySmall(t *testing.T) {
	root := moduleRoot(t)
	for _, l := range typeLimits {
		m := methodsOf(t, root, l.dir, l.typ)
		switch {
		case len(m) == 0:
			t.Errorf("%s.%s: found no methods: the parse is wrong", l.dir, l.typ)
		case len(m) > l.max:
			t.Errorf("%s.%s has %d methods, more than %d: %s: %v", l.dir, l.typ, len(m), l.max, l.advice, m)
		}
	}
}
