package chip

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxChipMethods bounds Chip (issue 40): it keeps what spans the cores
// and hands out Core(nc); per-core behaviour goes on Core, a new job
// spanning cores to a type of its own (chip/doc.go).
const maxChipMethods = 45

// methodsOf lists the methods the package's non-test files declare on
// type typ.
func methodsOf(t *testing.T, typ string) []string {
	t.Helper()
	names, err := filepath.Glob("*.go")
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
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); ok && id.Name == typ {
				methods = append(methods, fn.Name.Name)
			}
		}
	}
	return methods
}

func TestChipStaysSmall(t *testing.T) {
	chip := methodsOf(t, "Chip")
	if len(methodsOf(t, "Core")) == 0 || len(chip) == 0 {
		t.Fatal("found no methods of Chip or Core: the parse is wrong")
	}
	if len(chip) > maxChipMethods {
		t.Errorf("Chip has %d methods, more than %d: per-core behaviour belongs on Core: %v", len(chip), maxChipMethods, chip)
	}
}
