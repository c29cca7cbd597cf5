package device

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Limits on the package's shape (issue 40): System is the driver's root
// object, and what it does is split into types it holds; a new job goes
// to one of them, or a new one, not onto System.
const (
	maxSystemMethods = 50
	maxFuncLines     = 80
)

// parsePackage parses the package's non-test files.
func parsePackage(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", n, err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no source files found")
	}
	return fset, files
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

// TestSystemStaysSmall: System has at most maxSystemMethods methods and
// no function of the package is longer than maxFuncLines lines.
func TestSystemStaysSmall(t *testing.T) {
	fset, files := parsePackage(t)
	var methods []string
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if receiverName(fn) == "System" {
				methods = append(methods, fn.Name.Name)
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines long, more than %d: split it", start.Filename, start.Line, fn.Name.Name, n, maxFuncLines)
			}
		}
	}
	if len(methods) > maxSystemMethods {
		t.Errorf("System has %d methods, more than %d: give the new job a type of its own (device/doc.go): %v",
			len(methods), maxSystemMethods, methods)
	}
}
