package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function, from its func keyword to its closing
// brace: one that does not fit on a screen does more than one job.
const maxFuncLines = 80

// moduleRoot is the repository's top, two levels up from this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	return root
}

// sourceFiles lists the repository's non-test Go files, relative to
// root, leaving out generated files and those under testdata or hidden
// directories (which the go tool ignores too).
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// longFuncs returns "file name" → length of every function in file
// longer than maxFuncLines; a generated file returns none.
func longFuncs(t *testing.T, root, file string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, parser.ParseComments)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	if ast.IsGenerated(f) {
		return nil
	}
	long := map[string]int{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n > maxFuncLines {
			long[file+" "+fn.Name.Name] = n
		}
	}
	return long
}

// TestNoLongFunctions: no non-test, non-generated function of the
// repository is longer than maxFuncLines.
func TestNoLongFunctions(t *testing.T) {
	root := moduleRoot(t)
	files := sourceFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("found only %d Go files under %s: the walk is wrong", len(files), root)
	}
	for _, file := range files {
		for key, n := range longFuncs(t, root, file) {
			t.Errorf("%s is %d lines long, more than %d: split it into named steps", key, n, maxFuncLines)
		}
	}
}
